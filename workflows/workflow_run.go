package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal/searchattr"
)

// SignalRunUpdate tells a WorkflowRun to re-read its run from Postgres: an approval decision or a
// cancel was committed there. The signal carries nothing; a lost, late or duplicated one changes
// nothing because Postgres holds the decision.
const SignalRunUpdate = "vigil-run-update"

// RunSearchAttributes are the search attributes a run starts with.
func RunSearchAttributes(workflowName, triggerSource, status string) sdktemporal.SearchAttributes {
	return sdktemporal.NewSearchAttributes(searchattr.WorkflowName.ValueSet(workflowName),
		searchattr.TriggerSource.ValueSet(triggerSource), searchattr.RunStatus.ValueSet(status))
}

// ErrTypeForeignRun is the error type of a WorkflowRun execution refused without touching its run:
// its workflow id is not the run's, or the store would not start the run (approval not granted).
const ErrTypeForeignRun = "WorkflowRunRefused"

// WorkflowRunInput starts a WorkflowRun. It carries ids and the gate's deadline only: no indicator
// values, no secrets.
type WorkflowRunInput struct {
	RunUUID   uuid.UUID `json:"run_uuid"`
	Gated     bool      `json:"gated"`
	ExpiresAt time.Time `json:"expires_at"`
}

// WorkflowRunResult is the run's final status as stored.
type WorkflowRunResult struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Bookkeeping (database reads and writes: the gate re-read, starting and finishing the run) runs as
// local activities in the workflow's worker: no task-queue round trip between an approval and the
// first step. They retry briefly; steps are regular activities under the workflow's policy.
var bookkeeping = workflow.LocalActivityOptions{
	StartToCloseTimeout:    15 * time.Second,
	ScheduleToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		MaximumAttempts: 10, NonRetryableErrorTypes: []string{activities.ErrTypeRunBroken}},
}

// WorkflowRun executes one workflow run (workflow id workflow-run-<uuid>, actions queue). Gated:
// it notifies the approval channel, then waits for SignalRunUpdate or the durable timer ending at
// ExpiresAt, re-reading the decision from Postgres each time; approved runs the steps, anything else
// ends the run without sending a step. Steps run one activity each, under the workflow's retry
// policy and overall timeout; each is recorded on the run. The final status is recorded once,
// with workflow_run.completed.
//
// Temporal is not trusted for integrity (API.md §16; security review round 4, R4-5): an execution
// whose workflow id is not its run's (ids.WorkflowRun) is refused before it reads anything, and a
// run the store will not start (a gated run whose approval Postgres does not hold as approved,
// whatever Gated says) ends this execution with an error and leaves the run as it is.
func WorkflowRun(ctx workflow.Context, in WorkflowRunInput) (WorkflowRunResult, error) {
	if id := workflow.GetInfo(ctx).WorkflowExecution.ID; id != ids.WorkflowRun(in.RunUUID) {
		return WorkflowRunResult{}, sdktemporal.NewNonRetryableApplicationError(
			"workflow id "+id+" is not the run's ("+ids.WorkflowRun(in.RunUUID)+"): refused", ErrTypeForeignRun, nil)
	}
	var a *activities.Activities
	bctx := workflow.WithLocalActivityOptions(ctx, bookkeeping)
	logger := workflow.GetLogger(ctx)
	setStatus := func(status string) {
		if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.RunStatus.ValueSet(status)); err != nil {
			logger.Warn("upsert run status search attribute", "error", err)
		}
	}
	finish := func(status, msg string) (WorkflowRunResult, error) {
		var stored string
		// A cancelled workflow context must not stop the final bookkeeping.
		fctx, _ := workflow.NewDisconnectedContext(bctx)
		if err := workflow.ExecuteLocalActivity(fctx, a.FinishWorkflowRun, activities.FinishRunInput{RunUUID: in.RunUUID, Status: status, Error: msg}).Get(fctx, &stored); err != nil {
			return WorkflowRunResult{}, err
		}
		setStatus(stored)
		return WorkflowRunResult{Status: stored, Error: msg}, nil
	}

	if in.Gated {
		status, err := waitForApproval(ctx, bctx, in)
		if err != nil {
			return WorkflowRunResult{}, err
		}
		switch status {
		case store.ApprovalApproved:
		case store.ApprovalRejected:
			return finish(store.RunRejected, "approval rejected")
		case store.ApprovalExpired:
			return finish(store.RunExpired, "approval expired")
		default:
			return finish(store.RunCancelled, "cancelled")
		}
	}

	var plan activities.RunPlan
	if err := workflow.ExecuteLocalActivity(bctx, a.StartWorkflowRunSteps, in.RunUUID).Get(bctx, &plan); err != nil {
		return finish(store.RunFailed, "start run: "+err.Error())
	}
	if plan.RunStatus == store.RunPendingApproval || plan.RunStatus == store.RunQueued {
		// Not started by the store: its approval is not granted. The run stays as it is for the
		// execution that waits for its decision.
		return WorkflowRunResult{}, sdktemporal.NewNonRetryableApplicationError(
			"run "+in.RunUUID.String()+" is not approved: not started", ErrTypeForeignRun, nil)
	}
	if plan.RunStatus != store.RunRunning {
		return finish(store.RunCancelled, "cancelled")
	}
	setStatus(store.RunRunning)
	deadline := workflow.Now(ctx).Add(time.Duration(plan.TimeoutSeconds) * time.Second)
	for i := range plan.StepNames {
		remaining := deadline.Sub(workflow.Now(ctx))
		if remaining <= 0 {
			return finish(store.RunTimedOut, "workflow timeout reached before step "+plan.StepNames[i])
		}
		stepTimeout := time.Duration(plan.StepTimeoutSeconds[i])*time.Second + 5*time.Second
		sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    min(stepTimeout, remaining),
			ScheduleToCloseTimeout: remaining,
			RetryPolicy: &sdktemporal.RetryPolicy{
				InitialInterval:        time.Duration(max(plan.InitialIntervalSeconds, 1)) * time.Second,
				BackoffCoefficient:     2,
				MaximumAttempts:        int32(max(plan.MaxAttempts, 1)),
				NonRetryableErrorTypes: []string{activities.ErrTypeWorkflowStepPermanent, activities.ErrTypeRunBroken},
			},
		})
		var res activities.RunStepResult
		err := workflow.ExecuteActivity(sctx, a.RunWorkflowStep, activities.RunStepInput{RunUUID: in.RunUUID, Index: i}).Get(sctx, &res)
		if err != nil {
			if isTimeout(err) {
				return finish(store.RunTimedOut, "step "+plan.StepNames[i]+" timed out")
			}
			return finish(store.RunFailed, "step "+plan.StepNames[i]+": "+rootMessage(err))
		}
		if res.Cancelled {
			return finish(store.RunCancelled, "cancelled")
		}
		if res.NotFound {
			break
		}
	}
	return finish(store.RunSucceeded, "")
}

// waitForApproval notifies the channel and waits for the decision. It returns the approval status
// committed in Postgres once it is no longer pending.
func waitForApproval(ctx, bctx workflow.Context, in WorkflowRunInput) (string, error) {
	var a *activities.Activities
	logger := workflow.GetLogger(ctx)
	// A channel that cannot be reached must not block the gate: the request can still be decided
	// through the API, and it still expires.
	nctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5}})
	if err := workflow.ExecuteActivity(nctx, a.NotifyWorkflowApproval, in.RunUUID).Get(nctx, nil); err != nil {
		logger.Warn("approval notification failed", "error", err)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.RunStatus.ValueSet(store.RunPendingApproval)); err != nil {
		logger.Warn("upsert run status search attribute", "error", err)
	}
	signals := workflow.GetSignalChannel(ctx, SignalRunUpdate)
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimer(timerCtx, max(in.ExpiresAt.Sub(workflow.Now(ctx)), 0))
	expired := false
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(ctx, nil) == nil {
				expired = true
			}
		})
		sel.Select(ctx)
		// Drain signals that arrived together: one re-read answers them all.
		for signals.ReceiveAsync(nil) {
		}
		var gate activities.RunGateResult
		if err := workflow.ExecuteLocalActivity(bctx, a.ResolveWorkflowRunGate, activities.RunGateInput{RunUUID: in.RunUUID, Expire: expired}).Get(bctx, &gate); err != nil {
			return "", err
		}
		if store.RunFinal(gate.RunStatus) {
			return store.ApprovalCancelled, nil
		}
		if gate.ApprovalStatus != store.ApprovalPending {
			return gate.ApprovalStatus, nil
		}
	}
}

func isTimeout(err error) bool {
	var te *sdktemporal.TimeoutError
	return errors.As(err, &te)
}

func rootMessage(err error) string {
	var ae *sdktemporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}
