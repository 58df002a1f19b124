package api

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/vigil-soc/vigil/domain/auth"
)

// BenchmarkIngestGeneric measures POST /v1/ingest/generic → 202 through the real HTTP stack (loopback
// listener, keep-alive client, bearer auth, the cached source config, normalization, passes 1-2,
// fingerprint and the prepared ingest statement against the package's Postgres). Every payload has
// its own title, so each is a new alert. allocs/op counts the client's allocations too.
func BenchmarkIngestGeneric(b *testing.B) {
	ts := newAlertServer(b, func(c *Config, _ *Deps) { c.RateLimitPerMinute = 1 << 30 })
	key := mustKey(b, ts.Store, auth.ScopeAlertsWrite)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	url := ts.URL + "/v1/ingest/generic"
	post := func(i int) {
		body := []byte(`{"title": "bench ` + strconv.Itoa(i) + `", "severity": "High", "src_ip": "10.0.0.1", "dst_ip": "192.0.2.7", "actor_email": "a@example.com", "tags": ["x", "y"]}`)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	for i := range 100 { // warm the pool and caches
		post(-1 - i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		post(i)
	}
}
