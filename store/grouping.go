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

// startGrouping is the pipeline's grouping lookup (API.md §14), run inside FinishEnrichment's
// transaction after the alert's row is locked, for an alert that is in no case yet: the oldest open
// case (Open or Investigating; created_at, then case_number) one of whose alerts, seen (its
// occurred_at or, for a repeated alert, last_seen_at) at or after since, is linked to an indicator
// the alert is linked to whose verdict is Malicious or Suspicious. The shared indicator named is the
// worst such indicator of that case (Malicious first), then by type and value, so a retried finish
// chooses what the first attempt chose. The same statement starts the join (startJoin's: the case
// read, whether an agent subscribes to case.alert_added); the finish then writes the alert's
// case_uuid and updated_at (at) in its own update of the alert and records the rest of the join
// (caseJoin: alert_grouped with the indicator, case.alert_added). It returns nil when no case matches.
//
// The lookup is the function case_grouping_match (migration 20261127020200; a function keeps its
// plan for the session, and the statement cost more to plan than to run). For each of the alert's
// hot indicators it reads the distinct cases whose alerts link it (alert_indicators.case_uuid, kept
// by migration 20261127020000's triggers, under its partial index alert_indicators_case_idx: one
// index probe per case, a loose index scan), and for each open case whether one of those alerts was
// seen within the window (stopping at the first that was). Its cost follows the number of cases
// sharing the indicator, not the number of alerts linking it outside cases; a large case costs more
// only when few of its alerts sharing the indicator are recent (the existence check reads them until
// one is). The chosen case's row is locked (FOR UPDATE, after the alert's: the order every join
// takes), so a case closed meanwhile is not joined: the function rechecks the row once the close
// commits. A case whose creator_allowed_sources leave out the alert's source is not joined (security
// review round 4, R4-3). The statement reads the case under the same lock (FOR UPDATE OF cases: the row as the
// last commit left it, not as the statement's snapshot saw it before the function waited).
func (s *Store) startGrouping(ctx context.Context, tx bun.IDB, alertID uuid.UUID, since, at time.Time) (*caseJoin, error) {
	var row struct {
		joinedCase    `bun:",extend"`
		IndicatorUUID uuid.UUID `bun:"m_indicator,type:uuid"`
		Type          string    `bun:"m_type"`
		Value         string    `bun:"m_value"`
		Malice        string    `bun:"m_malice"`
	}
	// A case whose creating key was limited to other sources is not joined (R4-3): the alert stays
	// outside any case rather than in one that key could close.
	err := tx.NewRaw(`SELECT `+joinedCaseColumns+`, m.m_indicator, m.m_type, m.m_value, m.m_malice
		FROM case_grouping_match(?, ?) AS m JOIN cases ON cases.uuid = m.m_case
		WHERE cases.creator_allowed_sources IS NULL
		   OR (SELECT source_name FROM alerts WHERE uuid = ?) = ANY (cases.creator_allowed_sources)
		FOR UPDATE OF cases`,
		EventCaseAlertAddedAgent, alertID, since, alertID).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find the open case of alert %s: %w", alertID, mapErr(err))
	}
	return &caseJoin{kase: row.Case, subscribed: row.Subscribed, at: at, join: []uuid.UUID{alertID}, actor: Actor{Type: ActorWorkflow},
		ind: &CaseIndicator{UUID: row.IndicatorUUID, Type: row.Type, Value: row.Value, Malice: row.Malice}}, nil
}
