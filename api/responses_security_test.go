package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// workflowEvents returns the activity events of type eventType recorded on workflow wf.
func workflowEvents(t testing.TB, st *store.Store, wf, eventType string) []store.ActivityEvent {
	t.Helper()
	var rows []store.ActivityEvent
	require.NoError(t, st.DB().NewSelect().Model(&rows).Where("workflow_uuid = ? AND event_type = ?", wf, eventType).
		OrderExpr("created_at").Scan(context.Background()))
	return rows
}

// Issue 12 item 1: an agent key with only workflows:execute ran a draft, always-gated, 2-approver
// workflow with live_http: true, and the step server received the real secret, with no run row and no
// activity. Now a live dry run needs admin and is recorded; mock dry runs are unchanged.
func TestLiveDryRunIsAdminOnly(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	const secret = "live-dry-run-secret-value"
	require.Equal(t, http.StatusOK, h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/LIVE_TOKEN", admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": secret}).Status)
	path := "/live-test/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) {
		b["state"], b["approval_mode"], b["required_approvals"] = "draft", "always", 2
		b["steps"] = []any{map[string]any{"name": "act", "method": "POST", "url": h.steps.URL + path,
			"headers": map[string]any{"X-Token": "{{secrets.LIVE_TOKEN}}"}, "json_body": map[string]any{"ip": "{{indicator.value}}"}}}
	}))
	url := "/v1/workflows/" + wf + "/test"
	live := map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "live_http": true}
	agent := mustKeyWith(t, h.ts.Store, func(k *store.APIKey) { k.KeyType = auth.KeyTypeAgent }, auth.ScopeWorkflowsExecute)
	nonAdmin := mustKey(t, h.ts.Store, auth.ScopeWorkflowsRead, auth.ScopeWorkflowsWrite, auth.ScopeWorkflowsExecute, auth.ScopeApprovalsWrite)

	for name, key := range map[string]string{"agent with workflows:execute": agent, "human without admin": nonAdmin} {
		t.Run(name, func(t *testing.T) {
			m := requireError(t, h.ts.do(t, http.MethodPost, url, key, live), http.StatusForbidden, "FORBIDDEN")
			require.Equal(t, []any{"admin"}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"])
		})
	}
	require.Zero(t, h.steps.Hits(path), "the step server never saw a request, so never the secret")
	require.Empty(t, workflowEvents(t, h.ts.Store, wf, "workflow.tested_live"))

	// A mock dry run by the same keys still works and sends nothing.
	mock := map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1",
		"mock_http_responses": map[string]any{"act": map[string]any{"status_code": 200, "body": map[string]any{"ok": true}}}}
	r := h.ts.do(t, http.MethodPost, url, agent, mock)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, d["success"])
	require.Equal(t, false, d["live_http"])
	step := d["steps"].([]any)[0].(map[string]any)
	require.Contains(t, step["request_headers"].(map[string]any)["X-Token"], "****", "secrets masked in the record")
	require.NotContains(t, string(r.Body), secret)
	require.Zero(t, h.steps.Hits(path))

	// Admin: sent for real, recorded with the key prefix.
	r = h.ts.do(t, http.MethodPost, url, admin, live)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, true, r.JSON(t)["data"].(map[string]any)["success"], string(r.Body))
	require.Equal(t, 1, h.steps.Hits(path))
	require.Equal(t, secret, h.steps.Header(path).Get("X-Token"))
	require.NotContains(t, string(r.Body), secret)
	ev := workflowEvents(t, h.ts.Store, wf, "workflow.tested_live")
	require.Len(t, ev, 1)
	require.Equal(t, admin[:8], *ev[0].ActorKeyPrefix)
	require.Equal(t, store.ActorAPI, ev[0].ActorType)
	_, total, err := h.ts.Store.ListWorkflowRuns(context.Background(), store.WorkflowRunFilter{WorkflowUUID: ptrUUID(uuid.MustParse(wf))})
	require.NoError(t, err)
	require.Zero(t, total, "a dry run still creates no run")
}

// Issue 12 item 6: agents could approve, the quorum counted keys under any label, and the decision
// had no actor. Now agent keys get 403 AGENT_CANNOT_APPROVE, each decision records the deciding key's
// prefix and name, and approval.decided carries the actor.
func TestAgentCannotDecideAndDecisionsRecordWho(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, approver2 := h.keys(t)
	path := "/agent-approve/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["required_approvals"] = 2 }))
	ex := h.execute(t, agent, wf, nil)
	id := *ex.ApprovalRequestUUID

	// Two agent keys holding approvals:write try to make up the quorum of 2 under human-looking labels.
	for i, label := range []string{"alice", "bob"} {
		robot := mustKeyWith(t, h.ts.Store, func(k *store.APIKey) { k.KeyType = auth.KeyTypeAgent; k.Name = "robot" },
			auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead)
		verb := []string{"approve", "reject"}[i]
		requireError(t, h.decide(t, robot, id, verb, map[string]any{"responder_id": label}), http.StatusForbidden, "AGENT_CANNOT_APPROVE")
	}
	a, err := h.ts.Store.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	require.Empty(t, a.Decisions, "nothing recorded for the agents")
	// An unknown request answers the same to an agent: the rule is checked before any lookup.
	robot := mustKeyWith(t, h.ts.Store, func(k *store.APIKey) { k.KeyType = auth.KeyTypeAgent }, auth.ScopeApprovalsWrite)
	requireError(t, h.decide(t, robot, uuid.New(), "approve", nil), http.StatusForbidden, "AGENT_CANNOT_APPROVE")

	// The same human key under two labels is one human.
	r := h.decide(t, approver, id, "approve", map[string]any{"responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	requireError(t, h.decide(t, approver, id, "approve", map[string]any{"responder_id": "bob"}), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
	r = h.decide(t, approver2, id, "approve", map[string]any{"responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, "approved", d["status"], "two distinct humans, whatever their labels")
	ds := d["decisions"].([]any)
	require.Len(t, ds, 2)
	prefixes := []any{}
	for _, x := range ds {
		dec := x.(map[string]any)
		require.Equal(t, "alice", dec["responder_id"], "the label is shown, not counted")
		require.Equal(t, "test-"+t.Name(), dec["key_name"])
		require.Nil(t, dec["verified_user"])
		prefixes = append(prefixes, dec["key_prefix"])
	}
	require.ElementsMatch(t, []any{approver[:8], approver2[:8]}, prefixes)
	ev := workflowEvents(t, h.ts.Store, wf, "approval.decided")
	require.Len(t, ev, 2)
	require.Equal(t, approver[:8], *ev[0].ActorKeyPrefix)
	require.Equal(t, "test-"+t.Name(), ev[0].References["key_name"])
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
}

// Issue 12 item 2: a non-admin author with workflows:write named an admin secret in a step to their
// own server and received it. Now every secret has allowed_hosts: a written-out host outside them is
// refused when the workflow is saved (422 SECRET_HOST_NOT_ALLOWED); a host that comes from a template
// is checked when the step runs, before anything is sent; the secret's own host still works.
func TestSecretsGoOnlyToTheirAllowedHosts(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t) // workflows:read/write/execute, approvals:write; not admin
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	attacker := newStepServer(t) // another loopback server: another port, so another host:port
	const secret = "allowed-hosts-secret-value"
	name := "HOST_TOKEN_" + strings.ToUpper(uuid.NewString()[:8])
	legit := strings.TrimPrefix(h.steps.URL, "http://")
	r := h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": secret, "allowed_hosts": []string{legit}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	path := "/exfil/" + uuid.NewString()
	step := func(url string) []any {
		return []any{map[string]any{"name": "send", "method": "POST", "url": url, "headers": map[string]any{"X-Token": "{{secrets." + name + "}}"}}}
	}
	never := func(url string) func(map[string]any) {
		return func(b map[string]any) {
			b["approval_mode"], b["indicator_types"], b["steps"] = "never", []string{"ip", "url"}, step(url)
		}
	}

	// A written-out foreign host: refused at save, on create and on update.
	m := requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", human, h.workflowBody(path, never(attacker.URL+path))),
		http.StatusUnprocessableEntity, "SECRET_HOST_NOT_ALLOWED")
	require.Equal(t, name, m["error"].(map[string]any)["details"].(map[string]any)["secret"])
	// Naming a secret with approval_mode never needs admin (issue 27): the admin saves these two.
	wf := h.createWorkflow(t, admin, h.workflowBody(path, never(h.steps.URL+path)))
	requireError(t, h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, human, map[string]any{"steps": step(attacker.URL + path)}),
		http.StatusUnprocessableEntity, "SECRET_HOST_NOT_ALLOWED")

	// A host from a template passes the save and is refused when the step runs: a run and a live dry run.
	tpl := h.createWorkflow(t, admin, h.workflowBody(path+"/tpl", never("{{indicator.value}}")))
	ex := h.execute(t, human, tpl, map[string]any{"indicator_type": "url", "indicator_value": attacker.URL + path})
	run := h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Contains(t, *run.Error, "SECRET_HOST_NOT_ALLOWED")
	r = h.ts.do(t, http.MethodPost, "/v1/workflows/"+tpl+"/test", admin, map[string]any{"indicator_type": "url",
		"indicator_value": attacker.URL + path, "live_http": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "SECRET_HOST_NOT_ALLOWED")
	require.Zero(t, attacker.Hits(path), "the attacker's server never saw a request, so never the secret")
	require.NotContains(t, string(r.Body), secret)

	// The legitimate path: the secret's own host, written out or from the template.
	ex = h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.10"})
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, secret, h.steps.Header(path).Get("X-Token"))
	ex = h.execute(t, human, tpl, map[string]any{"indicator_type": "url", "indicator_value": h.steps.URL + path + "/ok"})
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, secret, h.steps.Header(path+"/ok").Get("X-Token"))
}
