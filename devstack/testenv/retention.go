package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
)

// RetentionSeed describes alerts seeded for retention tests and load runs (SeedRetention): four
// groups of PerGroup alerts each, every alert with the rows that belong to an alert. Uuids derive
// from Tag (md5(tag-alert-i)), so several seeds share a database without colliding.
//
//	A (1..n)      Closed 40 days ago, ingested 60 days ago: purged by a 30-day alert retention
//	B (n+1..2n)   Open, ingested 60 days ago: kept; raw payload cleared by a 30-day payload retention
//	C (2n+1..3n)  Closed 5 days ago, ingested 60 days ago: kept; raw payload cleared
//	D (3n+1..4n)  Open, ingested 1 day ago: kept whole
//
// Each alert has 2 activity events, 1 finding, 1 fingerprint and a link to its own indicator;
// A and B alerts also 1 agent event (its payload holding a copy of the raw payload, as a planned
// delivery's does; a start-outbox entry every 10th, due in 100 days) and 1 agent delivery, a
// parked enrichment every 5th (past its re-runs, so a running worker's circuit healer leaves it) and
// an outbox entry every 7th (due in 100 days, so no dispatcher takes it); every A alert links a shared indicator
// (shared-(i%100)), which even B alerts also link for shared-0..49 (shared-(i/2%50)) (those stay, 50..99 go); every
// 10th A alert has a workflow run (kept: the record of an action taken).
type RetentionSeed struct {
	Tag      string
	PerGroup int // at least 100
	Now      time.Time
}

// SeedRetention inserts the seed into the database at dsn in one transaction of set-based
// statements, on a connection of its own without the store's 5 s statement timeout (100 000 alerts
// with their rows take tens of seconds on a loaded machine).
//
// The seed's outbox entries (due in 100 days) would keep the outbox's depth above 0 for every later
// test sharing the database: tb's cleanup removes them (the alerts themselves stay, as data).
func SeedRetention(tb testing.TB, ctx context.Context, dsn string, s RetentionSeed) error {
	tb.Helper()
	tb.Cleanup(func() {
		db := openPatient(dsn)
		defer db.Close()
		ctx := context.WithoutCancel(ctx)
		for _, stmt := range []string{
			`DELETE FROM alert_outbox WHERE alert_uuid IN (SELECT md5(?::text || '-alert-' || i)::uuid FROM generate_series(1, 4 * ?::int) AS i)`,
			`DELETE FROM start_outbox WHERE kind = 'agent_event'
				AND subject_uuid IN (SELECT md5(?::text || '-event-' || i)::uuid FROM generate_series(1, 4 * ?::int) AS i)`,
		} {
			if _, err := db.ExecContext(ctx, stmt, s.Tag, s.PerGroup); err != nil {
				tb.Errorf("retention seed cleanup: %v", err)
			}
		}
	})
	db := openPatient(dsn)
	defer db.Close()
	if s.PerGroup < 100 {
		return fmt.Errorf("retention seed: PerGroup %d < 100", s.PerGroup)
	}
	params := `WITH p AS (SELECT ?::text AS tag, ?::int AS n, ?::timestamptz AS now),
		s AS (SELECT i, md5(p.tag || '-alert-' || i)::uuid AS a,
			CASE WHEN i <= p.n THEN 'A' WHEN i <= 2 * p.n THEN 'B' WHEN i <= 3 * p.n THEN 'C' ELSE 'D' END AS g,
			p.tag, p.now
			FROM p, generate_series(1, 4 * p.n) AS i) `
	stmts := []string{
		params + `INSERT INTO alerts (uuid, title, severity, status, source_name, occurred_at, ingested_at, closed_at,
				close_classification, raw_payload, normalized, fingerprint, created_at, updated_at)
			SELECT a, tag || ' alert ' || i, 'Low', CASE WHEN closed IS NULL THEN 'Open' ELSE 'Closed' END, 'generic',
				ingested, ingested, closed, CASE WHEN closed IS NOT NULL THEN 'Undetermined' END,
				jsonb_build_object('user', 'user' || i || '@example.com', 'host', 'host-' || i), '{}'::jsonb,
				tag || '-fp-' || i, ingested, coalesce(closed, ingested)
			FROM (SELECT s.*, CASE WHEN g = 'D' THEN now - interval '1 day' ELSE now - interval '60 days' END AS ingested,
				CASE g WHEN 'A' THEN now - interval '40 days' WHEN 'C' THEN now - interval '5 days' END AS closed FROM s) AS x`,
		params + `INSERT INTO alert_fingerprints (fingerprint, alert_uuid) SELECT tag || '-fp-' || i, a FROM s`,
		params + `INSERT INTO activity_events (event_type, actor_type, alert_uuid)
			SELECT 'alert_created', 'system', a FROM s, generate_series(1, 2)`,
		params + `INSERT INTO alert_findings (alert_uuid, agent_name, summary) SELECT a, 'seed', 'finding ' || i FROM s`,
		params + `INSERT INTO indicators (uuid, type, value)
			SELECT md5(tag || '-ind-' || i)::uuid, 'domain', tag || '-excl-' || i || '.example' FROM s
			UNION ALL SELECT md5(p.tag || '-shared-' || k)::uuid, 'domain', p.tag || '-shared-' || k || '.example'
			FROM p, generate_series(0, 99) AS k`,
		params + `INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
			SELECT a, md5(tag || '-ind-' || i)::uuid FROM s
			UNION ALL SELECT a, md5(tag || '-shared-' || (i % 100))::uuid FROM s WHERE g = 'A'
			UNION ALL SELECT a, md5(tag || '-shared-' || ((i / 2) % 50))::uuid FROM s WHERE g = 'B' AND i % 2 = 0`,
		// Inactive, at a loopback port nothing listens on: the seed's deliveries need an agent, and
		// a test that enriches new alerts beside the seed must not call out (tests leave no traps).
		`INSERT INTO agents (uuid, name, endpoint_url, signing_secret, is_active) VALUES (md5(? || '-agent')::uuid, ? || ' agent',
			'http://127.0.0.1:9/hook', '\x00'::bytea, false)`,
		params + `INSERT INTO agent_events (uuid, event, alert_uuid, payload)
			SELECT md5(tag || '-event-' || i)::uuid, 'alert.enriched', a,
				jsonb_build_object('alert', jsonb_build_object('uuid', a, 'raw_payload', jsonb_build_object('user', 'user' || i || '@example.com')))
			FROM s WHERE g IN ('A', 'B')`,
		params + `INSERT INTO start_outbox (kind, subject_uuid, not_before)
			SELECT 'agent_event', md5(tag || '-event-' || i)::uuid, now + interval '100 days' FROM s WHERE g IN ('A', 'B') AND i % 10 = 0`,
		params + `INSERT INTO agent_deliveries (delivery_uuid, agent_uuid, event, alert_uuid, attempt, status)
			SELECT gen_random_uuid(), md5(tag || '-agent')::uuid, 'alert.enriched', a, 1, 'delivered' FROM s WHERE g IN ('A', 'B')`,
		params + `INSERT INTO enrichment_parked (provider_name, alert_uuid, reruns, rerun_at)
			SELECT 'seed', a, 1000, now FROM s WHERE g IN ('A', 'B') AND i % 5 = 0`,
		params + `INSERT INTO alert_outbox (alert_uuid, not_before)
			SELECT a, now + interval '100 days' FROM s WHERE g IN ('A', 'B') AND i % 7 = 0`,
		`INSERT INTO workflows (uuid, name, steps) VALUES (md5(? || '-wf')::uuid, ? || ' workflow', '[]'::jsonb)`,
		params + `INSERT INTO workflow_runs (workflow_uuid, workflow_version, status, trigger_source, indicator_type,
				indicator_value, alert_uuid, temporal_workflow_id)
			SELECT md5(tag || '-wf')::uuid, 1, 'succeeded', 'human', 'domain', tag || '-excl-' || i || '.example', a,
				'workflow-run-' || a FROM s WHERE g = 'A' AND i % 10 = 0`,
	}
	// The per-row roll-up trigger would update the same few alert_metrics_daily rows 100 000 times
	// in one transaction (each update walking the versions the earlier ones left): off for the
	// seed, and the roll-up recomputed after it, as its migration computes it.
	stmts = append([]string{`ALTER TABLE alerts DISABLE TRIGGER alerts_metrics_daily_insert_delete`}, stmts...)
	stmts = append(stmts, `ALTER TABLE alerts ENABLE TRIGGER alerts_metrics_daily_insert_delete`,
		`DELETE FROM alert_metrics_daily`,
		`INSERT INTO alert_metrics_daily (day, severity, shard, alerts, active, closed, false_positive, true_positive,
				acknowledged, acknowledge_seconds, close_timed, close_seconds)
			SELECT day, severity, shard, count(*), count(*) FILTER (WHERE alert_is_active(status)), count(outcome),
				count(*) FILTER (WHERE outcome = 'false_positive'), count(*) FILTER (WHERE outcome = 'true_positive'),
				count(ack), coalesce(sum(ack::numeric), 0), count(close), coalesce(sum(close::numeric), 0)
			FROM (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, severity, (abs(hashtext(uuid::text)) % 8)::smallint AS shard,
				status, alert_outcome(status, close_classification) AS outcome,
				elapsed_seconds(ingested_at, acknowledged_at) AS ack,
				CASE WHEN status = 'Closed' THEN elapsed_seconds(ingested_at, closed_at) END AS close
				FROM alerts) AS x
			GROUP BY day, severity, shard`)
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, q := range stmts {
			var err error
			switch {
			case strings.HasPrefix(q, "WITH"):
				_, err = tx.NewRaw(q, s.Tag, s.PerGroup, s.Now).Exec(ctx)
			case strings.Contains(q, "?"):
				_, err = tx.NewRaw(q, s.Tag, s.Tag).Exec(ctx)
			default:
				_, err = tx.ExecContext(ctx, q)
			}
			if err != nil {
				return fmt.Errorf("retention seed: %w\n%s", err, q)
			}
		}
		return nil
	})
}

// RetentionIntegrity is what remains of a seed's group A (the alerts a 30-day alert retention
// purges): Present alerts, Partial ones (present with any of their rows missing) and Orphaned ones
// (gone with any of their rows left). A pass cut at any point must leave Partial = Orphaned = 0.
type RetentionIntegrity struct {
	Present, Partial, Orphaned int
}

// openPatient opens dsn without the store's 5 s statement timeout.
func openPatient(dsn string) *bun.DB {
	return bun.NewDB(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(30*time.Minute))),
		pgdialect.New())
}

// CheckRetentionIntegrity reads RetentionIntegrity for s's group A from the database at dsn.
func CheckRetentionIntegrity(ctx context.Context, dsn string, s RetentionSeed) (RetentionIntegrity, error) {
	db := openPatient(dsn)
	defer db.Close()
	var out RetentionIntegrity
	err := db.NewRaw(`WITH p AS (SELECT ?::text AS tag, ?::int AS n),
		s AS (SELECT i, md5(p.tag || '-alert-' || i)::uuid AS a, md5(p.tag || '-event-' || i)::uuid AS e
			FROM p, generate_series(1, p.n) AS i),
		c AS (SELECT s.i, al.uuid IS NOT NULL AS present,
			coalesce(activity.n, 0) AS activity,
			coalesce(findings.n, 0) AS findings,
			coalesce(fingerprints.n, 0) AS fingerprints,
			coalesce(links.n, 0) AS links,
			coalesce(events.n, 0) AS events,
			coalesce(deliveries.n, 0) AS deliveries,
			coalesce(parked.n, 0) AS parked,
			coalesce(outbox.n, 0) AS outbox,
			coalesce(starts.n, 0) AS starts
			FROM s LEFT JOIN alerts al ON al.uuid = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM activity_events t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS activity ON activity.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM alert_findings t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS findings ON findings.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM alert_fingerprints t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS fingerprints ON fingerprints.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM alert_indicators t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS links ON links.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM agent_events t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS events ON events.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM agent_deliveries t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS deliveries ON deliveries.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM enrichment_parked t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS parked ON parked.k = s.a
			LEFT JOIN (SELECT t.alert_uuid AS k, count(*) AS n FROM alert_outbox t JOIN s ON s.a = t.alert_uuid GROUP BY 1) AS outbox ON outbox.k = s.a
			LEFT JOIN (SELECT t.subject_uuid AS k, count(*) AS n FROM start_outbox t JOIN s ON s.e = t.subject_uuid
				WHERE t.kind = 'agent_event' GROUP BY 1) AS starts ON starts.k = s.e)
		SELECT count(*) FILTER (WHERE present) AS present,
			count(*) FILTER (WHERE present AND NOT (activity = 2 AND findings = 1 AND fingerprints = 1 AND links = 2
				AND events = 1 AND deliveries = 1 AND parked = (CASE WHEN i % 5 = 0 THEN 1 ELSE 0 END)
				AND outbox = (CASE WHEN i % 7 = 0 THEN 1 ELSE 0 END) AND starts = (CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END))) AS partial,
			count(*) FILTER (WHERE NOT present AND activity + findings + fingerprints + links + events + deliveries + parked
				+ outbox + starts > 0) AS orphaned
		FROM c`, s.Tag, s.PerGroup).Scan(ctx, &out.Present, &out.Partial, &out.Orphaned)
	if err != nil {
		return RetentionIntegrity{}, fmt.Errorf("retention integrity: %w", err)
	}
	return out, nil
}
