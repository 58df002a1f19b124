package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// OutboxEntry is one pending pipeline start, with its alert's source and severity (the pipeline's
// search attributes; "" when the alert is gone).
type OutboxEntry struct {
	ID         int64     `bun:"id"`
	AlertUUID  uuid.UUID `bun:"alert_uuid"`
	Kind       string    `bun:"kind"`
	Attempts   int       `bun:"attempts"`
	CreatedAt  time.Time `bun:"created_at"`
	SourceName string    `bun:"source_name"`
	Severity   string    `bun:"severity"`
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

// ErrOutboxDone, returned by an OutboxStart for an entry, says its work is already done (a pipeline
// that finished before the entry was replayed): the entry is deleted.
var ErrOutboxDone = errors.New("outbox entry already done")

// OutboxStart starts the work of each claimed entry and reports each outcome: nil (started: the entry
// stays, marked started, until the work deletes it), ErrOutboxDone (deleted) or another error (retried
// after OutboxBackoff). It must be idempotent per entry: if the process dies before the claim commits,
// the entries are claimed again.
type OutboxStart func(ctx context.Context, entries []OutboxEntry) []error

// claimDueSQL claims due entries not yet started, at most ?1 of them and no more than keep
// maxInFlight (?0) entries started (counted over every dispatcher): first runs (kind pipeline) before
// re-runs (kind rerun), each oldest first and each through alert_outbox_due_idx, so an alert never
// enriched yet does not wait behind a burst of re-runs; and, while alerts arrive (one created in the
// last ?3 seconds), re-runs only while fewer than ?2 of them are started: a first run, once started,
// shares the machine with every pipeline in flight, so the fewer re-runs among them the sooner it ends.
// An entry whose alert has a pipeline in flight waits for it to finish, so a re-run asked for
// meanwhile runs after it.
const claimDueSQL = `WITH started AS (
		SELECT count(*) AS n, count(*) FILTER (WHERE kind = 'rerun') AS reruns,
			CASE WHEN (SELECT max(created_at) FROM alerts) > now() - make_interval(secs => ?3) THEN ?2 ELSE ?0 END AS rerun_cap
		FROM alert_outbox WHERE started_at IS NOT NULL
	), firsts AS (
		SELECT o.id FROM alert_outbox AS o
		WHERE o.kind = 'pipeline' AND ` + claimDueWhere + `
		ORDER BY o.not_before, o.id
		LIMIT least(?1, greatest(0, ?0 - (SELECT n FROM started)))
		FOR UPDATE OF o SKIP LOCKED
	), reruns AS (
		SELECT o.id FROM alert_outbox AS o
		WHERE o.kind = 'rerun' AND ` + claimDueWhere + `
		ORDER BY o.not_before, o.id
		LIMIT greatest(0, least(?1 - (SELECT count(*) FROM firsts), ?0 - (SELECT n FROM started) - (SELECT count(*) FROM firsts),
			(SELECT rerun_cap - reruns FROM started)))
		FOR UPDATE OF o SKIP LOCKED
	)
	SELECT ` + outboxEntryFrom + `
	WHERE o.id IN (SELECT id FROM firsts UNION ALL SELECT id FROM reruns)
	ORDER BY o.kind = 'rerun', o.not_before, o.id`

// claimDueWhere: due, not started, and no entry of the same alert started.
const claimDueWhere = `o.started_at IS NULL AND o.not_before <= now()
		AND NOT EXISTS (SELECT 1 FROM alert_outbox AS r WHERE r.alert_uuid = o.alert_uuid AND r.started_at IS NOT NULL)`

// outboxEntryFrom is the select list and FROM clause of an OutboxEntry: the outbox row and its
// alert's source and severity (the pipeline's search attributes), locked FOR UPDATE OF o only.
const outboxEntryFrom = `o.id, o.alert_uuid, o.kind, o.attempts, o.created_at,
		coalesce(a.source_name, '') AS source_name, coalesce(a.severity, '') AS severity
	FROM alert_outbox AS o LEFT JOIN alerts AS a ON a.uuid = o.alert_uuid`

// claimStaleSQL claims entries started more than ?0 seconds ago whose work never deleted them, at
// most ?1 of them.
const claimStaleSQL = `SELECT ` + outboxEntryFrom + `
	WHERE o.started_at < now() - make_interval(secs => ?0) AND o.not_before <= now()
	ORDER BY o.started_at
	LIMIT ?1
	FOR UPDATE OF o SKIP LOCKED`

// OutboxCaps bound the alert outbox's started entries, counted over every dispatcher.
type OutboxCaps struct {
	InFlight int // entries started at once
	// Reruns caps the re-runs among them while alerts arrive: while an alert was created within
	// RerunsWhile. Otherwise re-runs may take every place.
	Reruns      int
	RerunsWhile time.Duration
}

// DispatchOutbox claims up to limit due entries not yet started — fewer when caps.InFlight entries
// are already started, so a backlog waits in this table instead of in Temporal, and re-runs within
// caps.Reruns while alerts arrive — with FOR UPDATE SKIP LOCKED (dispatchers in several workers never
// take the same row), hands them to start and records the outcomes in the same transaction. It
// returns how many entries were claimed.
func (s *Store) DispatchOutbox(ctx context.Context, limit int, caps OutboxCaps, start OutboxStart) (int, error) {
	return s.claimOutbox(ctx, claimDueSQL, start, caps.InFlight, limit, caps.Reruns, caps.RerunsWhile.Seconds())
}

// RecheckOutbox hands start the entries started more than olderThan ago that are still here: work
// that ended without deleting its entry (a pipeline that failed or was terminated) or is still
// running. start answers ErrOutboxDone for the first (deleted) and nil for the second (kept, its
// clock reset), so dead entries never hold a place in flight for long.
func (s *Store) RecheckOutbox(ctx context.Context, limit int, olderThan time.Duration, start OutboxStart) (int, error) {
	return s.claimOutbox(ctx, claimStaleSQL, start, olderThan.Seconds(), limit)
}

// claimOutbox claims the entries claimSQL selects (with args), hands them to start and records the
// outcomes, in one transaction.
func (s *Store) claimOutbox(ctx context.Context, claimSQL string, start OutboxStart, args ...any) (int, error) {
	claimed := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var entries []OutboxEntry
		if err := tx.NewRaw(claimSQL, args...).Scan(ctx, &entries); err != nil {
			return fmt.Errorf("claim outbox: %w", mapErr(err))
		}
		claimed = len(entries)
		if claimed == 0 {
			return nil
		}
		errs := start(ctx, entries)
		var started, done []int64
		for i, e := range entries {
			var err error
			if i < len(errs) {
				err = errs[i]
			}
			switch {
			case err == nil:
				started = append(started, e.ID)
				continue
			case errors.Is(err, ErrOutboxDone):
				done = append(done, e.ID)
				continue
			}
			if err := rescheduleEntry(ctx, tx, "alert_outbox", e.ID, e.Attempts, err); err != nil {
				return err
			}
		}
		if len(started) > 0 {
			if _, err := tx.NewRaw(`UPDATE alert_outbox SET started_at = now(), last_error = NULL WHERE id IN (?)`,
				bun.List(started)).Exec(ctx); err != nil {
				return fmt.Errorf("mark %d outbox entries started: %w", len(started), mapErr(err))
			}
		}
		if len(done) > 0 {
			if _, err := tx.NewRaw(`DELETE FROM alert_outbox WHERE id IN (?)`, bun.List(done)).Exec(ctx); err != nil {
				return fmt.Errorf("delete %d outbox entries: %w", len(done), mapErr(err))
			}
		}
		return nil
	})
	return claimed, err
}

// rescheduleEntry records a failed start of entry id of table (an outbox) and backs it off.
func rescheduleEntry(ctx context.Context, tx bun.Tx, table string, id int64, attempts int, startErr error) error {
	msg := startErr.Error()
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	if _, err := tx.NewRaw(`UPDATE ? SET attempts = attempts + 1, last_error = ?, not_before = now() + make_interval(secs => ?) WHERE id = ?`,
		bun.Ident(table), msg, OutboxBackoff(attempts+1).Seconds(), id).Exec(ctx); err != nil {
		return fmt.Errorf("reschedule %s entry %d: %w", table, id, mapErr(err))
	}
	return nil
}

// EnqueueRerun commits an outbox entry that re-runs the alert's pipeline and notifies the dispatcher;
// like an ingest's, the wake-up carries how long the statement took (the re-run's 202: the
// dispatcher's admission backs pipelines off when it slows). ErrNotFound when the alert does not
// exist.
func (s *Store) EnqueueRerun(ctx context.Context, alertID uuid.UUID, actorType, actorKeyPrefix string) error {
	began := time.Now()
	var prefix *string
	if actorKeyPrefix != "" {
		prefix = &actorKeyPrefix
	}
	var n int
	err := s.db.NewRaw(`WITH ob AS (
			INSERT INTO alert_outbox (alert_uuid, kind) SELECT uuid, ? FROM alerts WHERE uuid = ? RETURNING alert_uuid
		), ev AS (
			INSERT INTO activity_events (event_type, actor_type, actor_key_prefix, alert_uuid)
			SELECT 'alert_enrichment_requested', ?, ?, alert_uuid FROM ob RETURNING 1
		)
		SELECT (SELECT count(*) FROM ob) + (SELECT count(*) FROM ev)`,
		OutboxRerun, alertID, actorType, prefix).Scan(ctx, &n)
	if err != nil {
		return fmt.Errorf("enqueue rerun of alert %s: %w", alertID, mapErr(err))
	}
	if n == 0 {
		return fmt.Errorf("alert %s: %w", alertID, ErrNotFound)
	}
	s.wake.wakeAfter(time.Since(began))
	return nil
}

// OutboxPending counts entries whose work has not finished, started or not (tests, metrics).
func (s *Store) OutboxPending(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Table("alert_outbox").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count outbox: %w", mapErr(err))
	}
	return int(n), nil
}
