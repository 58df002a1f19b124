package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

// consoleSession signs key in through the console's form and returns its session cookie.
func consoleSession(t *testing.T, ts *testServer, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/console/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for _, c := range resp.Cookies() {
		if c.Name == "vigil_console" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// TestConsoleFormBodyIsBoundedBeforeCSRF replays security review round 4, R4-9: a signed-in session
// posted a 60 MB comment form (any signed-in form does); the CSRF check read all of it (API RSS +187 MB) before answering 422.
// Every signed-in form is now read bounded by the API's body limit before the CSRF check: a declared
// 60 MB answers 413 with 64 KB sent, a chunked body over the limit is cut at the limit.
func TestConsoleFormBodyIsBoundedBeforeCSRF(t *testing.T) {
	ts := newConsoleServer(t)
	key := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	cookie := consoleSession(t, ts, key)
	path := "/console/alerts/" + uuid.NewString() + "/assign"

	post := func(t *testing.T, framing string, send func(io.Writer) error) (*http.Response, time.Duration) {
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		start := time.Now()
		_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nCookie: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n%s\r\n\r\n", path, cookie, framing)
		require.NoError(t, err)
		go func() { _ = send(c) }()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err, framing)
		return resp, time.Since(start)
	}
	t.Run("declared 60 MB", func(t *testing.T) {
		resp, took := post(t, "Content-Length: 62914560", func(w io.Writer) error {
			_, err := io.WriteString(w, "body="+strings.Repeat("b", 64<<10)) // the rest is never sent
			return err
		})
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
		require.True(t, resp.Close, "the connection is closed after the refusal")
		t.Logf("413 after %v", took)
	})
	t.Run("chunked past the limit", func(t *testing.T) {
		chunk := strings.Repeat("b", 1<<20)
		resp, took := post(t, "Transfer-Encoding: chunked", func(w io.Writer) error {
			if _, err := io.WriteString(w, "5\r\nbody=\r\n"); err != nil {
				return err
			}
			for range 60 { // up to 60 MB; the server stops reading after 10 MB + 1
				if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return err
				}
			}
			_, err := io.WriteString(w, "0\r\n\r\n")
			return err
		})
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		t.Logf("413 after %v", took)
	})
	t.Run("a form within the limit still reaches the CSRF check", func(t *testing.T) {
		resp, _ := post(t, "Content-Length: 9", func(w io.Writer) error { _, err := io.WriteString(w, "body=text"); return err })
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "no csrf token: refused by the check, not by size")
	})
}
