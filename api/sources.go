package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// SourceStore is what the source routes need.
type SourceStore interface {
	ListSources(ctx context.Context, p store.Page) ([]store.Source, int, error)
	GetSource(ctx context.Context, id uuid.UUID) (store.Source, error)
}

func (s *Server) sourceRoutes() {
	read := []string{auth.ScopeAlertsRead}
	s.add(route{Method: http.MethodGet, Path: "/v1/sources", Tag: "Sources", Summary: "List alert sources",
		Description: "One record per source plugin the platform knows, ordered by name. Configure a source's secret, active flag and severity overrides with /v1/source-integrations.",
		Scopes:      read, Query: PageQuery{}, Response: sourceResponse{}, List: true}, s.listSources)
	s.add(route{Method: http.MethodGet, Path: "/v1/sources/:uuid", Tag: "Sources", Summary: "Get an alert source",
		Scopes: read, Response: sourceResponse{}}, s.getSource)
}

type sourceResponse struct {
	UUID          uuid.UUID `json:"uuid"`
	SourceName    string    `json:"source_name"`
	DisplayName   string    `json:"display_name"`
	IsActive      bool      `json:"is_active"`
	AuthType      string    `json:"auth_type" enum:"$source_auth_type" doc:"The plugin's default auth type; a source integration may choose another."`
	Documentation string    `json:"documentation" doc:"Markdown: payload shape, field mapping and signature header."`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func toSourceResponse(src store.Source) sourceResponse {
	return sourceResponse{UUID: src.UUID, SourceName: src.SourceName, DisplayName: src.DisplayName, IsActive: src.IsActive,
		AuthType: src.AuthType, Documentation: src.Documentation, CreatedAt: src.CreatedAt.UTC(), UpdatedAt: src.UpdatedAt.UTC()}
}

func (s *Server) listSources(c *fiber.Ctx) error {
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.Sources.ListSources(c.UserContext(), q.storePage())
	if err != nil {
		return err
	}
	out := mapSlice(rows, toSourceResponse)
	return respondList(c, out, total, q)
}

func (s *Server) getSource(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	src, err := s.deps.Sources.GetSource(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Source")
	}
	return respond(c, http.StatusOK, toSourceResponse(src))
}
