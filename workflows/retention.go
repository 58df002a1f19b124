package workflows

import (
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/retention"
)

// RetentionPassInput starts a RetentionPass; the Schedule vigil-retention starts it with none.
// Reason is free text shown in the Temporal UI (e.g. "manual").
type RetentionPassInput struct {
	Reason string `json:"reason,omitempty"`
}

// retentionHeartbeatTimeout is how long a purge may go without a heartbeat (one per batch) before
// Temporal gives its attempt to another worker: what a killed worker costs the pass.
const retentionHeartbeatTimeout = 30 * time.Second

// RetentionPass is one retention pass (API.md §15, docs/OPERATIONS.md "Retention"), identified by
// its Temporal workflow id: it records the pass with its cutoffs (RetentionBegin), purges raw
// payloads, then closed alerts, then audit events, each in batches inside RetentionPurge
// attempts bounded in time (heartbeating every batch, so a killed worker's attempt moves to
// another worker within retentionHeartbeatTimeout and resumes where the last committed batch
// left off), and ends with RetentionFinish, which writes the pass's one `purged` audit event. The
// Schedule's overlap policy (SKIP) keeps passes one at a time.
func RetentionPass(ctx workflow.Context, _ RetentionPassInput) (activities.RetentionResult, error) {
	passID := workflow.GetInfo(ctx).WorkflowExecution.ID
	retry := &sdktemporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
		MaximumAttempts:    20,
	}
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         retry,
	})
	long := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: activities.RetentionPurgeBudget + 2*time.Minute,
		HeartbeatTimeout:    retentionHeartbeatTimeout,
		RetryPolicy:         retry,
	})
	var a *activities.Activities
	var info activities.RetentionPassInfo
	if err := workflow.ExecuteActivity(short, a.RetentionBegin, passID).Get(ctx, &info); err != nil {
		return activities.RetentionResult{}, fmt.Errorf("begin retention pass: %w", err)
	}
	for _, kind := range retention.Kinds() {
		for {
			var res activities.RetentionPurgeResult
			if err := workflow.ExecuteActivity(long, a.RetentionPurge,
				activities.RetentionPurgeInput{PassID: passID, Kind: kind}).Get(ctx, &res); err != nil {
				return activities.RetentionResult{}, fmt.Errorf("purge %s: %w", kind, err)
			}
			if res.Done {
				break
			}
		}
	}
	var out activities.RetentionResult
	if err := workflow.ExecuteActivity(short, a.RetentionFinish, passID).Get(ctx, &out); err != nil {
		return activities.RetentionResult{}, fmt.Errorf("finish retention pass: %w", err)
	}
	return out, nil
}
