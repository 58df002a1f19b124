package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// BenchmarkGetAlertMCPvsREST reads the same alert through `vigil api` (GET /v1/alerts/{uuid}) and
// `vigil mcp` (get_alert over streamable HTTP, the Go SDK's client on one session), interleaved in one
// run, and reports each side's p50 and p99 latency (docs/PERFORMANCE.md). Run with
// `go test ./cmd/vigil/ -run '^$' -bench GetAlertMCPvsREST -benchtime 2000x`.
func BenchmarkGetAlertMCPvsREST(b *testing.B) {
	apiAddr, mcpAddr, key := startAPIAndMCP(b, map[string]string{"RATE_LIMIT_DEFAULT_PER_MINUTE": "10000000"})
	id := ingestAlert(b, apiAddr, key, "MCP bench "+uuid.NewString())
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: "http://" + mcpAddr + "/mcp", HTTPClient: &http.Client{Transport: bearer{key: key}}}, nil)
	require.NoError(b, err)
	defer cs.Close()

	rest := func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+apiAddr+"/v1/alerts/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
	}
	viaMCP := func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_alert", Arguments: map[string]any{"alert_uuid": id}})
		require.NoError(b, err)
		require.False(b, res.IsError)
	}
	for range 50 { // warm up connections, caches and prepared statements
		rest()
		viaMCP()
	}
	restTimes, mcpTimes := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		rest()
		t1 := time.Now()
		viaMCP()
		restTimes, mcpTimes = append(restTimes, t1.Sub(t0)), append(mcpTimes, time.Since(t1))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds())
	}
	b.ReportMetric(pct(restTimes, 0.50), "rest-p50-µs")
	b.ReportMetric(pct(restTimes, 0.99), "rest-p99-µs")
	b.ReportMetric(pct(mcpTimes, 0.50), "mcp-p50-µs")
	b.ReportMetric(pct(mcpTimes, 0.99), "mcp-p99-µs")
}

type bearer struct{ key string }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	return http.DefaultTransport.RoundTrip(r)
}
