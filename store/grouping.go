package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// groupingMalices are the indicator verdicts that group an alert into a case (API.md §14 "Grouping").
var groupingMalices = []string{"Malicious", "Suspicious"}

// mayGroup reports, from the alert's indicator verdicts that the finish reads anyway, whether the
// grouping lookup can find anything: an alert with no Malicious or Suspicious indicator costs the
// finish no statement more.
func mayGroup(malices []string) bool {
	for _, m := range malices {
		if slices.Contains(groupingMalices, m) {
			return true
		}
	}
	return false
}

// groupingMatch is the case a finishing alert joins and the indicator it shares with it.
type groupingMatch struct {
	CaseUUID        uuid.UUID `bun:"case_uuid,type:uuid"`
	IndicatorUUID   uuid.UUID `bun:"indicator_uuid,type:uuid"`
	IndicatorType   string    `bun:"indicator_type"`
	IndicatorValue  string    `bun:"indicator_value"`
	IndicatorMalice string    `bun:"indicator_malice"`
}

// groupIntoCase is the pipeline's grouping (API.md §14), run inside FinishEnrichment's transaction
// after the alert's row is locked, for an alert that is in no case yet: the alert joins the oldest
// open case (Open or Investigating; created_at, then case_number) one of whose alerts, seen (its
// occurred_at or, for a repeated alert, last_seen_at) at or after since, is linked to an indicator
// the alert is linked to whose verdict is Malicious or Suspicious. The shared indicator named is the
// worst such indicator of that case (Malicious first), then by type and value, so a retried finish
// chooses what the first attempt chose. The join itself is JoinCase's (the one path an alert joins a
// case by: alert_grouped with the indicator, case.alert_added to the agents subscribed). It returns
// the case joined, or uuid.Nil when none matches.
//
// The lookup reads, for each of the alert's hot indicators, the distinct cases whose alerts link it
// (alert_indicators.case_uuid, kept by migration 20261127020000's triggers, under its partial index
// alert_indicators_case_idx: one index probe per case, a loose index scan), and for each open case
// whether one of those alerts was seen within the window (stopping at the first that was). Its cost
// follows the number of cases sharing the indicator, not the number of alerts linking it, nor the
// size of the case: a case of 10 000 alerts costs a join what a case of one does. The chosen case's
// row is locked (FOR UPDATE, the lock JoinCase takes next, after the alert's: the order every join
// takes), so a case closed meanwhile is not joined: the statement rechecks the row once the close
// commits.
func (s *Store) groupIntoCase(ctx context.Context, tx bun.IDB, alertID uuid.UUID, since time.Time) (uuid.UUID, error) {
	var m groupingMatch
	err := tx.NewRaw(`WITH RECURSIVE hot AS (
			SELECT i.uuid, i.type, i.value, i.malice FROM alert_indicators AS mine JOIN indicators AS i ON i.uuid = mine.indicator_uuid
			WHERE mine.alert_uuid = ?0 AND i.malice IN (?1)
		), pairs AS (
			SELECT h.uuid AS indicator_uuid, (SELECT l.case_uuid FROM alert_indicators AS l
				WHERE l.indicator_uuid = h.uuid AND l.case_uuid IS NOT NULL ORDER BY l.case_uuid LIMIT 1) AS case_uuid
			FROM hot AS h
			UNION ALL
			SELECT p.indicator_uuid, (SELECT l.case_uuid FROM alert_indicators AS l
				WHERE l.indicator_uuid = p.indicator_uuid AND l.case_uuid > p.case_uuid ORDER BY l.case_uuid LIMIT 1)
			FROM pairs AS p WHERE p.case_uuid IS NOT NULL
		)
		SELECT c.uuid AS case_uuid, h.uuid AS indicator_uuid, h.type AS indicator_type, h.value AS indicator_value,
			h.malice AS indicator_malice
		FROM pairs AS p
		JOIN hot AS h ON h.uuid = p.indicator_uuid
		JOIN cases AS c ON c.uuid = p.case_uuid
		WHERE p.case_uuid IS NOT NULL AND c.status IN (?3) AND EXISTS (
			SELECT 1 FROM alert_indicators AS other JOIN alerts AS o ON o.uuid = other.alert_uuid
			WHERE other.indicator_uuid = p.indicator_uuid AND other.case_uuid IS NOT NULL AND other.case_uuid = p.case_uuid
				AND other.alert_uuid <> ?0
				AND o.case_uuid = p.case_uuid AND greatest(o.occurred_at, o.last_seen_at) >= ?2)
		ORDER BY c.created_at, c.case_number, h.malice = 'Malicious' DESC, h.type, h.value
		LIMIT 1
		FOR UPDATE OF c`, alertID, bun.In(groupingMalices), since, bun.In([]string{CaseOpen, CaseInvestigating})).Scan(ctx, &m)
	if errors.Is(err, sql.ErrNoRows) {
		return uuid.Nil, nil
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("find the open case of alert %s: %w", alertID, mapErr(err))
	}
	_, err = s.JoinCase(ctx, tx, CaseJoin{CaseUUID: m.CaseUUID, AlertUUID: alertID, Actor: Actor{Type: ActorWorkflow},
		Indicator: &CaseIndicator{UUID: m.IndicatorUUID, Type: m.IndicatorType, Value: m.IndicatorValue, Malice: m.IndicatorMalice}})
	if err != nil {
		return uuid.Nil, fmt.Errorf("group alert %s into case %s: %w", alertID, m.CaseUUID, err)
	}
	return m.CaseUUID, nil
}
