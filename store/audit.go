package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Audit actions (API.md §15).
const (
	AuditCreated      = "created"
	AuditUpdated      = "updated"
	AuditDeleted      = "deleted"
	AuditRevoked      = "revoked"
	AuditRotated      = "rotated"
	AuditSignedIn     = "signed_in"
	AuditSignInFailed = "sign_in_failed"
	AuditPurged       = "purged"
)

// AuditRedacted stands in the changes of an audit event for a secret value or a credential.
const AuditRedacted = "[redacted]"

// AuditChange is one changed field of an audit event: its value before and after (nil when the
// resource did not exist before or does not after).
type AuditChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// AuditEvent is one entry of the configuration audit trail (table audit_events; API.md §15). The
// table is append-only: the database refuses UPDATE, DELETE and TRUNCATE outside the retention job's
// transaction (PurgeAuditBefore).
type AuditEvent struct {
	bun.BaseModel `bun:"table:audit_events"`

	UUID           uuid.UUID              `bun:"uuid,pk,type:uuid"`
	Action         string                 `bun:"action"`
	ResourceType   string                 `bun:"resource_type"`
	ResourceUUID   *uuid.UUID             `bun:"resource_uuid,type:uuid"`
	ResourceName   string                 `bun:"resource_name"`
	ActorType      string                 `bun:"actor_type"`
	ActorKeyPrefix *string                `bun:"actor_key_prefix"`
	ActorKeyName   *string                `bun:"actor_key_name"`
	Changes        map[string]AuditChange `bun:"changes,type:jsonb"`
	RequestID      *string                `bun:"request_id"` // the server's id of the request
	// ClientRequestID is the X-Request-ID the client sent (1..128 printable ASCII), its own words.
	ClientRequestID *string   `bun:"client_request_id"`
	ClientIP        *string   `bun:"client_ip"`
	CreatedAt       time.Time `bun:"created_at"`
}

// InTx runs fn with a Store bound to one transaction: every method fn calls on tx runs in it, and it
// commits when fn returns nil (a Store already bound to a transaction nests a savepoint).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
		bound := *s
		bound.db = btx
		return fn(ctx, &bound)
	})
}

// Audited runs a configuration change and its audit event in one transaction: change makes the
// change through tx and returns the event that records it (nil: nothing changed, nothing to record).
// An error from change, or from writing the event, rolls both back.
func (s *Store) Audited(ctx context.Context, change func(ctx context.Context, tx *Store) (*AuditEvent, error)) error {
	return s.InTx(ctx, func(ctx context.Context, tx *Store) error {
		e, err := change(ctx, tx)
		if err != nil || e == nil {
			return err
		}
		return tx.AppendAuditEvent(ctx, nil, e)
	})
}

// AuditEvent is an audit event of action on a resource, by a (who, from which request and address).
func (a Actor) AuditEvent(action, resourceType string, id *uuid.UUID, name string, changes map[string]AuditChange) *AuditEvent {
	return &AuditEvent{Action: action, ResourceType: resourceType, ResourceUUID: id, ResourceName: name,
		ActorType: a.Type, ActorKeyPrefix: a.KeyPrefixPtr(), ActorKeyName: optional(a.KeyName),
		Changes: changes, RequestID: optional(a.RequestID), ClientRequestID: optional(a.ClientRequestID), ClientIP: optional(a.ClientIP)}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AppendAuditEvent inserts e using db: the caller's transaction, so the event commits or rolls back
// with the change it records (nil: the store's handle, for events that record no change of a row,
// such as a sign-in).
func (s *Store) AppendAuditEvent(ctx context.Context, db bun.IDB, e *AuditEvent) error {
	if db == nil {
		db = s.db
	}
	if e.UUID == uuid.Nil {
		e.UUID = uuid.New()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.Now()
	}
	if e.Changes == nil {
		e.Changes = map[string]AuditChange{}
	}
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("append audit event %s %s: %w", e.ResourceType, e.Action, mapErr(err))
	}
	return nil
}

// AuditFilter narrows ListAuditEvents; empty fields do not filter.
type AuditFilter struct {
	ResourceTypes  []string
	Actions        []string
	ActorKeyPrefix string
	From, To       *time.Time
	Page           Page
}

// ListAuditEvents returns audit events newest first, with the total that match.
func (s *Store) ListAuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, int, error) {
	var events []AuditEvent
	q := s.db.NewSelect().Model(&events).OrderExpr("created_at DESC, uuid DESC")
	if len(f.ResourceTypes) > 0 {
		q = q.Where("resource_type IN (?)", bun.List(f.ResourceTypes))
	}
	if len(f.Actions) > 0 {
		q = q.Where("action IN (?)", bun.List(f.Actions))
	}
	if f.ActorKeyPrefix != "" {
		q = q.Where("actor_key_prefix = ?", f.ActorKeyPrefix)
	}
	if f.From != nil {
		q = q.Where("created_at >= ?", *f.From)
	}
	if f.To != nil {
		q = q.Where("created_at <= ?", *f.To)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list audit events: %w", mapErr(err))
	}
	return events, int(total), nil
}

// PurgeAuditBefore deletes at most limit audit events created before cutoff, in one transaction
// that sets vigil.audit_purge (the one exception the append-only trigger allows), and returns how
// many it deleted. The retention job calls it in batches.
func (s *Store) PurgeAuditBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		n, err = purgeAudit(ctx, tx, cutoff, limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge audit events before %s: %w", cutoff.Format(time.RFC3339), mapErr(err))
	}
	return n, nil
}

// purgeAudit deletes at most limit audit events created before cutoff in tx, which it marks with
// vigil.audit_purge (SET LOCAL: the one exception the append-only trigger allows, ending with tx).
func purgeAudit(ctx context.Context, tx bun.Tx, cutoff time.Time, limit int) (int, error) {
	if _, err := tx.ExecContext(ctx, "SET LOCAL vigil.audit_purge = 'on'"); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM audit_events WHERE uuid IN (
		SELECT uuid FROM audit_events WHERE created_at < ? ORDER BY created_at LIMIT ?)`, cutoff, limit)
	if err != nil {
		return 0, err
	}
	rows, err := res.RowsAffected()
	return int(rows), err
}
