package temporal_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// TestPipeline_ProviderOutageHeals: a provider answering 503 during a steady ingest stops being
// called within seconds (its circuit opens, /health says circuit_open), and once it answers again
// every alert of the outage ends Enriched with its result (parked alerts re-run by the healer,
// which also sends the half-open probe when no new alert arrives).
func TestPipeline_ProviderOutageHeals(t *testing.T) {
	e := pipelineHarness(t)
	ctx := context.Background()
	var down atomic.Bool
	var hits, downHits atomic.Int32
	url := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			downHits.Add(1)
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		scoreHandler(&hits, func(string) int { return 10 })(w, r)
	})
	prov := e.provider(t, url, 2, "ip")
	t.Cleanup(func() {
		p, err := e.st.GetProviderByName(context.Background(), prov)
		if err == nil {
			_ = e.st.DeleteProvider(context.Background(), p.UUID)
		}
	})
	healCtx, stopHealer := context.WithCancel(ctx)
	healerDone := make(chan struct{})
	go func() {
		defer close(healerDone)
		_ = temporal.NewCircuitHealer(e.st, e.c, e.queues, e.log, temporal.CircuitHealerOptions{Interval: 500 * time.Millisecond}).Run(healCtx)
	}()
	t.Cleanup(func() { stopHealer(); <-healerDone })

	ingest := func(n int, every time.Duration, tag string) []uuid.UUID {
		ids := make([]uuid.UUID, 0, n)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; i < n; i++ {
			ips := freshIPs(2)
			ids = append(ids, e.ingest(t, "generic", fmt.Sprintf(`{"title":"outage %s %d %s","src_ip":%q,"dest_ip":%q}`,
				tag, i, uuid.NewString(), ips[0], ips[1])))
			<-tick.C
		}
		return ids
	}
	health := func() string {
		m, err := e.st.ProviderHealth(ctx, nil)
		require.NoError(t, err)
		return m[prov]
	}

	// Healthy: enriched, circuit closed.
	for _, id := range ingest(3, 100*time.Millisecond, "before") {
		require.Equal(t, store.EnrichmentEnriched, e.waitEnriched(t, id, 60*time.Second).EnrichmentStatus)
	}
	require.Equal(t, "configured", health())

	// Outage: 40 alerts at 5/s (2 IPs each). Without the breaker that is 80 calls × 3 attempts.
	down.Store(true)
	outageStart := time.Now()
	var sawOpen atomic.Bool
	watch, stopWatch := context.WithCancel(ctx)
	go func() {
		for watch.Err() == nil {
			if health() == "circuit_open" {
				sawOpen.Store(true)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	window := ingest(40, 200*time.Millisecond, "during")
	ingestEnd := time.Now()
	for _, id := range window {
		e.waitEnriched(t, id, 2*time.Minute) // leaves Pending: Failed, or Enriched if it ran before/after
	}
	stopWatch()
	callsDuring := downHits.Load()
	// The last seconds of the outage: only half-open probes (one per 2 s cool-down) reach the server.
	tailStart := downHits.Load()
	time.Sleep(6 * time.Second)
	tailCalls := downHits.Load() - tailStart
	t.Logf("outage: %d calls while down (%d alerts ingested in %s; %d calls without a breaker), %d calls in 6 s once open",
		callsDuring, len(window), ingestEnd.Sub(outageStart).Round(time.Millisecond), len(window)*2*3, tailCalls)
	require.True(t, sawOpen.Load(), "GET /health never showed circuit_open")
	require.Equal(t, "circuit_open", health())
	require.Less(t, int(callsDuring), len(window)*2*3/3, "calls did not stop while the provider was down")
	require.LessOrEqual(t, int(tailCalls), 6, "an open circuit lets only probes through")
	parked := e.count(t, "SELECT count(*) FROM enrichment_parked WHERE provider_name = ?", prov)
	require.Positive(t, parked)

	// Recovery: every alert of the window ends Enriched with the provider's result, and nothing
	// stays parked.
	down.Store(false)
	back := time.Now()
	deadline := back.Add(3 * time.Minute)
	for _, id := range window {
		for {
			a, err := e.st.GetAlert(ctx, id)
			require.NoError(t, err)
			if a.EnrichmentStatus == store.EnrichmentEnriched && providerSucceededOn(t, e, id, prov) {
				break
			}
			require.True(t, time.Now().Before(deadline), "alert %s is %s without a %s result %s after the provider came back",
				id, a.EnrichmentStatus, prov, time.Since(back))
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Logf("recovery: %d parked alerts, all %d alerts of the outage Enriched with %s's result %s after it came back",
		parked, len(window), prov, time.Since(back).Round(time.Millisecond))
	require.Equal(t, "configured", health())
	require.Eventually(t, func() bool {
		return e.count(t, "SELECT count(*) FROM enrichment_parked WHERE provider_name = ?", prov) == 0
	}, 30*time.Second, 200*time.Millisecond)
	// The re-runs linked nothing twice, and each alert's last run recorded alert_enriched.
	for _, id := range window {
		require.Equal(t, 2, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id))
		require.Positive(t, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'", id))
	}
}

// providerSucceededOn reports whether every indicator of the alert has a successful result of
// provider.
func providerSucceededOn(t *testing.T, e *pipeEnv, alert uuid.UUID, provider string) bool {
	t.Helper()
	inds, err := e.st.AlertIndicators(context.Background(), alert)
	require.NoError(t, err)
	if len(inds) == 0 {
		return false
	}
	for _, ind := range inds {
		r, ok := ind.EnrichmentResults[provider].(map[string]any)
		if !ok || r["status"] != store.EnrichSuccess {
			return false
		}
	}
	return true
}
