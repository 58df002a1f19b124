package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/netguard/netguardtest"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/kit/webhooks/webhookstest"
)

// receiver is an agent's webhook endpoint on loopback that records what it received.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	response func(n int, w http.ResponseWriter) // n: 1-based request number; nil answers 200
}

type received struct {
	Header http.Header
	Body   []byte
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{Header: req.Header.Clone(), Body: body})
		n, respond := len(r.got), r.response
		r.mu.Unlock()
		if respond != nil {
			respond(n, w)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// newAgentServer is the API with the agent routes wired as cmd/vigil wires them; the SSRF guard lets
// loopback through (the receivers live there) unless guard is given.
func newAgentServer(t *testing.T, guard *netguard.Guard) *testServer {
	t.Helper()
	key, err := secretbox.ParseKey("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	require.NoError(t, err)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	if guard == nil {
		guard = netguard.NewGuard([]string{"127.0.0.1"})
	}
	return newTestServer(t, func(_ *Config, d *Deps) {
		d.Agents = agents.New(testStore(t), box, guard, agents.NewHTTPClient(guard))
		d.AgentStore = testStore(t)
	})
}

// registerAgent creates an agent (removed when the test ends) and returns its uuid and signing secret.
func registerAgent(t *testing.T, ts *testServer, key string, body map[string]any) (string, string) {
	t.Helper()
	if _, ok := body["name"]; !ok {
		body["name"] = "agent " + uuid.NewString()
	}
	r := ts.do(t, http.MethodPost, "/v1/agents", key, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	id := d["uuid"].(string)
	t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/agents/"+id, key, nil) })
	return id, d["signing_secret"].(string)
}

func TestAgents_RegisterReadUpdateDelete(t *testing.T) {
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead, auth.ScopeAgentsRead)
	recv := newReceiver(t)
	name := "triage-bot " + uuid.NewString()

	r := ts.do(t, http.MethodPost, "/v1/agents", key, map[string]any{"name": name, "endpoint_url": recv.URL + "/hook",
		"auth_header_name": "Authorization", "auth_header_value": "Bearer agent-token-123",
		"trigger_on_severities": []string{"High", "Critical"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	id := d["uuid"].(string)
	t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/agents/"+id, key, nil) })
	require.Regexp(t, `^whsec_[A-Za-z0-9_-]{43}$`, d["signing_secret"])
	require.Equal(t, []any{"alert.enriched"}, d["events"], "default events")
	require.EqualValues(t, 30, d["timeout_seconds"])
	require.EqualValues(t, 3, d["retry_count"])
	require.Equal(t, true, d["is_active"])
	require.Equal(t, true, d["auth_header_configured"])
	require.Nil(t, d["trigger_filter"])
	require.NotContains(t, string(r.Body), "agent-token-123", "the auth header value is write-only")

	g := ts.do(t, http.MethodGet, "/v1/agents/"+id, key, nil)
	require.Equal(t, http.StatusOK, g.Status)
	require.NotContains(t, string(g.Body), "agent-token-123")
	require.NotContains(t, string(g.Body), d["signing_secret"].(string), "the signing secret is shown once")
	require.NotContains(t, string(g.Body), "signing_secret")

	// PATCH: null and absent fields stay; set fields change.
	p := ts.do(t, http.MethodPatch, "/v1/agents/"+id, key, map[string]any{"description": "reads alerts",
		"timeout_seconds": 5, "name": nil, "events": []string{"alert.enriched", "alert.updated"},
		"trigger_filter": map[string]any{"match_all": []any{map[string]any{"field": "source_name", "op": "eq", "value": "generic"}}}})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pd := p.JSON(t)["data"].(map[string]any)
	require.Equal(t, name, pd["name"])
	require.Equal(t, "reads alerts", pd["description"])
	require.EqualValues(t, 5, pd["timeout_seconds"])
	require.Equal(t, []any{"High", "Critical"}, pd["trigger_on_severities"])
	require.NotNil(t, pd["trigger_filter"])

	// null leaves a field unchanged, the filter included; {} removes the filter, both "" the header.
	p = ts.do(t, http.MethodPatch, "/v1/agents/"+id, key, `{"trigger_filter": null, "events": null, "auth_header_name": null, "auth_header_value": null}`)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pd = p.JSON(t)["data"].(map[string]any)
	require.NotNil(t, pd["trigger_filter"])
	require.Equal(t, true, pd["auth_header_configured"])
	require.Len(t, pd["events"], 2)
	p = ts.do(t, http.MethodPatch, "/v1/agents/"+id, key, `{"auth_header_name": "", "auth_header_value": "", "trigger_filter": {}}`)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pd = p.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, pd["auth_header_configured"])
	require.Nil(t, pd["auth_header_name"])
	require.Nil(t, pd["trigger_filter"])

	l := ts.do(t, http.MethodGet, "/v1/agents?event=alert.updated&page_size=500", key, nil)
	require.Equal(t, http.StatusOK, l.Status)
	require.Contains(t, string(l.Body), id)
	l = ts.do(t, http.MethodGet, "/v1/agents?event=approval.decided&page_size=500", key, nil)
	require.NotContains(t, string(l.Body), id)

	// The registration changes are in the audit trail with the key prefix.
	var n int
	require.NoError(t, ts.Store.DB().NewRaw("SELECT count(*) FROM activity_events WHERE event_type IN ('agent_created','agent_updated') AND \"references\"->>'agent_uuid' = ? AND actor_key_prefix = ?",
		id, key[:8]).Scan(t.Context(), &n))
	require.Equal(t, 3, n, "created, and two PATCHes that changed something (the all-null one changed nothing)")

	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/agents/"+id, key, nil).Status)
	requireError(t, ts.do(t, http.MethodGet, "/v1/agents/"+id, key, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/agents/"+id, key, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodGet, "/v1/agents/"+id+"/deliveries", key, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestAgents_DuplicateNameConflicts(t *testing.T) {
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	name := "Dup " + uuid.NewString()
	registerAgent(t, ts, key, map[string]any{"name": name, "endpoint_url": "https://agents.example.com/hook"})
	r := ts.do(t, http.MethodPost, "/v1/agents", key, map[string]any{"name": strings.ToUpper(name), "endpoint_url": "https://agents.example.com/other"})
	requireError(t, r, http.StatusConflict, "AGENT_EXISTS")
}

func TestAgents_ValidationReportsEveryProblem(t *testing.T) {
	ts := newAgentServer(t, netguard.NewGuard(nil))
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead, auth.ScopeAgentsRead)
	cases := []struct {
		name string
		body any
		locs []string
	}{
		{"missing required", map[string]any{}, []string{"body.name", "body.endpoint_url"}},
		{"bounds", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "timeout_seconds": 0, "retry_count": 11},
			[]string{"body.timeout_seconds", "body.retry_count"}},
		{"bounds high", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "timeout_seconds": 301, "retry_count": -1},
			[]string{"body.timeout_seconds", "body.retry_count"}},
		{"wrong types", map[string]any{"name": 5, "endpoint_url": true, "events": "alert.enriched", "is_active": "yes"},
			[]string{"body.name", "body.endpoint_url", "body.events", "body.is_active"}},
		{"enums", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "events": []string{"alert.enriched", "alert.deleted"},
			"trigger_on_severities": []string{"Severe"}}, []string{"body.events.1", "body.trigger_on_severities.0"}},
		{"no events", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "events": []string{}}, []string{"body.events"}},
		{"twice", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "events": []string{"alert.updated", "alert.updated"}}, []string{"body.events.1"}},
		{"filter", map[string]any{"name": "b", "endpoint_url": "https://a.example.com",
			"trigger_filter": map[string]any{"match_all": []any{map[string]any{"field": "raw_payload", "op": "eq", "value": "x"}}}},
			[]string{"body.trigger_filter.match_all.0.field"}},
		{"half an auth header", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "auth_header_name": "X-Key"},
			[]string{"body.auth_header_value"}},
		{"reserved header", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "auth_header_name": "X-Vigil-Signature", "auth_header_value": "forged"},
			[]string{"body.auth_header_name"}},
		{"header injection", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "auth_header_name": "X-Key", "auth_header_value": "a\r\nX-Evil: 1"},
			[]string{"body.auth_header_value"}},
		{"scheme", map[string]any{"name": "b", "endpoint_url": "ftp://a.example.com/x"}, []string{"body.endpoint_url"}},
		{"credentials in URL", map[string]any{"name": "b", "endpoint_url": "https://user:pw@a.example.com/x"}, []string{"body.endpoint_url"}},
		{"metadata address", map[string]any{"name": "b", "endpoint_url": "http://169.254.169.254/latest/meta-data/"}, []string{"body.endpoint_url"}},
		{"loopback literal", map[string]any{"name": "b", "endpoint_url": "http://127.0.0.1:9000/hook"}, []string{"body.endpoint_url"}},
		{"oversized", map[string]any{"name": strings.Repeat("n", 201), "endpoint_url": "https://a.example.com/" + strings.Repeat("p", 2048)},
			[]string{"body.name", "body.endpoint_url"}},
		{"unknown field", map[string]any{"name": "b", "endpoint_url": "https://a.example.com", "signing_secret": "mine"}, []string{"body.signing_secret"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/agents", key, c.body)
			got := locs(requireValidation(t, r))
			for _, want := range c.locs {
				require.Contains(t, got, want, string(r.Body))
			}
		})
	}
	requireError(t, ts.do(t, http.MethodPost, "/v1/agents", key, `{"name": "b",`), http.StatusBadRequest, "INVALID_JSON")
	requireError(t, ts.do(t, http.MethodPost, "/v1/agents", key, `[1,2]`), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/agents/not-a-uuid", key, nil))
	requireValidation(t, ts.do(t, http.MethodPatch, "/v1/agents/"+uuid.NewString(), key, map[string]any{"retry_count": 99}))
	requireError(t, ts.do(t, http.MethodPatch, "/v1/agents/"+uuid.NewString(), key, map[string]any{"retry_count": 2}), http.StatusNotFound, "NOT_FOUND")
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/agents/"+uuid.NewString()+"/deliveries?status=lost", key, nil))
}

// Every route refuses a key without its scope; agents:read reads but cannot write.
func TestAgents_Scopes(t *testing.T) {
	ts := newAgentServer(t, nil)
	writer := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	id, _ := registerAgent(t, ts, writer, map[string]any{"endpoint_url": "https://agents.example.com/hook"})
	reader := mustKey(t, ts.Store, auth.ScopeAgentsRead)
	other := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsExecute)
	body := map[string]any{"name": "x", "endpoint_url": "https://agents.example.com/x"}
	routes := []struct {
		method, path string
		body         any
		scope        string
	}{
		{http.MethodGet, "/v1/agents", nil, auth.ScopeAgentsRead},
		{http.MethodGet, "/v1/agents/" + id, nil, auth.ScopeAgentsRead},
		{http.MethodGet, "/v1/agents/" + id + "/deliveries", nil, auth.ScopeAgentsRead},
		{http.MethodPost, "/v1/agents", body, auth.ScopeAgentsWrite},
		{http.MethodPatch, "/v1/agents/" + id, map[string]any{"description": "x"}, auth.ScopeAgentsWrite},
		{http.MethodDelete, "/v1/agents/" + id, nil, auth.ScopeAgentsWrite},
		{http.MethodPost, "/v1/agents/" + id + "/rotate-secret", nil, auth.ScopeAgentsWrite},
		{http.MethodPost, "/v1/agents/" + id + "/test", nil, auth.ScopeAgentsWrite},
	}
	for _, rt := range routes {
		m := requireError(t, ts.do(t, rt.method, rt.path, other, rt.body), http.StatusForbidden, "FORBIDDEN")
		require.Equal(t, []any{rt.scope}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"], rt.path)
		requireError(t, ts.do(t, rt.method, rt.path, "", rt.body), http.StatusUnauthorized, "UNAUTHORIZED")
		if rt.scope == auth.ScopeAgentsRead {
			require.Equal(t, http.StatusOK, ts.do(t, rt.method, rt.path, reader, rt.body).Status, rt.path)
		} else {
			requireError(t, ts.do(t, rt.method, rt.path, reader, rt.body), http.StatusForbidden, "FORBIDDEN")
		}
	}
}

// The test route delivers a signed agent.test event with the auth header, and records the attempt.
func TestAgents_TestDeliveryIsSignedAndRecorded(t *testing.T) {
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead, auth.ScopeAgentsRead)
	recv := newReceiver(t)
	id, secret := registerAgent(t, ts, key, map[string]any{"endpoint_url": recv.URL + "/hook",
		"auth_header_name": "X-Agent-Key", "auth_header_value": "agent-key-456"})

	r := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	out := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, out["delivered"], string(r.Body))
	require.EqualValues(t, 200, out["status_code"])
	require.Equal(t, "", out["error"])
	require.Contains(t, out, "duration_ms")

	got := recv.requests()
	require.Len(t, got, 1)
	h, body := got[0].Header, got[0].Body
	require.Equal(t, "agent-key-456", h.Get("X-Agent-Key"))
	require.Equal(t, "agent.test", h.Get(webhooks.HeaderEvent))
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.True(t, webhooks.Verify(secret, h.Get(webhooks.HeaderTimestamp), body, h.Get(webhooks.HeaderSignature)))
	require.False(t, webhooks.Verify(secret, h.Get(webhooks.HeaderTimestamp), append(body, ' '), h.Get(webhooks.HeaderSignature)))
	var payload map[string]any
	require.NoError(t, json.Unmarshal(body, &payload))
	require.Equal(t, h.Get(webhooks.HeaderDelivery), payload["id"])
	require.Equal(t, "agent.test", payload["event"])
	require.Equal(t, id, payload["data"].(map[string]any)["agent_uuid"])
	_, err := time.Parse(time.RFC3339Nano, payload["created_at"].(string))
	require.NoError(t, err)

	l := ts.do(t, http.MethodGet, "/v1/agents/"+id+"/deliveries?event=agent.test", key, nil)
	require.Equal(t, http.StatusOK, l.Status, string(l.Body))
	items := l.JSON(t)["data"].([]any)
	require.Len(t, items, 1)
	rec := items[0].(map[string]any)
	require.Equal(t, payload["id"], rec["delivery_id"])
	require.Equal(t, "delivered", rec["status"])
	require.EqualValues(t, 1, rec["attempt"])
	require.EqualValues(t, 200, rec["status_code"])
	require.EqualValues(t, 1, l.JSON(t)["meta"].(map[string]any)["total"])
	require.Empty(t, ts.do(t, http.MethodGet, "/v1/agents/"+id+"/deliveries?status=failed", key, nil).JSON(t)["data"])
}

// A failed test delivery is reported inside a 200: the status, 410 giving up, a timeout, a redirect
// that is not followed, and an agent that is not listening.
func TestAgents_TestDeliveryFailures(t *testing.T) {
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead, auth.ScopeAgentsRead)
	elsewhere := newReceiver(t)
	cases := []struct {
		name    string
		respond func(n int, w http.ResponseWriter)
		timeout int
		status  float64
		errText string
		record  string
	}{
		{"500", func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }, 0, 500, "agent answered 500", "gave_up"},
		{"410", func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }, 0, 410, "410 Gone", "gave_up"},
		{"redirect", func(_ int, w http.ResponseWriter) {
			w.Header().Set("Location", elsewhere.URL+"/steal")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, 0, 307, "agent answered 307", "gave_up"},
		{"timeout", func(_ int, _ http.ResponseWriter) { time.Sleep(2500 * time.Millisecond) }, 1, 0, "timed out after 1s", "gave_up"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := newReceiver(t)
			recv.response = c.respond
			body := map[string]any{"endpoint_url": recv.URL}
			if c.timeout > 0 {
				body["timeout_seconds"] = c.timeout
			}
			id, _ := registerAgent(t, ts, key, body)
			start := time.Now()
			r := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			out := r.JSON(t)["data"].(map[string]any)
			require.Equal(t, false, out["delivered"])
			require.EqualValues(t, c.status, out["status_code"])
			require.Contains(t, out["error"], c.errText)
			if c.timeout > 0 {
				require.Less(t, time.Since(start), 2400*time.Millisecond, "bounded by the agent's timeout")
			}
			rec := ts.do(t, http.MethodGet, "/v1/agents/"+id+"/deliveries", key, nil).JSON(t)["data"].([]any)
			require.Len(t, rec, 1)
			require.Equal(t, c.record, rec[0].(map[string]any)["status"])
		})
	}
	require.Empty(t, elsewhere.requests(), "a redirect is never followed with the signature")

	// Nobody listening: a connection error, no status code.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	id, _ := registerAgent(t, ts, key, map[string]any{"endpoint_url": deadURL})
	out := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, false, out["delivered"])
	require.EqualValues(t, 0, out["status_code"])
	require.NotEmpty(t, out["error"])
}

// After rotate-secret the old secret no longer verifies; the new one does.
func TestAgents_RotateSecret(t *testing.T) {
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	recv := newReceiver(t)
	id, oldSecret := registerAgent(t, ts, key, map[string]any{"endpoint_url": recv.URL})
	r := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/rotate-secret", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	newSecret := r.JSON(t)["data"].(map[string]any)["signing_secret"].(string)
	require.NotEqual(t, oldSecret, newSecret)

	require.Equal(t, true, ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil).JSON(t)["data"].(map[string]any)["delivered"])
	got := recv.requests()
	require.Len(t, got, 1)
	h := got[0].Header
	require.False(t, webhooks.Verify(oldSecret, h.Get(webhooks.HeaderTimestamp), got[0].Body, h.Get(webhooks.HeaderSignature)))
	require.True(t, webhooks.Verify(newSecret, h.Get(webhooks.HeaderTimestamp), got[0].Body, h.Get(webhooks.HeaderSignature)))
}

// A registered name that resolves to loopback passes registration (names are resolved at dial
// time, so DNS rebinding cannot slip past) and is refused when the delivery dials it.
func TestAgents_NameResolvingToLoopbackRefusedAtDial(t *testing.T) {
	recv := newReceiver(t)
	port := recv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	guard := netguard.NewGuard(nil).WithResolver(netguardtest.Resolver(t, netip.MustParseAddr("127.0.0.1")))
	ts := newAgentServer(t, guard)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	id, _ := registerAgent(t, ts, key, map[string]any{"endpoint_url": fmt.Sprintf("http://agent.rebind-example.com:%d/hook", port)})
	out := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, false, out["delivered"])
	require.Contains(t, out["error"], "ssrf")
	// localhost likewise: a name, so it registers, and it is refused when dialled.
	id, _ = registerAgent(t, ts, key, map[string]any{"endpoint_url": fmt.Sprintf("http://localhost:%d/hook", port)})
	out = ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, false, out["delivered"])
	require.Contains(t, out["error"], "ssrf")
	require.Empty(t, recv.requests(), "the loopback server was never reached")
}

// The verification snippets of docs/WEBHOOKS.md, run as they are written against a real delivery:
// the right secret verifies, the old secret and a changed body do not.
func TestWebhooksDocSnippetsVerifyRealDeliveries(t *testing.T) {
	snippets := webhookstest.Load(t, "../docs/WEBHOOKS.md")
	ts := newAgentServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	recv := newReceiver(t)
	id, oldSecret := registerAgent(t, ts, key, map[string]any{"endpoint_url": recv.URL})
	secret := ts.do(t, http.MethodPost, "/v1/agents/"+id+"/rotate-secret", key, nil).JSON(t)["data"].(map[string]any)["signing_secret"].(string)
	require.Equal(t, true, ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", key, nil).JSON(t)["data"].(map[string]any)["delivered"])
	got := recv.requests()
	require.Len(t, got, 1)
	ts0, sig := got[0].Header.Get(webhooks.HeaderTimestamp), got[0].Header.Get(webhooks.HeaderSignature)

	goErr, pyErr := snippets.Verify(secret, ts0, sig, got[0].Body)
	require.NoError(t, goErr, "the Go snippet verifies the delivery")
	require.NoError(t, pyErr, "the Python snippet verifies the delivery")
	goErr, pyErr = snippets.Verify(oldSecret, ts0, sig, got[0].Body)
	require.Error(t, goErr, "the Go snippet refuses the rotated-out secret")
	require.Error(t, pyErr, "the Python snippet refuses the rotated-out secret")
	goErr, pyErr = snippets.Verify(secret, ts0, sig, append([]byte(" "), got[0].Body...))
	require.Error(t, goErr, "the Go snippet refuses a changed body")
	require.Error(t, pyErr, "the Python snippet refuses a changed body")
}
