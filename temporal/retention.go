package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/workflows"
)

// Retention schedule settings (docs/OPERATIONS.md "Retention").
const (
	// RetentionInterval is how often a retention pass starts.
	RetentionInterval = time.Hour
	// retentionCatchupWindow: after an outage of the Temporal server, one missed pass still starts;
	// older ones are dropped (the next pass does their work).
	retentionCatchupWindow = time.Hour
	// retentionPassTimeout ends a pass that could not finish (its work goes to the next one), so a
	// stuck pass never keeps the SKIP policy from starting new ones for long.
	retentionPassTimeout = 23 * time.Hour
)

// retentionSchedule is the schedule Vigil wants: hourly RetentionPass on the actions queue, one at a
// time (overlap SKIP: a pass still running when the next is due makes that one skip).
func retentionSchedule(prefix string) (client.ScheduleSpec, *client.ScheduleWorkflowAction, client.SchedulePolicies) {
	queues := NewQueues(prefix)
	if prefix == "" {
		prefix = DefaultTaskQueuePrefix
	}
	return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: RetentionInterval}}},
		&client.ScheduleWorkflowAction{
			ID:                       ids.RetentionSchedule(prefix),
			Workflow:                 workflows.RetentionPass,
			Args:                     []any{workflows.RetentionPassInput{}},
			TaskQueue:                queues.Actions,
			WorkflowExecutionTimeout: retentionPassTimeout,
		},
		client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: retentionCatchupWindow}
}

// EnsureRetentionSchedule creates the Schedule <prefix>-retention (vigil-retention by default), or,
// when it exists, brings its spec, action and overlap policy to what this version wants, leaving its
// paused state and notes as an operator set them. Safe when replicas start together: one creates it,
// the others find it and update it to the same content (an update refused because another replica
// updated it in between is retried).
func EnsureRetentionSchedule(ctx context.Context, c client.Client, prefix string) error {
	spec, action, policy := retentionSchedule(prefix)
	sc := c.ScheduleClient()
	_, err := sc.Create(ctx, client.ScheduleOptions{
		ID:            action.ID,
		Spec:          spec,
		Action:        action,
		Overlap:       policy.Overlap,
		CatchupWindow: policy.CatchupWindow,
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, sdktemporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", action.ID, err)
	}
	h := sc.GetHandle(ctx, action.ID)
	for attempt := 1; ; attempt++ {
		err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &spec
			s.Action = action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap, s.Policy.CatchupWindow = policy.Overlap, policy.CatchupWindow
			return &client.ScheduleUpdate{Schedule: &s}, nil
		}})
		if err == nil || attempt == 5 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", action.ID, err)
	}
	return nil
}
