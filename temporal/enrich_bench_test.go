package temporal_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/temporal"
)

func reportLatencies(b *testing.B, ds []time.Duration) {
	b.Helper()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	pct := func(p float64) float64 {
		i := int(p * float64(len(ds)-1))
		return float64(ds[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

func twoStepProvider(b *testing.B, e *enrichEnv) string {
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path[len(r.URL.Path)-5:] == "token" {
			writeJSON(w, 200, map[string]any{"access_token": "tok-0123456789"})
			return
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"score": 12, "tags": []any{"a", "b"}}})
	})
	return e.provider(b, providerSpec{
		steps: []map[string]any{
			{"name": "token", "method": "POST", "url": base + "/token", "json_body": map[string]any{"v": "{{indicator.value}}"}},
			{"name": "lookup", "url": base + "/lookup/{{indicator.value}}", "headers": map[string]any{"Authorization": "Bearer {{steps.token.response.access_token}}"}},
		},
		extract: map[string]string{"score": "data.score", "tags": "data.tags"},
		malice:  map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 50, "verdict": "Malicious"}}, "default_verdict": "Benign"},
	})
}

// BenchmarkEnrich_CacheHit: POST /v1/enrichments' path for a cached value (one configured provider).
func BenchmarkEnrich_CacheHit(b *testing.B) {
	e := enrichHarness(b)
	name := twoStepProvider(b, e)
	value := "cached-" + name + ".com"
	_, err := e.enricher.Enrich(ctxFor(b, 30*time.Second), "domain", value)
	require.NoError(b, err)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := e.enricher.Enrich(ctxFor(b, 30*time.Second), "domain", value)
		ds = append(ds, time.Since(start))
		require.NoError(b, err)
		require.True(b, resultFor(b, res, name).CacheHit)
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

// BenchmarkEnrich_TwoStepLocal: a cache miss through the ProviderCall workflow, two HTTP steps to a
// loopback provider, one at a time.
func BenchmarkEnrich_TwoStepLocal(b *testing.B) {
	e := enrichHarness(b)
	name := twoStepProvider(b, e)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		res, err := e.enricher.Enrich(ctxFor(b, 30*time.Second), "domain", fmt.Sprintf("miss%d-%d-%s.com", i, b.N, name))
		ds = append(ds, time.Since(start))
		require.NoError(b, err)
		require.True(b, resultFor(b, res, name).Success)
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

func runConcurrently(b *testing.B, workers int, call func(i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := call(i); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Zero(b, failed.Load())
	return float64(b.N) / elapsed.Seconds()
}

// BenchmarkProviderCalls_Throughput: one-step provider calls (cache misses) through Temporal with 20
// concurrent callers; calls/s is the number to read.
func BenchmarkProviderCalls_Throughput(b *testing.B) {
	e := enrichHarness(b)
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"ok": true}) })
	name := e.provider(b, providerSpec{steps: []map[string]any{{"name": "get", "url": base + "/x/{{indicator.value}}"}}})
	b.ResetTimer()
	rate := runConcurrently(b, 20, func(i int) error {
		res, err := e.enricher.Enrich(ctxFor(b, 60*time.Second), "domain", fmt.Sprintf("tp%d-%d-%s.com", i, b.N, name))
		if err != nil {
			return err
		}
		if !resultFor(b, res, name).Success {
			return fmt.Errorf("call %d failed", i)
		}
		return nil
	})
	b.ReportMetric(rate, "calls/s")
}

// BenchmarkBareOneActivityWorkflow is the baseline: the Probe workflow (one activity) with the same
// 20 concurrent callers on the same server.
func BenchmarkBareOneActivityWorkflow(b *testing.B) {
	e := enrichHarness(b)
	b.ResetTimer()
	rate := runConcurrently(b, 20, func(int) error {
		_, err := temporal.StartProbe(ctxFor(b, 60*time.Second), e.c, e.queues)
		return err
	})
	b.ReportMetric(rate, "workflows/s")
}
