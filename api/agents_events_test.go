package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
)

// An approved gated run raises approval.requested, approval.decided and workflow_run.completed, in
// that order, each committed with its change and delivered signed to the subscribed agent.
func TestAgentEvents_ApprovedRunRaisesRequestedDecidedCompleted(t *testing.T) {
	h := newRunHarness(t, "-agentev")
	human, agent, approver, _ := h.keys(t)
	recv := newReceiver(t)
	name, url, timeout := "run watcher "+uuid.NewString(), recv.URL, 5
	events := []string{agents.EventApprovalRequested, agents.EventApprovalDecided, agents.EventRunCompleted}
	a, secret, err := h.agents.Create(context.Background(), agents.Actor{Type: store.ActorAPI},
		agents.Spec{Name: &name, EndpointURL: &url, Events: events, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.ts.Store.DeleteAgent(context.Background(), a.UUID) })

	path := "/agentev/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	require.Equal(t, "pending_approval", ex.Status)
	require.Eventually(t, func() bool { return len(recv.requests()) >= 1 }, 20*time.Second, 20*time.Millisecond, "approval.requested delivered")
	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", map[string]any{"comment": "go", "responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Eventually(t, func() bool { return len(recv.requests()) >= 3 }, 20*time.Second, 20*time.Millisecond, "three events delivered")
	time.Sleep(300 * time.Millisecond)

	type payload struct {
		ID        uuid.UUID      `json:"id"`
		Event     string         `json:"event"`
		CreatedAt time.Time      `json:"created_at"`
		Data      map[string]any `json:"data"`
	}
	got := recv.requests()
	require.Len(t, got, 3, "each event once")
	var ps []payload
	for _, g := range got {
		require.True(t, webhooks.Verify(secret, g.Header.Get(webhooks.HeaderTimestamp), g.Body, g.Header.Get(webhooks.HeaderSignature)))
		var p payload
		require.NoError(t, json.Unmarshal(g.Body, &p))
		require.Equal(t, p.Event, g.Header.Get(webhooks.HeaderEvent))
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y payload) int { return x.CreatedAt.Compare(y.CreatedAt) })
	require.Equal(t, events, []string{ps[0].Event, ps[1].Event, ps[2].Event}, "raised in this order")
	approval := ps[0].Data["approval"].(map[string]any)
	require.Equal(t, ex.ApprovalRequestUUID.String(), approval["uuid"])
	require.Equal(t, "agent", approval["trigger_source"])
	decided := ps[1].Data["decision"].(map[string]any)
	require.Equal(t, "approved", decided["decision"])
	require.Equal(t, "alice", decided["responder_id"])
	require.Equal(t, "approved", ps[1].Data["approval"].(map[string]any)["status"])
	run := ps[2].Data["workflow_run"].(map[string]any)
	require.Equal(t, ex.RunUUID.String(), run["uuid"])
	require.Equal(t, store.RunSucceeded, run["status"])
}
