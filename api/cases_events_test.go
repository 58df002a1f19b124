package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
)

// case.created, case.alert_added and case.updated are committed with their change and delivered
// signed to the subscribed agent, with the case (and, for case.alert_added, the joining alert) in
// their data; an agent registered by a key without alerts:read cannot subscribe to them.
func TestCaseAgentEvents_Delivered(t *testing.T) {
	h := newRunHarness(t, "-caseev")
	ctx := context.Background()
	recv := newReceiver(t)
	name, url, timeout := "case watcher "+uuid.NewString(), recv.URL, 5
	events := []string{agents.EventCaseCreated, agents.EventCaseAlertAdded, agents.EventCaseUpdated}
	a, secret, err := h.agents.Create(ctx, agents.Actor{Type: store.ActorAPI},
		agents.Spec{Name: &name, EndpointURL: &url, Events: events, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.ts.Store.DeleteAgent(context.Background(), a.UUID) })

	// A key that cannot read alerts cannot register an agent hearing of cases.
	blind := "blind " + uuid.NewString()
	_, _, err = h.agents.Create(ctx, agents.Actor{Type: store.ActorAPI, Scopes: []string{auth.ScopeAgentsWrite}},
		agents.Spec{Name: &blind, EndpointURL: &url, Events: []string{agents.EventCaseCreated}, TimeoutSeconds: &timeout})
	var cannot *agents.CannotReceiveError
	require.ErrorAs(t, err, &cannot)
	require.Equal(t, auth.ScopeAlertsRead, cannot.Scope)

	key := mustKey(t, h.ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	res, err := h.ts.Store.Ingest(ctx, store.IngestAlert{Title: "case event alert " + uuid.NewString(), Severity: "High",
		SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`),
		ActorType: store.ActorAPI}, time.Hour)
	require.NoError(t, err)
	c := caseData(t, h.ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": "watched",
		"alert_uuids": []string{res.AlertUUID.String()}}), http.StatusCreated)
	caseData(t, h.ts.do(t, http.MethodPatch, "/v1/cases/"+c["uuid"].(string), key, map[string]any{"status": "Investigating"}), http.StatusOK)

	require.Eventually(t, func() bool { return len(recv.requests()) >= 3 }, 30*time.Second, 20*time.Millisecond, "three events delivered")
	time.Sleep(300 * time.Millisecond)
	got := map[string]map[string]any{}
	for _, g := range recv.requests() {
		require.True(t, webhooks.Verify(secret, g.Header.Get(webhooks.HeaderTimestamp), g.Body, g.Header.Get(webhooks.HeaderSignature)))
		var p struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(g.Body, &p))
		require.NotContains(t, got, p.Event, "each event once")
		got[p.Event] = p.Data
	}
	require.Len(t, got, 3)
	for _, ev := range events {
		cs := got[ev]["case"].(map[string]any)
		require.Equal(t, c["uuid"], cs["uuid"], ev)
		require.Equal(t, c["case_number"], cs["case_number"], ev)
		require.NotNil(t, cs["indicators"], ev)
	}
	added := got[agents.EventCaseAlertAdded]
	require.Equal(t, res.AlertUUID.String(), added["alert_uuid"])
	require.Equal(t, "added", added["how"])
	require.Equal(t, res.AlertUUID.String(), added["alert"].(map[string]any)["uuid"], "the joining alert's data")
	require.Equal(t, c["uuid"], added["alert"].(map[string]any)["case_uuid"])
	changes := got[agents.EventCaseUpdated]["changes"].([]any)
	require.Equal(t, store.EventCaseStatusUpdated, changes[0].(map[string]any)["change"])
	require.Equal(t, "Investigating", got[agents.EventCaseUpdated]["case"].(map[string]any)["status"])
}
