package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Actor types of activity events.
const (
	ActorSystem   = "system"
	ActorAPI      = "api"
	ActorMCP      = "mcp"
	ActorWorkflow = "workflow"
	ActorConsole  = "console"
)

// ActorTypes is every actor type an activity event may carry: the one list the API's enums read.
// "console" is Vigil's own door beside the contract's system, api, mcp and workflow (docs/API.md).
func ActorTypes() []string {
	return []string{ActorSystem, ActorAPI, ActorMCP, ActorWorkflow, ActorConsole}
}

// Actor is who acts, as the activity trail records it: the front door (Type: ActorAPI, ActorMCP,
// ActorConsole, ActorWorkflow or ActorSystem), the API key's prefix ("" when no key acts) and whether that key is an
// agent's (key type agent) rather than a human's. Every front door builds one (auth.Principal.Actor
// for keyed callers) and hands it to the domain services, so they write the same events.
type Actor struct {
	Type      string
	KeyPrefix string
	Agent     bool
	// KeyName, RequestID and ClientIP are for the audit trail (AuditEvent): the key's name, the
	// request's id (X-Request-ID, "" when the door has none) and the client address by the doors'
	// one proxy rule (ratelimit.Policy.ClientIP).
	KeyName   string
	RequestID string // the server's id of the request (never the client's)
	// ClientRequestID is the X-Request-ID the client sent, recorded beside RequestID, never as it.
	ClientRequestID string
	ClientIP        string
	// AllowedSources are the acting key's allowed_sources (nil: any source): the alerts of those
	// sources are the only ones it may change (security review round 4, R4-3). Not recorded.
	AllowedSources []string
}

// AllowsSource reports whether the actor may change an alert of source.
func (a Actor) AllowsSource(source string) bool {
	return a.AllowedSources == nil || slices.Contains(a.AllowedSources, source)
}

// SourceNotAllowedError: the actor's key is limited to other sources than the alert's (403
// SOURCE_NOT_ALLOWED). AlertUUID is uuid.Nil when the refusal is about an indicator or a case.
type SourceNotAllowedError struct {
	AlertUUID uuid.UUID
	Source    string
}

func (e *SourceNotAllowedError) Error() string {
	return "source " + e.Source + " is outside the key's allowed_sources"
}

// CheckSources returns a *SourceNotAllowedError for the first of sources the actor may not change.
func (a Actor) CheckSources(sources []string) error {
	for _, src := range sources {
		if !a.AllowsSource(src) {
			return &SourceNotAllowedError{Source: src}
		}
	}
	return nil
}

// KeyPrefixPtr is the key prefix as the nullable actor_key_prefix column wants it (nil when none).
func (a Actor) KeyPrefixPtr() *string {
	if a.KeyPrefix == "" {
		return nil
	}
	p := a.KeyPrefix
	return &p
}

// Event is an activity event of type typ by a, with refs.
func (a Actor) Event(typ string, refs map[string]any) ActivityEvent {
	return ActivityEvent{EventType: typ, ActorType: a.Type, ActorKeyPrefix: a.KeyPrefixPtr(), References: refs}
}

// ActivityEvent is one entry of the audit trail.
type ActivityEvent struct {
	bun.BaseModel `bun:"table:activity_events"`

	UUID              uuid.UUID  `bun:"uuid,pk,type:uuid"`
	EventType         string     `bun:"event_type"`
	ActorType         string     `bun:"actor_type"`
	ActorKeyPrefix    *string    `bun:"actor_key_prefix"`
	AlertUUID         *uuid.UUID `bun:"alert_uuid,type:uuid"`
	WorkflowUUID      *uuid.UUID `bun:"workflow_uuid,type:uuid"`
	DetectionRuleUUID *uuid.UUID `bun:"detection_rule_uuid,type:uuid"`
	// CaseUUID: the case the event is about (API.md §14); an event about one alert of a case carries
	// both AlertUUID and CaseUUID.
	CaseUUID   *uuid.UUID     `bun:"case_uuid,type:uuid"`
	References map[string]any `bun:"references,type:jsonb,nullzero"`
	CreatedAt  time.Time      `bun:"created_at"`
}

// RecordActivity inserts e using db (the store's handle or a transaction).
func (s *Store) RecordActivity(ctx context.Context, db bun.IDB, e *ActivityEvent) error {
	if db == nil {
		db = s.db
	}
	events := []ActivityEvent{*e}
	err := s.recordActivities(ctx, db, events)
	*e = events[0] // with what the record gave it (uuid, time)
	return err
}

// recordActivities inserts events in one statement using db.
func (s *Store) recordActivities(ctx context.Context, db bun.IDB, events []ActivityEvent) error {
	for i := range events {
		s.completeActivity(&events[i])
	}
	if _, err := db.NewInsert().Model(&events).Exec(ctx); err != nil {
		return fmt.Errorf("record activity %s (%d events): %w", events[0].EventType, len(events), mapErr(err))
	}
	return nil
}

// completeActivity gives e what it lacks: a uuid, its time (now) and empty references.
func (s *Store) completeActivity(e *ActivityEvent) {
	if e.UUID == uuid.Nil {
		e.UUID = uuid.New()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.Now()
	}
	if e.References == nil {
		e.References = map[string]any{}
	}
}

// ActivityFilter narrows ListActivity.
type ActivityFilter struct {
	AlertUUID  *uuid.UUID
	CaseUUID   *uuid.UUID
	EventTypes []string
	Page       Page
}

// ListActivity returns events newest first.
func (s *Store) ListActivity(ctx context.Context, f ActivityFilter) ([]ActivityEvent, int, error) {
	var events []ActivityEvent
	q := s.db.NewSelect().Model(&events).OrderExpr("created_at DESC, uuid DESC")
	if f.AlertUUID != nil {
		q = q.Where("alert_uuid = ?", *f.AlertUUID)
	}
	if f.CaseUUID != nil {
		q = q.Where("case_uuid = ?", *f.CaseUUID)
	}
	if len(f.EventTypes) > 0 {
		q = q.Where("event_type IN (?)", bun.List(f.EventTypes))
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list activity: %w", mapErr(err))
	}
	return events, int(total), nil
}
