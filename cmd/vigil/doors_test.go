package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
)

// doorsEnv runs `vigil api` and `vigil mcp` behind one trusted proxy (TRUSTED_PROXY_COUNT=1, so each
// subtest is its own client by X-Forwarded-For) and returns the environment and both base URLs.
func doorsEnv(t *testing.T) (env func(string) string, apiBase, mcpBase string) {
	t.Helper()
	apiAddr, mcpAddr := freeAddr(t), freeAddr(t)
	env = envOf(map[string]string{
		"DATABASE_URL":                  testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":              testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX":    testenv.TaskQueuePrefix(t),
		"API_ADDR":                      apiAddr,
		"MCP_ADDR":                      mcpAddr,
		"ENCRYPTION_KEY":                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"RATE_LIMIT_DEFAULT_PER_MINUTE": "1000",
		"TRUSTED_PROXY_COUNT":           "1",
		"LOG_LEVEL":                     "error",
	})
	serve(t, env, "api", "mcp")
	apiBase, mcpBase = "http://"+apiAddr, "http://"+mcpAddr
	waitHealthy(t, apiBase)
	waitHealthy(t, mcpBase)
	return env, apiBase, mcpBase
}

// doorRequest sends one request as client ip (X-Forwarded-For) and returns the answer and its body.
func doorRequest(t *testing.T, method, u, ip string, body io.Reader, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-For", ip)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(raw)
}

func requireRateLimitedJSON(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	var b struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	require.Equal(t, "RATE_LIMITED", b.Error.Code)
	require.EqualValues(t, 5, b.Error.Details["limit"])
}

// TestEveryDoorHasTheSameGuards replays issue 27's attacks on the doors through the real processes:
// a key limited to 5/min gets 429 on its 6th request over REST, MCP and the console alike; the 11th
// console sign-in from one IP inside a minute gets 429; a 60 MB sign-in body gets 413 before it is
// sent, so nothing of it is buffered.
func TestEveryDoorHasTheSameGuards(t *testing.T) {
	env, apiBase, mcpBase := doorsEnv(t)
	limitedKey := func() string {
		key, _ := createKey(t, env, "--name", "five a minute", "--scopes", "alerts:read", "--rate-limit-per-minute", "5")
		return key
	}

	t.Run("REST", func(t *testing.T) {
		key := limitedKey()
		for i := range 5 {
			resp, body := doorRequest(t, http.MethodGet, apiBase+"/v1/alerts", "198.51.100.1", nil, "Authorization", "Bearer "+key)
			require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
		}
		resp, body := doorRequest(t, http.MethodGet, apiBase+"/v1/alerts", "198.51.100.1", nil, "Authorization", "Bearer "+key)
		requireRateLimitedJSON(t, resp, body)
	})

	t.Run("MCP", func(t *testing.T) {
		key := limitedKey()
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		post := func() (*http.Response, string) {
			return doorRequest(t, http.MethodPost, mcpBase+"/mcp", "198.51.100.2", strings.NewReader(initialize), "Authorization", "Bearer "+key,
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		}
		for i := range 5 {
			resp, body := post()
			require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
			require.Equal(t, "5", resp.Header.Get("X-RateLimit-Limit"))
		}
		resp, body := post()
		requireRateLimitedJSON(t, resp, body)
	})

	t.Run("console", func(t *testing.T) {
		key := limitedKey()
		resp, _ := doorRequest(t, http.MethodPost, apiBase+"/console/login", "198.51.100.3", strings.NewReader(url.Values{"key": {key}}.Encode()),
			"Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		var cookie string
		for _, c := range resp.Cookies() {
			if c.Name == "vigil_console" {
				cookie = c.Name + "=" + c.Value
			}
		}
		require.NotEmpty(t, cookie)
		for i := range 5 {
			resp, body := doorRequest(t, http.MethodGet, apiBase+"/console/", "198.51.100.3", nil, "Cookie", cookie)
			require.Equal(t, http.StatusOK, resp.StatusCode, "page %d: %s", i+1, body)
			require.Equal(t, "5", resp.Header.Get("X-RateLimit-Limit"), "pages count against the signed-in key's budget")
		}
		resp, body := doorRequest(t, http.MethodGet, apiBase+"/console/", "198.51.100.3", nil, "Cookie", cookie)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		require.Contains(t, resp.Header.Get("Content-Type"), "text/html", "the console answers its errors as pages")
		require.Contains(t, body, "Rate limit exceeded")
		resp, body = doorRequest(t, http.MethodGet, apiBase+"/v1/alerts", "198.51.100.3", nil, "Authorization", "Bearer "+key)
		requireRateLimitedJSON(t, resp, body)
	})

	t.Run("console sign-in attempts per IP", func(t *testing.T) {
		bad := url.Values{"key": {"cai_" + strings.Repeat("x", 32)}}.Encode()
		signIn := func(ip, form string) (*http.Response, string) {
			return doorRequest(t, http.MethodPost, apiBase+"/console/login", ip, strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
		}
		for i := range 10 {
			resp, body := signIn("198.51.100.4", bad)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "attempt %d: %s", i+1, body)
		}
		resp, body := signIn("198.51.100.4", bad)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the 11th bad sign-in inside a minute")
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		require.Contains(t, body, "Rate limit exceeded")
		good, _ := createKey(t, env, "--name", "right key", "--scopes", "alerts:read")
		resp, _ = signIn("198.51.100.4", url.Values{"key": {good}}.Encode())
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the budget is checked before the key: a right guess waits too")
		resp, _ = signIn("198.51.100.5", url.Values{"key": {good}}.Encode())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "another client IP signs in")
	})

	t.Run("a 60 MB sign-in body is refused unread", func(t *testing.T) {
		for _, framing := range []string{"Content-Length: 62914560", "Transfer-Encoding: chunked"} {
			c, err := net.Dial("tcp", strings.TrimPrefix(apiBase, "http://"))
			require.NoError(t, err)
			defer c.Close()
			_, err = fmt.Fprintf(c, "POST /console/login HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.6\r\nContent-Type: application/x-www-form-urlencoded\r\n%s\r\n\r\n", framing)
			require.NoError(t, err)
			chunk := "key=" + strings.Repeat("k", 64<<10)
			if strings.HasPrefix(framing, "Transfer") {
				chunk = fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk)
			}
			_, err = io.WriteString(c, chunk)
			require.NoError(t, err)
			// The rest of the 60 MB is never sent: the answer must come without it.
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err, framing)
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, framing)
			require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
			resp.Body.Close()
		}
	})
}
