package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// spyServer is an httptest server that keeps every request it received, whole (request line, headers,
// body), so a test can assert a secret never reached it. handle may answer specially; nil answers
// 200 {"ok": true}.
type spyServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func newSpyServer(t testing.TB, handle func(w http.ResponseWriter, r *http.Request) bool) *spyServer {
	s := &spyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		b.WriteString(r.Method + " " + r.URL.String() + "\n")
		for k, vs := range r.Header {
			b.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
		}
		b.Write(body)
		s.mu.Lock()
		s.requests = append(s.requests, b.String())
		s.mu.Unlock()
		if handle != nil && handle(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok": true, "score": 1}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// Seen returns everything the server received.
func (s *spyServer) Seen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.requests, "\n---\n")
}

// Count is the number of requests received.
func (s *spyServer) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// securityHarness is the workflow-run harness (Temporal workers, real store, SSRF guard allowing
// loopback) with the enrichment activities wired too, and an API server whose provider routes run
// through them. env is the process environment providers' env_var_mapping sees.
type securityHarness struct {
	*runHarness
	enrich *testServer
	admin  string
}

func newSecurityHarness(t *testing.T, queueSuffix string, env store.Env) *securityHarness {
	t.Helper()
	h := newRunHarness(t, queueSuffix)
	st := h.ts.Store
	guard := netguard.NewGuard([]string{"127.0.0.1"})
	h.stop()
	h.acts.Enrichment = &enrichment.EngineDeps{Store: st, Box: h.box, Env: env, HTTP: guard.HTTPClient(30 * time.Second)}
	h.startWorkers(t)
	enrich := newTestServer(t, func(_ *Config, d *Deps) {
		d.Enrichment, d.Secrets = EnrichmentDeps{Store: st, Env: env, Enricher: temporal.NewEnricher(h.client, h.queues, h.acts)}, h.box
	})
	return &securityHarness{runHarness: h, enrich: enrich, admin: mustKey(t, st, auth.ScopeAdmin)}
}

// provider creates a provider (removed when the test ends) and returns its uuid.
func (h *securityHarness) provider(t *testing.T, body map[string]any) string {
	t.Helper()
	r := h.enrich.do(t, http.MethodPost, "/v1/enrichment-providers", h.admin, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	id := r.JSON(t)["data"].(map[string]any)["uuid"].(string)
	t.Cleanup(func() { h.enrich.do(t, http.MethodDelete, "/v1/enrichment-providers/"+id, h.admin, nil) })
	return id
}

// testProvider runs POST /v1/enrichment-providers/{id}/test for an ip and returns its data.
func (h *securityHarness) testProvider(t *testing.T, id, value string) map[string]any {
	t.Helper()
	return h.testProviderType(t, id, "ip", value)
}

func (h *securityHarness) testProviderType(t *testing.T, id, typ, value string) map[string]any {
	t.Helper()
	r := h.enrich.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/test", h.admin,
		map[string]any{"indicator_type": typ, "indicator_value": value})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}
