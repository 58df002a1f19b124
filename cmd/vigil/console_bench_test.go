package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// consoleBenchAlerts is how many alerts BenchmarkConsolePages reads among (issue 18: 100 000).
const consoleBenchAlerts = 100_000

// seedConsoleBench fills the database with consoleBenchAlerts alerts the way a busy month looks: 50
// rules, 5 000 indicators with two providers' results, two indicators per alert (so an indicator is
// shared by ~40 alerts, which the relationship graph draws), a tenth closed, three in ten assigned
// (the triage order's second key), three global runbooks; one
// alert every 20 s, so they spread over the last 23 days as a real month's would.
func seedConsoleBench(tb testing.TB, dsn string) {
	tb.Helper()
	ctx := context.Background()
	// its own connection: the store's 5 s statement timeout is for requests, not for bulk loads
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(5*time.Minute)))
	defer db.Close()
	var n int
	require.NoError(tb, db.QueryRowContext(ctx, `SELECT count(*) FROM alerts`).Scan(&n))
	if n >= consoleBenchAlerts {
		return
	}
	queries := []string{
		`INSERT INTO detection_rules (name, source_name, source_rule_id, severity, mitre_tactics)
		 SELECT 'Rule ' || g, 'generic', 'r' || g, 'High', ARRAY['TA0001'] FROM generate_series(1, 50) g`,
		`INSERT INTO indicators (type, value, is_enriched, malice, enrichment_results)
		 SELECT 'ip', '10.' || (g / 65536) || '.' || (g / 256 % 256) || '.' || (g % 256), true,
		        (ARRAY['Benign','Suspicious','Malicious','Pending'])[g % 4 + 1],
		        jsonb_build_object('vt', jsonb_build_object('status','success','malice','Suspicious','duration_ms',120,
		                                                    'extracted', jsonb_build_object('country','NL','score',g % 100)),
		                           'abuseipdb', jsonb_build_object('status','success','malice','Benign','duration_ms',80))
		 FROM generate_series(1, 5000) g`,
		`INSERT INTO context_documents (title, document_type, is_global, content)
		 SELECT 'Runbook ' || g, 'runbook', true, repeat(E'## Step\n\nIsolate the host, then **reset** credentials.\n\n| who | what |\n|---|---|\n| SOC | triage |\n\n', 20)
		 FROM generate_series(1, 3) g`,
	}
	// The alerts and their indicator links in batches of 10 000.
	for lo := 1; lo <= consoleBenchAlerts; lo += 10_000 {
		queries = append(queries, fmt.Sprintf(`
		WITH inds AS (SELECT uuid, row_number() OVER (ORDER BY value) AS r FROM indicators WHERE value LIKE '10.%%'),
		ins AS (
		  INSERT INTO alerts (title, severity, status, enrichment_status, is_enriched, source_name, occurred_at, tags,
		                      detection_rule_id, description, raw_payload, close_classification, fingerprint, created_at, assignee)
		  SELECT 'Suspicious sign-in ' || g || ' from host-' || (g %% 997), (ARRAY['Low','Medium','High','Critical'])[g %% 4 + 1],
		         CASE WHEN g %% 10 = 0 THEN 'Closed' ELSE (ARRAY['Open','Triaging','Escalated'])[g %% 3 + 1] END,
		         'Enriched', true, (ARRAY['generic','sentinel','elastic'])[g %% 3 + 1], now() - g * interval '20 seconds',
		         ARRAY['bench', 'team-' || (g %% 7)], (SELECT min(id) FROM detection_rules) + g %% 50,
		         'An analyst-sized description of alert ' || g, '{"bench": true}', CASE WHEN g %% 10 = 0 THEN 'Duplicate' END,
		         'bench-' || g, now() - g * interval '20 seconds' + interval '30 seconds',
		         CASE WHEN g %% 10 < 3 THEN 'analyst-' || (g %% 20) END
		  FROM generate_series(%d, %d) g
		  RETURNING uuid, substr(fingerprint, 7)::int AS g)
		INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
		SELECT ins.uuid, inds.uuid FROM ins JOIN inds ON inds.r = ins.g %% 5000 + 1
		UNION SELECT ins.uuid, inds.uuid FROM ins JOIN inds ON inds.r = (ins.g * 7 + 3) %% 5000 + 1`,
			lo, min(lo+9_999, consoleBenchAlerts)))
	}
	queries = append(queries, `ANALYZE`)
	for _, q := range queries {
		_, err := db.ExecContext(ctx, q)
		require.NoError(tb, err, q)
	}
}

// BenchmarkConsolePages times the console's alert queue (the first page, filters, a title sort, a
// search, a deep page) and alert pages among 100 000 alerts, through `vigil api` over loopback, and
// reports p50 and p99 of each and the largest page's weight (docs/PERFORMANCE.md). Run with
// `go test ./cmd/vigil/ -run '^$' -bench ConsolePages -benchtime 400x`.
func BenchmarkConsolePages(b *testing.B) {
	apiAddr, _, key := startAPIAndMCP(b, map[string]string{"RATE_LIMIT_DEFAULT_PER_MINUTE": "10000000"})
	st, err := store.Open(context.Background(), testenv.DatabaseURL(b), store.Options{MaxOpenConns: 2})
	require.NoError(b, err)
	defer st.Close()
	seedStart := time.Now()
	seedConsoleBench(b, testenv.DatabaseURL(b))
	b.Logf("seeded %d alerts in %s", consoleBenchAlerts, time.Since(seedStart).Round(time.Second))
	var ids []string
	require.NoError(b, st.DB().NewRaw(`SELECT uuid::text FROM alerts ORDER BY random() LIMIT 200`).Scan(context.Background(), &ids))

	base := "http://" + apiAddr
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"key": {key}}
	resp, err := client.PostForm(base+"/console/login", form)
	require.NoError(b, err)
	resp.Body.Close()
	require.Equal(b, http.StatusSeeOther, resp.StatusCode)
	cookie := resp.Cookies()[0]
	get := func(path string) int {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.AddCookie(cookie)
		resp, err := client.Do(req)
		require.NoError(b, err)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode, path)
		return int(n)
	}
	queues := []string{"/console/", "/console/?status=Open&severity=High", "/console/?sort_by=title&sort_order=asc",
		"/console/?q=host-42", "/console/?page=1000", "/console/?tags=team-3&status=Triaging&sort_by=severity",
		"/console/?sort_by=occurred_at&sort_order=desc"}
	for i := range 30 { // warm up connections, caches and prepared statements
		get(queues[i%len(queues)])
		get("/console/alerts/" + ids[i%len(ids)])
	}
	heaviest := 0
	for _, p := range append(queues, "/console/alerts/"+ids[0], "/console/dashboard", "/console/static/console.css", "/console/static/console.js") {
		heaviest = max(heaviest, get(p))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	queueTimes, alertTimes, dashTimes := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N), []time.Duration{}
	byQueue := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		get(queues[i%len(queues)])
		t1 := time.Now()
		get("/console/alerts/" + ids[rng.IntN(len(ids))])
		queueTimes, alertTimes = append(queueTimes, t1.Sub(t0)), append(alertTimes, time.Since(t1))
		byQueue[queues[i%len(queues)]] = append(byQueue[queues[i%len(queues)]], t1.Sub(t0))
		if i%10 == 0 { // the dashboard is opened far less often than the queue
			t2 := time.Now()
			get("/console/dashboard")
			dashTimes = append(dashTimes, time.Since(t2))
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) / 1000
	}
	for _, q := range queues {
		if len(byQueue[q]) == 0 {
			continue
		}
		b.Logf("%-60s p50 %6.1f ms  p99 %6.1f ms", q, pct(byQueue[q], 0.50), pct(byQueue[q], 0.99))
	}
	b.ReportMetric(pct(queueTimes, 0.50), "queue-p50-ms")
	b.ReportMetric(pct(queueTimes, 0.99), "queue-p99-ms")
	b.ReportMetric(pct(alertTimes, 0.50), "alert-p50-ms")
	b.ReportMetric(pct(alertTimes, 0.99), "alert-p99-ms")
	b.ReportMetric(pct(dashTimes, 0.50), "dashboard-p50-ms")
	b.ReportMetric(pct(dashTimes, 0.99), "dashboard-p99-ms")
	b.ReportMetric(float64(heaviest)/1024, "max-page-KB")
}
