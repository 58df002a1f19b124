package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// OutboxEntry is one pending pipeline start.
type OutboxEntry struct {
	ID        int64     `bun:"id"`
	AlertUUID uuid.UUID `bun:"alert_uuid"`
	Kind      string    `bun:"kind"`
	Attempts  int       `bun:"attempts"`
	CreatedAt time.Time `bun:"created_at"`
}

// OutboxBackoff is the wait before retrying an entry that failed attempts times: 1 s doubling, capped
// at 5 minutes.
func OutboxBackoff(attempts int) time.Duration {
	d := time.Second
	for i := 1; i < attempts && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// DispatchOutbox claims up to limit due entries (FOR UPDATE SKIP LOCKED, so dispatchers in several
// workers never take the same row), hands them to start, then in the same transaction deletes the
// entries start reported done (nil error) and reschedules the others with OutboxBackoff, attempts+1
// and last_error. start must be idempotent per entry: if the process dies before the commit, the
// rows are claimed again. It returns how many entries were claimed.
func (s *Store) DispatchOutbox(ctx context.Context, limit int, start func(ctx context.Context, entries []OutboxEntry) []error) (int, error) {
	claimed := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var entries []OutboxEntry
		err := tx.NewRaw(`SELECT id, alert_uuid, kind, attempts, created_at FROM alert_outbox
			WHERE not_before <= now() ORDER BY not_before, id LIMIT ? FOR UPDATE SKIP LOCKED`, limit).Scan(ctx, &entries)
		if err != nil {
			return fmt.Errorf("claim outbox: %w", mapErr(err))
		}
		claimed = len(entries)
		if claimed == 0 {
			return nil
		}
		errs := start(ctx, entries)
		var done []int64
		for i, e := range entries {
			var err error
			if i < len(errs) {
				err = errs[i]
			}
			if err == nil {
				done = append(done, e.ID)
				continue
			}
			msg := err.Error()
			if len(msg) > 2000 {
				msg = msg[:2000]
			}
			if _, err := tx.NewRaw(`UPDATE alert_outbox SET attempts = attempts + 1, last_error = ?,
				not_before = now() + make_interval(secs => ?) WHERE id = ?`,
				msg, OutboxBackoff(e.Attempts+1).Seconds(), e.ID).Exec(ctx); err != nil {
				return fmt.Errorf("reschedule outbox entry %d: %w", e.ID, mapErr(err))
			}
		}
		if len(done) > 0 {
			if _, err := tx.NewRaw(`DELETE FROM alert_outbox WHERE id IN (?)`, bun.In(done)).Exec(ctx); err != nil {
				return fmt.Errorf("delete %d outbox entries: %w", len(done), mapErr(err))
			}
		}
		return nil
	})
	return claimed, err
}

// EnqueueRerun commits an outbox entry that re-runs the alert's pipeline and notifies the dispatcher.
// ErrNotFound when the alert does not exist.
func (s *Store) EnqueueRerun(ctx context.Context, alertID uuid.UUID, actorType, actorKeyPrefix string) error {
	var prefix *string
	if actorKeyPrefix != "" {
		prefix = &actorKeyPrefix
	}
	var row struct {
		N     int  `bun:"n"`
		Quiet bool `bun:"quiet"`
	}
	err := s.db.NewRaw(`WITH ob AS (
			INSERT INTO alert_outbox (alert_uuid, kind) SELECT uuid, ? FROM alerts WHERE uuid = ? RETURNING alert_uuid
		), ev AS (
			INSERT INTO activity_events (event_type, actor_type, actor_key_prefix, alert_uuid)
			SELECT 'alert_enrichment_requested', ?, ?, alert_uuid FROM ob RETURNING 1
		)
		SELECT (SELECT count(*) FROM ob) + (SELECT count(*) FROM ev) AS n,
			(SELECT pg_notify(?, '') FROM ob LIMIT 1) IS NULL AS quiet`,
		OutboxRerun, alertID, actorType, prefix, OutboxChannel).Scan(ctx, &row)
	if err != nil {
		return fmt.Errorf("enqueue rerun of alert %s: %w", alertID, mapErr(err))
	}
	if row.N == 0 {
		return fmt.Errorf("alert %s: %w", alertID, ErrNotFound)
	}
	return nil
}

// OutboxPending counts entries not yet dispatched (tests, metrics).
func (s *Store) OutboxPending(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Table("alert_outbox").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count outbox: %w", mapErr(err))
	}
	return int(n), nil
}
