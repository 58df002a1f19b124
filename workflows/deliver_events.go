package workflows

import (
	"time"

	"github.com/google/uuid"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
)

// DeliverEventsInput starts DeliverEvents (workflow id events-<uuid of the batch>, actions queue):
// the agent events one outbox claim found, in the order they were raised.
type DeliverEventsInput struct {
	EventUUIDs []uuid.UUID `json:"event_uuids"`
}

// batchAttempts bounds the retries of one agent's batch activity when it fails as a whole (its
// worker died, the database was unreachable); each retry resumes after the deliveries it heartbeated.
// Past them every delivery of the batch not yet made runs on its own, as DeliverEvent runs it.
const batchAttempts = 3

// agentBatch is one agent's deliveries of a batch, in the events' order.
type agentBatch struct {
	agent      uuid.UUID
	timeout    int
	retryCount int
	deliveries []activities.BatchDelivery
}

// DeliverEvents hands a batch of events to the agents that receive them, at the cost of one
// workflow for the batch instead of one per event (docs/WEBHOOKS.md "Delivery on Temporal"): it plans
// every event once (one local activity), then runs one DeliverAgentEvents activity per agent, all
// agents at once, each making the first attempt of that agent's deliveries one after the other in
// the events' order. A delivery whose first attempt failed is retried on its own, exactly as
// DeliverEvent retries one (the agent's timeout_seconds and retry_count, backoff 2 s, 4 s, 8 s …), so
// it arrives after the batch's later events; its delivery id stays the one derived from the event
// and the agent.
func DeliverEvents(ctx workflow.Context, in DeliverEventsInput) (DeliverEventResult, error) {
	var a *activities.Activities
	var plans []activities.EventPlan
	// A batch's plan reads up to 64 events and their alerts: more room than one event's bookkeeping.
	planOpts := bookkeeping
	planOpts.StartToCloseTimeout = time.Minute
	lctx := workflow.WithLocalActivityOptions(ctx, planOpts)
	if err := workflow.ExecuteLocalActivity(lctx, a.PlanEventBatch, activities.PlanEventBatchInput{EventUUIDs: in.EventUUIDs}).Get(lctx, &plans); err != nil {
		return DeliverEventResult{}, err
	}
	var batches []*agentBatch
	byAgent := map[uuid.UUID]*agentBatch{}
	for i, p := range plans {
		for _, d := range p.Deliveries {
			b := byAgent[d.AgentUUID]
			if b == nil {
				b = &agentBatch{agent: d.AgentUUID, timeout: d.TimeoutSeconds, retryCount: d.RetryCount}
				byAgent[d.AgentUUID] = b
				batches = append(batches, b)
			}
			b.deliveries = append(b.deliveries, activities.BatchDelivery{EventUUID: in.EventUUIDs[i], DeliveryUUID: d.DeliveryUUID})
		}
	}
	var res DeliverEventResult
	wg := workflow.NewWaitGroup(ctx)
	for _, b := range batches {
		res.Deliveries += len(b.deliveries)
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			res.Failed += deliverAgentBatch(ctx, b)
		})
	}
	wg.Wait(ctx)
	return res, nil
}

// deliverAgentBatch delivers one agent's share of a batch and returns how many of its deliveries
// failed for good.
func deliverAgentBatch(ctx workflow.Context, b *agentBatch) int {
	var a *activities.Activities
	perAttempt := time.Duration(b.timeout) * time.Second
	bctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(len(b.deliveries))*(perAttempt+time.Second) + deliveryGrace,
		HeartbeatTimeout:    perAttempt + deliveryGrace,
		RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: retryInitial, BackoffCoefficient: 2,
			MaximumInterval: retryMax, MaximumAttempts: batchAttempts},
	})
	var first []activities.AttemptResult
	err := workflow.ExecuteActivity(bctx, a.DeliverAgentEvents, activities.DeliverAgentEventsInput{AgentUUID: b.agent,
		Deliveries: b.deliveries, MaxAttempts: b.retryCount + 1}).Get(ctx, &first)
	if err != nil {
		workflow.GetLogger(ctx).Warn("batch delivery failed; delivering one by one", "agent_uuid", b.agent.String(), "error", err)
		first = nil
	}
	failed := 0
	wg := workflow.NewWaitGroup(ctx)
	for i, d := range b.deliveries {
		offset, attempts := 0, b.retryCount+1
		if i < len(first) {
			switch first[i].State {
			case activities.AttemptDelivered:
				continue
			case activities.AttemptRetry:
				if b.retryCount < 1 {
					failed++ // no retry allowed (the batch recorded its attempt as the last)
					continue
				}
				offset, attempts = 1, b.retryCount
			default:
				failed++
				continue
			}
		}
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			initial := retryInitial
			if offset > 0 {
				// The first attempt was the batch's: wait as DeliverEvent's first retry does, then
				// double from there.
				if err := workflow.Sleep(ctx, retryInitial); err != nil {
					failed++
					return
				}
				initial = 2 * retryInitial
			}
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: perAttempt + deliveryGrace,
				RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: initial, BackoffCoefficient: 2,
					MaximumInterval: retryMax, MaximumAttempts: int32(attempts),
					NonRetryableErrorTypes: []string{activities.ErrTypeAgentNotDeliverable}},
			})
			var delivered bool
			if err := workflow.ExecuteActivity(actx, a.DeliverAgentEvent, activities.DeliverEventInput{EventUUID: d.EventUUID,
				DeliveryUUID: d.DeliveryUUID, AgentUUID: b.agent, MaxAttempts: b.retryCount + 1, AttemptOffset: offset}).Get(ctx, &delivered); err != nil {
				workflow.GetLogger(ctx).Warn("delivery failed", "error", err)
			}
			if !delivered {
				failed++
			}
		})
	}
	wg.Wait(ctx)
	return failed
}
