package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Agent is an AI agent registered with a webhook (API.md §9). AuthHeaderValue and SigningSecret are
// secretbox-sealed; the API never returns either after creation.
type Agent struct {
	bun.BaseModel `bun:"table:agents"`

	UUID                uuid.UUID       `bun:"uuid,pk,type:uuid"`
	Name                string          `bun:"name"`
	Description         *string         `bun:"description"`
	EndpointURL         string          `bun:"endpoint_url"`
	AuthHeaderName      *string         `bun:"auth_header_name"`
	AuthHeaderValue     []byte          `bun:"auth_header_value"`
	SigningSecret       []byte          `bun:"signing_secret"`
	Events              []string        `bun:"events,array"`
	TriggerOnSources    []string        `bun:"trigger_on_sources,array"`
	TriggerOnSeverities []string        `bun:"trigger_on_severities,array"`
	TriggerFilter       json.RawMessage `bun:"trigger_filter,type:jsonb,nullzero"`
	TimeoutSeconds      int             `bun:"timeout_seconds"`
	RetryCount          int             `bun:"retry_count"`
	IsActive            bool            `bun:"is_active"`
	Documentation       *string         `bun:"documentation"`
	CreatedBy           *string         `bun:"created_by"`
	// RegisteredScopes are the scopes of the key that registered the agent (or last moved its
	// endpoint): what it may receive. nil: registered without a key, unrestricted.
	RegisteredScopes []string `bun:"registered_scopes,array"`
	// RegisteredKeyUUID is the key that registered the agent (or last moved its endpoint): the agent
	// is paused when that key is revoked, expires or loses what its events need. nil: registered
	// before keys were followed, or without a key.
	RegisteredKeyUUID *uuid.UUID `bun:"registered_key_uuid,type:uuid"`
	CreatedAt         time.Time  `bun:"created_at"`
	UpdatedAt         time.Time  `bun:"updated_at"`
}

// AgentFilter selects agents for the list route.
type AgentFilter struct {
	IsActive *bool
	Event    string // subscribed to this event
	Page     Page
}

// CreateAgent inserts a, filling uuid and timestamps. A name already taken (case-insensitively) is
// ErrConflict.
func (s *Store) CreateAgent(ctx context.Context, a *Agent) error {
	now := s.Now()
	if a.UUID == uuid.Nil {
		a.UUID = uuid.New()
	}
	a.CreatedAt, a.UpdatedAt = now, now
	if _, err := s.db.NewInsert().Model(a).Exec(ctx); err != nil {
		return fmt.Errorf("create agent %q: %w", a.Name, mapErr(err))
	}
	return nil
}

// GetAgent loads one agent by uuid.
func (s *Store) GetAgent(ctx context.Context, id uuid.UUID) (Agent, error) {
	var a Agent
	if err := s.db.NewSelect().Model(&a).Where("uuid = ?", id).Scan(ctx); err != nil {
		return Agent{}, fmt.Errorf("get agent %s: %w", id, mapErr(err))
	}
	return a, nil
}

// ListAgents pages through agents, newest first.
func (s *Store) ListAgents(ctx context.Context, f AgentFilter) ([]Agent, int, error) {
	var out []Agent
	q := s.db.NewSelect().Model(&out).OrderExpr("created_at DESC, uuid DESC")
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	if f.Event != "" {
		q = q.Where("? = ANY(events)", f.Event)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list agents: %w", mapErr(err))
	}
	return out, int(total), nil
}

// UpdateAgent writes the given columns of a (and updated_at).
func (s *Store) UpdateAgent(ctx context.Context, a *Agent, columns ...string) error {
	a.UpdatedAt = s.Now()
	columns = append(columns, "updated_at")
	res, err := s.db.NewUpdate().Model(a).Column(columns...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update agent %s: %w", a.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update agent %s: %w", a.UUID, ErrNotFound)
	}
	return nil
}

// DeleteAgent removes an agent and its delivery records.
func (s *Store) DeleteAgent(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Agent)(nil)).Where("uuid = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete agent %s: %w", id, ErrNotFound)
	}
	return nil
}

// Delivery attempt outcomes.
const (
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"  // this attempt failed; another may follow
	DeliveryGaveUp    = "gave_up" // the agent answered 410, or the last attempt failed
)

// DeliveryStatuses returns every delivery attempt outcome.
func DeliveryStatuses() []string { return []string{DeliveryDelivered, DeliveryFailed, DeliveryGaveUp} }

// AgentDelivery is one attempt to deliver an event to an agent.
type AgentDelivery struct {
	bun.BaseModel `bun:"table:agent_deliveries"`

	UUID         uuid.UUID  `bun:"uuid,pk,type:uuid"`
	DeliveryUUID uuid.UUID  `bun:"delivery_uuid,type:uuid"`
	AgentUUID    uuid.UUID  `bun:"agent_uuid,type:uuid"`
	Event        string     `bun:"event"`
	AlertUUID    *uuid.UUID `bun:"alert_uuid,type:uuid"`
	Attempt      int        `bun:"attempt"`
	Status       string     `bun:"status"`
	StatusCode   *int       `bun:"status_code"`
	DurationMS   int        `bun:"duration_ms"`
	Error        *string    `bun:"error"`
	CreatedAt    time.Time  `bun:"created_at"`
}

// AgentDeliveryFilter selects an agent's delivery attempts.
type AgentDeliveryFilter struct {
	Agent  uuid.UUID
	Event  []string
	Status []string
	Page   Page
}

// RecordAgentDelivery inserts one attempt, filling uuid and created_at.
func (s *Store) RecordAgentDelivery(ctx context.Context, d *AgentDelivery) error {
	if d.UUID == uuid.Nil {
		d.UUID = uuid.New()
	}
	d.CreatedAt = s.Now()
	if _, err := s.db.NewInsert().Model(d).Exec(ctx); err != nil {
		return fmt.Errorf("record delivery %s attempt %d: %w", d.DeliveryUUID, d.Attempt, mapErr(err))
	}
	return nil
}

// ListAgentDeliveries pages through an agent's attempts, newest first.
func (s *Store) ListAgentDeliveries(ctx context.Context, f AgentDeliveryFilter) ([]AgentDelivery, int, error) {
	var out []AgentDelivery
	q := s.db.NewSelect().Model(&out).Where("agent_uuid = ?", f.Agent).OrderExpr("created_at DESC, uuid DESC")
	if len(f.Event) > 0 {
		q = q.Where("event IN (?)", bun.List(f.Event))
	}
	if len(f.Status) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Status))
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list deliveries of agent %s: %w", f.Agent, mapErr(err))
	}
	return out, int(total), nil
}

// AgentsRegisteredBy lists the active agents registered by key id.
func (s *Store) AgentsRegisteredBy(ctx context.Context, id uuid.UUID) ([]Agent, error) {
	var out []Agent
	if err := s.db.NewSelect().Model(&out).Where("registered_key_uuid = ?", id).Where("is_active").OrderExpr("created_at, uuid").Scan(ctx); err != nil {
		return nil, fmt.Errorf("agents registered by key %s: %w", id, mapErr(err))
	}
	return out, nil
}
