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

// groupingMalices are the indicator verdicts that group an alert into a case (API.md §14 "Grouping");
// case_grouping_match (migration 20261127020200) names the same two.
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
	CaseUUID        uuid.UUID `bun:"m_case,type:uuid"`
	IndicatorUUID   uuid.UUID `bun:"m_indicator,type:uuid"`
	IndicatorType   string    `bun:"m_type"`
	IndicatorValue  string    `bun:"m_value"`
	IndicatorMalice string    `bun:"m_malice"`
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
// The lookup is the function case_grouping_match (migration 20261127020200; a function keeps its
// plan for the session, and the statement cost more to plan than to run). For each of the alert's
// hot indicators it reads the distinct cases whose alerts link it (alert_indicators.case_uuid, kept
// by migration 20261127020000's triggers, under its partial index alert_indicators_case_idx: one
// index probe per case, a loose index scan), and for each open case whether one of those alerts was
// seen within the window (stopping at the first that was). Its cost follows the number of cases
// sharing the indicator, not the number of alerts linking it outside cases; a large case costs more
// only when few of its alerts sharing the indicator are recent (the existence check reads them until
// one is). The chosen case's row is locked (FOR UPDATE, the lock JoinCase takes next, after the
// alert's: the order every join takes), so a case closed meanwhile is not joined: the statement
// rechecks the row once the close commits.
func (s *Store) groupIntoCase(ctx context.Context, tx bun.IDB, alertID uuid.UUID, since time.Time) (uuid.UUID, error) {
	var m groupingMatch
	err := tx.NewRaw("SELECT m_case, m_indicator, m_type, m_value, m_malice FROM case_grouping_match(?, ?)", alertID, since).Scan(ctx, &m)
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
