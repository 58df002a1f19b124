// Package audit owns what the configuration audit trail records (API.md §15): which resources and
// actions it names, how a change's fields are compared (Diff) and which never appear in clear
// (credentials and secrets, always "[redacted]"), and the one way a change is written with its
// event in the same transaction (Record). The owners of the configuration rules call it, whichever
// front door (REST, MCP, console) asked for the change.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/store"
)

// Resource types of audit events.
const (
	APIKey             = "api_key"
	EnrichmentProvider = "enrichment_provider"
	FieldExtraction    = "field_extraction"
	IndicatorMapping   = "indicator_mapping"
	ExtractionExcl     = "extraction_exclusions" // the never-indicator list (one resource)
	DetectionRule      = "detection_rule"
	ContextDocument    = "context_document"
	Workflow           = "workflow"
	WorkflowSecret     = "workflow_secret"
	Agent              = "agent"
	SourceIntegration  = "source_integration"
	ConsoleSession     = "console_session" // console sign-ins
	Retention          = "retention"       // the retention job's passes
	Alert              = "alert"           // deletions only: an alert's work is its own activity trail
	Case               = "case"            // deletions only, as alerts
)

// ResourceTypes lists the resource types an audit event may name (the filter's vocabulary).
func ResourceTypes() []string {
	return []string{APIKey, EnrichmentProvider, FieldExtraction, IndicatorMapping, ExtractionExcl, DetectionRule, ContextDocument,
		Workflow, WorkflowSecret, Agent, SourceIntegration, ConsoleSession, Retention, Alert, Case}
}

// Actions lists the actions an audit event may name (the filter's vocabulary).
func Actions() []string {
	return []string{store.AuditCreated, store.AuditUpdated, store.AuditDeleted, store.AuditRevoked, store.AuditRotated,
		store.AuditSignedIn, store.AuditSignInFailed, store.AuditPurged}
}

// Store runs a change and its audit event in one transaction (store.Store.Audited).
type Store interface {
	Audited(ctx context.Context, change func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error)) error
}

// Subject is what a change did, as its audit event records it: the resource's type, uuid and name,
// and the resource before and after the change (a bun model, or a pointer to one; nil when it did
// not exist before or does not after). Only, when set, limits the compared fields to these columns.
type Subject struct {
	Action        string // when set, the action instead of Record's (an upsert knows only once it ran)
	Type          string
	UUID          uuid.UUID // uuid.Nil: a resource named only by Name (a workflow secret)
	Name          string
	Before, After any
	Only          []string
}

// Record runs change through st in one transaction with the audit event of action by actor that
// records it, so the event commits exactly when the change does. An update that changed no field
// records nothing.
func Record(ctx context.Context, st Store, actor store.Actor, action string,
	change func(ctx context.Context, tx *store.Store) (Subject, error)) error {
	return st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		subj, err := change(ctx, tx)
		if err != nil {
			return nil, err
		}
		return Event(actor, action, subj), nil
	})
}

// RecordEach is Record for a change of several resources at once (a bulk create): one event per
// resource, all in the change's transaction.
func RecordEach(ctx context.Context, st Store, actor store.Actor, action string,
	change func(ctx context.Context, tx *store.Store) ([]Subject, error)) error {
	return st.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		subjects, err := change(ctx, tx)
		if err != nil {
			return nil, err
		}
		for _, subj := range subjects {
			if e := Event(actor, action, subj); e != nil {
				if err := tx.AppendAuditEvent(ctx, nil, e); err != nil {
					return nil, err
				}
			}
		}
		return nil, nil
	})
}

// Event is the audit event of action on subj by actor; nil for an update that changed nothing.
func Event(actor store.Actor, action string, subj Subject) *store.AuditEvent {
	if subj.Action != "" {
		action = subj.Action
	}
	changes := Diff(subj.Before, subj.After, subj.Only...)
	if action == store.AuditUpdated && len(changes) == 0 {
		return nil
	}
	var id *uuid.UUID
	if subj.UUID != uuid.Nil {
		u := subj.UUID
		id = &u
	}
	return actor.AuditEvent(action, subj.Type, id, subj.Name, changes)
}

// SignIn records a console sign-in, good or bad, outside any change (a failed one changes nothing):
// actor carries the client address, the request id and, when the key could be parsed, its prefix
// (and its name when it is a known key); never the key itself.
func SignIn(ctx context.Context, st Appender, actor store.Actor, keyUUID uuid.UUID, ok bool) error {
	action := store.AuditSignInFailed
	if ok {
		action = store.AuditSignedIn
	}
	e := Event(actor, action, Subject{Type: ConsoleSession, UUID: keyUUID, Name: actor.KeyName})
	if err := st.AppendAuditEvent(ctx, nil, e); err != nil {
		return fmt.Errorf("record console sign-in: %w", err)
	}
	return nil
}

// SignInFailed records a refused console sign-in (security review round 4, R4-10): the actor is the
// unauthenticated client (type console, its address and request ids, no key prefix: a prefix typed
// without the key proves nothing, and the admin's was recorded as the actor of anyone's failed
// attempt). claimed, when not "", is the prefix of an existing key the attempt named: recorded as
// changes.claimed_key_prefix, what the client claimed, not who acted.
func SignInFailed(ctx context.Context, st Appender, actor store.Actor, claimed string) error {
	actor.KeyPrefix, actor.KeyName = "", ""
	var changes map[string]store.AuditChange
	if claimed != "" {
		changes = map[string]store.AuditChange{"claimed_key_prefix": {To: claimed}}
	}
	e := actor.AuditEvent(store.AuditSignInFailed, ConsoleSession, nil, "", changes)
	if err := st.AppendAuditEvent(ctx, nil, e); err != nil {
		return fmt.Errorf("record console sign-in: %w", err)
	}
	return nil
}

// ClientRequestID is v when it is an X-Request-ID a door echoes and records as the client's
// (1..128 printable ASCII characters), else "". It is never taken as the request's own id.
func ClientRequestID(v string) string {
	if v == "" || len(v) > 128 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return ""
	}
	return v
}

// Appender writes one audit event (store.Store.AppendAuditEvent; nil db: the store's own handle).
type Appender interface {
	AppendAuditEvent(ctx context.Context, db bun.IDB, e *store.AuditEvent) error
}

// skipped are columns an audit event never lists: identities and the timestamps every write moves.
var skipped = []string{"id", "uuid", "created_at", "updated_at", "last_used_at", "deleted_at"}

// secretColumns hold credentials or secrets by name; besides them, every plain []byte column (a
// sealed value or a hash) is treated as one.
var secretColumns = []string{"key_hash", "signing_secret", "auth_header_value", "auth_config", "auth_config_sealed",
	"value_sealed", "secret", "password", "token"}

var bytesType = reflect.TypeFor[[]byte]()

// Diff compares two versions of a bun model column by column (before or after nil: created or
// deleted, and then only the columns with a value are listed) and returns the changed ones as
// {from, to}. Credentials and secrets appear only as "[redacted]" (null where there was none), so an
// event shows that a secret changed, never what it is. only, when given, limits it to those columns.
func Diff(before, after any, only ...string) map[string]store.AuditChange {
	b, a := columns(before), columns(after)
	names := make([]string, 0, len(a)+len(b))
	for n := range b {
		names = append(names, n)
	}
	for n := range a {
		if _, ok := b[n]; !ok {
			names = append(names, n)
		}
	}
	out := map[string]store.AuditChange{}
	for _, n := range names {
		if slices.Contains(skipped, n) || (len(only) > 0 && !slices.Contains(only, n)) {
			continue
		}
		fb, inB := b[n]
		fa, inA := a[n]
		if !inB && fa.zero || !inA && fb.zero || inA && inB && bytes.Equal(fb.json, fa.json) {
			continue
		}
		var ch store.AuditChange
		if inB {
			ch.From = fb.shown()
		}
		if inA {
			ch.To = fa.shown()
		}
		out[n] = ch
	}
	return out
}

type column struct {
	value  any
	json   []byte
	zero   bool
	secret bool
}

func (c column) shown() any {
	if c.secret {
		if c.zero {
			return nil // no secret, shown as such
		}
		return store.AuditRedacted
	}
	if c.json != nil {
		return json.RawMessage(c.json)
	}
	return c.value
}

// columns reads a bun model's columns by name (its bun tag); nil for nil.
func columns(v any) map[string]column {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]column{}
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := f.Tag.Get("bun")
		if !f.IsExported() || f.Anonymous || tag == "" || tag == "-" || strings.Contains(tag, "rel:") {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		fv := rv.Field(i)
		c := column{value: fv.Interface(), zero: isEmpty(fv)}
		c.secret = f.Type == bytesType || slices.Contains(secretColumns, name)
		if c.secret {
			// A secret is compared by its bytes but never shown.
			c.json = []byte(fmt.Sprint(c.value))
		} else if raw, err := json.Marshal(c.value); err == nil {
			c.json = raw
		} else {
			c.json = []byte(fmt.Sprint(c.value))
		}
		out[name] = c
	}
	return out
}

// isEmpty is the zero value, or an empty slice or map (as absent as nil for a created or deleted
// resource).
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	default:
		return v.IsZero()
	}
}
