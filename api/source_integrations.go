package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// SourceIntegrationStore is what the source-integration routes and ingestion need.
type SourceIntegrationStore interface {
	GetSourceIntegration(ctx context.Context, id uuid.UUID) (store.SourceIntegration, error)
	ListSourceIntegrations(ctx context.Context, f store.SourceIntegrationFilter) ([]store.SourceIntegration, int, error)
}

func (s *Server) sourceIntegrationRoutes() {
	admin := []string{auth.ScopeAdmin}
	const tag = "Source integrations"
	s.add(route{Method: http.MethodGet, Path: "/v1/source-integrations", Tag: tag, Summary: "List source integrations",
		Description: "Newest first. `auth_config` is write-only: responses say only whether a secret is configured.",
		Scopes:      admin, Query: listSourceIntegrationsQuery{}, Response: sourceIntegrationResponse{}, List: true}, s.listSourceIntegrations)
	s.add(route{Method: http.MethodPost, Path: "/v1/source-integrations", Tag: tag, Summary: "Configure a source",
		Description: "One integration per source (409 `INTEGRATION_EXISTS` for a second). The secret in `auth_config` is sealed with AES-256-GCM and never returned.",
		Scopes:      admin, Body: createSourceIntegrationRequest{}, Response: sourceIntegrationResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusConflict}}, s.createSourceIntegration)
	s.add(route{Method: http.MethodGet, Path: "/v1/source-integrations/:uuid", Tag: tag, Summary: "Get a source integration",
		Scopes: admin, Response: sourceIntegrationResponse{}}, s.getSourceIntegration)
	s.add(route{Method: http.MethodPatch, Path: "/v1/source-integrations/:uuid", Tag: tag, Summary: "Update a source integration",
		Description: "An explicit null for `auth_config` removes the secret (signatures are then not checked); null elsewhere leaves the field unchanged.",
		Scopes:      admin, Body: updateSourceIntegrationRequest{}, Response: sourceIntegrationResponse{}}, s.updateSourceIntegration)
	s.add(route{Method: http.MethodDelete, Path: "/v1/source-integrations/:uuid", Tag: tag, Summary: "Delete a source integration",
		Description: "The source then ingests with no signature check and default severities.", Scopes: admin, Status: http.StatusNoContent}, s.deleteSourceIntegration)
}

type sourceIntegrationResponse struct {
	UUID            uuid.UUID         `json:"uuid"`
	SourceName      string            `json:"source_name"`
	DisplayName     string            `json:"display_name"`
	IsActive        bool              `json:"is_active"`
	AuthType        string            `json:"auth_type" enum:"$source_auth_type"`
	AuthConfigured  bool              `json:"auth_configured" doc:"Whether a secret is set (the secret itself is never returned)."`
	SeverityMapping map[string]string `json:"severity_mapping" doc:"Source severity value → AlertSeverity; wins over the plugin's default mapping."`
	Documentation   *string           `json:"documentation"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
}

func toSourceIntegrationResponse(si store.SourceIntegration) sourceIntegrationResponse {
	m := si.SeverityMapping
	if m == nil {
		m = map[string]string{}
	}
	return sourceIntegrationResponse{UUID: si.UUID, SourceName: si.SourceName, DisplayName: si.DisplayName, IsActive: si.IsActive,
		AuthType: si.AuthType, AuthConfigured: len(si.AuthConfig) > 0, SeverityMapping: m, Documentation: si.Documentation,
		CreatedAt: si.CreatedAt.UTC(), UpdatedAt: si.UpdatedAt.UTC()}
}

type listSourceIntegrationsQuery struct {
	PageQuery
	SourceName string `query:"source_name" maxLength:"100"`
	IsActive   *bool  `query:"is_active"`
}

func (s *Server) listSourceIntegrations(c *fiber.Ctx) error {
	var q listSourceIntegrationsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.Integrations.ListSourceIntegrations(c.UserContext(),
		store.SourceIntegrationFilter{SourceName: q.SourceName, IsActive: q.IsActive, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(rows, toSourceIntegrationResponse)
	return respondList(c, out, total, q.PageQuery)
}

type authConfigRequest struct {
	Secret string `json:"secret" required:"true" minLength:"1" maxLength:"1024" doc:"HMAC key (hmac_sha256) or the token itself (shared_token)."`
}

type createSourceIntegrationRequest struct {
	SourceName      string             `json:"source_name" required:"true" minLength:"1" maxLength:"100" doc:"A source of GET /v1/sources."`
	DisplayName     *string            `json:"display_name" minLength:"1" maxLength:"200" doc:"Default: the plugin's display name."`
	IsActive        *bool              `json:"is_active" doc:"Default true. An inactive source's ingestion answers 403 SOURCE_DISABLED."`
	AuthType        *string            `json:"auth_type" enum:"$source_auth_type" doc:"Default: the plugin's default auth type."`
	AuthConfig      *authConfigRequest `json:"auth_config" doc:"Write-only secret."`
	SeverityMapping map[string]string  `json:"severity_mapping"`
	Documentation   *string            `json:"documentation" maxLength:"100000"`
}

// Validate checks the severity mapping (the source name is checked against the registry by the handler).
func (r createSourceIntegrationRequest) Validate() validate.Errors {
	return config.CheckSeverityMapping(r.SeverityMapping)
}

func (s *Server) createSourceIntegration(c *fiber.Ctx) error {
	var req createSourceIntegrationRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	f := config.IntegrationFields{SourceName: req.SourceName, DisplayName: req.DisplayName, IsActive: req.IsActive,
		AuthType: req.AuthType, SeverityMapping: req.SeverityMapping, Documentation: req.Documentation}
	if req.AuthConfig != nil {
		f.Secret = &req.AuthConfig.Secret
	}
	si, err := s.config.Integrations.Create(c.UserContext(), s.actor(c), f)
	if err != nil {
		return inBody(err)
	}
	return respond(c, http.StatusCreated, toSourceIntegrationResponse(si))
}

func (s *Server) sourceNames() []string { return config.SourceNames(s.deps.SourceRegistry) }

func (s *Server) getSourceIntegration(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	si, err := s.deps.Integrations.GetSourceIntegration(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Source integration")
	}
	return respond(c, http.StatusOK, toSourceIntegrationResponse(si))
}

type updateSourceIntegrationRequest struct {
	DisplayName     *string                     `json:"display_name" minLength:"1" maxLength:"200"`
	IsActive        *bool                       `json:"is_active"`
	AuthType        *string                     `json:"auth_type" enum:"$source_auth_type"`
	AuthConfig      Optional[authConfigRequest] `json:"auth_config" doc:"An explicit null removes the secret."`
	SeverityMapping map[string]string           `json:"severity_mapping" doc:"Replaces the whole mapping."`
	Documentation   Optional[string]            `json:"documentation" maxLength:"100000" doc:"An explicit null clears it."`
}

// Validate checks the severity mapping.
func (r updateSourceIntegrationRequest) Validate() validate.Errors {
	return config.CheckSeverityMapping(r.SeverityMapping)
}

func (s *Server) updateSourceIntegration(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateSourceIntegrationRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	secret := optional.Value[string]{Set: req.AuthConfig.Set, Null: req.AuthConfig.Null, Value: req.AuthConfig.Value.Secret}
	si, err := s.config.Integrations.Update(c.UserContext(), s.actor(c), id, config.IntegrationPatch{DisplayName: req.DisplayName,
		IsActive: req.IsActive, AuthType: req.AuthType, Secret: secret, SeverityMapping: req.SeverityMapping,
		Documentation: req.Documentation.kit()})
	if err != nil {
		return notFoundAs(inBody(err), "Source integration")
	}
	return respond(c, http.StatusOK, toSourceIntegrationResponse(si))
}

func (s *Server) deleteSourceIntegration(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.config.Integrations.Delete(c.UserContext(), s.actor(c), id); err != nil {
		return notFoundAs(err, "Source integration")
	}
	return c.SendStatus(http.StatusNoContent)
}
