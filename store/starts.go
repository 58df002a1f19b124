package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Kinds of start_outbox entries: what the dispatcher starts.
const (
	// StartWorkflowRun starts workflow-run-<subject> (a run committed by execute).
	StartWorkflowRun = "workflow_run"
	// StartIndicatorEnrichment starts enrich-indicator-<subject> (an indicator added to an alert with
	// enrich=true).
	StartIndicatorEnrichment = "indicator_enrichment"
	// StartAgentEvent starts event-<subject>, the delivery of an agent event (RaiseAgentEvent).
	StartAgentEvent = "agent_event"
)

// StartChannel is the LISTEN/NOTIFY channel notified after start_outbox rows were committed.
const StartChannel = "vigil_start_outbox"

// StartEntry is one pending start of the start outbox.
type StartEntry struct {
	ID          int64     `bun:"id"`
	Kind        string    `bun:"kind"`
	SubjectUUID uuid.UUID `bun:"subject_uuid"`
	Attempts    int       `bun:"attempts"`
	CreatedAt   time.Time `bun:"created_at"`
}

// StartFunc starts the work of each claimed entry and reports each outcome: nil (started, or found
// started already) and ErrOutboxDone (nothing left to start) delete the entry; another error keeps
// it for a retry after OutboxBackoff. It must be idempotent per entry: if the process dies before the
// claim commits, the entries are claimed again.
type StartFunc func(ctx context.Context, entries []StartEntry) []error

// claimStartsSQL claims at most ?0 due entries. The start outbox holds no in-flight rows (an entry is
// deleted once its start succeeded), so the claim is the due index alone.
const claimStartsSQL = `SELECT id, kind, subject_uuid, attempts, created_at FROM start_outbox
	WHERE not_before <= now()
	ORDER BY not_before, id
	LIMIT ?0
	FOR UPDATE SKIP LOCKED`

// insertStart adds one entry in tx; the caller wakes the dispatcher after its commit.
func insertStart(ctx context.Context, tx bun.IDB, kind string, subject uuid.UUID) error {
	if _, err := tx.NewRaw(`INSERT INTO start_outbox (kind, subject_uuid) VALUES (?, ?)`, kind, subject).Exec(ctx); err != nil {
		return fmt.Errorf("queue %s start of %s: %w", kind, subject, mapErr(err))
	}
	return nil
}

// DispatchStarts claims up to limit due start entries FOR UPDATE SKIP LOCKED (dispatchers in several
// workers never take the same row), hands them to start and, in the same transaction, deletes those
// started and reschedules the others with a backed-off not_before. It returns how many it claimed.
func (s *Store) DispatchStarts(ctx context.Context, limit int, start StartFunc) (int, error) {
	claimed := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var entries []StartEntry
		if err := tx.NewRaw(claimStartsSQL, limit).Scan(ctx, &entries); err != nil {
			return fmt.Errorf("claim start outbox: %w", mapErr(err))
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
			if err == nil || errors.Is(err, ErrOutboxDone) {
				done = append(done, e.ID)
				continue
			}
			if err := rescheduleEntry(ctx, tx, "start_outbox", e.ID, e.Attempts, err); err != nil {
				return err
			}
		}
		if len(done) > 0 {
			if _, err := tx.NewRaw(`DELETE FROM start_outbox WHERE id IN (?)`, bun.List(done)).Exec(ctx); err != nil {
				return fmt.Errorf("delete %d start entries: %w", len(done), mapErr(err))
			}
		}
		return nil
	})
	return claimed, err
}

// StartsPending counts start entries of kind not yet started ("" for every kind).
func (s *Store) StartsPending(ctx context.Context, kind string) (int, error) {
	q := s.db.NewSelect().Table("start_outbox")
	if kind != "" {
		q = q.Where("kind = ?", kind)
	}
	n, err := q.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count start outbox: %w", mapErr(err))
	}
	return int(n), nil
}

// LinkIndicatorsForEnrichment links keys to the alert as LinkIndicators does and, in the same
// transaction, queues one enrichment start per linked indicator and records
// alert_enrichment_requested (by actorType and actorKeyPrefix), so the enrichment asked for is never
// lost and the request never waits on Temporal. ErrNotFound when the alert does not exist.
func (s *Store) LinkIndicatorsForEnrichment(ctx context.Context, alertID uuid.UUID, keys []IndicatorKey, source, actorType, actorKeyPrefix string) ([]Indicator, int, error) {
	var inds []Indicator
	var added int
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if inds, added, err = s.lockAndLinkIndicators(ctx, tx, alertID, keys, source, nil); err != nil {
			return err
		}
		ids := make([]string, len(inds))
		for i, ind := range inds {
			if err := insertStart(ctx, tx, StartIndicatorEnrichment, ind.UUID); err != nil {
				return err
			}
			ids[i] = ind.UUID.String()
		}
		alert := alertID
		return s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "alert_enrichment_requested", ActorType: actorType,
			ActorKeyPrefix: optString(actorKeyPrefix), AlertUUID: &alert, References: map[string]any{"indicator_uuids": ids}})
	})
	if err != nil {
		return nil, 0, err
	}
	s.startWake.wake()
	return inds, added, nil
}
