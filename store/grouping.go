package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// The pipeline's grouping (API.md §14 "Grouping") is decided by domain/cases (cases.Grouping): which
// verdicts group, the window, which cases count as open, whether the alert may join the case found.
// The store locks and searches: FinishEnrichment locks the alert, hands its facts to the GroupFunc
// with the lookup below, and records the join the GroupFunc returns.

// GroupingAlert is the alert a finish may group, as its locked row stands: whether it is in a case
// already, its source and its indicators' verdicts (ordered by type and value).
type GroupingAlert struct {
	UUID       uuid.UUID
	SourceName string
	InCase     bool
	Malices    []string
}

// GroupingLookup is what the grouping lookup searches with: the verdicts that group, worst first
// (the worst shared indicator is named), the case statuses that count as open, and the earliest
// time one of the case's alerts sharing the indicator must have been seen.
type GroupingLookup struct {
	Malices      []string
	OpenStatuses []string
	Since        time.Time
}

// GroupingMatch is the case the lookup found, read under its row lock, and the indicator the alert
// shares with it.
type GroupingMatch struct {
	Case       Case
	Indicator  CaseIndicator
	subscribed bool // an active agent subscribes to case.alert_added
}

// GroupingLookupFunc runs the grouping lookup in the finish's transaction (nil: no case matches).
type GroupingLookupFunc func(GroupingLookup) (*GroupingMatch, error)

// GroupFunc decides, in the finish's transaction with alert a's row locked and at the finish's time
// now, the case a joins: the match lookup returned, or nil for none. It may call lookup at most
// once; any other match is refused (ErrGroupingNotLookedUp). cases.Grouping.Decide is the one.
type GroupFunc func(a GroupingAlert, now time.Time, lookup GroupingLookupFunc) (*GroupingMatch, error)

// ErrGroupingNotLookedUp: a GroupFunc returned a match its lookup did not return.
var ErrGroupingNotLookedUp = errors.New("the grouping may join only the case its lookup found")

// group runs decide for alert a inside FinishEnrichment's transaction and returns the join it
// decided (nil: none).
func (s *Store) group(ctx context.Context, tx bun.IDB, a GroupingAlert, now time.Time, decide GroupFunc) (*caseJoin, error) {
	var found []*GroupingMatch
	lookup := func(q GroupingLookup) (*GroupingMatch, error) {
		m, err := s.groupingLookup(ctx, tx, a.UUID, q)
		if m != nil {
			found = append(found, m)
		}
		return m, err
	}
	m, err := decide(a, now, lookup)
	if err != nil || m == nil {
		return nil, err
	}
	if len(found) != 1 || found[0] != m {
		return nil, fmt.Errorf("group alert %s: %w", a.UUID, ErrGroupingNotLookedUp)
	}
	ind := m.Indicator
	return &caseJoin{kase: m.Case, subscribed: m.subscribed, at: now, join: []uuid.UUID{a.UUID}, actor: Actor{Type: ActorWorkflow},
		ind: &ind}, nil
}

// groupingLookup is the pipeline's grouping lookup (API.md §14), run inside FinishEnrichment's
// transaction after the alert's row is locked: the oldest case (created_at, then case_number) whose
// status is one of q.OpenStatuses, one of whose alerts, seen (its occurred_at or, for a repeated
// alert, last_seen_at) at or after q.Since, is linked to an indicator the alert is linked to whose
// verdict is one of q.Malices. The shared indicator named is the worst such indicator of that case
// (its place in q.Malices), then by type and value, so a retried finish chooses what the first
// attempt chose. The same statement starts the join (startJoin's: the case read, whether an agent
// subscribes to case.alert_added). It returns nil when no case matches.
//
// The lookup is the function case_grouping_match (migrations 20261127020200 and 20261129045000; a
// function keeps its plan for the session, and the statement cost more to plan than to run). For
// each of the alert's hot indicators it reads the distinct cases whose alerts link it
// (alert_indicators.case_uuid, kept by migration 20261127020000's triggers, under its partial index
// alert_indicators_case_idx: one index probe per case, a loose index scan), and for each open case
// whether one of those alerts was seen within the window (stopping at the first that was). Its cost
// follows the number of cases sharing the indicator, not the number of alerts linking it outside
// cases; a large case costs more only when few of its alerts sharing the indicator are recent (the
// existence check reads them until one is). The chosen case's row is locked (FOR UPDATE, after the
// alert's: the order every join takes), so a case closed meanwhile is not joined: the function
// rechecks the row once the close commits. The statement reads the case under the same lock (FOR
// UPDATE OF cases: the row as the last commit left it, not as the statement's snapshot saw it before
// the function waited).
func (s *Store) groupingLookup(ctx context.Context, tx bun.IDB, alertID uuid.UUID, q GroupingLookup) (*GroupingMatch, error) {
	var row struct {
		joinedCase    `bun:",extend"`
		IndicatorUUID uuid.UUID `bun:"m_indicator,type:uuid"`
		Type          string    `bun:"m_type"`
		Value         string    `bun:"m_value"`
		Malice        string    `bun:"m_malice"`
	}
	err := tx.NewRaw(`SELECT `+joinedCaseColumns+`, m.m_indicator, m.m_type, m.m_value, m.m_malice
		FROM case_grouping_match(?, ?, ?::text[], ?::text[]) AS m JOIN cases ON cases.uuid = m.m_case
		FOR UPDATE OF cases`,
		EventCaseAlertAddedAgent, alertID, q.Since, pgdialectArray(q.Malices), pgdialectArray(q.OpenStatuses)).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find the open case of alert %s: %w", alertID, mapErr(err))
	}
	return &GroupingMatch{Case: row.Case, subscribed: row.Subscribed,
		Indicator: CaseIndicator{UUID: row.IndicatorUUID, Type: row.Type, Value: row.Value, Malice: row.Malice}}, nil
}
