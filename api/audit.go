package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// AuditStore reads the audit trail.
type AuditStore interface {
	ListAuditEvents(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, int, error)
}

func (s *Server) auditRoutes() {
	s.add(route{Method: http.MethodGet, Path: "/v1/audit-events", Tag: "Audit trail", Summary: "List audit events",
		Description: "Every configuration change and console sign-in, newest first (API.md §15). Append-only: no " +
			"route changes or deletes an event. Secrets and credentials appear only as \"[redacted]\".",
		Scopes: []string{auth.ScopeAdmin}, Query: listAuditEventsQuery{}, Response: auditEventResponse{}, List: true}, s.listAuditEvents)
}

type auditActorResponse struct {
	Type      string  `json:"type" doc:"The front door: api, mcp, console, workflow or system."`
	KeyPrefix *string `json:"key_prefix" doc:"The acting API key's prefix; null when no key acted."`
	KeyName   *string `json:"key_name" doc:"The acting API key's name, as it was then."`
}

type auditChangeResponse struct {
	From any `json:"from"`
	To   any `json:"to"`
}

type auditEventResponse struct {
	UUID         uuid.UUID                      `json:"uuid"`
	Action       string                         `json:"action" enum:"$audit_action"`
	ResourceType string                         `json:"resource_type" enum:"$audit_resource_type"`
	ResourceUUID *uuid.UUID                     `json:"resource_uuid"`
	ResourceName string                         `json:"resource_name"`
	Actor        auditActorResponse             `json:"actor"`
	Changes      map[string]auditChangeResponse `json:"changes" doc:"Changed fields, {from, to}; secrets and credentials as \"[redacted]\"."`
	RequestID    *string                        `json:"request_id" doc:"The server's id of the request that made the change."`
	// ClientRequestID is the X-Request-ID the client sent: its own words, never taken as request_id.
	ClientRequestID *string   `json:"client_request_id" doc:"The X-Request-ID the client sent (its own words), or null."`
	ClientIP        *string   `json:"client_ip"`
	CreatedAt       time.Time `json:"created_at"`
}

func toAuditEventResponse(e store.AuditEvent) auditEventResponse {
	changes := make(map[string]auditChangeResponse, len(e.Changes))
	for k, v := range e.Changes {
		changes[k] = auditChangeResponse(v)
	}
	return auditEventResponse{UUID: e.UUID, Action: e.Action, ResourceType: e.ResourceType, ResourceUUID: e.ResourceUUID,
		ResourceName: e.ResourceName, Actor: auditActorResponse{Type: e.ActorType, KeyPrefix: e.ActorKeyPrefix, KeyName: e.ActorKeyName},
		Changes: changes, RequestID: e.RequestID, ClientRequestID: e.ClientRequestID, ClientIP: e.ClientIP, CreatedAt: e.CreatedAt.UTC()}
}

type listAuditEventsQuery struct {
	PageQuery
	ResourceType   []string   `query:"resource_type" enum:"$audit_resource_type" doc:"Comma-separated; any of."`
	Action         []string   `query:"action" enum:"$audit_action" doc:"Comma-separated; any of."`
	ActorKeyPrefix string     `query:"actor_key_prefix" maxLength:"64" pattern:"^[A-Za-z0-9_-]*$" doc:"Events by the key with this prefix."`
	FromTime       *time.Time `query:"from_time" doc:"created_at ≥ this (RFC 3339 with offset)."`
	ToTime         *time.Time `query:"to_time" doc:"created_at ≤ this (RFC 3339 with offset)."`
}

// Validate checks the time range.
func (q listAuditEventsQuery) Validate() validate.Errors {
	var errs validate.Errors
	if q.FromTime != nil && q.ToTime != nil && q.ToTime.Before(*q.FromTime) {
		errs.Add([]any{"to_time"}, validate.TypeValue, "to_time must not be before from_time.", q.ToTime.Format(time.RFC3339Nano))
	}
	return errs
}

func (s *Server) listAuditEvents(c *fiber.Ctx) error {
	var q listAuditEventsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	events, total, err := s.deps.Audit.ListAuditEvents(c.UserContext(), store.AuditFilter{ResourceTypes: q.ResourceType,
		Actions: q.Action, ActorKeyPrefix: q.ActorKeyPrefix, From: q.FromTime, To: q.ToTime, Page: q.storePage()})
	if err != nil {
		return err
	}
	return respondList(c, mapSlice(events, toAuditEventResponse), total, q.PageQuery)
}

// actor is who makes this request, as the activity and audit trails record it: the key, the
// request id and the client address by the doors' one proxy rule.
func (s *Server) actor(c *fiber.Ctx) store.Actor {
	a := principal(c).Actor(store.ActorAPI)
	a.RequestID, a.ClientRequestID, a.ClientIP = requestID(c), clientRequestID(c), s.clientIP(c)
	return a
}

// responsesActor is the actor of the response-workflow rules for this request.
func (s *Server) responsesActor(c *fiber.Ctx) responses.Actor {
	a := responses.ActorOf(principal(c), responses.ActorAPI)
	a.RequestID, a.ClientRequestID, a.ClientIP = requestID(c), clientRequestID(c), s.clientIP(c)
	return a
}

// agentActor is the actor of the agent rules for this request.
func (s *Server) agentActor(c *fiber.Ctx) agents.Actor {
	p := principal(c)
	return agents.Actor{Type: store.ActorAPI, KeyPrefix: p.KeyPrefix, KeyUUID: p.KeyUUID, Scopes: p.Scopes, KeyName: p.Name,
		RequestID: requestID(c), ClientRequestID: clientRequestID(c), ClientIP: s.clientIP(c)}
}
