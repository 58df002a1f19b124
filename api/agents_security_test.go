package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/webhooks"
)

// Issue 27 item 2b (MEDIUM): PATCH /v1/agents/{uuid} by any agents:write key re-pointed another
// agent's endpoint_url and kept its sealed auth header: the next /test handed the header (and a
// signature under the owner's secret) to the new host. Moving to another origin now drops the header
// and rotates the signing secret unless the request sets them.
func TestMovingAgentEndpointDropsItsCredentials(t *testing.T) {
	ts := newAgentServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	writer := mustKey(t, ts.Store, auth.ScopeAgentsWrite)
	owner, attacker := newReceiver(t), newReceiver(t)
	id, oldSecret := registerAgent(t, ts, admin, map[string]any{"endpoint_url": owner.URL + "/hook",
		"auth_header_name": "Authorization", "auth_header_value": "Bearer owner-only-token"})

	// Same origin, another path: nothing is dropped or rotated.
	r := ts.do(t, http.MethodPatch, "/v1/agents/"+id, writer, map[string]any{"endpoint_url": owner.URL + "/hook2"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, d["auth_header_configured"])
	require.NotContains(t, d, "signing_secret")

	// Another origin: the header stays behind and the secret is new (shown once).
	r = ts.do(t, http.MethodPatch, "/v1/agents/"+id, writer, map[string]any{"endpoint_url": attacker.URL + "/steal"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d = r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, d["auth_header_configured"])
	require.Nil(t, d["auth_header_name"])
	newSecret, _ := d["signing_secret"].(string)
	require.Regexp(t, `^whsec_`, newSecret)
	require.NotEqual(t, oldSecret, newSecret)
	require.NotContains(t, string(ts.do(t, http.MethodGet, "/v1/agents/"+id, writer, nil).Body), newSecret, "shown once")

	require.Equal(t, true, ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", writer, nil).JSON(t)["data"].(map[string]any)["delivered"])
	got := attacker.requests()
	require.Len(t, got, 1)
	h := got[0].Header
	require.Empty(t, h.Get("Authorization"), "the owner's auth header never reaches the new host")
	require.False(t, webhooks.Verify(oldSecret, h.Get(webhooks.HeaderTimestamp), got[0].Body, h.Get(webhooks.HeaderSignature)),
		"nor a signature under the owner's secret")
	require.True(t, webhooks.Verify(newSecret, h.Get(webhooks.HeaderTimestamp), got[0].Body, h.Get(webhooks.HeaderSignature)))
	require.Empty(t, owner.requests())

	// Moving back with a header set in the same request keeps that header.
	r = ts.do(t, http.MethodPatch, "/v1/agents/"+id, admin, map[string]any{"endpoint_url": owner.URL + "/hook",
		"auth_header_name": "Authorization", "auth_header_value": "Bearer owner-only-token"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d = r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, d["auth_header_configured"])
	require.Equal(t, true, ts.do(t, http.MethodPost, "/v1/agents/"+id+"/test", admin, nil).JSON(t)["data"].(map[string]any)["delivered"])
	require.Equal(t, "Bearer owner-only-token", owner.requests()[0].Header.Get("Authorization"))
	require.True(t, webhooks.Verify(d["signing_secret"].(string), owner.requests()[0].Header.Get(webhooks.HeaderTimestamp),
		owner.requests()[0].Body, owner.requests()[0].Header.Get(webhooks.HeaderSignature)))
}

// Issue 27 item 2c (MEDIUM): agents:write alone (403 on /v1/alerts) received every alert, runbook and
// workflow list by registering its own agent and calling dispatch-agent / trigger-agents. An agent now
// receives only what its registering key could read: recorded at registration, checked at dispatch,
// trigger and delivery.
func TestAgentReceivesOnlyWhatItsRegisteringKeyReads(t *testing.T) {
	h := newRunHarness(t, "-agentscope")
	ts := newAlertServer(t, func(_ *Config, d *Deps) { d.Agents, d.AgentStore = h.agents, h.ts.Store })
	writer := mustKey(t, ts.Store, auth.ScopeAgentsWrite)
	requireError(t, ts.do(t, http.MethodGet, "/v1/alerts", writer, nil), http.StatusForbidden, "FORBIDDEN")
	alert := newAlert(t, ts, mustKey(t, ts.Store, auth.ScopeAlertsWrite), "")

	spy := newReceiver(t)
	// Registering its own agent is refused now (TestAgentRegistrationNeedsTheScopesOfItsEvents); the key
	// that moves an agent's endpoint to its own host is the one whose scopes the agent then carries.
	requireError(t, ts.do(t, http.MethodPost, "/v1/agents", writer, map[string]any{"name": "spy-" + t.Name(),
		"endpoint_url": spy.URL + "/hook"}), http.StatusForbidden, "FORBIDDEN")
	id, _ := registerAgent(t, ts, mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead),
		map[string]any{"endpoint_url": "https://agents.example.com/hook"})
	r := ts.do(t, http.MethodPatch, "/v1/agents/"+id, writer, map[string]any{"endpoint_url": spy.URL + "/hook"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	got := ts.do(t, http.MethodGet, "/v1/agents/"+id, mustKey(t, ts.Store, auth.ScopeAgentsRead), nil).JSON(t)["data"].(map[string]any)

	m := requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+alert+"/dispatch-agent?agent_uuid="+id, writer, nil), http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, []any{auth.ScopeAlertsRead}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"])
	r = ts.do(t, http.MethodPost, "/v1/alerts/"+alert+"/trigger-agents", writer, nil)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	require.NotContains(t, r.JSON(t)["data"].(map[string]any)["agent_names"], got["name"])
	require.Equal(t, []any{auth.ScopeAgentsWrite}, got["registered_scopes"], "the registering key's scopes are recorded")

	// An agent whose key reads alerts but not workflows gets the alert without the workflow list.
	reader := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	ok := newReceiver(t)
	okID, _ := registerAgent(t, ts, reader, map[string]any{"endpoint_url": ok.URL + "/hook"})
	r = ts.do(t, http.MethodPost, "/v1/alerts/"+alert+"/dispatch-agent?agent_uuid="+okID, reader, nil)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	require.Eventually(t, func() bool { return len(ok.requests()) >= 1 }, 20*time.Second, 20*time.Millisecond, "delivered")
	var payload struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(ok.requests()[0].Body, &payload))
	require.Equal(t, alert, payload.Data["alert"].(map[string]any)["uuid"])
	require.NotContains(t, payload.Data, "workflows", "workflows:read was not the registering key's")
	require.Contains(t, payload.Data, "context_documents")

	// The spy's agent received nothing, from either call, by the time the other's delivery arrived.
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, spy.requests())
}

// Issue 27 item 2c, at registration: an agents:write key registered an agent subscribed to events
// whose subject it could not read (the deliveries were then refused one by one). Registering one, or
// PATCHing its events to such a subscription, is now refused with 403 naming the event and the scope,
// by the rule deliveries are checked with (agents.MissingScope): alert events need alerts:read,
// workflow_run.completed workflows:read, approval.* approvals:write.
func TestAgentRegistrationNeedsTheScopesOfItsEvents(t *testing.T) {
	ts := newAgentServer(t, nil)
	reader := mustKey(t, ts.Store, auth.ScopeAgentsRead)
	count := func() float64 {
		return ts.do(t, http.MethodGet, "/v1/agents?page_size=1", reader, nil).JSON(t)["meta"].(map[string]any)["total"].(float64)
	}
	before := count()
	refused := func(key string, method, path string, body map[string]any, event, scope string) {
		t.Helper()
		m := requireError(t, ts.do(t, method, path, key, body), http.StatusForbidden, "FORBIDDEN")
		details := m["error"].(map[string]any)["details"].(map[string]any)
		require.Equal(t, event, details["event"])
		require.Equal(t, []any{scope}, details["required_scopes"])
	}
	writer := mustKey(t, ts.Store, auth.ScopeAgentsWrite)
	refused(writer, http.MethodPost, "/v1/agents", map[string]any{"name": "w1", "endpoint_url": "https://agents.example.com/a"},
		"alert.enriched", auth.ScopeAlertsRead) // the default subscription
	alerts := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
	for _, tc := range []struct{ event, scope string }{
		{"workflow_run.completed", auth.ScopeWorkflowsRead},
		{"approval.requested", auth.ScopeApprovalsWrite},
		{"approval.decided", auth.ScopeApprovalsWrite},
	} {
		refused(alerts, http.MethodPost, "/v1/agents", map[string]any{"name": "a-" + tc.event, "endpoint_url": "https://agents.example.com/a",
			"events": []string{"alert.enriched", tc.event}}, tc.event, tc.scope)
	}
	require.Equal(t, before, count(), "nothing was registered")

	// What the key reads, it may subscribe to.
	id, _ := registerAgent(t, ts, alerts, map[string]any{"endpoint_url": "https://agents.example.com/a",
		"events": []string{"alert.enriched", "alert.updated", "alert.finding_added"}})
	// A PATCH of its events is a new subscription: the agent's recorded scopes must read it.
	refused(alerts, http.MethodPatch, "/v1/agents/"+id, map[string]any{"events": []string{"workflow_run.completed"}},
		"workflow_run.completed", auth.ScopeWorkflowsRead)
	got := ts.do(t, http.MethodGet, "/v1/agents/"+id, reader, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, []any{"alert.enriched", "alert.updated", "alert.finding_added"}, got["events"], "unchanged")
	r := ts.do(t, http.MethodPatch, "/v1/agents/"+id, alerts, map[string]any{"events": []string{"alert.updated"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))

	all := mustKey(t, ts.Store, auth.ScopeAgentsWrite, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead, auth.ScopeApprovalsWrite)
	everything := []string{"alert.enriched", "alert.updated", "alert.finding_added", "workflow_run.completed", "approval.requested", "approval.decided"}
	registerAgent(t, ts, all, map[string]any{"endpoint_url": "https://agents.example.com/b", "events": everything})
	registerAgent(t, ts, mustKey(t, ts.Store, auth.ScopeAdmin), map[string]any{"endpoint_url": "https://agents.example.com/c", "events": everything})
}
