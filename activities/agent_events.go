package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// ErrTypeAgentNotDeliverable marks a delivery that cannot be attempted (the agent's secret cannot be
// opened): retrying does not help.
const ErrTypeAgentNotDeliverable = "AgentNotDeliverable"

var errAgentEventsNotConfigured = sdktemporal.NewNonRetryableApplicationError(
	"agent events are not configured on this worker", "AgentEventsNotConfigured", nil)

// errTypeAgentAttemptFailed marks a failed attempt that Temporal retries under the agent's policy.
const errTypeAgentAttemptFailed = "AgentAttemptFailed"

// AgentEventStore is what the agent-event activities read and write.
type AgentEventStore interface {
	GetAgentEvent(ctx context.Context, id uuid.UUID) (store.AgentEvent, error)
	SetAgentEventPayload(ctx context.Context, id uuid.UUID, payload json.RawMessage) error
	SubscribedAgents(ctx context.Context, event string) ([]store.Agent, error)
	GetAgent(ctx context.Context, id uuid.UUID) (store.Agent, error)
}

// AgentEventPayloads builds the data of an alert event and the alert's targeting subject (what the
// agents' filters are matched against). found is false when the alert is gone.
type AgentEventPayloads interface {
	AlertEventData(ctx context.Context, alert uuid.UUID, facts json.RawMessage) (data any, subject targeting.Subject, found bool, err error)
	// CaseEventData builds the data of a case event (alert set for case.alert_added).
	CaseEventData(ctx context.Context, id uuid.UUID, alert *uuid.UUID, facts json.RawMessage) (data any, subject targeting.Subject, found bool, err error)
}

// AgentDeliverer makes one recorded delivery attempt (agents.Service).
type AgentDeliverer interface {
	Deliver(ctx context.Context, a store.Agent, d agents.Delivery) (agents.Outcome, error)
}

// AgentEventDeps are the agent-event activities' dependencies.
type AgentEventDeps struct {
	Store     AgentEventStore
	Payloads  AgentEventPayloads
	Deliverer AgentDeliverer
}

// PlanEventInput names the event to plan.
type PlanEventInput struct {
	EventUUID uuid.UUID `json:"event_uuid"`
}

// PlannedDelivery is one agent's delivery of an event, with the agent's policy as it stood when the
// delivery was planned.
type PlannedDelivery struct {
	DeliveryUUID   uuid.UUID `json:"delivery_uuid"`
	AgentUUID      uuid.UUID `json:"agent_uuid"`
	TimeoutSeconds int       `json:"timeout_seconds"`
	RetryCount     int       `json:"retry_count"`
}

// EventPlan is every delivery of one event.
type EventPlan struct {
	Event      string            `json:"event"`
	Deliveries []PlannedDelivery `json:"deliveries"`
}

// DeliveryID is the id of agent's delivery of event: derived from both, so planning the same event
// again (a retried plan, a re-claimed outbox row) gives the same X-Vigil-Delivery, and a receiver that
// de-duplicates on it sees each delivery once.
func DeliveryID(event, agent uuid.UUID) uuid.UUID { return uuid.NewSHA1(event, agent[:]) }

// PlanEventDeliveries decides who receives an event: the matching agents (agents.Matches), or the
// one target of a dispatch-agent event with its filters bypassed, in both cases only agents whose
// registering key could read the event (agents.Receives). It stores the payload data once.
func (a *Activities) PlanEventDeliveries(ctx context.Context, in PlanEventInput) (EventPlan, error) {
	deps := a.AgentEvents
	if deps == nil {
		return EventPlan{}, errAgentEventsNotConfigured
	}
	e, err := deps.Store.GetAgentEvent(ctx, in.EventUUID)
	if errors.Is(err, store.ErrNotFound) {
		return EventPlan{}, nil
	}
	if err != nil {
		return EventPlan{}, fmt.Errorf("plan event %s: %w", in.EventUUID, err)
	}
	plan := EventPlan{Event: e.Event}
	data, subject := any(e.Facts), targeting.Subject{}
	if (e.AlertUUID != nil || e.CaseUUID != nil) && deps.Payloads != nil {
		var found bool
		if e.CaseUUID != nil {
			data, subject, found, err = deps.Payloads.CaseEventData(ctx, *e.CaseUUID, e.AlertUUID, e.Facts)
		} else {
			data, subject, found, err = deps.Payloads.AlertEventData(ctx, *e.AlertUUID, e.Facts)
		}
		if err != nil {
			return EventPlan{}, fmt.Errorf("plan event %s: build payload: %w", in.EventUUID, err)
		}
		if !found {
			return plan, nil // the alert or case is gone: nothing to tell
		}
	}
	alertBound := e.AlertUUID != nil || e.CaseUUID != nil // a case's data holds its alerts' facts
	raw, err := json.Marshal(data)
	if err != nil {
		return EventPlan{}, sdktemporal.NewNonRetryableApplicationError("encode payload", ErrTypeAgentNotDeliverable, err)
	}
	if err := deps.Store.SetAgentEventPayload(ctx, e.UUID, raw); err != nil {
		return EventPlan{}, fmt.Errorf("plan event %s: %w", in.EventUUID, err)
	}
	var receivers []store.Agent
	if e.TargetAgent != nil {
		ag, err := deps.Store.GetAgent(ctx, *e.TargetAgent)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return EventPlan{}, fmt.Errorf("plan event %s: %w", in.EventUUID, err)
		}
		if err == nil && ag.IsActive && agents.Receives(ag, e.Event, alertBound) {
			receivers = append(receivers, ag)
		}
	} else {
		subscribed, err := deps.Store.SubscribedAgents(ctx, e.Event)
		if err != nil {
			return EventPlan{}, fmt.Errorf("plan event %s: %w", in.EventUUID, err)
		}
		for _, ag := range subscribed {
			if agents.Matches(ag, e.Event, subject) && agents.Receives(ag, e.Event, alertBound) {
				receivers = append(receivers, ag)
			}
		}
	}
	for _, ag := range receivers {
		plan.Deliveries = append(plan.Deliveries, PlannedDelivery{DeliveryUUID: DeliveryID(e.UUID, ag.UUID),
			AgentUUID: ag.UUID, TimeoutSeconds: ag.TimeoutSeconds, RetryCount: ag.RetryCount})
	}
	return plan, nil
}

// DeliverEventInput is one delivery attempt's input; Temporal's attempt number is the attempt.
type DeliverEventInput struct {
	EventUUID    uuid.UUID `json:"event_uuid"`
	DeliveryUUID uuid.UUID `json:"delivery_uuid"`
	AgentUUID    uuid.UUID `json:"agent_uuid"`
	MaxAttempts  int       `json:"max_attempts"`
}

// DeliverAgentEvent makes one attempt of a planned delivery, records it, and reports whether it was
// delivered. A failed attempt that may be retried returns an error (Temporal retries it under the
// agent's policy); 410 and the last failed attempt return false. A deleted agent is not delivered to,
// nor one that may no longer receive the event; the data is what the agent's registering key could
// read (agents.VisibleData).
func (a *Activities) DeliverAgentEvent(ctx context.Context, in DeliverEventInput) (bool, error) {
	deps := a.AgentEvents
	if deps == nil {
		return false, errAgentEventsNotConfigured
	}
	ag, err := deps.Store.GetAgent(ctx, in.AgentUUID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deliver %s: %w", in.DeliveryUUID, err)
	}
	e, err := deps.Store.GetAgentEvent(ctx, in.EventUUID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deliver %s: %w", in.DeliveryUUID, err)
	}
	if !agents.Receives(ag, e.Event, e.AlertUUID != nil || e.CaseUUID != nil) {
		return false, nil // its endpoint moved to a key that cannot read this since it was planned
	}
	data, err := agents.VisibleData(ag, e.Payload)
	if err != nil {
		return false, sdktemporal.NewNonRetryableApplicationError("filter payload", ErrTypeAgentNotDeliverable, err)
	}
	body, err := agents.Payload(in.DeliveryUUID, e.Event, e.CreatedAt, data)
	if err != nil {
		return false, sdktemporal.NewNonRetryableApplicationError("encode payload", ErrTypeAgentNotDeliverable, err)
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	out, err := deps.Deliverer.Deliver(ctx, ag, agents.Delivery{ID: in.DeliveryUUID, Event: e.Event, AlertUUID: e.AlertUUID,
		Attempt: attempt, Last: attempt >= in.MaxAttempts, Body: body})
	switch {
	case errors.Is(err, agents.ErrNotDeliverable):
		return false, sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeAgentNotDeliverable, err)
	case err != nil:
		return false, fmt.Errorf("deliver %s attempt %d: %w", in.DeliveryUUID, attempt, err)
	case out.Delivered || out.GiveUp:
		if out.Delivered && a.Freshness != nil {
			a.Freshness.AgentEventDelivered(time.Since(e.CreatedAt))
		}
		return out.Delivered, nil
	}
	return false, sdktemporal.NewApplicationError(out.Error, errTypeAgentAttemptFailed)
}
