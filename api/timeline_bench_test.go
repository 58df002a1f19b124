package api

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// timelineBackground is the volume around the measured alert: other alerts with their activity,
// findings, comments, indicator links and runs, so every read of the timeline goes through its index
// among many rows, not a scan of a small table.
const (
	benchAlerts     = 20_000
	benchActivity   = 100_000
	benchLinks      = 60_000
	benchIndicators = 10_000
	benchComments   = 20_000
	benchFindings   = 20_000
	benchRuns       = 5_000
)

// seedTimelineBackground writes the background volume in a few set-based statements, on one
// connection of its own (the store's 5 s statement timeout is for requests; its temp tables need one
// session).
func seedTimelineBackground(tb testing.TB, conn *sql.Conn) {
	tb.Helper()
	ctx := context.Background()
	start := time.Now()
	defer func() { tb.Logf("background seeded in %s", time.Since(start).Round(time.Second)) }()
	for _, q := range []string{
		`INSERT INTO alerts (title, severity, source_name, occurred_at, fingerprint)
		 SELECT 'bg ' || g, 'Low', 'generic', now() - g * interval '1 second', 'bg-' || g || '-' || gen_random_uuid()
		 FROM generate_series(1, ` + itoa(benchAlerts) + `) AS g`,
		`CREATE TEMP TABLE IF NOT EXISTS bg_alerts AS SELECT uuid, row_number() OVER () AS n FROM alerts WHERE title LIKE 'bg %'`,
		`INSERT INTO activity_events (event_type, actor_type, alert_uuid, "references", created_at)
		 SELECT 'alert_status_updated', 'api', a.uuid, '{"from":"Open","to":"Triaging"}', now() - g * interval '1 second'
		 FROM generate_series(1, ` + itoa(benchActivity) + `) AS g JOIN bg_alerts AS a ON a.n = 1 + g % ` + itoa(benchAlerts),
		`INSERT INTO indicators (type, value, enrichment_results)
		 SELECT 'ip', '10.' || (g / 65536) || '.' || (g / 256 % 256) || '.' || (g % 256),
		 '{"abuseipdb":{"status":"success","malice":"Benign","enriched_at":"2026-01-01T00:00:00Z"}}'
		 FROM generate_series(1, ` + itoa(benchIndicators) + `) AS g ON CONFLICT DO NOTHING`,
		`CREATE TEMP TABLE IF NOT EXISTS bg_indicators AS SELECT uuid, row_number() OVER () AS n FROM indicators WHERE value LIKE '10.%'`,
		`INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
		 SELECT a.uuid, i.uuid FROM generate_series(1, ` + itoa(benchLinks) + `) AS g
		 JOIN bg_alerts AS a ON a.n = 1 + g % ` + itoa(benchAlerts) + `
		 JOIN bg_indicators AS i ON i.n = 1 + (g * 7) % ` + itoa(benchIndicators) + ` ON CONFLICT DO NOTHING`,
		`INSERT INTO comments (alert_uuid, body, author_key_uuid, author_key_prefix, author_key_name, author_key_type, actor_type)
		 SELECT a.uuid, 'background note ' || g, gen_random_uuid(), 'cai_bg', 'bg', 'human', 'api'
		 FROM generate_series(1, ` + itoa(benchComments) + `) AS g JOIN bg_alerts AS a ON a.n = 1 + g % ` + itoa(benchAlerts),
		`INSERT INTO alert_findings (alert_uuid, agent_name, summary)
		 SELECT a.uuid, 'bg-agent', 'background finding ' || g
		 FROM generate_series(1, ` + itoa(benchFindings) + `) AS g JOIN bg_alerts AS a ON a.n = 1 + g % ` + itoa(benchAlerts),
		`INSERT INTO workflows (name, steps) VALUES ('bg workflow ' || gen_random_uuid(), '[]')`,
		`INSERT INTO workflow_runs (workflow_uuid, workflow_version, status, trigger_source, indicator_type, indicator_value, alert_uuid, temporal_workflow_id)
		 SELECT (SELECT uuid FROM workflows WHERE name LIKE 'bg workflow %' LIMIT 1), 1, 'succeeded', 'human', 'ip', '10.0.0.1', a.uuid, 'bg-' || g
		 FROM generate_series(1, ` + itoa(benchRuns) + `) AS g JOIN bg_alerts AS a ON a.n = 1 + g % ` + itoa(benchAlerts),
		`ANALYZE`,
	} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(tb, err, q)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// seedConn is one session of its own for seeding, with a timeout for a loaded machine.
func seedConn(tb testing.TB) *sql.Conn {
	tb.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(testenv.DatabaseURL(tb)), pgdriver.WithTimeout(30*time.Minute)))
	tb.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(context.Background())
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// seedTimelineAlert writes one alert with exactly 200 timeline items: 70 activity events, 30
// findings, 40 comments, 10 indicators × 3 providers' results, 15 workflow runs and their 15
// approval decisions.
func seedTimelineAlert(tb testing.TB, conn *sql.Conn) uuid.UUID {
	tb.Helper()
	ctx := context.Background()
	id := uuid.New()
	_, err := conn.ExecContext(ctx, `INSERT INTO alerts (uuid, title, severity, source_name, occurred_at, fingerprint)
		VALUES ($1::text::uuid, 'timeline bench', 'High', 'generic', now(), $1::text)`, id.String())
	require.NoError(tb, err)
	for _, q := range []string{
		`INSERT INTO activity_events (event_type, actor_type, alert_uuid, "references", created_at)
		 SELECT 'alert_status_updated', 'api', $1::text::uuid, '{"from":"Open","to":"Triaging"}', now() - g * interval '1 minute' FROM generate_series(1, 70) AS g`,
		`INSERT INTO alert_findings (alert_uuid, agent_name, summary, confidence, posted_at)
		 SELECT $1::text::uuid, 'triage-bot', 'finding ' || g || ' ' || repeat('x', 400), 'high', now() - g * interval '1 minute' FROM generate_series(1, 30) AS g`,
		`INSERT INTO comments (alert_uuid, body, author_key_uuid, author_key_prefix, author_key_name, author_key_type, actor_type, created_at)
		 SELECT $1::text::uuid, 'hand-over ' || g || ' ' || repeat('y', 2000), gen_random_uuid(), 'cai_bench', 'maria.ortiz', 'human', 'console',
		 now() - g * interval '1 minute' FROM generate_series(1, 40) AS g`,
		`WITH ins AS (INSERT INTO indicators (type, value, enrichment_results)
		   SELECT 'domain', 'bench-' || g || '-' || $1::text || '.example',
		   '{"virustotal":{"status":"success","malice":"Malicious","enriched_at":"2026-11-01T00:00:00Z"},
		     "abuseipdb":{"status":"error","error_message":"quota"},"urlscan":{"status":"success","malice":"Suspicious","enriched_at":"2026-11-02T00:00:00Z"}}'
		   FROM generate_series(1, 10) AS g RETURNING uuid)
		 INSERT INTO alert_indicators (alert_uuid, indicator_uuid) SELECT $1::text::uuid, uuid FROM ins`,
		`WITH wf AS (INSERT INTO workflows (name, steps) VALUES ('bench workflow ' || $1::text, '[]') RETURNING uuid, name),
		 runs AS (INSERT INTO workflow_runs (workflow_uuid, workflow_version, status, trigger_source, indicator_type, indicator_value, alert_uuid,
		   temporal_workflow_id, created_at)
		   SELECT wf.uuid, 1, 'succeeded', 'agent', 'domain', 'bench.example', $1::text::uuid, 'bench-' || g || '-' || $1::text, now() - g * interval '1 minute'
		   FROM wf, generate_series(1, 15) AS g RETURNING uuid, workflow_uuid, created_at),
		 reqs AS (INSERT INTO workflow_approval_requests (workflow_uuid, workflow_name, run_uuid, trigger_source, indicator_type,
		   indicator_value, risk_level, status, expires_at)
		   SELECT runs.workflow_uuid, (SELECT name FROM wf), runs.uuid, 'agent', 'domain', 'bench.example', 'high', 'approved', now() + interval '1 hour'
		   FROM runs RETURNING uuid)
		 INSERT INTO workflow_approval_decisions (approval_uuid, identity, responder_id, decision, comment, key_name)
		 SELECT uuid, 'key:' || gen_random_uuid(), 'alice', 'approved', 'go', 'approver' FROM reqs`,
		`ANALYZE`,
	} {
		if strings.Contains(q, "$1") {
			_, err = conn.ExecContext(ctx, q, id.String())
		} else {
			_, err = conn.ExecContext(ctx, q)
		}
		require.NoError(tb, err, q)
	}
	return id
}

// BenchmarkAlertTimeline measures GET /v1/alerts/{uuid}/timeline?page_size=500 through the whole
// REST stack (auth, rate limit, the one UNION ALL statement, JSON) for an alert with 200 items, among
// 20 000 other alerts with 100 000 activity events, 60 000 indicator links, 20 000 comments, 20 000
// findings and 5 000 runs (docs/PERFORMANCE.md "Alert timeline").
//
//	go test ./api -run '^$' -bench BenchmarkAlertTimeline -benchtime 1000x
func BenchmarkAlertTimeline(b *testing.B) {
	ts := newTestServer(b, nil)
	conn := seedConn(b)
	seedTimelineBackground(b, conn)
	id := seedTimelineAlert(b, conn)
	key := mustKey(b, ts.Store, auth.ScopeAlertsRead)
	path := "/v1/alerts/" + id.String() + "/timeline?page_size=500"
	r := ts.do(b, http.MethodGet, path, key, nil)
	require.Equal(b, http.StatusOK, r.Status, string(r.Body))
	require.EqualValues(b, 200, r.JSON(b)["meta"].(map[string]any)["total"])
	b.Run("rest", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			r := ts.do(b, http.MethodGet, path, key, nil)
			lat = append(lat, time.Since(start))
			if r.Status != http.StatusOK {
				b.Fatalf("status %d: %s", r.Status, r.Body)
			}
		}
		reportLatencies(b, "timeline_200_items", lat)
	})
	// The statement alone (store.AlertTimeline): what the database costs, without HTTP and JSON.
	b.Run("store", func(b *testing.B) {
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			rows, total, err := ts.Store.AlertTimeline(ctx, id, store.Page{Number: 1, Size: 500})
			lat = append(lat, time.Since(start))
			if err != nil || total != 200 || len(rows) != 200 {
				b.Fatalf("timeline: %d rows, total %d, %v", len(rows), total, err)
			}
		}
		reportLatencies(b, "timeline_statement", lat)
	})
}
