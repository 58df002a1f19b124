package workflows

import (
	"time"

	"github.com/google/uuid"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
)

// DeliverEventInput starts DeliverEvent (workflow id event-<EventUUID>, actions queue).
type DeliverEventInput struct {
	EventUUID uuid.UUID `json:"event_uuid"`
}

// DeliverEventResult counts what the deliveries came to.
type DeliverEventResult struct {
	Deliveries int `json:"deliveries"`
	Failed     int `json:"failed"` // gave up: 410, the last attempt failed, or not deliverable
}

// Delivery backoff: the first retry after retryInitial, each later one twice as long, at most
// retryMax apart.
const (
	retryInitial = 2 * time.Second
	retryMax     = 10 * time.Minute
	// deliveryGrace lets an attempt's own timeout (the agent's timeout_seconds) fire and be
	// recorded before Temporal's start-to-close backstop does.
	deliveryGrace = 5 * time.Second
)

// DeliverEvent hands one event to every agent that receives it: it plans the deliveries once (a
// local activity: which agents, which delivery ids), then runs one DeliverAgentEvent activity per
// agent, all at once, each under that agent's timeout and retry_count with exponential backoff. A
// slow or dead agent delays only its own delivery.
func DeliverEvent(ctx workflow.Context, in DeliverEventInput) (DeliverEventResult, error) {
	var a *activities.Activities
	var plan activities.EventPlan
	lctx := workflow.WithLocalActivityOptions(ctx, bookkeeping)
	if err := workflow.ExecuteLocalActivity(lctx, a.PlanEventDeliveries, activities.PlanEventInput{EventUUID: in.EventUUID}).Get(lctx, &plan); err != nil {
		return DeliverEventResult{}, err
	}
	futures := make([]workflow.Future, len(plan.Deliveries))
	for i, d := range plan.Deliveries {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Duration(d.TimeoutSeconds)*time.Second + deliveryGrace,
			RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: retryInitial, BackoffCoefficient: 2,
				MaximumInterval: retryMax, MaximumAttempts: int32(d.RetryCount + 1),
				NonRetryableErrorTypes: []string{activities.ErrTypeAgentNotDeliverable}},
		})
		futures[i] = workflow.ExecuteActivity(actx, a.DeliverAgentEvent, activities.DeliverEventInput{EventUUID: in.EventUUID,
			DeliveryUUID: d.DeliveryUUID, AgentUUID: d.AgentUUID, MaxAttempts: d.RetryCount + 1})
	}
	res := DeliverEventResult{Deliveries: len(futures)}
	for _, f := range futures {
		var delivered bool
		if err := f.Get(ctx, &delivered); err != nil {
			workflow.GetLogger(ctx).Warn("delivery failed", "error", err)
		}
		if !delivered {
			res.Failed++
		}
	}
	return res, nil
}
