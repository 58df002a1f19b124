package temporal

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/kit/ids"
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

// RunSignaler signals WorkflowRun executions after a decision or a cancellation was committed
// (responses.Service's Decide and CancelRun, through responses.RunSignaler). Runs are started by the Dispatcher from the start outbox.
type RunSignaler struct {
	client client.Client
}

// NewRunSignaler returns a signaler using c.
func NewRunSignaler(c client.Client) *RunSignaler {
	return &RunSignaler{client: c}
}

// SignalWorkflowRun tells the run's workflow to re-read its decision. A run whose workflow has
// closed (or never started) has nothing to tell: that is not an error.
func (s *RunSignaler) SignalWorkflowRun(ctx context.Context, runID uuid.UUID) error {
	err := s.client.SignalWorkflow(ctx, ids.WorkflowRun(runID), "", workflows.SignalRunUpdate, nil)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("signal %s: %w", ids.WorkflowRun(runID), err)
	}
	return nil
}
