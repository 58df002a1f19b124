package api

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// BenchmarkGetAPIKey measures an authenticated GET /v1/api-keys/{uuid} through the real HTTP stack
// (loopback listener, keep-alive client): request id, security headers, rate limit, bearer auth with
// the production 2 s lookup cache, scope check, one indexed Postgres read, the envelope. It reports
// latency percentiles as custom metrics.
func BenchmarkGetAPIKey(b *testing.B) {
	for _, cache := range []time.Duration{2 * time.Second, 0} {
		name := "auth-cached"
		if cache == 0 {
			name = "auth-uncached"
		}
		b.Run(name, func(b *testing.B) {
			ts := newTestServer(b, func(c *Config, d *Deps) {
				c.RateLimitPerMinute = 1 << 30
				d.Auth = auth.NewAuthenticator(testStore(b), d.Log, cache)
			})
			key := mustKey(b, ts.Store, auth.ScopeAdmin)
			k, _, err := apikeys.Build(apikeys.Fields{Name: "target", Scopes: []string{auth.ScopeAlertsRead}})
			require.NoError(b, err)
			require.NoError(b, ts.Store.CreateAPIKey(context.Background(), &k))
			url := ts.URL + "/v1/api-keys/" + k.UUID.String()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			get := func() time.Duration {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				return time.Since(start)
			}
			for range 200 { // warm the pool and caches
				get()
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				lat = append(lat, get())
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(0.999), "p99.9-µs")
}

var _ APIKeyStore = (*store.Store)(nil)
