package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// TestAgentsFollowTheirRegisteringKey replays security review round 4, R4-6 through REST: a key with
// agents:read, agents:write and alerts:read registered an agent subscribed to alert.comment_added;
// after the admin reduced the key to agents:read, and after it was revoked, the agent still received
// comments and stayed active. Now the agent is paused (is_active false, audited, activity
// agent_paused) when its key is reduced below what its events need, revoked, or (checked at delivery)
// expired, and nothing more is delivered to it.
func TestAgentsFollowTheirRegisteringKey(t *testing.T) {
	h := newRunHarness(t, "-agentfollow")
	ts := newAlertServer(t, func(_ *Config, d *Deps) { d.Agents, d.AgentStore = h.agents, h.ts.Store })
	ctx := context.Background()
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	rw := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	alert := newAlert(t, ts, rw, "")
	comment := func(body string) {
		t.Helper()
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+alert+"/comments", rw, map[string]any{"body": body})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	}
	// register makes a key of its own (edit: expiry) and an agent it registers on a fresh receiver.
	register := func(edit func(*store.APIKey)) (keyID, agentID string, rcv *receiver) {
		t.Helper()
		key := mustKeyWith(t, ts.Store, func(x *store.APIKey) {
			if edit != nil {
				edit(x)
			}
		}, auth.ScopeAgentsRead, auth.ScopeAgentsWrite, auth.ScopeAlertsRead)
		k, err := ts.Store.GetAPIKeyByHash(ctx, auth.Hash(key))
		require.NoError(t, err)
		rcv = newReceiver(t)
		agentID, _ = registerAgent(t, ts, key, map[string]any{"endpoint_url": rcv.URL + "/hook", "events": []string{"alert.comment_added"}})
		t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/agents/"+agentID, admin, nil) })
		return k.UUID.String(), agentID, rcv
	}
	active := func(id string) bool {
		d := ts.do(t, http.MethodGet, "/v1/agents/"+id, admin, nil).JSON(t)["data"].(map[string]any)
		return d["is_active"].(bool)
	}
	auditedPause := func(id string) {
		t.Helper()
		n := 0
		require.NoError(t, ts.Store.DB().NewRaw(`SELECT count(*) FROM audit_events WHERE resource_type = 'agent' AND resource_uuid = ?
			AND action = 'updated' AND changes ? 'is_active'`, uuid.MustParse(id)).Scan(ctx, &n))
		require.Equal(t, 1, n, "the pause is in the audit trail")
		require.NoError(t, ts.Store.DB().NewRaw(`SELECT count(*) FROM activity_events WHERE event_type = 'agent_paused'
			AND "references"->>'agent_uuid' = ?`, id).Scan(ctx, &n))
		require.Equal(t, 1, n, "and in the activity")
	}

	reducedKey, reducedAgent, reduced := register(nil)
	revokedKey, revokedAgent, revoked := register(nil)
	_, expiringAgent, expiring := register(func(k *store.APIKey) { e := time.Now().Add(3 * time.Second); k.ExpiresAt = &e })
	comment("before any change " + uuid.NewString())
	for _, r := range []*receiver{reduced, revoked, expiring} {
		require.Eventually(t, func() bool { return len(r.requests()) == 1 }, 30*time.Second, 20*time.Millisecond, "delivered while the keys stand")
	}

	r := ts.do(t, http.MethodPatch, "/v1/api-keys/"+reducedKey, admin, map[string]any{"scopes": []string{auth.ScopeAgentsRead}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.False(t, active(reducedAgent), "reduced below alerts:read: paused at once")
	auditedPause(reducedAgent)
	r = ts.do(t, http.MethodDelete, "/v1/api-keys/"+revokedKey, admin, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	require.False(t, active(revokedAgent), "revoked: paused at once")
	auditedPause(revokedAgent)

	time.Sleep(time.Until(time.Now().Add(3500 * time.Millisecond))) // the third key expires
	comment("after the changes " + uuid.NewString())
	require.Eventually(t, func() bool { return !active(expiringAgent) }, 30*time.Second, 50*time.Millisecond,
		"expired: paused when the delivery finds it")
	auditedPause(expiringAgent)
	// A control agent of a standing key gets the second comment: by then every delivery was decided.
	_, _, control := register(nil)
	comment("control " + uuid.NewString())
	require.Eventually(t, func() bool { return len(control.requests()) == 1 }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	for name, r := range map[string]*receiver{"reduced": reduced, "revoked": revoked, "expired": expiring} {
		require.Len(t, r.requests(), 1, "%s: nothing after the key changed", name)
	}
}
