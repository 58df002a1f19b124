package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// bearerTransport adds the API key to every request of an MCP client.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go MCP client to one `vigil mcp` process over streamable HTTP.
func mcpSession(t *testing.T, base, key string) *mcpsdk.ClientSession {
	t.Helper()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "scale-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{key}, Timeout: 30 * time.Second}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpInitialize sends one MCP initialize request with key and returns the HTTP status (401 for a
// key the server refuses, before any MCP traffic).
func mcpInitialize(ctx context.Context, base, key string) (int, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"scale-test","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// mcpSubtests: the two MCP servers of the harness serve what either api wrote, and a revocation
// through an api reaches them as fast as it reaches the other api.
func (c *cluster) mcpSubtests(t *testing.T) {
	t.Run("both MCP servers read alerts ingested through either api", func(t *testing.T) {
		title := "scale mcp " + uuid.NewString()
		var alerts []string
		for i, a := range c.apis {
			id, err := ingest(context.Background(), a.base, c.admin, map[string]any{"title": title + string(rune('a'+i)), "severity": "Low"})
			require.NoError(t, err)
			alerts = append(alerts, id)
		}
		for _, m := range c.mcps {
			cs := mcpSession(t, m.base, c.admin)
			for _, id := range alerts {
				res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "get_alert", Arguments: map[string]any{"alert_uuid": id}})
				require.NoError(t, err)
				require.False(t, res.IsError, "%s get_alert %s: %v", m.name, id, res.Content)
				b, err := json.Marshal(res.StructuredContent)
				require.NoError(t, err)
				require.Contains(t, string(b), id, m.name)
			}
			require.Contains(t, scrape(t, m.metrics), "go_goroutines", "%s serves /metrics on METRICS_ADDR", m.name)
		}
	})

	t.Run("a key revoked on api-1 is refused by both MCP servers within 2 s", func(t *testing.T) {
		key, _ := createKey(t, envOf(c.env), "--name", "scale-mcp-revoke", "--scopes", "alerts:read")
		for _, m := range c.mcps {
			code, err := mcpInitialize(context.Background(), m.base, key)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code, "%s knows (and caches) the key", m.name)
		}
		code, body := c.must(c.apis[0].base, http.MethodDelete, "/v1/api-keys/"+c.keyUUID(t, key), c.admin, nil)
		require.Less(t, code, 300, body)
		revoked := time.Now()
		for _, m := range c.mcps {
			require.Eventually(t, func() bool {
				code, err := mcpInitialize(context.Background(), m.base, key)
				return err == nil && code == http.StatusUnauthorized
			}, 10*time.Second, 20*time.Millisecond, m.name)
			t.Logf("%s refused the revoked key %s after the revocation was acknowledged", m.name, time.Since(revoked))
		}
		// The authenticator caches a key for 2 s; 20 ms of polling and a loaded machine on top.
		require.Less(t, time.Since(revoked), 2*time.Second+500*time.Millisecond)
	})
}
