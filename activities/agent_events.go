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
	GetAgentEvents(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]store.AgentEvent, error)
	SetAgentEventPayloads(ctx context.Context, payloads map[uuid.UUID]json.RawMessage) error
	SubscribedAgents(ctx context.Context, event string) ([]store.Agent, error)
	GetAgent(ctx context.Context, id uuid.UUID) (store.Agent, error)
}

// AgentEventPayloads builds the data of events and their targeting subjects (what the agents'
// filters are matched against), in the events' order (agents.Payloads).
type AgentEventPayloads interface {
	EventsData(ctx context.Context, es []agents.EventRef) ([]agents.EventData, error)
}

// AgentDeliverer makes one recorded delivery attempt (agents.Service).
type AgentDeliverer interface {
	Deliver(ctx context.Context, a store.Agent, d agents.Delivery) (agents.Outcome, error)
	// FollowsKey: whether the agent's registering key still lets it receive (pausing it when not).
	FollowsKey(ctx context.Context, a store.Agent) (bool, error)
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
	plans, err := a.PlanEventBatch(ctx, PlanEventBatchInput{EventUUIDs: []uuid.UUID{in.EventUUID}})
	if err != nil {
		return EventPlan{}, err
	}
	return plans[0], nil
}

// planEvent plans event e whose data is d (PlanEventDeliveries), and returns the payload to store
// with it (nil: nothing to tell). subscribed caches the agents subscribed to each event name for the
// plans of one batch.
func planEvent(ctx context.Context, deps *AgentEventDeps, e store.AgentEvent, d agents.EventData, subscribed map[string][]store.Agent) (EventPlan, json.RawMessage, error) {
	id := e.UUID
	plan := EventPlan{Event: e.Event}
	if !d.Found {
		return plan, nil, nil // the alert or case is gone: nothing to tell
	}
	alertBound := e.AlertUUID != nil || e.CaseUUID != nil // a case's data holds its alerts' facts
	raw, err := json.Marshal(d.Data)
	if err != nil {
		return EventPlan{}, nil, sdktemporal.NewNonRetryableApplicationError("encode payload", ErrTypeAgentNotDeliverable, err)
	}
	var receivers []store.Agent
	if e.TargetAgent != nil {
		ag, err := deps.Store.GetAgent(ctx, *e.TargetAgent)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return EventPlan{}, nil, fmt.Errorf("plan event %s: %w", id, err)
		}
		if err == nil && ag.IsActive && agents.Receives(ag, e.Event, alertBound) {
			receivers = append(receivers, ag)
		}
	} else {
		agentsOf, cached := subscribed[e.Event]
		if !cached {
			if agentsOf, err = deps.Store.SubscribedAgents(ctx, e.Event); err != nil {
				return EventPlan{}, nil, fmt.Errorf("plan event %s: %w", id, err)
			}
			subscribed[e.Event] = agentsOf
		}
		for _, ag := range agentsOf {
			if agents.Matches(ag, e.Event, d.Subject) && agents.Receives(ag, e.Event, alertBound) {
				receivers = append(receivers, ag)
			}
		}
	}
	for _, ag := range receivers {
		plan.Deliveries = append(plan.Deliveries, PlannedDelivery{DeliveryUUID: DeliveryID(e.UUID, ag.UUID),
			AgentUUID: ag.UUID, TimeoutSeconds: ag.TimeoutSeconds, RetryCount: ag.RetryCount})
	}
	return plan, raw, nil
}

// DeliverEventInput is one delivery attempt's input; Temporal's attempt number is the attempt.
type DeliverEventInput struct {
	EventUUID    uuid.UUID `json:"event_uuid"`
	DeliveryUUID uuid.UUID `json:"delivery_uuid"`
	AgentUUID    uuid.UUID `json:"agent_uuid"`
	MaxAttempts  int       `json:"max_attempts"`
	// AttemptOffset is added to Temporal's attempt number: 1 when the first attempt was made by
	// DeliverAgentEvents (a batch), so the retries are recorded as attempts 2, 3, …; 0 before.
	AttemptOffset int `json:"attempt_offset,omitempty"`
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
	events, err := deps.Store.GetAgentEvents(ctx, []uuid.UUID{in.EventUUID})
	if err != nil {
		return false, fmt.Errorf("deliver %s: %w", in.DeliveryUUID, err)
	}
	attempt := int(activity.GetInfo(ctx).Attempt) + in.AttemptOffset
	res, err := a.attempt(ctx, ag, events, in.EventUUID, in.DeliveryUUID, attempt, in.MaxAttempts)
	if err != nil || res.State != AttemptRetry {
		return res.State == AttemptDelivered, err
	}
	return false, sdktemporal.NewApplicationError(res.Error, errTypeAgentAttemptFailed)
}

// Outcomes of one delivery attempt (AttemptResult.State).
const (
	AttemptDelivered = "delivered"
	AttemptGaveUp    = "gave_up" // 410, the last attempt failed, or nothing to deliver any more
	AttemptRetry     = "retry"   // failed; later attempts follow
)

// AttemptResult is what one attempt of one delivery came to.
type AttemptResult struct {
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// attempt makes attempt number attempt (of maxAttempts) of delivery id of event to agent ag and
// records it; events holds the event as the caller read it (absent: gone, nothing to deliver). An
// error is not the agent's answer: the attempt could not be recorded (retryable) or the delivery
// cannot be made at all (non-retryable, ErrTypeAgentNotDeliverable).
func (a *Activities) attempt(ctx context.Context, ag store.Agent, events map[uuid.UUID]store.AgentEvent, event, id uuid.UUID, attempt, maxAttempts int) (AttemptResult, error) {
	deps := a.AgentEvents
	gaveUp := AttemptResult{State: AttemptGaveUp}
	e, ok := events[event]
	if !ok {
		return gaveUp, nil // the event is gone
	}
	if !agents.Receives(ag, e.Event, e.AlertUUID != nil || e.CaseUUID != nil) {
		return gaveUp, nil // its endpoint moved to a key that cannot read this since it was planned
	}
	// Its registering key revoked, expired or reduced since it was planned: paused, nothing sent.
	if ok, err := deps.Deliverer.FollowsKey(ctx, ag); err != nil {
		return AttemptResult{}, fmt.Errorf("check the registering key of agent %s: %w", ag.UUID, err)
	} else if !ok {
		return gaveUp, nil
	}
	data, err := agents.VisibleData(ag, e.Payload)
	if err != nil {
		return AttemptResult{}, sdktemporal.NewNonRetryableApplicationError("filter payload", ErrTypeAgentNotDeliverable, err)
	}
	body, err := agents.Payload(id, e.Event, e.CreatedAt, data)
	if err != nil {
		return AttemptResult{}, sdktemporal.NewNonRetryableApplicationError("encode payload", ErrTypeAgentNotDeliverable, err)
	}
	out, err := deps.Deliverer.Deliver(ctx, ag, agents.Delivery{ID: id, Event: e.Event, AlertUUID: e.AlertUUID,
		Attempt: attempt, Last: attempt >= maxAttempts, Body: body})
	switch {
	case errors.Is(err, agents.ErrNotDeliverable):
		return AttemptResult{}, sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeAgentNotDeliverable, err)
	case err != nil:
		return AttemptResult{}, fmt.Errorf("deliver %s attempt %d: %w", id, attempt, err)
	case out.Delivered:
		if a.Freshness != nil {
			a.Freshness.AgentEventDelivered(time.Since(e.CreatedAt))
		}
		return AttemptResult{State: AttemptDelivered}, nil
	case out.GiveUp:
		return gaveUp, nil
	}
	return AttemptResult{State: AttemptRetry, Error: out.Error}, nil
}

// PlanEventBatchInput names the events of one DeliverEvents batch, in the order they were raised.
type PlanEventBatchInput struct {
	EventUUIDs []uuid.UUID `json:"event_uuids"`
}

// PlanEventBatch plans every event of a batch as PlanEventDeliveries plans one (the plans in the
// events' order; an event gone, or one whose payload cannot be encoded, has no deliveries), reading
// the events in one statement, their alerts' data in a few (agents.Payloads.EventsData), the
// subscribed agents once per event name, and storing the payloads in one.
func (a *Activities) PlanEventBatch(ctx context.Context, in PlanEventBatchInput) ([]EventPlan, error) {
	deps := a.AgentEvents
	if deps == nil {
		return nil, errAgentEventsNotConfigured
	}
	events, err := deps.Store.GetAgentEvents(ctx, in.EventUUIDs)
	if err != nil {
		return nil, fmt.Errorf("plan %d events: %w", len(in.EventUUIDs), err)
	}
	var found []store.AgentEvent
	var refs []agents.EventRef
	for _, id := range in.EventUUIDs {
		if e, ok := events[id]; ok { // gone: no deliveries
			found = append(found, e)
			refs = append(refs, agents.EventRef{Alert: e.AlertUUID, Case: e.CaseUUID, Facts: e.Facts})
		}
	}
	data, err := deps.Payloads.EventsData(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("plan %d events: build payloads: %w", len(in.EventUUIDs), err)
	}
	subscribed := map[string][]store.Agent{}
	planned := make(map[uuid.UUID]EventPlan, len(found))
	payloads := make(map[uuid.UUID]json.RawMessage, len(found))
	for i, e := range found {
		plan, payload, err := planEvent(ctx, deps, e, data[i], subscribed)
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			continue // this event cannot be delivered at all: not the others
		}
		if err != nil {
			return nil, err
		}
		planned[e.UUID] = plan
		if payload != nil {
			payloads[e.UUID] = payload
		}
	}
	if err := deps.Store.SetAgentEventPayloads(ctx, payloads); err != nil {
		return nil, fmt.Errorf("plan %d events: %w", len(in.EventUUIDs), err)
	}
	plans := make([]EventPlan, len(in.EventUUIDs))
	for i, id := range in.EventUUIDs {
		plans[i] = planned[id]
	}
	return plans, nil
}

// BatchDelivery is one delivery of a DeliverAgentEvents batch.
type BatchDelivery struct {
	EventUUID    uuid.UUID `json:"event_uuid"`
	DeliveryUUID uuid.UUID `json:"delivery_uuid"`
}

// DeliverAgentEventsInput is one agent's share of a DeliverEvents batch: its deliveries in the
// events' order, and its retry_count + 1 as planned.
type DeliverAgentEventsInput struct {
	AgentUUID   uuid.UUID       `json:"agent_uuid"`
	Deliveries  []BatchDelivery `json:"deliveries"`
	MaxAttempts int             `json:"max_attempts"`
}

// DeliverAgentEvents makes the first attempt of each of one agent's deliveries, one after the other
// in the events' order (each signed, under its own delivery id, recorded as attempt 1), and reports
// each outcome in the same order; the workflow retries those that failed with DeliverAgentEvent. It
// heartbeats the outcomes so far, so a retry of the activity (its worker died) resumes after them. A
// deleted agent, or one that can no longer receive an event, gets nothing.
func (a *Activities) DeliverAgentEvents(ctx context.Context, in DeliverAgentEventsInput) ([]AttemptResult, error) {
	deps := a.AgentEvents
	if deps == nil {
		return nil, errAgentEventsNotConfigured
	}
	var done []AttemptResult
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &done); err != nil || len(done) > len(in.Deliveries) {
			done = nil // unreadable progress: attempt them all again (the same delivery ids)
		}
	}
	ag, err := deps.Store.GetAgent(ctx, in.AgentUUID)
	if errors.Is(err, store.ErrNotFound) {
		for range in.Deliveries[len(done):] {
			done = append(done, AttemptResult{State: AttemptGaveUp})
		}
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deliver to agent %s: %w", in.AgentUUID, err)
	}
	ids := make([]uuid.UUID, 0, len(in.Deliveries)-len(done))
	for _, d := range in.Deliveries[len(done):] {
		ids = append(ids, d.EventUUID)
	}
	events, err := deps.Store.GetAgentEvents(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("deliver to agent %s: %w", in.AgentUUID, err)
	}
	for _, d := range in.Deliveries[len(done):] {
		res, err := a.attempt(ctx, ag, events, d.EventUUID, d.DeliveryUUID, 1, in.MaxAttempts)
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			res, err = AttemptResult{State: AttemptGaveUp, Error: err.Error()}, nil
		}
		if err != nil {
			return nil, err
		}
		done = append(done, res)
		activity.RecordHeartbeat(ctx, done)
	}
	return done, nil
}
