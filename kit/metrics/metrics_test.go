package metrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/metrics"
)

// stuckOutbox never answers until its context ends, like a Postgres that stopped responding.
type stuckOutbox struct{}

func (stuckOutbox) OutboxStats(ctx context.Context) (metrics.OutboxStats, error) {
	<-ctx.Done()
	return metrics.OutboxStats{}, ctx.Err()
}

func (stuckOutbox) PendingApprovals(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

type failingOutbox struct{}

func (failingOutbox) OutboxStats(context.Context) (metrics.OutboxStats, error) {
	return metrics.OutboxStats{}, errors.New("connection refused")
}
func (failingOutbox) PendingApprovals(context.Context) (int, error) {
	return 0, errors.New("connection refused")
}

type fixedOutbox struct{ st metrics.OutboxStats }

func (f fixedOutbox) OutboxStats(context.Context) (metrics.OutboxStats, error) { return f.st, nil }
func (f fixedOutbox) PendingApprovals(context.Context) (int, error)            { return 3, nil }

func TestQueueCollector(t *testing.T) {
	reg := metrics.NewRegistry()
	st := metrics.OutboxStats{Depth: 7, Started: 2, Oldest: time.Now().Add(-90 * time.Second)}
	reg.MustRegister(metrics.NewQueueCollector(fixedOutbox{st}, fixedOutbox{st}, time.Second, nil))
	reg.MustRegister(metrics.NewInFlightCollector(fixedOutbox{st}, 256, time.Second, nil))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP vigil_outbox_depth Outbox entries whose durable work has not finished (waiting or started), over every replica.
# TYPE vigil_outbox_depth gauge
vigil_outbox_depth 7
# HELP vigil_approvals_waiting Workflow approval requests pending a decision and not yet expired.
# TYPE vigil_approvals_waiting gauge
vigil_approvals_waiting 3
# HELP vigil_pipelines_in_flight Alert pipelines started by the outbox dispatchers and not yet finished, over every worker.
# TYPE vigil_pipelines_in_flight gauge
vigil_pipelines_in_flight 2
# HELP vigil_pipelines_max_in_flight PIPELINE_MAX_IN_FLIGHT of this worker: past it new alerts wait in the outbox.
# TYPE vigil_pipelines_max_in_flight gauge
vigil_pipelines_max_in_flight 256
`), "vigil_outbox_depth", "vigil_approvals_waiting", "vigil_pipelines_in_flight", "vigil_pipelines_max_in_flight"))
	age := gaugeValue(t, reg, "vigil_outbox_oldest_age_seconds")
	require.InDelta(t, 90, age, 5)

	// An empty outbox reports age 0.
	reg = metrics.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(fixedOutbox{}, fixedOutbox{}, time.Second, nil))
	require.Zero(t, gaugeValue(t, reg, "vigil_outbox_oldest_age_seconds"))
}

// A Postgres that fails or hangs costs the scrape at most the timeout and reports up 0, never an
// error that would fail the whole scrape.
func TestQueueCollectorFailures(t *testing.T) {
	for name, r := range map[string]interface {
		metrics.OutboxReader
		metrics.ApprovalReader
	}{"failing": failingOutbox{}, "stuck": stuckOutbox{}} {
		t.Run(name, func(t *testing.T) {
			reg := metrics.NewRegistry()
			reg.MustRegister(metrics.NewQueueCollector(r, r, 200*time.Millisecond, nil))
			reg.MustRegister(metrics.NewInFlightCollector(r, 10, 200*time.Millisecond, nil))
			start := time.Now()
			require.Zero(t, gaugeValue(t, reg, "vigil_queue_stats_up"))
			require.Zero(t, gaugeValue(t, reg, "vigil_pipelines_in_flight_up"))
			require.Less(t, time.Since(start), 5*time.Second)
			n, err := testutil.GatherAndCount(reg, "vigil_outbox_depth", "vigil_pipelines_in_flight")
			require.NoError(t, err)
			require.Zero(t, n, "no made-up values when the database did not answer")
		})
	}
}

func TestAPIMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.NewAPI(reg)
	m.ObserveRequest("POST", "/v1/alerts", 202, 30*time.Millisecond)
	m.ObserveRequest("POST", "/v1/alerts", 202, 300*time.Millisecond)
	m.RateLimited("key")
	m.IngestAcked("generic", false)
	m.IngestAcked("generic", true)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP vigil_ingest_acks_total Alerts acknowledged with 202 (committed with their outbox row), by source and outcome (queued or deduplicated).
# TYPE vigil_ingest_acks_total counter
vigil_ingest_acks_total{outcome="deduplicated",source="generic"} 1
vigil_ingest_acks_total{outcome="queued",source="generic"} 1
# HELP vigil_http_rate_limited_total Requests refused with 429 by the rate limiter, by bucket kind (key or ip).
# TYPE vigil_http_rate_limited_total counter
vigil_http_rate_limited_total{bucket="key"} 1
# HELP vigil_http_requests_total HTTP requests answered, by method, route template (unmatched for unknown routes) and status.
# TYPE vigil_http_requests_total counter
vigil_http_requests_total{method="POST",route="/v1/alerts",status="202"} 2
`), "vigil_ingest_acks_total", "vigil_http_rate_limited_total", "vigil_http_requests_total"))
}

// The metrics server answers GET /metrics only, and stops with its context.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, ln, metrics.NewRegistry(), nil) }()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/metrics?x=%00&y=" + strings.Repeat("a", 4000))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "go_goroutines")
	for _, c := range []struct{ method, path string }{{"POST", "/metrics"}, {"GET", "/"}, {"GET", "/metrics/../debug/pprof"}, {"DELETE", "/metrics"}} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.GreaterOrEqual(t, resp.StatusCode, 400, "%s %s", c.method, c.path)
	}
	// An oversized header block is refused by the server, not buffered.
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 2<<20))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("metrics server did not stop")
	}
}

func gaugeValue(t *testing.T, reg interface {
	Gather() ([]*dto.MetricFamily, error)
}, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

func TestWorker(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.NewWorker(reg)
	m.StaleStarts(2)
	m.StaleStarts(1)
	m.AlertEnriched(1500 * time.Millisecond)
	m.AlertEnriched(-time.Second) // clocks apart: never a negative sample
	m.AgentEventDelivered(40 * time.Second)
	count, err := testutil.GatherAndCount(reg, "vigil_alert_enrichment_lag_seconds", "vigil_agent_delivery_lag_seconds")
	require.NoError(t, err)
	require.Equal(t, 2, count)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetHistogram() != nil {
			got[mf.GetName()] = mf.GetMetric()[0].GetHistogram()
		}
	}
	require.EqualValues(t, 2, got["vigil_alert_enrichment_lag_seconds"].GetSampleCount())
	require.InDelta(t, 1.5, got["vigil_alert_enrichment_lag_seconds"].GetSampleSum(), 1e-9)
	require.EqualValues(t, 1, got["vigil_agent_delivery_lag_seconds"].GetSampleCount())
	require.InDelta(t, 40, got["vigil_agent_delivery_lag_seconds"].GetSampleSum(), 1e-9)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP vigil_outbox_stale_starts_total Outbox entries the recheck found still marked started after their pipeline had ended (deleted then): places held in flight for work that was over.
# TYPE vigil_outbox_stale_starts_total counter
vigil_outbox_stale_starts_total 3
`), "vigil_outbox_stale_starts_total"))
}

func TestWorkerRetention(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.NewWorker(reg)
	m.RetentionPurged("alerts", 100)
	m.RetentionPurged("alerts", 25)
	m.RetentionPurged("raw_payloads", 1000)
	count, err := testutil.GatherAndCount(reg, "vigil_retention_purged_rows_total")
	require.NoError(t, err)
	require.Equal(t, 2, count, "one series per kind")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_retention_purged_rows_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"alerts": 125, "raw_payloads": 1000}, got)
}
