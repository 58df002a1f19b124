package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// AgentEvent is an event raised for agents (API.md §9): committed with the change that raised it,
// delivered by the DeliverEvent workflow.
type AgentEvent struct {
	bun.BaseModel `bun:"table:agent_events"`

	UUID        uuid.UUID       `bun:"uuid,pk,type:uuid"`
	Event       string          `bun:"event"`
	AlertUUID   *uuid.UUID      `bun:"alert_uuid,type:uuid"`
	TargetAgent *uuid.UUID      `bun:"target_agent,type:uuid"`
	Facts       json.RawMessage `bun:"facts,type:jsonb"`
	Payload     json.RawMessage `bun:"payload,type:jsonb,nullzero"`
	CreatedAt   time.Time       `bun:"created_at"`
}

// RecordAgentEvent inserts e through db (the transaction of the change that raises it, or the
// store's handle when nil), filling uuid, facts and created_at.
func (s *Store) RecordAgentEvent(ctx context.Context, db bun.IDB, e *AgentEvent) error {
	if db == nil {
		db = s.db
	}
	if e.UUID == uuid.Nil {
		e.UUID = uuid.New()
	}
	if len(e.Facts) == 0 {
		e.Facts = json.RawMessage(`{}`)
	}
	e.CreatedAt = s.Now()
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("record agent event %s: %w", e.Event, mapErr(err))
	}
	return nil
}

// GetAgentEvent loads one event.
func (s *Store) GetAgentEvent(ctx context.Context, id uuid.UUID) (AgentEvent, error) {
	var e AgentEvent
	if err := s.db.NewSelect().Model(&e).Where("uuid = ?", id).Scan(ctx); err != nil {
		return AgentEvent{}, fmt.Errorf("get agent event %s: %w", id, mapErr(err))
	}
	return e, nil
}

// SetAgentEventPayload stores the payload data of event id unless one is stored already: the first
// planner wins, so a retried plan delivers the same data as the first.
func (s *Store) SetAgentEventPayload(ctx context.Context, id uuid.UUID, payload json.RawMessage) error {
	_, err := s.db.NewRaw(`UPDATE agent_events SET payload = coalesce(payload, ?::jsonb) WHERE uuid = ?`, string(payload), id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set payload of agent event %s: %w", id, mapErr(err))
	}
	return nil
}

// SubscribedAgents lists the active agents subscribed to event, oldest first (their sources,
// severities and filters are matched by the caller, the agents package).
func (s *Store) SubscribedAgents(ctx context.Context, event string) ([]Agent, error) {
	var out []Agent
	err := s.db.NewSelect().Model(&out).Where("is_active").Where("events @> ARRAY[?]::text[]", event).
		OrderExpr("created_at, uuid").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("agents subscribed to %s: %w", event, mapErr(err))
	}
	return out, nil
}
