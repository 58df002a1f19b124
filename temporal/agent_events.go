package temporal

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/temporal/searchattr"
	"github.com/vigil-soc/vigil/workflows"
)

// registerAgentEvents registers DeliverEvent and its activities (actions queue).
func registerAgentEvents(r Registrar, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.DeliverEvent, workflow.RegisterOptions{})
	r.RegisterWorkflowWithOptions(workflows.DeliverEvents, workflow.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PlanEventBatch, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.DeliverAgentEvents, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.PlanEventDeliveries, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.DeliverAgentEvent, activity.RegisterOptions{})
}

// EventStarter starts the delivery of committed agent events.
type EventStarter struct {
	client client.Client
	queues Queues
}

// NewEventStarter returns a starter using c and the actions queue of queues.
func NewEventStarter(c client.Client, queues Queues) *EventStarter {
	return &EventStarter{client: c, queues: queues}
}

// StartAgentEvent starts DeliverEvent for event (id event-<uuid>), idempotently: an event already
// started (running or finished) is not started again. An alert's events carry its uuid as the
// VigilAlertUUID search attribute, so operators find an alert's deliveries in the Temporal UI.
func (s *EventStarter) StartAgentEvent(ctx context.Context, event uuid.UUID, alert *uuid.UUID) error {
	opts := client.StartWorkflowOptions{
		ID:                                       ids.AgentEvent(event),
		TaskQueue:                                s.queues.Actions,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
	if alert != nil {
		opts.TypedSearchAttributes = sdktemporal.NewSearchAttributes(searchattr.AlertUUID.ValueSet(alert.String()))
	}
	_, err := s.client.ExecuteWorkflow(ctx, opts, workflows.DeliverEvent, workflows.DeliverEventInput{EventUUID: event})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s: %w", ids.AgentEvent(event), err)
	}
	return nil
}

// StartAgentEvents starts DeliverEvents for events (id ids.AgentEventBatch: derived from every event of the batch), idempotently: a
// batch already started is not started again. It is how the outbox dispatcher delivers the agent
// events of one claim: one workflow for them all instead of one per event. The workflow task comes
// back with the start when this process runs a worker on the actions queue (eager start).
func (s *EventStarter) StartAgentEvents(ctx context.Context, events []uuid.UUID) error {
	if len(events) == 0 {
		return nil
	}
	id := ids.AgentEventBatch(events)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                s.queues.Actions,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		EnableEagerStart:                         true,
	}
	_, err := s.client.ExecuteWorkflow(ctx, opts, workflows.DeliverEvents, workflows.DeliverEventsInput{EventUUIDs: events})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s: %w", id, err)
	}
	return nil
}
