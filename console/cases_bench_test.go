package console_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/secretbox"
)

// Sizes of BenchmarkConsoleCases (issue 30: 10 000 cases, 100 000 alerts).
const (
	benchCases  = 10_000
	benchAlerts = 100_000
)

// seedCaseBench fills the test database with benchCases cases and benchAlerts alerts, ten to a case
// (each alert with two of 5 000 indicators), in SQL: the case triggers keep each case's count,
// severity and malice as they would for alerts joined one by one. A third of the cases are
// Investigating, a third Closed; every fifth is assigned.
func seedCaseBench(tb testing.TB, dsn string) {
	tb.Helper()
	ctx := context.Background()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(10*time.Minute)))
	defer db.Close()
	var n int
	require.NoError(tb, db.QueryRowContext(ctx, `SELECT count(*) FROM cases WHERE title LIKE 'Bench case %'`).Scan(&n))
	if n >= benchCases {
		return
	}
	queries := []string{
		`INSERT INTO indicators (type, value, is_enriched, malice)
		 SELECT 'ip', '10.9.' || (g / 256) || '.' || (g % 256), true, (ARRAY['Benign','Suspicious','Malicious','Pending'])[g % 4 + 1]
		 FROM generate_series(1, 5000) g ON CONFLICT DO NOTHING`,
		fmt.Sprintf(`INSERT INTO cases (title, description, status, close_classification, closed_at, assignee, assigned_at, tags, created_at, updated_at)
		 SELECT 'Bench case ' || g || ' on host-' || (g %% 997), 'The incident of bench case ' || g,
		        (ARRAY['Open','Investigating','Closed'])[g %% 3 + 1], CASE WHEN g %% 3 = 2 THEN 'Duplicate' END,
		        CASE WHEN g %% 3 = 2 THEN now() - g * interval '1 minute' END,
		        CASE WHEN g %% 5 = 0 THEN 'analyst-' || (g %% 7) END, CASE WHEN g %% 5 = 0 THEN now() END,
		        ARRAY['bench'], now() - g * interval '2 minutes', now() - g * interval '1 minute'
		 FROM generate_series(1, %d) g`, benchCases),
	}
	for lo := 1; lo <= benchAlerts; lo += 10_000 {
		queries = append(queries, fmt.Sprintf(`
		WITH cs AS (SELECT uuid, row_number() OVER (ORDER BY case_number) AS r FROM cases WHERE title LIKE 'Bench case %%'),
		inds AS (SELECT uuid, row_number() OVER (ORDER BY value) AS r FROM indicators WHERE value LIKE '10.9.%%'),
		ins AS (
		  INSERT INTO alerts (title, severity, status, enrichment_status, is_enriched, source_name, occurred_at, tags, description,
		                      raw_payload, close_classification, fingerprint, case_uuid)
		  SELECT 'Bench alert ' || g || ' on host-' || (g %% 997), (ARRAY['Low','Medium','High','Critical'])[g %% 4 + 1],
		         CASE WHEN g %% 10 = 0 THEN 'Closed' ELSE 'Open' END, 'Enriched', true, 'generic', now() - g * interval '20 seconds',
		         ARRAY['bench'], 'alert ' || g, '{"bench": true}', CASE WHEN g %% 10 = 0 THEN 'Duplicate' END, 'casebench-' || g, cs.uuid
		  FROM generate_series(%d, %d) g JOIN cs ON cs.r = g %% %d + 1
		  RETURNING uuid, substr(fingerprint, 11)::int AS g)
		INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
		SELECT ins.uuid, inds.uuid FROM ins JOIN inds ON inds.r = ins.g %% 5000 + 1
		UNION SELECT ins.uuid, inds.uuid FROM ins JOIN inds ON inds.r = (ins.g * 7 + 3) %% 5000 + 1`,
			lo, min(lo+9_999, benchAlerts), benchCases))
	}
	queries = append(queries, `ANALYZE cases`, `ANALYZE alerts`, `ANALYZE alert_indicators`)
	for _, q := range queries {
		_, err := db.ExecContext(ctx, q)
		require.NoError(tb, err, q)
	}
}

// BenchmarkConsoleCases times the case list and the case page among benchCases cases and
// benchAlerts alerts: the console served by Fiber on a loopback listener (as `vigil api` serves it),
// a signed-in session, one request at a time; every iteration loads one list variant (round robin)
// and one random case page. Run: go test ./console/ -run '^$' -bench ConsoleCases -benchtime 400x
func BenchmarkConsoleCases(b *testing.B) {
	st := testenv.Store(b)
	seedStart := time.Now()
	seedCaseBench(b, testenv.DatabaseURL(b))
	b.Logf("seeded %d cases and %d alerts in %s", benchCases, benchAlerts, time.Since(seedStart).Round(time.Second))
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(b, err)
	log := slog.New(slog.DiscardHandler)
	deps := console.Deps{Auth: auth.NewAuthenticator(st, log, 0), Box: box, Store: st, Alerts: alerts.New(st, log), Log: log}
	withCases(&deps)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	console.New(deps).Register(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	h := &harness{st: st}
	key, _ := h.key(b, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)

	base := "http://" + ln.Addr().String()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(base+"/console/login", url.Values{"key": {key}})
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
	var ids []string
	require.NoError(b, st.DB().NewRaw(`SELECT uuid::text FROM cases WHERE title LIKE 'Bench case %' ORDER BY random() LIMIT 200`).
		Scan(context.Background(), &ids))
	lists := []string{"/console/cases", "/console/cases?status=Open&status=Investigating", "/console/cases?severity=Critical&sort_by=case_number",
		"/console/cases?q=host-42", "/console/cases?assignee=analyst-3", "/console/cases?page=150", "/console/cases?q=CASE-4242"}
	for i := range 30 { // warm up connections, caches and prepared statements
		get(lists[i%len(lists)])
		get("/console/cases/" + ids[i%len(ids)])
	}
	heaviest, heaviestPage := 0, ""
	for _, p := range append(slices.Clone(lists), "/console/cases/"+ids[0]) {
		if n := get(p); n > heaviest {
			heaviest, heaviestPage = n, p
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	listTimes, caseTimes := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	byList := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		get(lists[i%len(lists)])
		t1 := time.Now()
		get("/console/cases/" + ids[rng.IntN(len(ids))])
		listTimes, caseTimes = append(listTimes, t1.Sub(t0)), append(caseTimes, time.Since(t1))
		byList[lists[i%len(lists)]] = append(byList[lists[i%len(lists)]], t1.Sub(t0))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) / 1000
	}
	for _, l := range lists {
		if len(byList[l]) > 0 {
			b.Logf("%-60s p50 %6.1f ms  p99 %6.1f ms", l, pct(byList[l], 0.50), pct(byList[l], 0.99))
		}
	}
	b.Logf("heaviest page %s: %.1f KB", heaviestPage, float64(heaviest)/1024)
	b.ReportMetric(pct(listTimes, 0.50), "list-p50-ms")
	b.ReportMetric(pct(listTimes, 0.99), "list-p99-ms")
	b.ReportMetric(pct(caseTimes, 0.50), "case-p50-ms")
	b.ReportMetric(pct(caseTimes, 0.99), "case-p99-ms")
	b.ReportMetric(float64(heaviest)/1024, "max-page-KB")
}
