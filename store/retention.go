package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Keys of a retention pass's counts (RetentionPass.Counts) besides the table names of
// RetentionAlertTables: what one pass forgot, by kind.
const (
	RetentionRawPayloads   = "raw_payloads"         // alerts whose raw_payload (and original_body) were cleared
	RetentionEventPayloads = "agent_event_payloads" // agent events whose payload's copy of the raw payload was cleared
	RetentionAlerts        = "alerts"               // closed alerts deleted
	RetentionIndicators    = "indicators"           // indicators left linked to no alert by those deletions
	RetentionAuditEvents   = "audit_events"         // audit events past AUDIT_RETENTION_DAYS
)

// RetentionPass is one retention pass (table retention_passes): the cutoffs chosen when it began
// (nil: that kind is kept) and what it has purged so far. A pass resumed after a worker died reads
// its row back, so it goes on with the same cutoffs, and every batch adds its counts in its own
// transaction, so they are exact whatever dies when.
type RetentionPass struct {
	bun.BaseModel `bun:"table:retention_passes"`

	PassID           string           `bun:"pass_id,pk"`
	RawPayloadCutoff *time.Time       `bun:"raw_payload_cutoff"`
	AlertCutoff      *time.Time       `bun:"alert_cutoff"`
	AuditCutoff      *time.Time       `bun:"audit_cutoff"`
	Counts           map[string]int64 `bun:"counts,type:jsonb"`
	StartedAt        time.Time        `bun:"started_at"`
	FinishedAt       *time.Time       `bun:"finished_at"`
}

// alertTable is a table holding rows that belong to one alert: they are deleted with it, before it,
// in the same transaction (the statement takes the batch's alert uuids as its one argument).
type alertTable struct {
	name string
	sql  string
}

// byAlert is the usual alertTable: the rows of table whose alert_uuid is in the batch.
func byAlert(table string) alertTable {
	return alertTable{name: table, sql: "DELETE FROM " + table + " WHERE alert_uuid = ANY(?::uuid[])"}
}

// alertTables lists, in delete order, every table whose rows belong to an alert and go when the
// alert is purged. A new table that references alerts is one line here (byAlert("comments"));
// TestRetentionCoversEveryAlertTable fails until it is here or in retentionKeptAlertTables.
func alertTables() []alertTable {
	return []alertTable{
		// The start outbox entries of the alert's agent events, before the events themselves.
		{name: "agent_event_starts", sql: `DELETE FROM start_outbox WHERE kind = 'agent_event'
			AND subject_uuid IN (SELECT uuid FROM agent_events WHERE alert_uuid = ANY(?::uuid[]))`},
		byAlert("agent_events"),
		byAlert("agent_deliveries"),
		byAlert("activity_events"),
		byAlert("alert_outbox"),
		byAlert("alert_findings"),
		byAlert("comments"),
		byAlert("alert_fingerprints"),
		byAlert("enrichment_parked"),
		byAlert("alert_indicators"),
	}
}

// retentionKeptAlertTables are the tables with an alert_uuid column whose rows outlive the alert, and
// why (docs/OPERATIONS.md "Retention").
func retentionKeptAlertTables() map[string]string {
	return map[string]string{
		"workflow_runs": "the record of a response action Vigil took (and its approval), kept as evidence; its alert_uuid then names a purged alert",
	}
}

// RetentionAlertTables returns the tables whose rows go with a purged alert and those kept (with
// the reason), for the test that checks every table referencing alerts is one or the other.
func RetentionAlertTables() (purged []string, kept map[string]string) {
	for _, t := range alertTables() {
		purged = append(purged, t.name)
	}
	return purged, retentionKeptAlertTables()
}

// BeginRetentionPass records a pass with its cutoffs, or, when a pass with that id exists (a resumed
// pass), returns it as first recorded. Idempotent.
func (s *Store) BeginRetentionPass(ctx context.Context, p RetentionPass) (RetentionPass, error) {
	if p.Counts == nil {
		p.Counts = map[string]int64{}
	}
	if p.StartedAt.IsZero() {
		p.StartedAt = s.Now()
	}
	if _, err := s.db.NewInsert().Model(&p).On("CONFLICT (pass_id) DO NOTHING").Exec(ctx); err != nil {
		return RetentionPass{}, fmt.Errorf("begin retention pass %s: %w", p.PassID, mapErr(err))
	}
	return s.GetRetentionPass(ctx, p.PassID)
}

// GetRetentionPass loads one pass.
func (s *Store) GetRetentionPass(ctx context.Context, passID string) (RetentionPass, error) {
	var out RetentionPass
	if err := s.db.NewSelect().Model(&out).Where("pass_id = ?", passID).Scan(ctx); err != nil {
		return RetentionPass{}, fmt.Errorf("get retention pass %s: %w", passID, mapErr(err))
	}
	return out, nil
}

// addRetentionCounts adds counts to the pass's in tx, so a batch's work and its count commit
// together. ErrNotFound when the pass does not exist (the batch then rolls back).
func addRetentionCounts(ctx context.Context, tx bun.Tx, passID string, counts map[string]int64) error {
	b, err := json.Marshal(counts)
	if err != nil {
		return fmt.Errorf("retention counts: %w", err)
	}
	res, err := tx.NewRaw(`UPDATE retention_passes SET counts = (
		SELECT coalesce(jsonb_object_agg(k, n), '{}'::jsonb) FROM (
			SELECT k, sum(n) AS n FROM (
				SELECT key AS k, value::bigint AS n FROM jsonb_each_text(counts)
				UNION ALL SELECT key, value::bigint FROM jsonb_each_text(?::jsonb)) AS x
			GROUP BY k) AS y)
		WHERE pass_id = ? AND finished_at IS NULL`, string(b), passID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("add retention counts to pass %s: %w", passID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("add retention counts: pass %s is not running: %w", passID, ErrNotFound)
	}
	return nil
}

// ClearRawPayloadsBefore clears raw_payload and original_body of at most limit alerts ingested
// before cutoff, and the copy of the raw payload in their agent events' payloads (data.alert
// .raw_payload, built when the event's deliveries were planned), in one short transaction that also
// counts them on the pass, and returns the counts (RetentionRawPayloads, RetentionEventPayloads;
// empty: no alert is left to clear). Alerts another transaction holds are skipped for a later batch.
// The agent events are found through their alert_uuid index (a join on the cleared alerts read the
// whole agent_events table each batch). The batch commits synchronously, flushing the megabytes of
// WAL it wrote itself: committed asynchronously (tried), the ingest's commits waited more on WAL
// flushes (docs/PERFORMANCE.md "Retention").
func (s *Store) ClearRawPayloadsBefore(ctx context.Context, passID string, cutoff time.Time, limit int) (map[string]int64, error) {
	counts := map[string]int64{}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		clear(counts)
		var alerts, events int64
		err := tx.NewRaw(`WITH cleared AS (
				UPDATE alerts SET raw_payload = NULL, original_body = NULL WHERE uuid IN (
					SELECT uuid FROM alerts WHERE ingested_at < ? AND (raw_payload IS NOT NULL OR original_body IS NOT NULL)
					ORDER BY ingested_at LIMIT ? FOR UPDATE SKIP LOCKED)
				RETURNING uuid
			), events AS (
				UPDATE agent_events SET payload = jsonb_set(payload, '{alert,raw_payload}', 'null'::jsonb)
				WHERE alert_uuid = ANY(ARRAY(SELECT uuid FROM cleared))
					AND jsonb_typeof(payload #> '{alert,raw_payload}') IS DISTINCT FROM 'null'
					AND payload #> '{alert,raw_payload}' IS NOT NULL
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM cleared), (SELECT count(*) FROM events)`, cutoff, limit).Scan(ctx, &alerts, &events)
		if err != nil {
			return err
		}
		if alerts == 0 {
			return nil
		}
		counts[RetentionRawPayloads] = alerts
		if events > 0 {
			counts[RetentionEventPayloads] = events
		}
		return addRetentionCounts(ctx, tx, passID, counts)
	})
	if err != nil {
		return nil, fmt.Errorf("clear raw payloads before %s: %w", cutoff.Format(time.RFC3339), mapErr(err))
	}
	return counts, nil
}

// PurgeClosedAlertsBefore deletes at most limit alerts closed before cutoff, each whole, in one short
// transaction: the alerts are locked first (FOR UPDATE SKIP LOCKED: one another transaction holds
// waits for a later batch, and none can reopen or link one meanwhile), then every row of
// alertTables goes, then the alerts, then the indicators that no alert links any more (locked in
// the upserts' (type, value) order, and checked for links after the lock, so an alert linking one
// concurrently keeps it). The counts, by table, are added to the pass in the same transaction and
// returned; none (an empty map) when no alert is left to purge.
func (s *Store) PurgeClosedAlertsBefore(ctx context.Context, passID string, cutoff time.Time, limit int) (map[string]int64, error) {
	counts := map[string]int64{}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		clear(counts)
		var batch []uuid.UUID
		if err := tx.NewRaw(`SELECT uuid FROM alerts WHERE status = 'Closed' AND closed_at < ?
			ORDER BY closed_at LIMIT ? FOR UPDATE SKIP LOCKED`, cutoff, limit).Scan(ctx, &batch); err != nil {
			return fmt.Errorf("lock closed alerts: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		ids := pgdialectArray(batch)
		var linked []uuid.UUID
		if err := tx.NewRaw(`SELECT DISTINCT indicator_uuid FROM alert_indicators WHERE alert_uuid = ANY(?::uuid[])`,
			ids).Scan(ctx, &linked); err != nil {
			return fmt.Errorf("indicators of the batch: %w", err)
		}
		for _, t := range alertTables() {
			res, err := tx.NewRaw(t.sql, ids).Exec(ctx)
			if err != nil {
				return fmt.Errorf("delete %s: %w", t.name, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				counts[t.name] = n
			}
		}
		res, err := tx.NewRaw(`DELETE FROM alerts WHERE uuid = ANY(?::uuid[])`, ids).Exec(ctx)
		if err != nil {
			return fmt.Errorf("delete alerts: %w", err)
		}
		n, _ := res.RowsAffected()
		counts[RetentionAlerts] = n
		if len(linked) > 0 {
			if _, err := tx.NewRaw(`SELECT uuid FROM indicators WHERE uuid = ANY(?::uuid[]) ORDER BY type, value FOR UPDATE`,
				pgdialectArray(linked)).Exec(ctx); err != nil {
				return fmt.Errorf("lock indicators: %w", err)
			}
			res, err := tx.NewRaw(`DELETE FROM indicators i WHERE uuid = ANY(?::uuid[])
				AND NOT EXISTS (SELECT 1 FROM alert_indicators ai WHERE ai.indicator_uuid = i.uuid)`,
				pgdialectArray(linked)).Exec(ctx)
			if err != nil {
				return fmt.Errorf("delete orphan indicators: %w", err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				counts[RetentionIndicators] = n
			}
		}
		return addRetentionCounts(ctx, tx, passID, counts)
	})
	if err != nil {
		return nil, fmt.Errorf("purge alerts closed before %s: %w", cutoff.Format(time.RFC3339), mapErr(err))
	}
	return counts, nil
}

// PurgeAuditEventsForPass deletes at most limit audit events created before cutoff (purgeAudit) and
// counts them on the pass, in one transaction.
func (s *Store) PurgeAuditEventsForPass(ctx context.Context, passID string, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if n, err = purgeAudit(ctx, tx, cutoff, limit); err != nil || n == 0 {
			return err
		}
		return addRetentionCounts(ctx, tx, passID, map[string]int64{RetentionAuditEvents: int64(n)})
	})
	if err != nil {
		return 0, fmt.Errorf("purge audit events before %s: %w", cutoff.Format(time.RFC3339), mapErr(err))
	}
	return n, nil
}

// FinishRetentionPass marks the pass finished and appends the audit event event builds from it, in
// one transaction, once: a pass already finished (a retried finish) is returned as it is, with
// finished false, and no second event.
func (s *Store) FinishRetentionPass(ctx context.Context, passID string, event func(RetentionPass) *AuditEvent) (p RetentionPass, finished bool, err error) {
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		p = RetentionPass{}
		if err := tx.NewSelect().Model(&p).Where("pass_id = ?", passID).For("UPDATE").Scan(ctx); err != nil {
			return err
		}
		if p.FinishedAt != nil {
			return nil
		}
		now := s.Now()
		p.FinishedAt = &now
		if _, err := tx.NewUpdate().Model(&p).Column("finished_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		finished = true
		return s.AppendAuditEvent(ctx, tx, event(p))
	})
	if err != nil {
		return RetentionPass{}, false, fmt.Errorf("finish retention pass %s: %w", passID, mapErr(err))
	}
	return p, finished, nil
}
