package api

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// recordRunHistory, when set, makes TestRunAgentHeldAtGateApprovedRunsOnce write the history of
// its gated run there (workflows/testdata/workflow_run_history.json feeds the replay test):
//
//	go test ./api -run TestRunAgentHeldAtGateApprovedRunsOnce -record-run-history=$PWD/workflows/testdata/workflow_run_signal_start_history.json
var recordRunHistory = flag.String("record-run-history", "", "write the gated run's Temporal history to this file")

func runSteps(t *testing.T, run store.WorkflowRun) []httpsteps.StepRecord {
	t.Helper()
	var recs []httpsteps.StepRecord
	require.NoError(t, json.Unmarshal(run.Steps, &recs))
	return recs
}

func TestRunHumanBypassesAgentOnlyGate(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, "admin")
	r := h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/STEP_TOKEN", admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": "s3cr3t-token-value"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	path := "/human/" + uuid.NewString()
	// An admin's agent_only workflow naming a secret: a human key runs it ungated. A non-admin may
	// not save it (R4-7: TestAgentOnlyIsNoEscapeForSecrets).
	wf := h.createWorkflow(t, admin, h.workflowBody(path, func(b map[string]any) {
		b["steps"] = []any{map[string]any{"name": "act", "method": "POST", "url": h.steps.URL + path,
			"headers": map[string]any{"X-Token": "{{secrets.STEP_TOKEN}}"}, "json_body": map[string]any{"ip": "{{indicator.value}}"}}}
	}))

	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7"})
	require.Equal(t, "queued", ex.Status)
	require.Equal(t, "human", ex.TriggerSource)
	require.Nil(t, ex.ApprovalRequestUUID)
	require.Nil(t, ex.ExpiresAt)

	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
	require.Equal(t, "s3cr3t-token-value", h.steps.Header(path).Get("X-Token"), "the step received the secret it names")
	recs := runSteps(t, run)
	require.Len(t, recs, 1)
	require.Equal(t, "act", recs[0].StepName)
	require.Equal(t, 200, recs[0].ResponseStatusCode)
	require.NotContains(t, string(run.Steps), "s3cr3t-token-value", "secrets are masked in step records")
	require.NotNil(t, run.CompletedAt)
	require.NotNil(t, run.DurationMS)
	require.Equal(t, 1, run.AttemptCount)
	require.Equal(t, store.RunSucceeded, h.workflowResult(t, ex.RunUUID))

	// The API shows the same run; workflow_run.completed was recorded once.
	got := h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+ex.RunUUID.String(), human, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, "succeeded", got.JSON(t)["data"].(map[string]any)["status"])
	require.NotContains(t, string(got.Body), "s3cr3t-token-value")
	events, _, err := h.ts.Store.ListActivity(context.Background(), store.ActivityFilter{EventTypes: []string{"workflow_run.completed"}, Page: store.Page{Size: 500}})
	require.NoError(t, err)
	n := 0
	for _, e := range events {
		if e.References["run_uuid"] == ex.RunUUID.String() {
			n++
			require.Equal(t, "succeeded", e.References["status"])
		}
	}
	require.Equal(t, 1, n)

	// Search attributes follow the run.
	desc, err := h.client.DescribeWorkflowExecution(context.Background(), ex.WorkflowID, "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa["VigilRunStatus"].GetData()), "succeeded")
	require.Contains(t, string(sa["VigilTriggerSource"].GetData()), "human")
	require.Contains(t, string(sa["VigilWorkflowName"].GetData()), "wf /human/")
	require.NotContains(t, string(desc.String()), "203.0.113.7", "no indicator value in search attributes or memo")

	// Listing by workflow, status and trigger source.
	list := h.ts.do(t, http.MethodGet, "/v1/workflows/"+wf+"/runs?status=succeeded&trigger_source=human", human, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Body))
	require.EqualValues(t, 1, list.JSON(t)["meta"].(map[string]any)["total"])
}

func TestRunAgentHeldAtGateApprovedRunsOnce(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, _ := h.keys(t)
	path := "/agent/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))

	ex := h.execute(t, agent, wf, nil)
	require.Equal(t, "pending_approval", ex.Status)
	require.Equal(t, "agent", ex.TriggerSource)
	require.NotNil(t, ex.ApprovalRequestUUID)
	require.WithinDuration(t, time.Now().Add(time.Hour), *ex.ExpiresAt, time.Minute)
	h.notices.DecideURL(t, *ex.ApprovalRequestUUID) // the channel was notified
	time.Sleep(300 * time.Millisecond)
	require.Zero(t, h.steps.Hits(path), "held at the gate")
	require.Equal(t, store.RunPendingApproval, h.waitRun(t, ex.RunUUID, store.RunPendingApproval).Status)

	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", map[string]any{"comment": "go", "responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, "approved", data["status"])
	require.Equal(t, "webhook", data["notifier_type"])
	require.Nil(t, data["notifier_channel"])
	require.NotContains(t, string(r.Body), "token")
	ds := data["decisions"].([]any)
	require.Len(t, ds, 1)
	require.Equal(t, "alice", ds[0].(map[string]any)["responder_id"])

	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	if *recordRunHistory != "" {
		require.Equal(t, store.RunSucceeded, h.workflowResult(t, ex.RunUUID))
		testenv.WriteHistory(t, h.client, ex.WorkflowID, *recordRunHistory)
	}
	// Duplicate signals and a second approval change nothing.
	require.NoError(t, temporal.NewRunSignaler(h.client).SignalWorkflowRun(context.Background(), ex.RunUUID))
	requireError(t, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
	requireError(t, h.decide(t, human, *ex.ApprovalRequestUUID, "reject", nil), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 1, h.steps.Hits(path), "runs exactly once")

	// Listing approvals by status and workflow.
	list := h.ts.do(t, http.MethodGet, "/v1/workflow-approvals?status=approved&workflow_uuid="+wf, approver, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Body))
	require.EqualValues(t, 1, list.JSON(t)["meta"].(map[string]any)["total"])
	requireValidation(t, h.ts.do(t, http.MethodGet, "/v1/workflow-approvals?status=bogus", approver, nil))
	requireError(t, h.ts.do(t, http.MethodGet, "/v1/workflow-approvals/"+uuid.NewString(), approver, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, h.decide(t, approver, uuid.New(), "approve", nil), http.StatusNotFound, "NOT_FOUND")
}

func TestRunRejectedNeverRuns(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, _ := h.keys(t)
	path := "/reject/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	for body, loc := range map[string]string{
		`{"reason": 5}`:        "body.reason",
		`{"why": "x"}`:         "body.why",
		`{"responder_id": ""}`: "body.responder_id",
		`{"reason": "` + strings.Repeat("r", 5001) + `"}`: "body.reason",
	} {
		r := h.ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+ex.ApprovalRequestUUID.String()+"/reject", approver, body)
		require.Equal(t, []string{loc}, locs(requireValidation(t, r)), body)
	}
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+ex.ApprovalRequestUUID.String()+"/reject", approver, `{"reason":`), http.StatusBadRequest, "INVALID_JSON")
	requireValidation(t, h.ts.do(t, http.MethodPost, "/v1/workflow-approvals/not-a-uuid/approve", approver, nil))
	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "reject", map[string]any{"reason": "false positive"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "false positive", r.JSON(t)["data"].(map[string]any)["rejection_reason"])
	run := h.waitRun(t, ex.RunUUID, store.RunRejected)
	require.Equal(t, store.RunRejected, h.workflowResult(t, ex.RunUUID))
	require.Zero(t, h.steps.Hits(path))
	require.JSONEq(t, "[]", string(run.Steps))
	requireError(t, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
}

func TestRunAlwaysHoldsHumanAndSelfApprovalForbidden(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, approver, _ := h.keys(t)
	path := "/always/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["approval_mode"] = "always" }))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "198.51.100.1"})
	require.Equal(t, "pending_approval", ex.Status)
	require.Equal(t, "human", ex.TriggerSource)

	requireError(t, h.decide(t, human, *ex.ApprovalRequestUUID, "approve", nil), http.StatusForbidden, "SELF_APPROVAL_FORBIDDEN")
	requireError(t, h.decide(t, human, *ex.ApprovalRequestUUID, "reject", nil), http.StatusForbidden, "SELF_APPROVAL_FORBIDDEN")
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, h.steps.Hits(path))
	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))

	// never: not even an agent waits.
	path2 := "/never/" + uuid.NewString()
	wf2 := h.createWorkflow(t, human, h.workflowBody(path2, func(b map[string]any) { b["approval_mode"] = "never" }))
	_, agent, _, _ := h.keys(t)
	ex2 := h.execute(t, agent, wf2, nil)
	require.Equal(t, "queued", ex2.Status)
	h.waitRun(t, ex2.RunUUID, store.RunSucceeded)
}

func TestRunApprovalExpiresByItself(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, _ := h.keys(t)
	path := "/expire/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["approval_timeout_seconds"] = 2 }))
	ex := h.execute(t, agent, wf, nil)
	require.WithinDuration(t, time.Now().Add(2*time.Second), *ex.ExpiresAt, 3*time.Second)
	// Nobody reads the request: the durable timer expires it.
	require.Equal(t, store.RunExpired, h.workflowResult(t, ex.RunUUID))
	run := h.waitRun(t, ex.RunUUID, store.RunExpired)
	require.Equal(t, "approval expired", *run.Error)
	ap, err := h.ts.Store.GetApproval(context.Background(), *ex.ApprovalRequestUUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalExpired, ap.Status)
	requireError(t, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil), http.StatusConflict, "APPROVAL_EXPIRED")
	require.Zero(t, h.steps.Hits(path))
}

func TestRunQuorumNeedsDistinctResponders(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, approver2 := h.keys(t)
	path := "/quorum/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["required_approvals"] = 2 }))
	ex := h.execute(t, agent, wf, nil)

	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", map[string]any{"responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "pending", r.JSON(t)["data"].(map[string]any)["status"])
	// The same key under another label is still the same responder.
	requireError(t, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", map[string]any{"responder_id": "bob"}), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
	time.Sleep(300 * time.Millisecond)
	require.Zero(t, h.steps.Hits(path))
	require.Equal(t, store.RunPendingApproval, h.waitRun(t, ex.RunUUID, store.RunPendingApproval).Status)

	// An empty body is an approval without comment.
	r = h.ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+ex.ApprovalRequestUUID.String()+"/approve", approver2, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "approved", r.JSON(t)["data"].(map[string]any)["status"])
	require.Len(t, r.JSON(t)["data"].(map[string]any)["decisions"], 2)
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
}

func TestRunSurvivesWorkerRestartAtGate(t *testing.T) {
	h := newRunHarness(t, "-restart")
	human, agent, approver, _ := h.keys(t)
	path := "/restart/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	h.notices.DecideURL(t, *ex.ApprovalRequestUUID) // the workflow is waiting at the gate

	h.stop() // the worker goes away while the run waits
	r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, h.steps.Hits(path), "no worker, no step")

	h.startWorkers(t) // a new worker replays the history and carries on
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
}

func TestRunStepFailuresAndCancel(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, _ := h.keys(t)

	// 5xx is retried up to max_attempts, then the run fails.
	p500 := "/fail/" + uuid.NewString() + "/status/503"
	wf := h.createWorkflow(t, human, h.workflowBody(p500, nil))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	run := h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Equal(t, 2, h.steps.Hits(p500))
	require.Contains(t, *run.Error, "503")
	require.Len(t, runSteps(t, run), 1)

	// 4xx is permanent: one attempt.
	p404 := "/fail/" + uuid.NewString() + "/status/403"
	wf = h.createWorkflow(t, human, h.workflowBody(p404, nil))
	ex = h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Equal(t, 1, h.steps.Hits(p404))

	// Two steps, the second reading the first's response.
	p1, p2 := "/chain/"+uuid.NewString(), "/chain/"+uuid.NewString()
	wf = h.createWorkflow(t, human, h.workflowBody(p1, func(b map[string]any) {
		b["steps"] = []any{
			map[string]any{"name": "first", "url": h.steps.URL + p1},
			map[string]any{"name": "second", "method": "POST", "url": h.steps.URL + p2,
				"headers": map[string]any{"X-From-First": "{{steps.first.response.token}}"}},
		}
	}))
	ex = h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	run = h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Len(t, runSteps(t, run), 2)
	require.Equal(t, "tok-200", h.steps.Header(p2).Get("X-From-First"))

	// Cancel a waiting run: the approval is cancelled too and nothing runs.
	pc := "/cancel/" + uuid.NewString()
	wf = h.createWorkflow(t, human, h.workflowBody(pc, nil))
	ex = h.execute(t, agent, wf, nil)
	r := h.ts.do(t, http.MethodPost, "/v1/workflow-runs/"+ex.RunUUID.String()+"/cancel", agent, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "cancelled", r.JSON(t)["data"].(map[string]any)["status"])
	require.Equal(t, store.RunCancelled, h.workflowResult(t, ex.RunUUID))
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflow-runs/"+ex.RunUUID.String()+"/cancel", agent, nil), http.StatusConflict, "RUN_NOT_CANCELLABLE")
	requireError(t, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil), http.StatusConflict, "APPROVAL_ALREADY_DECIDED")
	require.Zero(t, h.steps.Hits(pc))
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflow-runs/"+uuid.NewString()+"/cancel", agent, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestExecuteRules(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, _, _ := h.keys(t)
	path := "/rules/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	url := "/v1/workflows/" + wf + "/execute"

	// Agents must give a reason and a confidence in [0, 1]; the body cannot claim a trigger source.
	cases := []struct {
		name string
		body any
		locs []string
	}{
		{"no reason or confidence", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"}, []string{"body.reason", "body.confidence"}},
		{"blank reason", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "  ", "confidence": 0.5}, []string{"body.reason"}},
		{"confidence above 1", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": 1.5}, []string{"body.confidence"}},
		{"confidence below 0", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": -0.1}, []string{"body.confidence"}},
		{"confidence as string", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": "0.5"}, []string{"body.confidence"}},
		{"trigger_source in body", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": 0.5, "trigger_source": "human"}, []string{"body.trigger_source"}},
		{"bad type", map[string]any{"indicator_type": "ipv9", "indicator_value": "192.0.2.1", "reason": "x", "confidence": 0.5}, []string{"body.indicator_type"}},
		{"bad ip", map[string]any{"indicator_type": "ip", "indicator_value": "999.1.1.1", "reason": "x", "confidence": 0.5}, []string{"body.indicator_value"}},
		{"type not allowed by workflow", map[string]any{"indicator_type": "domain", "indicator_value": "example.com", "reason": "x", "confidence": 0.5}, []string{"body.indicator_type"}},
		{"bad alert uuid", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": 0.5, "alert_uuid": "nope"}, []string{"body.alert_uuid"}},
		{"huge value", map[string]any{"indicator_type": "ip", "indicator_value": string(make([]byte, 5000)), "reason": "x", "confidence": 0.5}, []string{"body.indicator_value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ElementsMatch(t, tc.locs, locs(requireValidation(t, h.ts.do(t, http.MethodPost, url, agent, tc.body))))
		})
	}
	good := map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "reason": "x", "confidence": 0}
	requireError(t, h.ts.do(t, http.MethodPost, url, agent, `{"indicator_type":`), http.StatusBadRequest, "INVALID_JSON")
	requireError(t, h.ts.do(t, http.MethodPost, url, agent, `[1,2]`), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows/"+uuid.NewString()+"/execute", agent, good), http.StatusNotFound, "NOT_FOUND")
	requireValidation(t, h.ts.do(t, http.MethodPost, "/v1/workflows/not-a-uuid/execute", agent, good))
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	requireError(t, h.ts.do(t, http.MethodPost, url, agent, with("alert_uuid", uuid.NewString())), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, []string{"header.Idempotency-Key"}, locs(requireValidation(t, h.ts.do(t, http.MethodPost, url, agent, good, "Idempotency-Key", strings.Repeat("k", 201)))))

	// Idempotency: the same key and header give the same run; another header a new one.
	a := h.execute(t, agent, wf, good, "Idempotency-Key", "retry-1")
	b := h.execute(t, agent, wf, good, "Idempotency-Key", "retry-1")
	c := h.execute(t, agent, wf, good, "Idempotency-Key", "retry-2")
	require.Equal(t, a.RunUUID, b.RunUUID)
	require.Equal(t, *a.ApprovalRequestUUID, *b.ApprovalRequestUUID)
	require.NotEqual(t, a.RunUUID, c.RunUUID)
	// Another key with the same header value gets its own run.
	_, agent2, _, _ := h.keys(t)
	d := h.execute(t, agent2, wf, good, "Idempotency-Key", "retry-1")
	require.NotEqual(t, a.RunUUID, d.RunUUID)

	// Not active → 409.
	r := h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, human, map[string]any{"state": "inactive"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	requireError(t, h.ts.do(t, http.MethodPost, url, agent, good), http.StatusConflict, "WORKFLOW_NOT_ACTIVE")

	// Listing runs: filters validate.
	requireValidation(t, h.ts.do(t, http.MethodGet, "/v1/workflow-runs?status=bogus", human, nil))
	requireValidation(t, h.ts.do(t, http.MethodGet, "/v1/workflow-runs?trigger_source=robot", human, nil))
	list := h.ts.do(t, http.MethodGet, "/v1/workflow-runs?workflow_uuid="+wf+"&trigger_source=agent", human, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Body))
	require.EqualValues(t, 3, list.JSON(t)["meta"].(map[string]any)["total"])
	requireError(t, h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+uuid.NewString(), human, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestRunWithAlertValuesAndBuiltinOkta(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, approver, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, "admin")
	ctx := context.Background()

	// alert.* values reach the steps; an alert workflow needs an alert.
	var alertID uuid.UUID
	require.NoError(t, h.ts.Store.DB().NewRaw(`INSERT INTO alerts (title, severity, source_name, occurred_at) VALUES (?, 'High', 'generic', now()) RETURNING uuid`,
		"Beacon from host-7").Scan(ctx, &alertID))
	path := "/alert/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) {
		b["workflow_type"] = "alert"
		b["steps"] = []any{map[string]any{"name": "note", "method": "POST", "url": h.steps.URL + path,
			"headers": map[string]any{"X-Alert": "{{alert.title}} / {{alert.severity}}"}}}
	}))
	requireValidation(t, h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/execute", human, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"}))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "alert_uuid": alertID})
	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, "Beacon from host-7 / High", h.steps.Header(path).Get("X-Alert"))
	require.Equal(t, alertID, *run.AlertUUID)

	// The builtin Okta suspend workflow, pointed at the step server, runs once approved.
	require.NoError(t, builtins.SeedWorkflows(ctx, h.ts.Store))
	t.Cleanup(func() {
		_ = h.ts.Store.DeleteWorkflowSecret(ctx, "OKTA_ORG_URL")
		_ = h.ts.Store.DeleteWorkflowSecret(ctx, "OKTA_API_TOKEN")
	})
	for name, v := range map[string]string{"OKTA_ORG_URL": h.steps.URL, "OKTA_API_TOKEN": "00okta-token-value"} {
		require.Equal(t, http.StatusOK, h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": v}).Status)
	}
	l := h.ts.do(t, http.MethodGet, "/v1/workflows?q="+url.QueryEscape("Okta: suspend")+"&state=active", admin, nil)
	data := l.JSON(t)["data"].([]any)
	require.Len(t, data, 1, string(l.Body))
	suspend := data[0].(map[string]any)["uuid"].(string)
	account := "jdoe-" + uuid.NewString()[:8] + "@example.com"
	ex = h.execute(t, agent, suspend, map[string]any{"indicator_type": "email", "indicator_value": account, "reason": "impossible travel", "confidence": 0.95})
	require.Equal(t, "pending_approval", ex.Status, "builtins always need approval")
	require.Equal(t, http.StatusOK, h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil).Status)
	run = h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	okta := "/api/v1/users/" + account + "/lifecycle/suspend"
	require.Equal(t, 1, h.steps.Hits(okta))
	require.Equal(t, "SSWS 00okta-token-value", h.steps.Header(okta).Get("Authorization"))
	require.NotContains(t, string(run.Steps), "00okta-token-value")
}

func TestRunStepActivityIsIdempotent(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)
	path := "/idem/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
	ctx := context.Background()

	// A retried attempt after the step was recorded does not send it again.
	_, err := h.ts.Store.DB().NewUpdate().Table("workflow_runs").Set("status = 'running'").Where("uuid = ?", ex.RunUUID).Exec(ctx)
	require.NoError(t, err)
	res, err := h.acts.RunWorkflowStep(ctx, activities.RunStepInput{RunUUID: ex.RunUUID, Index: 0})
	require.NoError(t, err)
	require.True(t, res.Replayed)
	require.Equal(t, 1, h.steps.Hits(path))

	// A run that is not running (cancelled meanwhile) sends nothing.
	_, err = h.ts.Store.DB().NewUpdate().Table("workflow_runs").Set("status = 'cancelled', steps = '[]'").Where("uuid = ?", ex.RunUUID).Exec(ctx)
	require.NoError(t, err)
	res, err = h.acts.RunWorkflowStep(ctx, activities.RunStepInput{RunUUID: ex.RunUUID, Index: 0})
	require.NoError(t, err)
	require.True(t, res.Cancelled)
	require.Equal(t, 1, h.steps.Hits(path))

	// Unknown runs are permanent failures, not retried forever.
	_, err = h.acts.RunWorkflowStep(ctx, activities.RunStepInput{RunUUID: uuid.New(), Index: 0})
	require.Error(t, err)
	require.Contains(t, err.Error(), activities.ErrTypeRunBroken)
}

func TestRunCancelWhileRunningAndWorkflowTimeout(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)

	// Cancel while the first of two steps is in flight: the second is never sent.
	slow, second := "/running/"+uuid.NewString()+"/sleep/1500", "/running/"+uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(slow, func(b map[string]any) {
		b["steps"] = []any{map[string]any{"name": "slow", "url": h.steps.URL + slow}, map[string]any{"name": "second", "url": h.steps.URL + second}}
	}))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	h.waitRun(t, ex.RunUUID, store.RunRunning)
	require.Eventually(t, func() bool { return h.steps.Hits(slow) == 1 }, 10*time.Second, 10*time.Millisecond)
	r := h.ts.do(t, http.MethodPost, "/v1/workflow-runs/"+ex.RunUUID.String()+"/cancel", human, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, store.RunCancelled, h.workflowResult(t, ex.RunUUID))
	require.Zero(t, h.steps.Hits(second))
	run := h.waitRun(t, ex.RunUUID, store.RunCancelled)
	require.Equal(t, "cancelled", *run.Error)

	// A run longer than timeout_seconds ends timed_out.
	slower := "/timeout/" + uuid.NewString() + "/sleep/4000"
	wf = h.createWorkflow(t, human, h.workflowBody(slower, func(b map[string]any) {
		b["timeout_seconds"] = 1
		b["steps"] = []any{map[string]any{"name": "slow", "url": h.steps.URL + slower, "timeout_seconds": 10}}
	}))
	ex = h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1"})
	require.Equal(t, store.RunTimedOut, h.workflowResult(t, ex.RunUUID))
	run = h.waitRun(t, ex.RunUUID, store.RunTimedOut)
	require.Contains(t, *run.Error, "timed out")
}

func TestDryRunLiveHTTP(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)
	path := "/dry-live/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) {
		b["steps"] = []any{
			map[string]any{"name": "live", "url": h.steps.URL + path},
			map[string]any{"name": "metadata", "url": "http://169.254.169.254/latest/meta-data/", "optional": true},
		}
	}))
	// Live dry runs are admin only (issue 12 item 1; the refusal is in TestLiveDryRunIsAdminOnly).
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", admin, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.1", "live_http": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, d["success"], string(r.Body))
	require.Equal(t, 1, h.steps.Hits(path), "live: the request was sent")
	steps := d["steps"].([]any)
	require.EqualValues(t, 200, steps[0].(map[string]any)["response_status_code"])
	blocked := steps[1].(map[string]any)
	require.Equal(t, true, blocked["skipped"])
	require.Contains(t, blocked["error"], "169.254.169.254", "the SSRF guard refused the metadata address")
	_, total, err := h.ts.Store.ListWorkflowRuns(context.Background(), store.WorkflowRunFilter{WorkflowUUID: ptrUUID(uuid.MustParse(wf))})
	require.NoError(t, err)
	require.Zero(t, total, "a dry run creates no run")
}
