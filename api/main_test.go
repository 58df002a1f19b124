package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testStore is the package's own fresh, migrated database (testenv.Store); tests share it: give
// rows unique keys.
func testStore(t testing.TB) *store.Store { return testenv.Store(t) }

type testServer struct {
	URL    string
	Store  *store.Store
	Server *Server
}

// newTestServer runs the API on a real loopback listener. mutate may adjust config and deps.
func newTestServer(t testing.TB, mutate func(*Config, *Deps)) *testServer {
	t.Helper()
	return newTestServerOn(t, mutate, nil)
}

// newTestServerOn is newTestServer with the listener wrapped by wrap (nil: as it is), for tests that
// watch the connections.
func newTestServerOn(t testing.TB, mutate func(*Config, *Deps), wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	st := testStore(t)
	cfg := Config{Version: "dev", RateLimitPerMinute: 100000}
	deps := Deps{
		Log:     slog.New(slog.DiscardHandler),
		Auth:    auth.NewAuthenticator(st, slog.New(slog.DiscardHandler), 0),
		Limiter: ratelimit.NewMemory(),
		Health:  HealthChecks{Database: st.Ping, Temporal: func(context.Context) error { return nil }},
		APIKeys: st,
	}
	if mutate != nil {
		mutate(&cfg, &deps)
	}
	withServices(st, cfg, &deps)
	srv := New(cfg, deps)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.App().ShutdownWithTimeout(5 * time.Second) })
	return &testServer{URL: "http://" + addr, Store: st, Server: srv}
}

// withServices builds the domain services cmd/vigil builds once per process, over st, unless the
// test brought its own.
func withServices(st *store.Store, cfg Config, deps *Deps) {
	if deps.Audit == nil {
		deps.Audit = st
	}
	if deps.SourceRegistry == nil {
		deps.SourceRegistry = sources.NewRegistry()
	}
	var sealer *secretbox.Box // nil stays a nil interface below
	if deps.Secrets != nil {
		sealer = deps.Secrets
	}
	if deps.Ingest == nil {
		var opener ingest.SecretOpener
		if sealer != nil {
			opener = sealer
		}
		deps.Ingest = ingest.New(st, deps.SourceRegistry, opener, cfg.AlertDedupWindow)
	}
	if deps.APIKeyRules == nil {
		deps.APIKeyRules = apikeys.New(st, st, deps.Auth)
	}
	if deps.Config.Rules == nil {
		var s config.Sealer
		if sealer != nil {
			s = sealer
		}
		deps.Config = config.NewOwners(st, deps.SourceRegistry, s, deps.Ingest)
	}
	if deps.Responses == nil {
		rd := responses.Deps{Store: st, Log: deps.Log}
		if sealer != nil {
			rd.Secrets = sealer
		}
		deps.Responses = responses.New(rd)
	}
	if deps.AlertRules == nil {
		deps.AlertRules = alerts.New(st, deps.Log)
	}
	if deps.Comments == nil {
		deps.Comments = comments.New(st)
	}
	if deps.Timeline == nil {
		deps.Timeline = timeline.New(st)
	}
	if deps.Cases == nil {
		deps.Cases = cases.New(st, deps.AlertRules, deps.Log)
	}
}

// mustKey creates a key with scopes directly in the store and returns its plaintext.
func mustKey(t testing.TB, st *store.Store, scopes ...string) string {
	t.Helper()
	return mustKeyWith(t, st, func(*store.APIKey) {}, scopes...)
}

func mustKeyWith(t testing.TB, st *store.Store, edit func(*store.APIKey), scopes ...string) string {
	t.Helper()
	k, plain, err := apikeys.Build(apikeys.Fields{Name: "test-" + t.Name(), Scopes: scopes})
	require.NoError(t, err)
	edit(&k)
	require.NoError(t, st.CreateAPIKey(context.Background(), &k))
	return plain
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), string(r.Body))
	return m
}

// do sends a request; body may be nil, a string, or a value marshalled as JSON.
func (ts *testServer) do(t testing.TB, method, path, key string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// requireError asserts the contract's error body with code.
func requireError(t testing.TB, r response, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "error object missing: %s", r.Body)
	require.Equal(t, code, e["code"], string(r.Body))
	require.NotEmpty(t, e["message"])
	require.NotNil(t, e["details"])
	return m
}

// requireValidation asserts a 422 body and returns its detail list.
func requireValidation(t testing.TB, r response) []map[string]any {
	t.Helper()
	m := requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	raw, ok := m["detail"].([]any)
	require.True(t, ok, "detail list missing: %s", r.Body)
	require.NotEmpty(t, raw)
	var out []map[string]any
	for _, d := range raw {
		item := d.(map[string]any)
		require.NotEmpty(t, item["loc"])
		require.NotEmpty(t, item["msg"])
		require.NotEmpty(t, item["type"])
		loc0 := item["loc"].([]any)[0]
		require.Contains(t, []any{"body", "query", "path", "header"}, loc0)
		out = append(out, item)
	}
	return out
}

func locs(details []map[string]any) []string {
	var out []string
	for _, d := range details {
		var parts []string
		for _, p := range d["loc"].([]any) {
			switch v := p.(type) {
			case string:
				parts = append(parts, v)
			case float64:
				parts = append(parts, strings.TrimSuffix(strings.TrimSuffix(json.Number(jsonNum(v)).String(), ".0"), ""))
			}
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
