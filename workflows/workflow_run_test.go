package workflows_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// fakeRun stands in for Postgres: the approval status the API committed and what the activities saw.
type fakeRun struct {
	mu        sync.Mutex
	approval  string
	runStatus string
	gateReads []activities.RunGateInput
	steps     []int
	finished  []string
	stepErr   map[int]error
	cancelled bool
	cancelAt  int // step index whose attempt finds the run cancelled (-1: none)
	notifyErr error
	// notApproved: the store refuses to start the run (its approval is not granted in Postgres).
	notApproved bool
}

func (f *fakeRun) set(status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approval = status
}

type runEnv struct {
	env   *testsuite.TestWorkflowEnvironment
	fake  *fakeRun
	start time.Time
	in    workflows.WorkflowRunInput
}

func newRunEnv(t *testing.T, gated bool, steps int) *runEnv {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	runUUID := uuid.New()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: ids.WorkflowRun(runUUID)})
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	f := &fakeRun{approval: store.ApprovalPending, runStatus: store.RunPendingApproval, stepErr: map[int]error{}, cancelAt: -1}
	var a *activities.Activities
	env.OnActivity(a.NotifyWorkflowApproval, mock.Anything, mock.Anything).Return(func(context.Context, uuid.UUID) error { return f.notifyErr })
	env.OnActivity(a.ResolveWorkflowRunGate, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RunGateInput) (activities.RunGateResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.gateReads = append(f.gateReads, in)
			if in.Expire && f.approval == store.ApprovalPending {
				f.approval = store.ApprovalExpired
			}
			return activities.RunGateResult{ApprovalStatus: f.approval, RunStatus: f.runStatus}, nil
		})
	names := make([]string, steps)
	timeouts := make([]int, steps)
	for i := range names {
		names[i], timeouts[i] = "s"+string(rune('a'+i)), 30
	}
	env.OnActivity(a.StartWorkflowRunSteps, mock.Anything, mock.Anything).Return(
		func(context.Context, uuid.UUID) (activities.RunPlan, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.cancelled {
				return activities.RunPlan{RunStatus: store.RunCancelled}, nil
			}
			if f.notApproved {
				return activities.RunPlan{RunStatus: store.RunPendingApproval}, nil
			}
			f.runStatus = store.RunRunning
			return activities.RunPlan{RunStatus: store.RunRunning, StepNames: names, StepTimeoutSeconds: timeouts, TimeoutSeconds: 300,
				MaxAttempts: 2, InitialIntervalSeconds: 1}, nil
		})
	env.OnActivity(a.RunWorkflowStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RunStepInput) (activities.RunStepResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.steps = append(f.steps, in.Index)
			if in.Index == f.cancelAt {
				f.cancelled = true
			}
			if f.cancelled {
				return activities.RunStepResult{Cancelled: true}, nil
			}
			if err := f.stepErr[in.Index]; err != nil {
				return activities.RunStepResult{}, err
			}
			return activities.RunStepResult{StepName: names[in.Index], Status: 200}, nil
		})
	env.OnActivity(a.FinishWorkflowRun, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FinishRunInput) (string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.finished = append(f.finished, in.Status)
			if f.cancelled {
				return store.RunCancelled, nil
			}
			return in.Status, nil
		})
	return &runEnv{env: env, fake: f, start: start,
		in: workflows.WorkflowRunInput{RunUUID: runUUID, Gated: gated, ExpiresAt: start.Add(time.Hour)}}
}

func (r *runEnv) run(t *testing.T) workflows.WorkflowRunResult {
	t.Helper()
	r.env.ExecuteWorkflow(workflows.WorkflowRun, r.in)
	require.True(t, r.env.IsWorkflowCompleted())
	require.NoError(t, r.env.GetWorkflowError())
	var res workflows.WorkflowRunResult
	require.NoError(t, r.env.GetWorkflowResult(&res))
	return res
}

func (r *runEnv) decideAt(after time.Duration, status string) {
	r.env.RegisterDelayedCallback(func() {
		r.fake.set(status)
		r.env.SignalWorkflow(workflows.SignalRunUpdate, nil)
	}, after)
}

func TestWorkflowRun_UngatedRunsStepsInOrder(t *testing.T) {
	r := newRunEnv(t, false, 3)
	res := r.run(t)
	require.Equal(t, store.RunSucceeded, res.Status)
	require.Equal(t, []int{0, 1, 2}, r.fake.steps)
	require.Equal(t, []string{store.RunSucceeded}, r.fake.finished)
	require.Empty(t, r.fake.gateReads, "no gate, no approval reads")
	r.env.AssertNotCalled(t, "NotifyWorkflowApproval", mock.Anything, mock.Anything)
}

// TestWorkflowRun_RefusesWhatTemporalAloneSays replays round 4's R4-5 at the workflow: an execution
// whose id is not its run's is refused before any activity; an ungated execution of a run the store
// will not start (its approval not granted) ends with an error, sends no step and finishes nothing.
func TestWorkflowRun_RefusesWhatTemporalAloneSays(t *testing.T) {
	t.Run("foreign workflow id", func(t *testing.T) {
		r := newRunEnv(t, false, 1)
		r.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "rv4-bypass-" + r.in.RunUUID.String()})
		r.env.ExecuteWorkflow(workflows.WorkflowRun, r.in)
		require.True(t, r.env.IsWorkflowCompleted())
		var ae *sdktemporal.ApplicationError
		require.ErrorAs(t, r.env.GetWorkflowError(), &ae)
		require.Equal(t, workflows.ErrTypeForeignRun, ae.Type())
		require.Empty(t, r.fake.steps)
		require.Empty(t, r.fake.finished)
		r.env.AssertNotCalled(t, "StartWorkflowRunSteps", mock.Anything, mock.Anything)
	})
	t.Run("gated false, approval not granted", func(t *testing.T) {
		r := newRunEnv(t, false, 1)
		r.fake.notApproved = true
		r.env.ExecuteWorkflow(workflows.WorkflowRun, r.in)
		require.True(t, r.env.IsWorkflowCompleted())
		var ae *sdktemporal.ApplicationError
		require.ErrorAs(t, r.env.GetWorkflowError(), &ae)
		require.Equal(t, workflows.ErrTypeForeignRun, ae.Type())
		require.Empty(t, r.fake.steps)
		require.Empty(t, r.fake.finished, "the run is left pending for the execution that waits for its decision")
	})
}

func TestWorkflowRun_ApprovedBySignal(t *testing.T) {
	r := newRunEnv(t, true, 1)
	r.decideAt(10*time.Minute, store.ApprovalApproved)
	res := r.run(t)
	require.Equal(t, store.RunSucceeded, res.Status)
	require.Equal(t, []int{0}, r.fake.steps)
	require.Len(t, r.fake.gateReads, 1)
	require.False(t, r.fake.gateReads[0].Expire)
	r.env.AssertCalled(t, "NotifyWorkflowApproval", mock.Anything, r.in.RunUUID)
}

func TestWorkflowRun_ExpiresOnDurableTimer(t *testing.T) {
	r := newRunEnv(t, true, 1)
	var endedAt time.Time
	res := r.run(t)
	endedAt = r.env.Now()
	require.Equal(t, store.RunExpired, res.Status)
	require.Empty(t, r.fake.steps, "no step after expiry")
	require.Equal(t, []string{store.RunExpired}, r.fake.finished)
	require.Equal(t, []activities.RunGateInput{{RunUUID: r.in.RunUUID, Expire: true}}, r.fake.gateReads)
	require.False(t, endedAt.Before(r.in.ExpiresAt), "ended at %v, not before expires_at %v", endedAt, r.in.ExpiresAt)
}

func TestWorkflowRun_ExpiryInThePastEndsAtOnce(t *testing.T) {
	r := newRunEnv(t, true, 1)
	r.in.ExpiresAt = r.start.Add(-time.Minute)
	require.Equal(t, store.RunExpired, r.run(t).Status)
}

func TestWorkflowRun_RejectedNeverRunsASteps(t *testing.T) {
	r := newRunEnv(t, true, 2)
	r.decideAt(time.Minute, store.ApprovalRejected)
	require.Equal(t, store.RunRejected, r.run(t).Status)
	require.Empty(t, r.fake.steps)
	r.env.AssertNotCalled(t, "StartWorkflowRunSteps", mock.Anything, mock.Anything)
}

func TestWorkflowRun_LostSignalDecisionStillWinsAtTimer(t *testing.T) {
	r := newRunEnv(t, true, 1)
	// The API committed the approval but its signal never arrived.
	r.env.RegisterDelayedCallback(func() { r.fake.set(store.ApprovalApproved) }, 5*time.Minute)
	res := r.run(t)
	require.Equal(t, store.RunSucceeded, res.Status, "the timer re-reads Postgres and finds the approval")
	require.Equal(t, []int{0}, r.fake.steps)
}

func TestWorkflowRun_DuplicateAndEarlySignalsChangeNothing(t *testing.T) {
	r := newRunEnv(t, true, 1)
	for i := 1; i <= 3; i++ {
		r.env.RegisterDelayedCallback(func() { r.env.SignalWorkflow(workflows.SignalRunUpdate, nil) }, time.Duration(i)*time.Minute)
	}
	r.decideAt(10*time.Minute, store.ApprovalApproved)
	r.env.RegisterDelayedCallback(func() { r.env.SignalWorkflow(workflows.SignalRunUpdate, nil) }, 11*time.Minute)
	res := r.run(t)
	require.Equal(t, store.RunSucceeded, res.Status)
	require.Equal(t, []int{0}, r.fake.steps, "exactly once")
	for _, g := range r.fake.gateReads {
		require.False(t, g.Expire)
	}
}

func TestWorkflowRun_CancelledWhileWaiting(t *testing.T) {
	r := newRunEnv(t, true, 1)
	r.env.RegisterDelayedCallback(func() {
		r.fake.mu.Lock()
		r.fake.approval, r.fake.runStatus = store.ApprovalCancelled, store.RunCancelled
		r.fake.mu.Unlock()
		r.env.SignalWorkflow(workflows.SignalRunUpdate, nil)
	}, time.Minute)
	require.Equal(t, store.RunCancelled, r.run(t).Status)
	require.Empty(t, r.fake.steps)
}

func TestWorkflowRun_CancelledBetweenSteps(t *testing.T) {
	r := newRunEnv(t, false, 3)
	r.fake.cancelAt = 1
	require.Equal(t, store.RunCancelled, r.run(t).Status)
	require.Equal(t, []int{0, 1}, r.fake.steps)
}

func TestWorkflowRun_StepFailures(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
		runs int
	}{
		{"permanent", sdktemporal.NewNonRetryableApplicationError("HTTP 403", activities.ErrTypeWorkflowStepPermanent, nil), store.RunFailed, 1},
		{"retryable exhausts max_attempts", errors.New("HTTP 503"), store.RunFailed, 2},
		{"timeout", sdktemporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), store.RunTimedOut, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunEnv(t, false, 2)
			r.fake.stepErr[0] = tc.err
			res := r.run(t)
			require.Equal(t, tc.want, res.Status)
			require.Len(t, r.fake.steps, tc.runs)
			require.NotContains(t, r.fake.steps[len(r.fake.steps)-1:], 1, "the second step never runs")
			require.NotEmpty(t, res.Error)
		})
	}
}

func TestWorkflowRun_NotifyFailureDoesNotBlockTheGate(t *testing.T) {
	r := newRunEnv(t, true, 1)
	r.fake.notifyErr = sdktemporal.NewNonRetryableApplicationError("slack says no", "ApprovalNotifyPermanent", nil)
	r.decideAt(time.Minute, store.ApprovalApproved)
	require.Equal(t, store.RunSucceeded, r.run(t).Status)
}

// TestWorkflowRun_Replay replays a gated run recorded against the real dev server (notify, wait,
// approval signal, gate re-read, one step, finish): a change that breaks determinism for runs
// waiting at their gate fails here.
func TestWorkflowRun_Replay(t *testing.T) {
	replayRun(t, "testdata/workflow_run_history.json")
}

// TestWorkflowRun_ReplaySignalWithStart replays a gated run started by the outbox dispatcher with
// signal-with-start (the update signal is the first event after the start, before the notification):
// the shape every gated run has since runs start through the start outbox.
func TestWorkflowRun_ReplaySignalWithStart(t *testing.T) {
	replayRun(t, "testdata/workflow_run_signal_start_history.json")
}

// TestWorkflowRun_ReplayDecisions replays an ungated run recorded against the real dev server whose
// steps decide: two lookups, a step run on a condition, one skipped by its condition, a for_each
// loop with a per-item condition and two code steps (api TestRunDecidingWorkflow
// -record-decide-history). Expressions and code run inside the RunWorkflowStep activity, so the
// workflow code is unchanged and replays every recorded shape; a change that breaks this history
// fails here.
func TestWorkflowRun_ReplayDecisions(t *testing.T) {
	replayRun(t, "testdata/workflow_run_decide_history.json")
}

// replayRun replays a recorded WorkflowRun history under its original workflow id
// (workflow-run-<the input's run uuid>), which the workflow checks: the replayer's default id
// would be refused.
func replayRun(t *testing.T, file string) {
	t.Helper()
	h, err := client.HistoryFromJSON(mustOpen(t, file), client.HistoryJSONOptions{})
	require.NoError(t, err)
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	var in workflows.WorkflowRunInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(started.GetInput(), &in))
	require.NotEqual(t, uuid.Nil, in.RunUUID)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.WorkflowRun)
	require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: ids.WorkflowRun(in.RunUUID), RunID: started.GetOriginalExecutionRunId()}}))
}

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}
