package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal/ids"
	"github.com/vigil-soc/vigil/workflows"
)

// registerWorkflowRuns registers WorkflowRun and its activities (actions queue).
func registerWorkflowRuns(r Registrar, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.WorkflowRun, workflow.RegisterOptions{Name: "WorkflowRun"})
	r.RegisterActivityWithOptions(acts.ResolveWorkflowRunGate, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.NotifyWorkflowApproval, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.StartWorkflowRunSteps, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.RunWorkflowStep, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.FinishWorkflowRun, activity.RegisterOptions{})
}

// RunStarter starts and signals WorkflowRun executions; the API uses it through its own small
// interface.
type RunStarter struct {
	client client.Client
	queues Queues
}

// NewRunStarter returns a starter using c and the actions queue of queues.
func NewRunStarter(c client.Client, queues Queues) *RunStarter {
	return &RunStarter{client: c, queues: queues}
}

// StartWorkflowRun starts workflow-run-<uuid> for run. Starting a run that was already started
// (a retried request) is not an error, and a closed run is never started again.
func (s *RunStarter) StartWorkflowRun(ctx context.Context, run store.WorkflowRun, workflowName string, gated bool, expiresAt time.Time) (string, error) {
	id := ids.WorkflowRun(run.UUID)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                s.queues.Actions,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    workflows.RunSearchAttributes(workflowName, run.TriggerSource, run.Status),
	}
	_, err := s.client.ExecuteWorkflow(ctx, opts, "WorkflowRun", workflows.WorkflowRunInput{RunUUID: run.UUID, Gated: gated, ExpiresAt: expiresAt.UTC()})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return id, fmt.Errorf("start %s: %w", id, err)
	}
	return id, nil
}

// SignalWorkflowRun tells the run's workflow to re-read its decision. A run whose workflow has
// closed (or never started) has nothing to tell: that is not an error.
func (s *RunStarter) SignalWorkflowRun(ctx context.Context, runID uuid.UUID) error {
	err := s.client.SignalWorkflow(ctx, ids.WorkflowRun(runID), "", workflows.SignalRunUpdate, nil)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("signal %s: %w", ids.WorkflowRun(runID), err)
	}
	return nil
}
