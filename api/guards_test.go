package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/auth"
)

// countingListener counts the bytes the server reads from every connection it accepts.
type countingListener struct {
	net.Listener
	read *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// contractError reads an answer's error body (API.md §0) and returns its code.
func contractError(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.NotEmpty(t, body.Error.Message)
	return body.Error.Code
}

// Issue 27 (LOW): an unauthenticated /v1 request made the server read up to 20 MB (twice the body
// limit, "discarded" so the client would see its answer) before its 401; a chunked one was held until
// the read timeout. Now a body refused without a valid key is never read: the 401 comes with the
// contract's body and Connection: close while the client is still sending, and the server has read no
// more than the headers and the 16 KB read buffer (fasthttp reads 8 KB of body with the headers).
func TestUnauthenticatedBodyIsNeverRead(t *testing.T) {
	var read atomic.Int64
	ts := newTestServerOn(t, nil, func(ln net.Listener) net.Listener { return countingListener{Listener: ln, read: &read} })
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	const declared = 15 << 20 // within twice the 10 MB limit: the old code read all of it
	cases := []struct {
		name, auth, path string
		status           int
		code             string
	}{
		{"no key", "", "/v1/api-keys", http.StatusUnauthorized, "UNAUTHORIZED"},
		{"a wrong key", "cai_" + strings.Repeat("x", 32), "/v1/api-keys", http.StatusUnauthorized, "UNAUTHORIZED"},
		{"a public route's wrong method", "", "/health", http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
	}
	for _, tc := range cases {
		for _, framing := range []string{"Content-Length: " + strconv.Itoa(declared), "Transfer-Encoding: chunked"} {
			t.Run(tc.name+"/"+strings.Fields(framing)[0], func(t *testing.T) {
				read.Store(0)
				conn, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), 5*time.Second)
				require.NoError(t, err)
				defer conn.Close()
				require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
				head := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + "\r\n"
				if tc.auth != "" {
					head += "Authorization: Bearer " + tc.auth + "\r\n"
				}
				_, err = io.WriteString(conn, head+"\r\n")
				require.NoError(t, err)
				// The client sends its whole body as fast as the server takes it.
				start := time.Now()
				sent := make(chan int64, 1)
				go func() {
					chunk := strings.Repeat("a", 64<<10)
					if strings.HasPrefix(framing, "Transfer") {
						chunk = strconv.FormatInt(int64(len(chunk)), 16) + "\r\n" + chunk + "\r\n"
					}
					var n int64
					for n < declared {
						w, err := io.WriteString(conn, chunk)
						n += int64(w)
						if err != nil {
							break
						}
					}
					sent <- n
				}()
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				require.NoError(t, err)
				took := time.Since(start)
				require.Equal(t, tc.status, resp.StatusCode)
				require.Equal(t, tc.code, contractError(t, resp))
				require.True(t, resp.Close, "the connection is closed after the answer")
				n := <-sent // the server closed: the client's writes stop
				got := read.Load()
				t.Logf("%s: %d after %v; the server read %d bytes of the %d the client sent", framing, tc.status, took, got, n)
				require.Less(t, got, int64(64<<10), "the server read the refused body")
			})
		}
	}

	// A small refused body is already read with the headers: the connection stays open for the next
	// request, and a body the route reads still works.
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(conn)
	_, err = io.WriteString(conn, "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "UNAUTHORIZED", contractError(t, resp))
	require.False(t, resp.Close)
	body := `{"name": "kept alive", "scopes": ["alerts:read"]}`
	_, err = io.WriteString(conn, "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer "+admin+
		"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp.Body.Close()
}

// Issue 27 (LOW): an unauthenticated client could hold a connection 60 s (the one read deadline of a
// whole request). Now what comes before authentication, the headers and the first 8 KB of body, has
// ReadHeaderTimeout (10 s by default, short here): a client trickling its headers or its first body
// bytes gets 408 with the contract's body and the connection is closed. An authenticated body has its
// own ReadTimeout from when it is read.
func TestUnauthenticatedClientHoldsAConnectionBriefly(t *testing.T) {
	const headerTimeout = 500 * time.Millisecond
	ts := newTestServer(t, func(c *Config, _ *Deps) { c.ReadHeaderTimeout, c.ReadTimeout = headerTimeout, 10*time.Second })
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	addr := strings.TrimPrefix(ts.URL, "http://")

	// held sends head, then one byte of trickle every 100 ms, and returns how long the server kept the
	// connection and what it answered.
	held := func(t *testing.T, head, trickle string) (time.Duration, *http.Response) {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		defer conn.Close()
		start := time.Now()
		require.NoError(t, conn.SetReadDeadline(start.Add(10*time.Second)))
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := io.WriteString(conn, string(trickle[i%len(trickle)])); err != nil {
					return
				}
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server still held the connection after %v", time.Since(start))
		}
		if err != nil { // closed without an answer
			return time.Since(start), nil
		}
		// The connection is closed after the answer.
		_, _ = io.Copy(io.Discard, resp.Body)
		_, err = conn.Read(make([]byte, 1))
		require.Error(t, err)
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is closed after the 408")
		return time.Since(start), resp
	}

	for _, tc := range []struct{ name, head, trickle string }{
		{"headers trickled", "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\n", "X-Slow: a\r\n"},
		{"body trickled", "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "a"},
		{"body trickled with a key", "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + admin + "\r\nContent-Length: 100000\r\n\r\n", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, resp := held(t, tc.head, tc.trickle)
			t.Logf("closed after %v", took)
			require.Less(t, took, headerTimeout+2*time.Second)
			if resp != nil {
				require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
			}
		})
	}

	// Authenticated, a body that takes longer than ReadHeaderTimeout (but arrives within ReadTimeout)
	// is read: the 8 KB read with the headers come at once, the rest after a pause.
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	body := `{"name": "` + strings.Repeat("n", 20<<10) + `", "scopes": ["alerts:read"]}`
	_, err = io.WriteString(conn, "POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer "+admin+
		"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:10<<10])
	require.NoError(t, err)
	time.Sleep(3 * headerTimeout)
	_, err = io.WriteString(conn, body[10<<10:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	// The body was read whole: the name's length is what the binder refuses, not a timeout.
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp.Body.Close()
}

// Issue 27, what it must show: 500 unauthenticated slow connections (headers never finished), from two
// client IPs under MAX_CONNS_PER_IP (256), plus 100 more from the first, which the cap refuses but 6.
// While they are held, /health and an authenticated request still answer within 200 ms, and memory
// stays bounded; after ReadHeaderTimeout (2 s here) the listener has closed every one of them. Before,
// they were held for the 60 s read timeout.
func TestFiveHundredSlowClientsDoNotStopTheAPI(t *testing.T) {
	const headerTimeout = 2 * time.Second
	ts := newTestServer(t, func(c *Config, _ *Deps) { c.ReadHeaderTimeout, c.MaxConnsPerIP = headerTimeout, 256 })
	key := mustKey(t, ts.Store, auth.ScopeAdmin)
	addr := strings.TrimPrefix(ts.URL, "http://")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	health := func() *http.Request { r, _ := http.NewRequest(http.MethodGet, ts.URL+"/health", nil); return r }
	keys := func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/api-keys?page_size=1", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return r
	}
	testenv.Latencies(t, client, 5, http.StatusOK, keys) // warm: the key is cached, the connection open

	before := testenv.InUse()
	start := time.Now()
	slow := testenv.SlowClients(t, addr, 500, 250, "POST /v1/alerts HTTP/1.1\r\nHost: x\r\n")
	overCap := testenv.SlowClients(t, addr, 100, 100, "POST /v1/alerts HTTP/1.1\r\nHost: x\r\n")
	// 127.0.0.2 already holds 250 of its 256: the cap closes the others at once.
	refused := testenv.ClosedWithin(overCap, 300*time.Millisecond)
	t.Logf("%d of 100 more connections from 127.0.0.2 refused by the cap", refused)
	require.GreaterOrEqual(t, refused, 94)
	held := testenv.InUse()

	for _, tc := range []struct {
		name string
		req  func() *http.Request
	}{{"/health", health}, {"GET /v1/api-keys with a key", keys}} {
		lat := testenv.Latencies(t, client, 20, http.StatusOK, tc.req)
		t.Logf("%s beside 500 slow connections: median %v, max %v", tc.name, lat[len(lat)/2], lat[len(lat)-1])
		require.Less(t, lat[len(lat)-1], 200*time.Millisecond, tc.name)
	}
	// A new client connection (another IP's budget, not 127.0.0.2's) is served too.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	lat := testenv.Latencies(t, fresh, 10, http.StatusOK, health)
	require.Less(t, lat[len(lat)-1], 200*time.Millisecond, "new connections")

	grew := int64(held) - int64(before)
	t.Logf("memory in use: %s before, %s with 500 slow connections held (client and server in this process)", testenv.MB(before), testenv.MB(held))
	require.Less(t, grew, int64(64<<20), "memory grows by less than 64 MB for 500 connections")

	testenv.RequireClosedWithin(t, slow, time.Until(start.Add(headerTimeout+2*time.Second)))
	t.Logf("all 500 closed by the listener %v after they were opened", time.Since(start).Round(10*time.Millisecond))
}
