package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/workflows"
)

// eventsEnv runs DeliverEvents with plans for events: agent uuids per event, every agent with
// retryCount retries.
type eventsEnv struct {
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	batches []activities.DeliverAgentEventsInput
	singles []activities.DeliverEventInput
}

func newEventsEnv(t *testing.T, events []uuid.UUID, receivers [][]uuid.UUID, retryCount map[uuid.UUID]int) *eventsEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	e := &eventsEnv{env: s.NewTestWorkflowEnvironment()}
	var a *activities.Activities
	e.env.RegisterWorkflow(workflows.DeliverEvents)
	e.env.RegisterActivity(a.PlanEventBatch)
	e.env.RegisterActivity(a.DeliverAgentEvents)
	e.env.RegisterActivity(a.DeliverAgentEvent)
	e.env.OnActivity(a.PlanEventBatch, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PlanEventBatchInput) ([]activities.EventPlan, error) {
		require.Equal(t, events, in.EventUUIDs)
		plans := make([]activities.EventPlan, len(events))
		for i, ev := range events {
			for _, ag := range receivers[i] {
				plans[i].Deliveries = append(plans[i].Deliveries, activities.PlannedDelivery{DeliveryUUID: activities.DeliveryID(ev, ag),
					AgentUUID: ag, TimeoutSeconds: 5, RetryCount: retryCount[ag]})
			}
		}
		return plans, nil
	})
	return e
}

func (e *eventsEnv) run(t *testing.T, events []uuid.UUID) workflows.DeliverEventResult {
	t.Helper()
	e.env.ExecuteWorkflow(workflows.DeliverEvents, workflows.DeliverEventsInput{EventUUIDs: events})
	require.True(t, e.env.IsWorkflowCompleted())
	require.NoError(t, e.env.GetWorkflowError())
	var res workflows.DeliverEventResult
	require.NoError(t, e.env.GetWorkflowResult(&res))
	return res
}

// Deliveries are grouped per agent in the events' order, one batch activity per agent; a failed
// first attempt is retried on its own as attempts 2.. (offset 1, retry_count attempts left); an agent
// with retry_count 0 whose first attempt failed is not retried; an event nobody receives costs nothing.
func TestDeliverEvents_GroupsPerAgentInOrderAndRetriesFailedFirstAttempts(t *testing.T) {
	ev := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	a1, a2 := uuid.New(), uuid.New()
	e := newEventsEnv(t, ev, [][]uuid.UUID{{a1, a2}, {}, {a2, a1}}, map[uuid.UUID]int{a1: 3, a2: 0})
	var a *activities.Activities
	e.env.OnActivity(a.DeliverAgentEvents, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DeliverAgentEventsInput) ([]activities.AttemptResult, error) {
		e.mu.Lock()
		e.batches = append(e.batches, in)
		e.mu.Unlock()
		// The first delivery of each agent fails its first attempt, the second one is delivered.
		return []activities.AttemptResult{{State: activities.AttemptRetry, Error: "HTTP 500"}, {State: activities.AttemptDelivered}}, nil
	})
	e.env.OnActivity(a.DeliverAgentEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DeliverEventInput) (bool, error) {
		e.mu.Lock()
		e.singles = append(e.singles, in)
		e.mu.Unlock()
		return true, nil
	})
	res := e.run(t, ev)
	require.Equal(t, workflows.DeliverEventResult{Deliveries: 4, Failed: 1}, res, "a2's failed first attempt was its last")

	require.Len(t, e.batches, 2)
	byAgent := map[uuid.UUID]activities.DeliverAgentEventsInput{}
	for _, b := range e.batches {
		byAgent[b.AgentUUID] = b
	}
	require.Equal(t, []activities.BatchDelivery{{EventUUID: ev[0], DeliveryUUID: activities.DeliveryID(ev[0], a1)},
		{EventUUID: ev[2], DeliveryUUID: activities.DeliveryID(ev[2], a1)}}, byAgent[a1].Deliveries, "in the events' order")
	require.Equal(t, 4, byAgent[a1].MaxAttempts)
	require.Equal(t, 1, byAgent[a2].MaxAttempts)
	require.Equal(t, []activities.DeliverEventInput{{EventUUID: ev[0], DeliveryUUID: activities.DeliveryID(ev[0], a1), AgentUUID: a1,
		MaxAttempts: 4, AttemptOffset: 1}}, e.singles, "only a1's failed delivery is retried, numbered after the batch's attempt")
}

// A batch activity that fails for good (its retries spent) leaves its deliveries to the one-by-one
// path with their whole policy (offset 0), so none is lost.
func TestDeliverEvents_FailedBatchDeliversOneByOne(t *testing.T) {
	ev := []uuid.UUID{uuid.New(), uuid.New()}
	ag := uuid.New()
	e := newEventsEnv(t, ev, [][]uuid.UUID{{ag}, {ag}}, map[uuid.UUID]int{ag: 2})
	var a *activities.Activities
	calls := 0
	e.env.OnActivity(a.DeliverAgentEvents, mock.Anything, mock.Anything).Return(func(context.Context, activities.DeliverAgentEventsInput) ([]activities.AttemptResult, error) {
		calls++
		return nil, errors.New("database unreachable")
	})
	e.env.OnActivity(a.DeliverAgentEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DeliverEventInput) (bool, error) {
		e.mu.Lock()
		e.singles = append(e.singles, in)
		e.mu.Unlock()
		return in.EventUUID == ev[0], nil
	})
	res := e.run(t, ev)
	require.Equal(t, 3, calls, "the batch activity is retried before giving up")
	require.Equal(t, workflows.DeliverEventResult{Deliveries: 2, Failed: 1}, res)
	require.ElementsMatch(t, []activities.DeliverEventInput{
		{EventUUID: ev[0], DeliveryUUID: activities.DeliveryID(ev[0], ag), AgentUUID: ag, MaxAttempts: 3},
		{EventUUID: ev[1], DeliveryUUID: activities.DeliveryID(ev[1], ag), AgentUUID: ag, MaxAttempts: 3},
	}, e.singles)
}
