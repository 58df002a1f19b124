package mcp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// AgentReader reads agent registrations and their delivery attempts.
type AgentReader interface {
	ListAgents(ctx context.Context, f store.AgentFilter) ([]store.Agent, int, error)
	GetAgent(ctx context.Context, id uuid.UUID) (store.Agent, error)
	ListAgentDeliveries(ctx context.Context, f store.AgentDeliveryFilter) ([]store.AgentDelivery, int, error)
}

// MetricsReader computes the dashboard summary (the store's, as GET /v1/metrics/summary).
type MetricsReader interface {
	MetricsSummary(ctx context.Context, w store.MetricsWindow, env store.Env) (store.MetricsSummary, error)
}

// registerMoreResources adds the agents and the metrics summary, when their readers are configured.
func (s *Server) registerMoreResources(srv *sdk.Server, who principalSource) {
	if s.cfg.Metrics != nil {
		s.addResource(srv, who, resource{uri: "vigil://metrics/summary", name: "metrics-summary", title: "Dashboard summary",
			scopes: []string{auth.ScopeAlertsRead},
			description: "The last 30 days at a glance, as GET /v1/metrics/summary: alerts (total, open by severity, mean times " +
				"to acknowledge and close, false-positive rate), workflow runs (success rate, time saved), pending approvals, providers.",
			read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
				w, _ := store.NewMetricsWindow(nil, nil, time.Now())
				m, err := s.cfg.Metrics.MetricsSummary(ctx, w, s.cfg.ProviderEnv)
				if err != nil {
					return nil, err
				}
				return single[metricsSummaryView]{Data: toMetricsSummaryView(m), Meta: map[string]any{}}, nil
			}})
	}
	if s.cfg.Agents == nil {
		return
	}
	agentsRead := []string{auth.ScopeAgentsRead}
	s.addResource(srv, who, resource{uri: "vigil://agents", name: "agents", title: "Registered agents", scopes: agentsRead,
		description: "The AI agents registered for signed webhook events (newest first, 50): endpoint, subscribed events, " +
			"filters, timeout and retries. Signing secrets and auth header values are never shown.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			rows, total, err := s.cfg.Agents.ListAgents(ctx, store.AgentFilter{Page: store.Page{Number: 1, Size: defaultPageSize}})
			if err != nil {
				return nil, err
			}
			return newList(rows, total, 1, defaultPageSize, toAgentView), nil
		}})
	s.addResource(srv, who, resource{uri: "vigil://agents/{uuid}", name: "agent", title: "One agent", scopes: agentsRead,
		description: "One registered agent (no secrets).",
		read:        byUUID("Agent", s.cfg.Agents.GetAgent, toAgentView)})
	s.addResource(srv, who, resource{uri: "vigil://agents/{uuid}/deliveries", name: "agent-deliveries", title: "An agent's deliveries",
		scopes: agentsRead, description: "The agent's 50 newest delivery attempts: event, alert, attempt, status, HTTP status, duration, error.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			id, err := uriUUID(p["uuid"])
			if err != nil {
				return nil, err
			}
			if _, err := s.cfg.Agents.GetAgent(ctx, id); err != nil {
				return nil, notFoundAs(err, "Agent")
			}
			rows, total, err := s.cfg.Agents.ListAgentDeliveries(ctx, store.AgentDeliveryFilter{Agent: id,
				Page: store.Page{Number: 1, Size: defaultPageSize}})
			if err != nil {
				return nil, err
			}
			return newList(rows, total, 1, defaultPageSize, toDeliveryView), nil
		}})
}

// agentView is a registration without its secrets.
// Its name and description, written by the registering key, are untrusted content (origin
// agent_registration).
type agentView struct {
	UUID                uuid.UUID       `json:"uuid"`
	EndpointURL         string          `json:"endpoint_url"`
	AuthHeaderName      *string         `json:"auth_header_name"`
	Events              []string        `json:"events"`
	TriggerOnSources    []string        `json:"trigger_on_sources"`
	TriggerOnSeverities []string        `json:"trigger_on_severities"`
	TriggerFilter       json.RawMessage `json:"trigger_filter"`
	TimeoutSeconds      int             `json:"timeout_seconds"`
	RetryCount          int             `json:"retry_count"`
	IsActive            bool            `json:"is_active"`
	CreatedAt           time.Time       `json:"created_at"`
	UpdatedAt           time.Time       `json:"updated_at"`
	UntrustedContent    *untrusted      `json:"untrusted_content"`
}

func toAgentView(a store.Agent) agentView {
	filter := a.TriggerFilter
	if len(filter) == 0 {
		filter = json.RawMessage("null")
	}
	return agentView{UUID: a.UUID, UntrustedContent: wrapUntrusted(originAgentRegistration, map[string]any{"name": a.Name, "description": a.Description}),
		EndpointURL: a.EndpointURL, AuthHeaderName: a.AuthHeaderName,
		Events: nonNil(a.Events), TriggerOnSources: nonNil(a.TriggerOnSources), TriggerOnSeverities: nonNil(a.TriggerOnSeverities),
		TriggerFilter: filter, TimeoutSeconds: a.TimeoutSeconds, RetryCount: a.RetryCount, IsActive: a.IsActive,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

type deliveryView struct {
	UUID       uuid.UUID  `json:"uuid"`
	DeliveryID uuid.UUID  `json:"delivery_id"`
	Event      string     `json:"event"`
	AlertUUID  *uuid.UUID `json:"alert_uuid"`
	Attempt    int        `json:"attempt"`
	Status     string     `json:"status"`
	StatusCode *int       `json:"status_code"`
	DurationMS int        `json:"duration_ms"`
	Error      *string    `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
}

func toDeliveryView(d store.AgentDelivery) deliveryView {
	return deliveryView{UUID: d.UUID, DeliveryID: d.DeliveryUUID, Event: d.Event, AlertUUID: d.AlertUUID, Attempt: d.Attempt,
		Status: d.Status, StatusCode: d.StatusCode, DurationMS: d.DurationMS, Error: d.Error, CreatedAt: d.CreatedAt.UTC()}
}

type metricsSummaryView struct {
	FromTime            time.Time      `json:"from_time"`
	ToTime              time.Time      `json:"to_time"`
	Alerts              map[string]any `json:"alerts"`
	Workflows           map[string]any `json:"workflows"`
	Approvals           map[string]any `json:"approvals"`
	EnrichmentProviders map[string]any `json:"enrichment_providers"`
}

func toMetricsSummaryView(m store.MetricsSummary) metricsSummaryView {
	return metricsSummaryView{FromTime: m.Window.From, ToTime: m.Window.To,
		Alerts: map[string]any{"total": m.Alerts, "open": m.Open, "open_by_severity": m.OpenBySeverity, "mtta_seconds": m.MTTASeconds,
			"mttc_seconds": m.MTTCSeconds, "false_positive_rate": m.FalsePositiveRate},
		Workflows:           map[string]any{"runs": m.Runs.Total, "success_rate": m.Runs.SuccessRate(), "time_saved_hours": m.Runs.TimeSavedHours()},
		Approvals:           map[string]any{"pending": m.ApprovalsPending},
		EnrichmentProviders: map[string]any{"total": m.Providers.Total, "active": m.Providers.Active, "configured": m.Providers.Configured}}
}
