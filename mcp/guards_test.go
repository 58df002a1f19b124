package mcp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/auth"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpPost posts one JSON-RPC message to base+/mcp with token, the session id and the headers (pairs).
func mcpPost(t *testing.T, base, token, session, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// serveOn runs h's server on a real loopback listener with limits until the test ends.
func serveOn(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

// TestTrustedProxyBucketsByForwardedFor: with TRUSTED_PROXY_COUNT=1, MCP takes the client IP from
// X-Forwarded-For (as REST does): two clients behind the one proxy have a budget each.
func TestTrustedProxyBucketsByForwardedFor(t *testing.T) {
	h := newHarness(t, 2, func(c *Config) { c.TrustedProxyCount = 1 })
	ts := serveOn(t, h)
	for range 2 {
		resp := mcpPost(t, ts, "", "", initializeBody, "X-Forwarded-For", "198.51.100.7")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp := mcpPost(t, ts, "", "", initializeBody, "X-Forwarded-For", "198.51.100.7")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "198.51.100.7 spent its budget")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp = mcpPost(t, ts, "", "", initializeBody, "X-Forwarded-For", "203.0.113.9")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "another client behind the proxy has its own bucket")
	require.Equal(t, "1", resp.Header.Get("X-RateLimit-Remaining"))
	resp = mcpPost(t, ts, "", "", initializeBody, "X-Forwarded-For", "10.1.1.1, 203.0.113.9")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"), "the first address from the right is the client; the rest is the client's own words")
	resp = mcpPost(t, ts, "", "", initializeBody, "X-Forwarded-For", "10.2.2.2, 203.0.113.9")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}

// requireClosedWithin reads c until the server closes it, or fails after within.
func requireClosedWithin(t *testing.T, c net.Conn, within time.Duration, why string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	_, err := io.Copy(io.Discard, c)
	require.False(t, os.IsTimeout(err), "%s: the connection is still open after %s", why, within)
}

// TestListenerTimeoutsCloseSlowClients: slow unauthenticated connections (headers never finished, a
// body never sent, a kept-alive connection left idle) are closed by the listener's timeouts, while an
// authenticated request, and an authenticated session whose stream outlives ReadTimeout, still work.
func TestListenerTimeoutsCloseSlowClients(t *testing.T) {
	h := newHarness(t, 1000, func(c *Config) {
		c.Listener = ListenerLimits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond, IdleTimeout: 600 * time.Millisecond}
	})
	base := serveOn(t, h)
	addr := strings.TrimPrefix(base, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	var slow []net.Conn
	for range 50 {
		c := dial()
		_, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		slow = append(slow, c)
	}
	bodyless := dial()
	_, err := io.WriteString(bodyless, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	require.NoError(t, err)

	token, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeWorkflowsRead)
	start := time.Now()
	resp := mcpPost(t, base, token, "", initializeBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "an authenticated request is served beside the slow ones")
	require.Less(t, time.Since(start), 200*time.Millisecond)

	for _, c := range slow {
		requireClosedWithin(t, c, 2*time.Second, "headers never finished")
	}
	requireClosedWithin(t, bodyless, 2*time.Second, "a body never sent")

	idle := dial()
	_, err = io.WriteString(idle, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	r, err := http.ReadResponse(bufio.NewReader(idle), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode)
	requireClosedWithin(t, idle, 2*time.Second, "a kept-alive connection left idle")

	// ReadTimeout bounds what a client sends, not an authenticated answer: a session's standalone
	// SSE stream stays open past it, and later calls work.
	resp = mcpPost(t, base, token, "", initializeBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.Equal(t, http.StatusAccepted, mcpPost(t, base, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).StatusCode)
	stream := dial()
	_, err = io.WriteString(stream, "GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer "+token+
		"\r\nMcp-Session-Id: "+session+"\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n")
	require.NoError(t, err)
	sr, err := http.ReadResponse(bufio.NewReader(stream), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sr.StatusCode)
	require.NoError(t, stream.SetReadDeadline(time.Now().Add(1500*time.Millisecond)))
	_, err = io.Copy(io.Discard, sr.Body)
	require.True(t, os.IsTimeout(err), "the stream is still open after 2.5 × ReadTimeout: %v", err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token: token}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	time.Sleep(time.Second)
	_, body := call(t, cs, "list_workflows", nil)
	require.Contains(t, body, "data")
}

// TestConnectionCapPerIP: one client IP holds at most MaxConnsPerIP connections; more are closed at
// once, and a released slot is usable again.
func TestConnectionCapPerIP(t *testing.T) {
	h := newHarness(t, 1000, func(c *Config) {
		c.Listener = ListenerLimits{ReadHeaderTimeout: 10 * time.Second, MaxConnsPerIP: 2}
	})
	base := serveOn(t, h)
	addr := strings.TrimPrefix(base, "http://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // both accepted
	extra, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer extra.Close()
	requireClosedWithin(t, extra, time.Second, "a third connection from the same IP")
	for _, c := range held {
		c.Close()
	}
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && r.StatusCode == http.StatusOK
	}, 3*time.Second, 50*time.Millisecond, "released slots are free again")
}

// TestSessionsExpireWhenIdle: a streamable-HTTP session no request used for SessionIdle is gone (404).
func TestSessionsExpireWhenIdle(t *testing.T) {
	h := newHarness(t, 1000, func(c *Config) { c.Listener = ListenerLimits{SessionIdle: 500 * time.Millisecond} })
	base := serveOn(t, h)
	token, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeWorkflowsRead)
	resp := mcpPost(t, base, token, "", initializeBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	resp = mcpPost(t, base, token, session, list)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a session in use lives")
	time.Sleep(1500 * time.Millisecond)
	resp = mcpPost(t, base, token, session, list)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an idle session expired")

	// An SSE session: its stream closes once no message has used it for SessionIdle.
	req, err := http.NewRequest(http.MethodGet, base+"/sse", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	events := bufio.NewReader(stream.Body)
	var endpoint string
	for endpoint == "" {
		line, err := events.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "data: ") {
			endpoint = strings.TrimSpace(strings.TrimPrefix(line, "data: "))
		}
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, events); ended <- err }()
	select {
	case <-ended:
	case <-time.After(3 * time.Second):
		t.Fatal("an idle SSE session's stream is still open")
	}
	req, err = http.NewRequest(http.MethodPost, base+endpoint, strings.NewReader(list))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	after, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	after.Body.Close()
	require.Equal(t, http.StatusNotFound, after.StatusCode, "the expired SSE session is gone")
}

// TestFiveHundredSlowClientsDoNotStopMCP (issue 27, what it must show): 500 unauthenticated slow
// connections (headers never finished), from two client IPs under MAX_CONNS_PER_IP (256), plus 100
// more from the first, which the cap refuses but 6. While they are held, /health and an authenticated
// MCP request still answer within 200 ms, and memory stays bounded; after ReadHeaderTimeout (2 s here)
// the listener has closed every one of them.
func TestFiveHundredSlowClientsDoNotStopMCP(t *testing.T) {
	const headerTimeout = 2 * time.Second
	h := newHarness(t, 100000, func(c *Config) {
		c.Listener = ListenerLimits{ReadHeaderTimeout: headerTimeout, MaxConnsPerIP: 256}
	})
	base := serveOn(t, h)
	addr := strings.TrimPrefix(base, "http://")
	token, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeWorkflowsRead)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	health := func() *http.Request { r, _ := http.NewRequest(http.MethodGet, base+"/health", nil); return r }
	initialize := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(initializeBody))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
	testenv.Latencies(t, client, 5, http.StatusOK, initialize) // warm: the key is cached, the connection open

	before := testenv.InUse()
	start := time.Now()
	slow := testenv.SlowClients(t, addr, 500, 250, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
	overCap := testenv.SlowClients(t, addr, 100, 100, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
	refused := testenv.ClosedWithin(overCap, 300*time.Millisecond)
	t.Logf("%d of 100 more connections from 127.0.0.2 refused by the cap", refused)
	require.GreaterOrEqual(t, refused, 94)
	held := testenv.InUse()

	for _, tc := range []struct {
		name string
		req  func() *http.Request
	}{{"/health", health}, {"initialize with a key", initialize}} {
		lat := testenv.Latencies(t, client, 20, http.StatusOK, tc.req)
		t.Logf("%s beside 500 slow connections: median %v, max %v", tc.name, lat[len(lat)/2], lat[len(lat)-1])
		require.Less(t, lat[len(lat)-1], 200*time.Millisecond, tc.name)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	lat := testenv.Latencies(t, fresh, 10, http.StatusOK, health)
	require.Less(t, lat[len(lat)-1], 200*time.Millisecond, "new connections")

	t.Logf("memory in use: %s before, %s with 500 slow connections held (client and server in this process)", testenv.MB(before), testenv.MB(held))
	require.Less(t, int64(held)-int64(before), int64(64<<20), "memory grows by less than 64 MB for 500 connections")

	testenv.RequireClosedWithin(t, slow, time.Until(start.Add(headerTimeout+2*time.Second)))
	t.Logf("all 500 closed by the listener %v after they were opened", time.Since(start).Round(10*time.Millisecond))
}
