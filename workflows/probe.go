package workflows

import (
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
)

// ProbeInput starts a Probe; Reason is free text shown in the Temporal UI's input (e.g. "vigil dev start").
type ProbeInput struct {
	Reason string `json:"reason,omitempty"`
}

// ProbeResult is what a Probe returns: the worker that ran its activity and the times seen.
type ProbeResult struct {
	Reason       string    `json:"reason,omitempty"`
	Host         string    `json:"host"`
	WorkerTime   time.Time `json:"worker_time"`
	WorkflowTime time.Time `json:"workflow_time"`
}

// Probe runs one activity (Activities.Probe) on a worker and returns its answer. It checks the
// whole path client → server → worker → activity → result, and gives the Temporal UI something
// to show right after `vigil dev` starts.
func Probe(ctx workflow.Context, in ProbeInput) (ProbeResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumAttempts: 3,
		},
	})
	var a *activities.Activities
	var res activities.ProbeResult
	if err := workflow.ExecuteActivity(ctx, a.Probe).Get(ctx, &res); err != nil {
		return ProbeResult{}, fmt.Errorf("probe activity: %w", err)
	}
	return ProbeResult{
		Reason:       in.Reason,
		Host:         res.Host,
		WorkerTime:   res.Time,
		WorkflowTime: workflow.Now(ctx).UTC(),
	}, nil
}
