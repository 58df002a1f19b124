package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// AgentService is what the agent routes call (agents.Service); the rules live there.
type AgentService interface {
	Create(ctx context.Context, actor agents.Actor, spec agents.Spec) (store.Agent, string, error)
	Update(ctx context.Context, actor agents.Actor, id uuid.UUID, spec agents.Spec) (store.Agent, string, error)
	Delete(ctx context.Context, actor agents.Actor, id uuid.UUID) error
	RotateSecret(ctx context.Context, actor agents.Actor, id uuid.UUID) (store.Agent, string, error)
	Test(ctx context.Context, id uuid.UUID) (agents.Outcome, error)
	Trigger(ctx context.Context, actor agents.Actor, alert uuid.UUID) (agents.Queued, error)
	Dispatch(ctx context.Context, actor agents.Actor, alert, agent uuid.UUID) (agents.Queued, error)
}

// AgentStore is what the agent routes read.
type AgentStore interface {
	GetAgent(ctx context.Context, id uuid.UUID) (store.Agent, error)
	ListAgents(ctx context.Context, f store.AgentFilter) ([]store.Agent, int, error)
	ListAgentDeliveries(ctx context.Context, f store.AgentDeliveryFilter) ([]store.AgentDelivery, int, error)
}

func (s *Server) agentRoutes() {
	read, write := []string{auth.ScopeAgentsRead}, []string{auth.ScopeAgentsWrite}
	const tag = "Agents"
	s.add(route{Method: http.MethodGet, Path: "/v1/agents", Tag: tag, Summary: "List agents",
		Description: "Newest first. Signing secrets and auth header values are never returned.",
		Scopes:      read, Query: listAgentsQuery{}, Response: agentResponse{}, List: true}, s.listAgents)
	s.add(route{Method: http.MethodPost, Path: "/v1/agents", Tag: tag, Summary: "Register an agent",
		Description: "The endpoint URL passes the SSRF guard (and is checked again at every delivery, at dial time). " +
			"The response carries `signing_secret` once: keep it to verify `X-Vigil-Signature` (docs/WEBHOOKS.md). " +
			"A name already registered (case-insensitively) → 409 `AGENT_EXISTS`.",
		Scopes: write, Body: agentRequest{}, Response: agentWithSecretResponse{}, Status: http.StatusCreated,
		Errors: []int{http.StatusConflict}}, s.createAgent)
	s.add(route{Method: http.MethodGet, Path: "/v1/agents/:uuid", Tag: tag, Summary: "Get an agent",
		Scopes: read, Response: agentResponse{}}, s.getAgent)
	s.add(route{Method: http.MethodPatch, Path: "/v1/agents/:uuid", Tag: tag, Summary: "Update an agent",
		Description: "A null or absent field is left unchanged. `auth_header_name` and `auth_header_value` go together; both \"\" remove the header. " +
			"An `endpoint_url` on another origin (scheme, host, port) drops the auth header unless the same request sets one, and rotates the signing secret: the new one is in the response (`signing_secret`, shown once).",
		Scopes: write, Body: agentRequest{}, Response: agentUpdateResponse{}, Errors: []int{http.StatusConflict}}, s.updateAgent)
	s.add(route{Method: http.MethodDelete, Path: "/v1/agents/:uuid", Tag: tag, Summary: "Delete an agent",
		Description: "Removes the agent and its delivery records.", Scopes: write, Status: http.StatusNoContent}, s.deleteAgent)
	s.add(route{Method: http.MethodPost, Path: "/v1/agents/:uuid/rotate-secret", Tag: tag, Summary: "Rotate the signing secret",
		Description: "The new secret is shown once; the old one stops verifying at once.",
		Scopes:      write, Response: agentWithSecretResponse{}}, s.rotateAgentSecret)
	s.add(route{Method: http.MethodPost, Path: "/v1/agents/:uuid/test", Tag: tag, Summary: "Send a test delivery",
		Description: "Delivers a signed `agent.test` event now, one attempt, recorded in the agent's deliveries. " +
			"HTTP 200 either way: the result says whether it was delivered.",
		Scopes: write, Response: agents.Outcome{}}, s.testAgent)
	s.add(route{Method: http.MethodGet, Path: "/v1/agents/:uuid/deliveries", Tag: tag, Summary: "List delivery attempts",
		Description: "Every attempt, newest first. Attempts of one delivery share `delivery_id` (the `X-Vigil-Delivery` header).",
		Scopes:      read, Query: listDeliveriesQuery{}, Response: deliveryResponse{}, List: true}, s.listAgentDeliveries)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/trigger-agents", Tag: tag, Summary: "Hand an alert to every matching agent",
		Description: "Queues an `alert.enriched` event (with a `trigger` fact) for every active agent subscribed to `alert.enriched` " +
			"whose sources, severities and trigger_filter match the alert and whose registering key could read alerts; delivered like any event (docs/WEBHOOKS.md). " +
			"The names are the agents matching now; none matching is a 202 with 0.",
		Scopes: write, Response: queuedAgentsResponse{}, Status: http.StatusAccepted}, s.triggerAgents)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/dispatch-agent", Tag: tag, Summary: "Hand an alert to one agent",
		Description: "Queues an `alert.enriched` event for the agent `agent_uuid` alone, its subscriptions and filters bypassed. " +
			"An inactive agent → 422 `AGENT_INACTIVE`; an unknown alert or agent → 404; an agent registered by a key without `alerts:read` → 403.",
		Scopes: write, Query: dispatchAgentQuery{}, Response: queuedAgentsResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusUnprocessableEntity, http.StatusForbidden}}, s.dispatchAgent)
}

type queuedAgentsResponse struct {
	QueuedAgentCount int      `json:"queued_agent_count"`
	AgentNames       []string `json:"agent_names"`
}

func toQueued(q agents.Queued) queuedAgentsResponse {
	return queuedAgentsResponse{QueuedAgentCount: len(q.AgentNames), AgentNames: q.AgentNames}
}

func (s *Server) triggerAgents(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	q, err := s.deps.Agents.Trigger(c.UserContext(), s.agentActor(c), id)
	if err != nil {
		return notFoundAs(err, "Alert")
	}
	return respond(c, http.StatusAccepted, toQueued(q))
}

type dispatchAgentQuery struct {
	AgentUUID uuid.UUID `query:"agent_uuid" required:"true" doc:"The agent to hand the alert to."`
}

func (s *Server) dispatchAgent(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q dispatchAgentQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	out, err := s.deps.Agents.Dispatch(c.UserContext(), s.agentActor(c), id, q.AgentUUID)
	var cr *agents.CannotReceiveError
	switch {
	case errors.As(err, &cr):
		e := cannotReceive(cr)
		e.Details["agent_uuid"] = q.AgentUUID
		return e
	case errors.Is(err, agents.ErrAgentNotFound):
		return notFoundAs(err, "Agent")
	case err != nil:
		return notFoundAs(err, "Alert")
	}
	return respond(c, http.StatusAccepted, toQueued(out))
}

type agentRequest struct {
	Name                *string         `json:"name" minLength:"1" maxLength:"200" doc:"Required on create; unique, case-insensitively."`
	Description         *string         `json:"description" maxLength:"10000"`
	EndpointURL         *string         `json:"endpoint_url" minLength:"1" maxLength:"2048" doc:"Required on create. http or https; SSRF-checked."`
	AuthHeaderName      *string         `json:"auth_header_name" maxLength:"100" doc:"A header sent with every delivery, e.g. Authorization. With auth_header_value: both or neither."`
	AuthHeaderValue     *string         `json:"auth_header_value" maxLength:"4096" doc:"Write-only; sealed at rest."`
	Events              *[]string       `json:"events" maxItems:"10" enum:"$agent_event" doc:"Default [\"alert.enriched\"]."`
	TriggerOnSources    *[]string       `json:"trigger_on_sources" maxItems:"100" doc:"Empty: every source."`
	TriggerOnSeverities *[]string       `json:"trigger_on_severities" maxItems:"6" enum:"$severity" doc:"Empty: every severity."`
	TriggerFilter       json.RawMessage `json:"trigger_filter" doc:"Targeting rules ({match_any, match_all}) the alert must match; {} removes the filter."`
	TimeoutSeconds      *int            `json:"timeout_seconds" minimum:"1" maximum:"300" doc:"Per attempt; default 30."`
	RetryCount          *int            `json:"retry_count" minimum:"0" maximum:"10" doc:"Attempts after the first; default 3."`
	IsActive            *bool           `json:"is_active" doc:"Default true."`
	Documentation       *string         `json:"documentation" maxLength:"100000"`
}

func (r agentRequest) spec() agents.Spec {
	if string(r.TriggerFilter) == "null" { // null = unchanged, like every field; {} removes the filter
		r.TriggerFilter = nil
	}
	return agents.Spec{Name: r.Name, Description: r.Description, EndpointURL: r.EndpointURL,
		AuthHeaderName: r.AuthHeaderName, AuthHeaderValue: r.AuthHeaderValue, Events: deref(r.Events),
		TriggerOnSources: deref(r.TriggerOnSources), TriggerOnSeverities: deref(r.TriggerOnSeverities), TriggerFilter: r.TriggerFilter,
		TimeoutSeconds: r.TimeoutSeconds, RetryCount: r.RetryCount, IsActive: r.IsActive, Documentation: r.Documentation}
}

type agentResponse struct {
	UUID                uuid.UUID       `json:"uuid"`
	Name                string          `json:"name"`
	Description         *string         `json:"description"`
	EndpointURL         string          `json:"endpoint_url"`
	AuthHeaderName      *string         `json:"auth_header_name"`
	AuthHeaderSet       bool            `json:"auth_header_configured" doc:"Whether an auth header value is set (the value is never returned)."`
	Events              []string        `json:"events"`
	TriggerOnSources    []string        `json:"trigger_on_sources"`
	TriggerOnSeverities []string        `json:"trigger_on_severities"`
	TriggerFilter       json.RawMessage `json:"trigger_filter"`
	TimeoutSeconds      int             `json:"timeout_seconds"`
	RetryCount          int             `json:"retry_count"`
	IsActive            bool            `json:"is_active"`
	Documentation       *string         `json:"documentation"`
	CreatedBy           *string         `json:"created_by" doc:"Key prefix of the key that registered it."`
	RegisteredScopes    []string        `json:"registered_scopes" doc:"Scopes of the key that registered it (or last moved its endpoint to another origin): it receives only what they read. null: registered by Vigil itself."`
	CreatedAt           time.Time       `json:"created_at"`
	UpdatedAt           time.Time       `json:"updated_at"`
}

type agentWithSecretResponse struct {
	agentResponse
	SigningSecret string `json:"signing_secret" doc:"Shown once. HMAC-SHA256 key of X-Vigil-Signature."`
}

// agentUpdateResponse is the PATCH answer: signing_secret only when endpoint_url moved to another
// origin, which rotates it (shown once).
type agentUpdateResponse struct {
	agentResponse
	SigningSecret *string `json:"signing_secret,omitempty" doc:"Only when endpoint_url moved to another origin: the new signing secret (the old one stops verifying), shown once."`
}

func toAgentResponse(a store.Agent) agentResponse {
	filter := a.TriggerFilter
	if len(filter) == 0 {
		filter = json.RawMessage("null")
	}
	return agentResponse{UUID: a.UUID, Name: a.Name, Description: a.Description, EndpointURL: a.EndpointURL,
		AuthHeaderName: a.AuthHeaderName, AuthHeaderSet: len(a.AuthHeaderValue) > 0, Events: nonNil(a.Events),
		TriggerOnSources: nonNil(a.TriggerOnSources), TriggerOnSeverities: nonNil(a.TriggerOnSeverities),
		TriggerFilter: filter, TimeoutSeconds: a.TimeoutSeconds, RetryCount: a.RetryCount, IsActive: a.IsActive,
		Documentation: a.Documentation, CreatedBy: a.CreatedBy, RegisteredScopes: a.RegisteredScopes, CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

// cannotReceive is the 403 of an agent whose registering key lacks cr.Scope: handed an alert
// (dispatch-agent) or subscribed to cr.Event (registration, a PATCH of events).
func cannotReceive(cr *agents.CannotReceiveError) *Error {
	details := map[string]any{"required_scopes": []string{cr.Scope}, "missing_scopes": []string{cr.Scope}}
	if cr.Event != "" {
		details["event"] = cr.Event
		return NewError(http.StatusForbidden, "FORBIDDEN", "The API key lacks "+cr.Scope+", which reading "+cr.Event+
			" events needs: an agent receives only what the key registering it can read.").WithDetails(details)
	}
	return NewError(http.StatusForbidden, "FORBIDDEN", "The agent was registered by a key without "+cr.Scope+
		": it is not handed what needs it.").WithDetails(details)
}

// agentError maps the agent service's errors: validation → 422 with body locations, a subscription
// the key cannot read → 403, a taken name → 409, unknown agent → 404.
func agentError(err error) error {
	var verrs validate.Errors
	var cr *agents.CannotReceiveError
	switch {
	case errors.As(err, &verrs):
		var out validate.Errors
		out.Merge([]any{"body"}, verrs)
		return out
	case errors.As(err, &cr):
		return cannotReceive(cr)
	case errors.Is(err, store.ErrConflict):
		return NewError(http.StatusConflict, "AGENT_EXISTS", "An agent with this name is already registered.")
	}
	return notFoundAs(err, "Agent")
}

type listAgentsQuery struct {
	PageQuery
	IsActive *bool  `query:"is_active"`
	Event    string `query:"event" enum:"$agent_event" doc:"Agents subscribed to this event."`
}

func (s *Server) listAgents(c *fiber.Ctx) error {
	var q listAgentsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.AgentStore.ListAgents(c.UserContext(),
		store.AgentFilter{IsActive: q.IsActive, Event: q.Event, Page: q.storePage()})
	if err != nil {
		return err
	}
	return respondList(c, mapSlice(rows, toAgentResponse), total, q.PageQuery)
}

func (s *Server) createAgent(c *fiber.Ctx) error {
	var req agentRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	a, secret, err := s.deps.Agents.Create(c.UserContext(), s.agentActor(c), req.spec())
	if err != nil {
		return agentError(err)
	}
	return respond(c, http.StatusCreated, agentWithSecretResponse{toAgentResponse(a), secret})
}

func (s *Server) getAgent(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	a, err := s.deps.AgentStore.GetAgent(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Agent")
	}
	return respond(c, http.StatusOK, toAgentResponse(a))
}

func (s *Server) updateAgent(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req agentRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	a, secret, err := s.deps.Agents.Update(c.UserContext(), s.agentActor(c), id, req.spec())
	if err != nil {
		return agentError(err)
	}
	out := agentUpdateResponse{agentResponse: toAgentResponse(a)}
	if secret != "" {
		out.SigningSecret = &secret
	}
	return respond(c, http.StatusOK, out)
}

func (s *Server) deleteAgent(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.deps.Agents.Delete(c.UserContext(), s.agentActor(c), id); err != nil {
		return agentError(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Server) rotateAgentSecret(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	a, secret, err := s.deps.Agents.RotateSecret(c.UserContext(), s.agentActor(c), id)
	if err != nil {
		return agentError(err)
	}
	return respond(c, http.StatusOK, agentWithSecretResponse{toAgentResponse(a), secret})
}

func (s *Server) testAgent(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	out, err := s.deps.Agents.Test(c.UserContext(), id)
	if err != nil {
		return agentError(err)
	}
	return respond(c, http.StatusOK, out)
}

type listDeliveriesQuery struct {
	PageQuery
	Event  []string `query:"event" enum:"$delivery_event" doc:"Comma-separated; any of."`
	Status []string `query:"status" enum:"$delivery_status" doc:"Comma-separated; any of."`
}

type deliveryResponse struct {
	UUID       uuid.UUID  `json:"uuid" doc:"This attempt."`
	DeliveryID uuid.UUID  `json:"delivery_id" doc:"The delivery (X-Vigil-Delivery); the same for each attempt of it."`
	AgentUUID  uuid.UUID  `json:"agent_uuid"`
	Event      string     `json:"event"`
	AlertUUID  *uuid.UUID `json:"alert_uuid"`
	Attempt    int        `json:"attempt"`
	Status     string     `json:"status" enum:"$delivery_status"`
	StatusCode *int       `json:"status_code" doc:"null when no HTTP answer came (refused, timed out)."`
	DurationMS int        `json:"duration_ms"`
	Error      *string    `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
}

func toDeliveryResponse(d store.AgentDelivery) deliveryResponse {
	return deliveryResponse{UUID: d.UUID, DeliveryID: d.DeliveryUUID, AgentUUID: d.AgentUUID, Event: d.Event,
		AlertUUID: d.AlertUUID, Attempt: d.Attempt, Status: d.Status, StatusCode: d.StatusCode,
		DurationMS: d.DurationMS, Error: d.Error, CreatedAt: d.CreatedAt.UTC()}
}

func (s *Server) listAgentDeliveries(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q listDeliveriesQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := s.deps.AgentStore.GetAgent(ctx, id); err != nil {
		return notFoundAs(err, "Agent")
	}
	rows, total, err := s.deps.AgentStore.ListAgentDeliveries(ctx,
		store.AgentDeliveryFilter{Agent: id, Event: q.Event, Status: q.Status, Page: q.storePage()})
	if err != nil {
		return err
	}
	return respondList(c, mapSlice(rows, toDeliveryResponse), total, q.PageQuery)
}

func deref(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}
