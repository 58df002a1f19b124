package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// TestTemporalCannotSkipTheGate replays security review round 4, R4-5: a gated run waits for its
// approval; then a WorkflowRun is started straight on Temporal with gated: false (the review used
// the stock CLI: no codec, no Vigil key). Before, the run succeeded and its step was sent while the
// approval stayed pending. Now nothing is sent and the run stays pending_approval: the worker refuses
// the plaintext input; an encoded one under a foreign workflow id is refused by the workflow; one
// under the run's own id is refused by the store, which starts a gated run only with its approval
// approved (the same UPDATE). Approving afterwards still runs the step once.
func TestTemporalCannotSkipTheGate(t *testing.T) {
	h := newRunHarness(t, "-gate")
	human, _, approver, _ := h.keys(t)
	path := "/gated-" + uuid.NewString()[:8]
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["approval_mode"] = "always" }))
	ex := h.execute(t, human, wf, nil)
	require.Equal(t, store.RunPendingApproval, ex.Status)
	require.NotNil(t, ex.ApprovalRequestUUID)
	h.waitRun(t, ex.RunUUID, store.RunPendingApproval)
	ctx := context.Background()
	require.Eventually(t, func() bool { // the dispatcher has started the run's own execution, which waits
		_, err := h.client.DescribeWorkflowExecution(ctx, ids.WorkflowRun(ex.RunUUID), "")
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	in := map[string]any{"run_uuid": ex.RunUUID.String(), "gated": false, "expires_at": "2030-01-01T00:00:00Z"}
	stillPending := func(t *testing.T) {
		t.Helper()
		run, err := h.ts.Store.GetWorkflowRun(ctx, ex.RunUUID)
		require.NoError(t, err)
		require.Equal(t, store.RunPendingApproval, run.Status)
		ap, err := h.ts.Store.GetApproval(ctx, *ex.ApprovalRequestUUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalPending, ap.Status)
		require.Zero(t, h.steps.Hits(path), "the step server got nothing")
	}

	t.Run("plaintext input from a client without the codec", func(t *testing.T) {
		plain, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress(t), Namespace: "default"})
		require.NoError(t, err)
		defer plain.Close()
		id := "rv4-bypass-" + ex.RunUUID.String()
		_, err = plain.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: h.queues.Actions}, "WorkflowRun", in)
		require.NoError(t, err)
		defer func() { _ = plain.TerminateWorkflow(ctx, id, "", "test over") }()
		// The worker cannot decode the input: the execution fails without running a line of the
		// workflow.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = h.client.GetWorkflow(wctx, id, "").Get(wctx, nil) // the worker's failure is encoded: read it with the codec
		require.Error(t, err)
		require.Contains(t, err.Error(), "payload is not encrypted")
		stillPending(t)
	})
	t.Run("encoded input under a foreign workflow id", func(t *testing.T) {
		id := "rv4-bypass-enc-" + ex.RunUUID.String()
		r, err := h.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: h.queues.Actions}, workflows.WorkflowRun,
			workflows.WorkflowRunInput{RunUUID: ex.RunUUID, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		var ae *sdktemporal.ApplicationError
		require.ErrorAs(t, r.Get(ctx, nil), &ae)
		require.Equal(t, workflows.ErrTypeForeignRun, ae.Type())
		stillPending(t)
	})
	t.Run("encoded input under the run's own id", func(t *testing.T) {
		// The waiting execution is terminated so the id is free (an operator's mistake, or an attacker
		// holding the codec key); the gate is then only the store's.
		require.NoError(t, h.client.TerminateWorkflow(ctx, ids.WorkflowRun(ex.RunUUID), "", "free the id"))
		r, err := h.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids.WorkflowRun(ex.RunUUID), TaskQueue: h.queues.Actions},
			workflows.WorkflowRun, workflows.WorkflowRunInput{RunUUID: ex.RunUUID, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		var ae *sdktemporal.ApplicationError
		require.ErrorAs(t, r.Get(ctx, nil), &ae)
		require.Equal(t, workflows.ErrTypeForeignRun, ae.Type())
		require.Contains(t, ae.Error(), "not approved")
		stillPending(t)
	})
	t.Run("once approved, the store starts it", func(t *testing.T) {
		r := h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		r2, err := h.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids.WorkflowRun(ex.RunUUID), TaskQueue: h.queues.Actions},
			workflows.WorkflowRun, workflows.WorkflowRunInput{RunUUID: ex.RunUUID, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		var res workflows.WorkflowRunResult
		require.NoError(t, r2.Get(ctx, &res))
		require.Equal(t, store.RunSucceeded, res.Status)
		require.Equal(t, 1, h.steps.Hits(path))
	})
}
