package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// Dispatch refusals: the agent does not exist (wraps store.ErrNotFound, as an unknown alert does), or
// it is not active.
var (
	ErrAgentNotFound = fmt.Errorf("agent: %w", store.ErrNotFound)
	ErrAgentInactive = errors.New("agent is not active")
)

// Queued is what trigger-agents and dispatch-agent queued: the agents the event goes to.
type Queued struct {
	AgentNames []string `json:"agent_names"`
}

// Trigger hands the alert, as it stands, to every agent that matches it now (active, subscribed to
// alert.enriched, its sources, severities and trigger_filter, registered by a key that could read
// alerts): an alert.enriched event with a
// "trigger" fact, committed and delivered like any other (docs/WEBHOOKS.md). The names are those
// matching when the request is answered. store.ErrNotFound when the alert does not exist.
func (s *Service) Trigger(ctx context.Context, actor Actor, alert uuid.UUID) (Queued, error) {
	subject, err := s.store.AlertSubject(ctx, alert)
	if err != nil {
		return Queued{}, err
	}
	subscribed, err := s.store.SubscribedAgents(ctx, EventAlertEnriched)
	if err != nil {
		return Queued{}, err
	}
	q := Queued{AgentNames: []string{}}
	for _, a := range subscribed {
		if Matches(a, EventAlertEnriched, subject) && Receives(a, EventAlertEnriched, true) {
			q.AgentNames = append(q.AgentNames, a.Name)
		}
	}
	if len(q.AgentNames) == 0 {
		return q, nil
	}
	return q, s.raise(ctx, actor, alert, nil, "trigger-agents")
}

// Dispatch hands the alert to one agent, its subscriptions and filters bypassed: an alert.enriched
// event addressed to that agent alone. ErrAgentNotFound for an unknown agent, store.ErrNotFound for
// an unknown alert, ErrAgentInactive when the agent is not active, CannotReceiveError when the key
// that registered it could not read alerts.
func (s *Service) Dispatch(ctx context.Context, actor Actor, alert, agent uuid.UUID) (Queued, error) {
	a, err := s.store.GetAgent(ctx, agent)
	if errors.Is(err, store.ErrNotFound) {
		return Queued{}, ErrAgentNotFound
	}
	if err != nil {
		return Queued{}, err
	}
	if !a.IsActive {
		return Queued{}, ErrAgentInactive
	}
	if _, err := s.store.AlertSubject(ctx, alert); err != nil {
		return Queued{}, err
	}
	if need := MissingScope(a, EventAlertEnriched, true); need != "" {
		return Queued{}, &CannotReceiveError{Agent: a.Name, Scope: need}
	}
	return Queued{AgentNames: []string{a.Name}}, s.raise(ctx, actor, alert, &a.UUID, "dispatch-agent")
}

func (s *Service) raise(ctx context.Context, actor Actor, alert uuid.UUID, target *uuid.UUID, how string) error {
	facts, err := json.Marshal(map[string]any{"trigger": map[string]any{"type": how, "actor_type": actor.Type,
		"actor_key_prefix": actor.KeyPrefix}})
	if err != nil {
		return fmt.Errorf("encode %s facts: %w", how, err)
	}
	if _, err := s.store.RaiseAgentEvent(ctx, &store.AgentEvent{Event: EventAlertEnriched, AlertUUID: &alert,
		TargetAgent: target, Facts: facts}); err != nil {
		return fmt.Errorf("%s: %w", how, err)
	}
	return nil
}
