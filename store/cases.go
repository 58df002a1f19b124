package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Case statuses (API.md §14).
const (
	CaseOpen          = "Open"
	CaseInvestigating = "Investigating"
	CaseClosed        = "Closed"
)

// CaseStatuses returns every case status in the order the API documents them.
func CaseStatuses() []string { return []string{CaseOpen, CaseInvestigating, CaseClosed} }

// CaseNumberPrefix is how a case number is shown: CASE-<n>.
const CaseNumberPrefix = "CASE-"

// Activity event types of cases. An event about one alert of a case carries both uuids (it is on
// the alert's trail and on the case's).
const (
	EventCaseCreated         = "case_created"
	EventCaseUpdated         = "case_updated" // title, description or tags
	EventCaseStatusUpdated   = "case_status_updated"
	EventCaseClosed          = "case_closed"
	EventCaseReopened        = "case_reopened"
	EventCaseSeverityUpdated = "case_severity_updated"
	EventCaseAssigned        = "case_assigned"
	EventCaseDeleted         = "case_deleted"
	// EventAlertAddedToCase: an alert joined a case by hand (REST, MCP, console); moved_from_case_uuid
	// when it left another case for it.
	EventAlertAddedToCase = "alert_added_to_case"
	// EventAlertGrouped: the pipeline's grouping put the alert into a case (references: the shared
	// indicator).
	EventAlertGrouped = "alert_grouped"
	// EventAlertRemovedFromCase: the alert left a case (removed, or moved to another: moved_to_case_uuid).
	EventAlertRemovedFromCase = "alert_removed_from_case"
)

// Agent events of cases (API.md §14).
const (
	EventCaseCreatedAgent    = "case.created"
	EventCaseUpdatedAgent    = "case.updated"
	EventCaseAlertAddedAgent = "case.alert_added"
)

// Case is one case (API.md §14). AlertCount, AlertSeverity and Malice are maintained by Postgres
// (migration 20261127010000's trigger) from the case's alerts; EffectiveSeverity is Severity when
// set, else AlertSeverity, else Pending; CaseNumber comes from a sequence. Nothing in Go writes
// those five (caseMaintained).
type Case struct {
	bun.BaseModel `bun:"table:cases"`

	UUID                uuid.UUID  `bun:"uuid,pk,type:uuid"`
	CaseNumber          int64      `bun:"case_number"`
	Title               string     `bun:"title"`
	Description         *string    `bun:"description"`
	Severity            *string    `bun:"severity"`
	AlertSeverity       *string    `bun:"alert_severity"`
	EffectiveSeverity   string     `bun:"effective_severity"`
	Malice              string     `bun:"malice"`
	Status              string     `bun:"status"`
	Assignee            *string    `bun:"assignee"`
	AssignedAt          *time.Time `bun:"assigned_at"`
	CloseClassification *string    `bun:"close_classification"`
	Tags                []string   `bun:"tags,array"`
	AlertCount          int        `bun:"alert_count"`
	CreatedAt           time.Time  `bun:"created_at"`
	UpdatedAt           time.Time  `bun:"updated_at"`
	ClosedAt            *time.Time `bun:"closed_at"`
	// CreatorAllowedSources are the creating key's allowed_sources (nil: any): the grouping joins
	// only alerts of those sources (cases.Grouping).
	CreatorAllowedSources []string `bun:"creator_allowed_sources,array"`
}

// caseMaintained are the columns of Case Postgres writes (the number's sequence, the trigger's
// aggregates, the generated severity): never in an INSERT.
var caseMaintained = []string{"case_number", "alert_severity", "effective_severity", "malice", "alert_count"}

// Number is the case number as shown: CASE-<n>.
func (c Case) Number() string { return FormatCaseNumber(c.CaseNumber) }

// FormatCaseNumber shows n as CASE-<n>.
func FormatCaseNumber(n int64) string { return CaseNumberPrefix + strconv.FormatInt(n, 10) }

// ParseCaseNumber reads CASE-<n> (or <n>, any case) back; ok is false for anything else.
func ParseCaseNumber(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if len(s) >= len(CaseNumberPrefix) && strings.EqualFold(s[:len(CaseNumberPrefix)], CaseNumberPrefix) {
		s = s[len(CaseNumberPrefix):]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// caseFacts is the case as agent events and activity references name it.
func caseFacts(c Case) map[string]any {
	return map[string]any{"uuid": c.UUID, "case_number": c.Number(), "title": c.Title, "status": c.Status,
		"severity": c.EffectiveSeverity, "assignee": c.Assignee}
}

// GetCase loads case id (ErrNotFound when it is not there).
func (s *Store) GetCase(ctx context.Context, id uuid.UUID) (Case, error) {
	return getCase(ctx, s.db, id, false)
}

func getCase(ctx context.Context, db bun.IDB, id uuid.UUID, lock bool) (Case, error) {
	var c Case
	q := db.NewSelect().Model(&c).Where("uuid = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return Case{}, fmt.Errorf("case %s: %w", id, mapErr(err))
	}
	return c, nil
}

// CaseExists reports whether case id exists (ErrNotFound otherwise).
func (s *Store) CaseExists(ctx context.Context, id uuid.UUID) error {
	ok, err := s.db.NewSelect().Model((*Case)(nil)).Where("uuid = ?", id).Exists(ctx)
	if err != nil {
		return fmt.Errorf("case %s exists: %w", id, mapErr(err))
	}
	if !ok {
		return fmt.Errorf("case %s: %w", id, ErrNotFound)
	}
	return nil
}

// CaseIndicator is the indicator a grouped alert shares with its case.
type CaseIndicator struct {
	UUID   uuid.UUID `json:"uuid"`
	Type   string    `json:"type"`
	Value  string    `json:"value"`
	Malice string    `json:"malice"`
}

// JoiningAlert is an alert a join asks for, as its locked row stands: the case it is in (nil: none)
// and its source.
type JoiningAlert struct {
	UUID       uuid.UUID  `bun:"uuid,type:uuid"`
	CaseUUID   *uuid.UUID `bun:"case_uuid,type:uuid"`
	SourceName string     `bun:"source_name"`
}

// JoinFunc decides, on the locked rows of the alerts a join asks for (uuid order), which of them join
// case caseID; an error refuses the whole join and nothing is written. The store locks, the domain
// decides: cases.DecideJoin is the one (an alert is in at most one case unless the request moves it,
// an actor's allowed_sources).
type JoinFunc func(caseID uuid.UUID, alerts []JoiningAlert) ([]uuid.UUID, error)

// ErrNoJoinDecision: a join asked of the store without the domain's decision (a nil JoinFunc), or
// with a decision naming an alert the join did not lock. Nothing is written.
var ErrNoJoinDecision = errors.New("a case join needs the case rules' decision on the alerts it locked")

// joinCase joins alerts to case caseID in db, the caller's transaction, as decide decides on their
// locked rows, and returns the alerts that joined, in uuid order; decide's error is the join's. A
// missing alert or case is ErrNotFound. The alert rows are locked first, then the case row (always
// this order, caseJoin). Case creation and AddAlertsToCase join through it.
func (s *Store) joinCase(ctx context.Context, db bun.IDB, caseID uuid.UUID, alerts []uuid.UUID, decide JoinFunc, actor Actor) ([]uuid.UUID, error) {
	if decide == nil {
		return nil, ErrNoJoinDecision
	}
	var current []JoiningAlert
	// Locked in uuid order, so concurrent joins of overlapping alerts cannot deadlock.
	err := db.NewSelect().Table("alerts").Column("uuid", "case_uuid", "source_name").Where("uuid IN (?)", bun.List(alerts)).OrderExpr("uuid").
		For("NO KEY UPDATE").Scan(ctx, &current)
	if err != nil {
		return nil, fmt.Errorf("lock %d alerts: %w", len(alerts), mapErr(err))
	}
	if len(current) < len(slices.Compact(slices.SortedFunc(slices.Values(alerts), compareUUID))) {
		found := map[uuid.UUID]bool{}
		for _, a := range current {
			found[a.UUID] = true
		}
		for _, a := range alerts {
			if !found[a] {
				return nil, fmt.Errorf("alert %s: %w", a, ErrNotFound)
			}
		}
	}
	decided, err := decide(caseID, slices.Clone(current))
	if err != nil {
		return nil, err
	}
	locked := make(map[uuid.UUID]JoiningAlert, len(current))
	for _, a := range current {
		locked[a.UUID] = a
	}
	var join []uuid.UUID
	left := map[uuid.UUID]uuid.UUID{} // alert → the case it leaves
	for _, id := range decided {
		a, ok := locked[id]
		if !ok {
			return nil, fmt.Errorf("join alert %s to case %s: %w", id, caseID, ErrNoJoinDecision)
		}
		delete(locked, id) // each alert joins once
		if a.CaseUUID != nil && *a.CaseUUID == caseID {
			continue // in the case already: nothing to write
		}
		if a.CaseUUID != nil {
			left[a.UUID] = *a.CaseUUID
		}
		join = append(join, a.UUID)
	}
	slices.SortFunc(join, compareUUID)
	if len(join) == 0 {
		if _, err := getCase(ctx, db, caseID, false); err != nil {
			return nil, err
		}
		return nil, nil
	}
	j, err := s.startJoin(ctx, db, caseID, join, left, actor)
	if err != nil {
		return nil, err
	}
	events := j.events()
	// The alerts' case_uuid and updated_at written (the case's aggregates and updated_at follow by
	// trigger) and their events recorded in one statement.
	moved := db.NewUpdate().Table("alerts").Set("case_uuid = ?, updated_at = ?", caseID, j.at).Where("uuid IN (?)", bun.List(join))
	if _, err := db.NewInsert().With("moved", moved).Model(&events).Exec(ctx); err != nil {
		return nil, fmt.Errorf("put %d alerts into case %s: %w", len(join), caseID, mapErr(err))
	}
	return join, s.raiseJoin(ctx, db, j)
}

// caseJoin is alerts joining a case: what every join records, by hand (joinCase) or by the pipeline's
// grouping (FinishEnrichment). Every join writes each alert's case_uuid with its updated_at at the
// join's time (the pipeline in the finish's own update of the alert); the cases' trigger then adds
// the alert to the case's aggregates and moves the case's updated_at, in one write of the case row
// (migration 20261128010000). The rest is the one rule of a join's record: the case row locked
// first (startJoin, the grouping's startGrouping), the activity events (events) and
// case.alert_added (raiseJoin).
type caseJoin struct {
	kase       Case
	subscribed bool // an active agent subscribes to case.alert_added
	at         time.Time
	join       []uuid.UUID
	left       map[uuid.UUID]uuid.UUID // a moved alert → the case it left
	ind        *CaseIndicator          // the indicator a grouped alert shares with the case
	actor      Actor
}

// joinedCase is the row a join's first statement reads: the case, locked, and whether an agent
// subscribes to case.alert_added.
type joinedCase struct {
	Case       `bun:",extend"`
	Subscribed bool `bun:"subscribed"`
}

// joinedCaseColumns selects a joinedCase; its one argument is EventCaseAlertAddedAgent.
const joinedCaseColumns = `cases.*, ` + agentsSubscribedSQL + ` AS subscribed`

// startJoin locks case caseID (after the joining alerts' row locks: the order every join takes) and
// reads it and whether an agent subscribes to case.alert_added, in one statement. ErrNotFound when
// the case is gone.
func (s *Store) startJoin(ctx context.Context, db bun.IDB, caseID uuid.UUID, join []uuid.UUID, left map[uuid.UUID]uuid.UUID, actor Actor) (caseJoin, error) {
	var row joinedCase
	err := db.NewRaw(`SELECT `+joinedCaseColumns+` FROM cases WHERE uuid = ? FOR UPDATE`, EventCaseAlertAddedAgent, caseID).Scan(ctx, &row)
	if err != nil {
		return caseJoin{}, fmt.Errorf("case %s: %w", caseID, mapErr(err))
	}
	return caseJoin{kase: row.Case, subscribed: row.Subscribed, at: s.Now(), join: join, left: left, actor: actor}, nil
}

// indicatorRef is the shared indicator as the join's events name it (nil: none).
func (j caseJoin) indicatorRef() map[string]any {
	if j.ind == nil {
		return nil
	}
	return map[string]any{"uuid": j.ind.UUID.String(), "type": j.ind.Type, "value": j.ind.Value, "malice": j.ind.Malice}
}

// events are the join's activity events, at the join's time: one per alert on the alert
// and the case (alert_grouped with the shared indicator, or alert_added_to_case), plus
// alert_removed_from_case on the case a moved alert left.
func (j caseJoin) events() []ActivityEvent {
	c, indRef := j.kase, j.indicatorRef()
	typ := EventAlertAddedToCase
	if indRef != nil {
		typ = EventAlertGrouped
	}
	events := make([]ActivityEvent, 0, len(j.join)+len(j.left))
	for _, a := range j.join {
		refs := map[string]any{"case_uuid": c.UUID.String(), "case_number": c.Number()}
		if indRef != nil {
			refs["indicator"] = indRef
		}
		if from, ok := j.left[a]; ok {
			refs["moved_from_case_uuid"] = from.String()
			e := j.actor.Event(EventAlertRemovedFromCase, map[string]any{"case_uuid": from.String(), "moved_to_case_uuid": c.UUID.String()})
			e.AlertUUID, e.CaseUUID = &a, &from
			events = append(events, e)
		}
		e := j.actor.Event(typ, refs)
		e.AlertUUID, e.CaseUUID = &a, &c.UUID
		events = append(events, e)
	}
	for i := range events {
		events[i].UUID, events[i].CreatedAt = uuid.New(), j.at
	}
	return events
}

// raiseJoin raises case.alert_added for each joining alert to the agents subscribed (the start
// outbox, committed with db).
func (s *Store) raiseJoin(ctx context.Context, db bun.IDB, j caseJoin) error {
	if !j.subscribed {
		return nil
	}
	c, indRef := j.kase, j.indicatorRef()
	for _, a := range j.join {
		facts := map[string]any{"case": caseFacts(c), "alert_uuid": a, "how": "added",
			"actor": map[string]any{"type": j.actor.Type, "key_prefix": j.actor.KeyPrefixPtr(), "agent": j.actor.Agent}}
		if indRef != nil {
			facts["how"], facts["indicator"] = "grouped", indRef
		}
		if from, ok := j.left[a]; ok {
			facts["moved_from_case_uuid"] = from
		}
		alertID := a
		if _, err := s.raiseSubscribedAgentEvent(ctx, db, &AgentEvent{Event: EventCaseAlertAddedAgent, AlertUUID: &alertID, CaseUUID: &c.UUID}, facts); err != nil {
			return err
		}
	}
	return nil
}

func compareUUID(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) }

// CaseCreate is what CreateCase writes: the case (uuid, number and maintained columns are filled)
// and the alerts that join it at once, as Join decides (cases.DecideJoin; needed when Alerts is not
// empty).
type CaseCreate struct {
	Case   *Case
	Alerts []uuid.UUID
	Join   JoinFunc
	Actor  Actor
}

// CreateCase inserts the case, records case_created, raises case.created, and joins each alert
// (joinCase, in uuid order so concurrent requests lock alerts alike), all in one transaction: an
// alert Join refuses (its error) or a missing one (ErrNotFound) creates nothing. The case is returned as stored after its alerts joined.
func (s *Store) CreateCase(ctx context.Context, in CaseCreate) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c := in.Case
		if c.UUID == uuid.Nil {
			c.UUID = uuid.New()
		}
		now := s.Now()
		c.CreatedAt, c.UpdatedAt = now, now
		if c.Status == "" {
			c.Status = CaseOpen
		}
		if c.Tags == nil {
			c.Tags = []string{}
		}
		if c.Assignee != nil && c.AssignedAt == nil {
			c.AssignedAt = &now
		}
		if _, err := tx.NewInsert().Model(c).ExcludeColumn(caseMaintained...).Returning("*").Exec(ctx); err != nil {
			return fmt.Errorf("insert case: %w", mapErr(err))
		}
		e := in.Actor.Event(EventCaseCreated, map[string]any{"case_number": c.Number(), "title": c.Title})
		e.CaseUUID, e.CreatedAt = &c.UUID, now
		if err := s.RecordActivity(ctx, tx, &e); err != nil {
			return err
		}
		if len(in.Alerts) > 0 {
			if _, err := s.joinCase(ctx, tx, c.UUID, in.Alerts, in.Join, in.Actor); err != nil {
				return err
			}
		}
		stored, err := getCase(ctx, tx, c.UUID, false)
		if err != nil {
			return err
		}
		*c = stored
		id := c.UUID
		_, err = s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventCaseCreatedAgent, CaseUUID: &id},
			map[string]any{"case": caseFacts(*c), "alert_uuids": in.Alerts,
				"actor": map[string]any{"type": in.Actor.Type, "key_prefix": in.Actor.KeyPrefixPtr(), "agent": in.Actor.Agent}})
		return err
	})
}

// CaseAdded is what AddAlertsToCase did: the alerts that joined (in the order asked) and the case
// as it stands after.
type CaseAdded struct {
	Case   Case
	Joined []uuid.UUID
}

// AddAlertsToCase joins alerts to case id as join decides on their locked rows (joinCase,
// cases.DecideJoin) in one transaction: all join or, when one is missing or join refuses, none does.
func (s *Store) AddAlertsToCase(ctx context.Context, id uuid.UUID, alerts []uuid.UUID, join JoinFunc, actor Actor) (CaseAdded, error) {
	var out CaseAdded
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := getCase(ctx, tx, id, false); err != nil {
			return err
		}
		joined, err := s.joinCase(ctx, tx, id, alerts, join, actor)
		if err != nil {
			return err
		}
		in := map[uuid.UUID]bool{}
		for _, a := range joined {
			in[a] = true
		}
		for _, a := range alerts {
			if in[a] {
				out.Joined = append(out.Joined, a)
			}
		}
		c, err := getCase(ctx, tx, id, false)
		out.Case = c
		return err
	})
	return out, err
}

// RemoveAlertFromCase takes alert alertID out of case id, recording alert_removed_from_case on both.
// An alert that is not in the case is ErrNotFound.
func (s *Store) RemoveAlertFromCase(ctx context.Context, id, alertID uuid.UUID, actor Actor) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var sources []string
		err := tx.NewUpdate().Table("alerts").Set("case_uuid = NULL").Where("uuid = ?", alertID).Where("case_uuid = ?", id).
			Returning("source_name").Scan(ctx, &sources)
		if err != nil {
			return fmt.Errorf("remove alert %s from case %s: %w", alertID, id, mapErr(err))
		}
		if len(sources) == 0 {
			return fmt.Errorf("alert %s in case %s: %w", alertID, id, ErrNotFound)
		}
		if !actor.AllowsSource(sources[0]) { // the update is rolled back
			return &SourceNotAllowedError{AlertUUID: alertID, Source: sources[0]}
		}
		now := s.Now()
		if _, err := tx.NewUpdate().Table("cases").Set("updated_at = ?", now).Where("uuid = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("touch case %s: %w", id, mapErr(err))
		}
		e := actor.Event(EventAlertRemovedFromCase, map[string]any{"case_uuid": id.String()})
		e.AlertUUID, e.CaseUUID, e.CreatedAt = &alertID, &id, now
		return s.RecordActivity(ctx, tx, &e)
	})
}

// CaseChange is what a PatchCase callback decides: the columns to write, the activity events to
// record and, when agents hear of it, the facts of the case.updated event.
type CaseChange struct {
	Columns []string
	Events  []ActivityEvent
	Updated map[string]any
}

// PatchCase loads case id under a row lock, lets decide compute the change on it, and writes the
// columns, events and case.updated in the same transaction. decide's error aborts unchanged.
func (s *Store) PatchCase(ctx context.Context, id uuid.UUID, decide func(c *Case, now time.Time) (CaseChange, error)) (Case, error) {
	var c Case
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if c, err = getCase(ctx, tx, id, true); err != nil {
			return err
		}
		now := s.Now()
		ch, err := decide(&c, now)
		if err != nil {
			return err
		}
		if len(ch.Columns) > 0 {
			c.UpdatedAt = now
			if _, err := tx.NewUpdate().Model(&c).Column(append(ch.Columns, "updated_at")...).WherePK().Returning("*").Exec(ctx); err != nil {
				return fmt.Errorf("update case %s: %w", id, mapErr(err))
			}
		}
		if len(ch.Events) > 0 {
			events := make([]ActivityEvent, len(ch.Events))
			for i, e := range ch.Events {
				e.UUID, e.CaseUUID, e.CreatedAt = uuid.New(), &c.UUID, now
				if e.References == nil {
					e.References = map[string]any{}
				}
				events[i] = e
			}
			if _, err := tx.NewInsert().Model(&events).Exec(ctx); err != nil {
				return fmt.Errorf("record %d activity events of case %s: %w", len(events), id, mapErr(err))
			}
		}
		if ch.Updated != nil {
			facts := map[string]any{"case": caseFacts(c)}
			for k, v := range ch.Updated {
				facts[k] = v
			}
			if _, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventCaseUpdatedAgent, CaseUUID: &c.UUID}, facts); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Case{}, err
	}
	return c, nil
}

// DeleteCase removes case id: its alerts stay and leave it (alerts.case_uuid becomes NULL, each with
// alert_removed_from_case), its comments go with it, and case_deleted keeps its number and title in
// the activity trail. The case's alerts are locked before the case, the order joinCase takes.
func (s *Store) DeleteCase(ctx context.Context, id uuid.UUID, actor Actor) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var alertIDs []uuid.UUID
		if err := tx.NewSelect().Table("alerts").Column("uuid").Where("case_uuid = ?", id).OrderExpr("uuid").
			For("NO KEY UPDATE").Scan(ctx, &alertIDs); err != nil {
			return fmt.Errorf("lock the alerts of case %s: %w", id, mapErr(err))
		}
		c, err := getCase(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Case)(nil)).Where("uuid = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("delete case %s: %w", id, mapErr(err))
		}
		now := s.Now()
		events := []ActivityEvent{}
		e := actor.Event(EventCaseDeleted, map[string]any{"case_number": c.Number(), "title": c.Title, "alert_count": len(alertIDs)})
		e.CaseUUID = &c.UUID
		events = append(events, e)
		for _, a := range alertIDs {
			e := actor.Event(EventAlertRemovedFromCase, map[string]any{"case_uuid": id.String(), "case_deleted": true})
			e.AlertUUID, e.CaseUUID = &a, &c.UUID
			events = append(events, e)
		}
		for i := range events {
			events[i].UUID, events[i].CreatedAt = uuid.New(), now
		}
		if _, err := tx.NewInsert().Model(&events).Exec(ctx); err != nil {
			return fmt.Errorf("record the deletion of case %s: %w", id, mapErr(err))
		}
		// In the audit trail too (R4-10), with the same transaction.
		return s.AppendAuditEvent(ctx, tx, actor.AuditEvent(AuditDeleted, "case", &id, c.Title, map[string]AuditChange{
			"case_number": {From: c.Number()}, "status": {From: c.Status}, "alert_count": {From: len(alertIDs)}}))
	})
}

// CaseAlertIDs lists the uuids of case id's alerts, oldest occurrence first; openOnly leaves out the
// Closed ones.
func (s *Store) CaseAlertIDs(ctx context.Context, id uuid.UUID, openOnly bool) ([]uuid.UUID, error) {
	var out []uuid.UUID
	q := s.db.NewSelect().Table("alerts").Column("uuid").Where("case_uuid = ?", id).OrderExpr("occurred_at ASC, uuid ASC")
	if openOnly {
		q = q.Where("status <> ?", StatusClosed)
	}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("alerts of case %s: %w", id, mapErr(err))
	}
	return out, nil
}

// CaseFilter narrows ListCases. Empty lists do not filter.
type CaseFilter struct {
	Statuses   []string
	Severities []string // the effective severity
	Assignees  []string
	Unassigned bool
	Query      string // case-insensitive substring of the title or description, or a case number (CASE-12)
	SortBy     string // case_number, severity, status, updated_at, created_at
	SortDesc   bool
	Page       Page
}

// caseSortColumns maps the API's sort_by values to SQL. Severity and status sort by rank.
var caseSortColumns = map[string]string{
	"case_number": "case_number",
	"severity":    "array_position(ARRAY['Pending','Informational','Low','Medium','High','Critical'], effective_severity)",
	"status":      "array_position(ARRAY['Open','Investigating','Closed'], status)",
	"updated_at":  "updated_at",
	"created_at":  "created_at",
}

// CaseSortFields lists the accepted CaseFilter.SortBy values.
func CaseSortFields() []string {
	return []string{"case_number", "severity", "status", "updated_at", "created_at"}
}

// ListCases returns one page of cases and the total, each read bounded (boundedRead).
func (s *Store) ListCases(ctx context.Context, f CaseFilter) ([]Case, int, error) {
	var out []Case
	var total int
	err := s.boundedRead(ctx, func(ctx context.Context, db bun.IDB) error {
		if err := caseListQuery(db, f, &out).Limit(f.Page.Limit()).Offset(f.Page.Offset()).Scan(ctx); err != nil {
			return fmt.Errorf("list cases: %w", mapErr(err))
		}
		return nil
	}, func(ctx context.Context, db bun.IDB) error {
		var none []Case
		n, err := caseListQuery(db, f, &none).Count(ctx)
		if err != nil {
			return fmt.Errorf("count cases: %w", mapErr(err))
		}
		total = int(n)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []Case{}
	}
	return out, total, nil
}

func caseListQuery(db bun.IDB, f CaseFilter, out *[]Case) *bun.SelectQuery {
	q := db.NewSelect().Model(out)
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if len(f.Severities) > 0 {
		q = q.Where("effective_severity IN (?)", bun.List(f.Severities))
	}
	if len(f.Assignees) > 0 || f.Unassigned {
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			if len(f.Assignees) > 0 {
				q = q.WhereOr("assignee IN (?)", bun.List(f.Assignees))
			}
			if f.Unassigned {
				q = q.WhereOr("assignee IS NULL")
			}
			return q
		})
	}
	if f.Query != "" {
		pat := "%" + escapeLike(strings.ToLower(f.Query)) + "%"
		if n, ok := ParseCaseNumber(f.Query); ok {
			q = q.Where("(case_number = ? OR lower(title) LIKE ? ESCAPE '\\' OR lower(description) LIKE ? ESCAPE '\\')", n, pat, pat)
		} else {
			q = q.Where("(lower(title) LIKE ? ESCAPE '\\' OR lower(description) LIKE ? ESCAPE '\\')", pat, pat)
		}
	}
	col, ok := caseSortColumns[f.SortBy]
	if !ok {
		col = "updated_at"
	}
	dir := " ASC"
	if f.SortDesc {
		dir = " DESC"
	}
	return q.OrderExpr(col + dir).OrderExpr("uuid" + dir)
}

// CaseIndicatorRow is one distinct indicator of a case's alerts, with how many of them carry it.
type CaseIndicatorRow struct {
	UUID       uuid.UUID `bun:"uuid,type:uuid" json:"uuid"`
	Type       string    `bun:"type" json:"type"`
	Value      string    `bun:"value" json:"value"`
	Malice     string    `bun:"malice" json:"malice"`
	AlertCount int       `bun:"alert_count" json:"alert_count"`
}

// MaxCaseIndicators bounds the indicators a case page lists (worst malice first).
const MaxCaseIndicators = 500

// CaseIndicators lists the distinct indicators of case id's alerts, worst malice first, then those
// shared by most alerts, at most MaxCaseIndicators.
func (s *Store) CaseIndicators(ctx context.Context, id uuid.UUID) ([]CaseIndicatorRow, error) {
	out := []CaseIndicatorRow{}
	err := s.db.NewRaw(`SELECT i.uuid, i.type, i.value, i.malice, count(*)::integer AS alert_count
		FROM alerts AS a JOIN alert_indicators AS ai ON ai.alert_uuid = a.uuid JOIN indicators AS i ON i.uuid = ai.indicator_uuid
		WHERE a.case_uuid = ?
		GROUP BY i.uuid, i.type, i.value, i.malice
		ORDER BY array_position(ARRAY['Malicious','Suspicious','Benign','Pending'], i.malice), count(*) DESC, i.type, i.value
		LIMIT ?`, id, MaxCaseIndicators).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("indicators of case %s: %w", id, mapErr(err))
	}
	return out, nil
}

// CaseStats are the case figures of the metrics (API.md §14, issue 30): the cases open now (not
// Closed) by their severity, every severity present, and of the cases whose latest close is in
// [from, to) how many and the mean seconds from creation to that close (nil when none).
type CaseStats struct {
	Open           int
	OpenBySeverity map[string]int
	Closed         int
	MTTCSeconds    *float64
}

// CaseStats reads the case figures in one statement (cases_status_idx and a scan of the closed
// window; 10 000 cases read in a few milliseconds).
func (s *Store) CaseStats(ctx context.Context, from, to time.Time) (CaseStats, error) {
	return caseStats(ctx, s.db, from, to)
}

func caseStats(ctx context.Context, db bun.IDB, from, to time.Time) (CaseStats, error) {
	out := CaseStats{OpenBySeverity: map[string]int{}}
	for _, sev := range []string{"Pending", "Informational", "Low", "Medium", "High", "Critical"} {
		out.OpenBySeverity[sev] = 0
	}
	var rows []struct {
		Severity string `bun:"severity"`
		N        int    `bun:"n"`
	}
	if err := db.NewRaw(`SELECT effective_severity AS severity, count(*)::integer AS n FROM cases WHERE status <> ? GROUP BY 1`, CaseClosed).
		Scan(ctx, &rows); err != nil {
		return CaseStats{}, fmt.Errorf("open cases: %w", mapErr(err))
	}
	for _, r := range rows {
		out.OpenBySeverity[r.Severity] += r.N
		out.Open += r.N
	}
	var closed struct {
		N    int      `bun:"n"`
		Mean *float64 `bun:"mean"`
	}
	if err := db.NewRaw(`SELECT count(*)::integer AS n, avg(extract(epoch FROM closed_at - created_at))::float8 AS mean
		FROM cases WHERE status = ? AND closed_at >= ? AND closed_at < ?`, CaseClosed, from, to).Scan(ctx, &closed); err != nil {
		return CaseStats{}, fmt.Errorf("closed cases: %w", mapErr(err))
	}
	out.Closed, out.MTTCSeconds = closed.N, closed.Mean
	return out, nil
}

// CaseAlertSources are the distinct sources of case id's alerts (a missing case has none).
func (s *Store) CaseAlertSources(ctx context.Context, id uuid.UUID) ([]string, error) {
	var out []string
	if err := s.db.NewSelect().Table("alerts").ColumnExpr("DISTINCT source_name").Where("case_uuid = ?", id).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("sources of case %s: %w", id, mapErr(err))
	}
	return out, nil
}

// IndicatorAlertSources are the distinct sources of the alerts linked to indicator id: the alerts an
// override of its malice reaches.
func (s *Store) IndicatorAlertSources(ctx context.Context, id uuid.UUID) ([]string, error) {
	var out []string
	err := s.db.NewRaw(`SELECT DISTINCT a.source_name FROM alert_indicators ai JOIN alerts a ON a.uuid = ai.alert_uuid
		WHERE ai.indicator_uuid = ?`, id).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("sources of indicator %s: %w", id, mapErr(err))
	}
	return out, nil
}
