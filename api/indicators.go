package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// IndicatorStore is what the indicator routes need.
type IndicatorStore interface {
	ListIndicators(ctx context.Context, f store.IndicatorFilter) ([]store.Indicator, int, error)
	GetIndicator(ctx context.Context, id uuid.UUID) (store.Indicator, error)
	IndicatorAlertCount(ctx context.Context, id uuid.UUID) (int, error)
}

func (s *Server) indicatorRoutes() {
	const tag = "Indicators"
	s.add(route{Method: http.MethodGet, Path: "/v1/indicators", Tag: tag, Summary: "Search indicators",
		Description: "Most recently seen first. `value` is exact after normalization for the given type (or as given without one); `q` is a value prefix.",
		Scopes:      []string{auth.ScopeEnrichmentsRead}, Query: listIndicatorsQuery{}, Response: indicatorResponse{}, List: true}, s.listIndicators)
	s.add(route{Method: http.MethodGet, Path: "/v1/indicators/:uuid", Tag: tag, Summary: "Get an indicator",
		Description: "With raw provider responses and the number of linked alerts.",
		Scopes:      []string{auth.ScopeEnrichmentsRead}, Response: indicatorDetail{}}, s.getIndicator)
	s.add(route{Method: http.MethodPatch, Path: "/v1/indicators/:uuid", Tag: tag, Summary: "Override an indicator's malice",
		Description: "A level is a sticky analyst override (enrichment no longer changes it); null removes the override and recomputes malice from the stored enrichment results.",
		Scopes:      alerts.IndicatorMaliceScopes, Body: patchIndicatorRequest{}, Response: indicatorDetail{}}, s.patchIndicator)
}

// indicatorResponse is SEED-SPEC §2.2's EnrichedIndicator.
type indicatorResponse struct {
	UUID               uuid.UUID      `json:"uuid"`
	Type               string         `json:"type" enum:"$indicator_type"`
	Value              string         `json:"value"`
	FirstSeen          time.Time      `json:"first_seen"`
	LastSeen           time.Time      `json:"last_seen"`
	IsEnriched         bool           `json:"is_enriched"`
	Malice             string         `json:"malice" enum:"$malice"`
	MaliceSource       *string        `json:"malice_source"`
	MaliceOverriddenAt *time.Time     `json:"malice_overridden_at"`
	EnrichmentResults  map[string]any `json:"enrichment_results" doc:"Provider name → result (status, success, malice, extracted, enriched_at, error_message; raw_response only on GET /v1/indicators/{uuid})."`
	CreatedAt          time.Time      `json:"created_at"`
	UpdatedAt          time.Time      `json:"updated_at"`
}

type indicatorDetail struct {
	indicatorResponse
	AlertCount int `json:"alert_count"`
}

// toIndicatorResponse renders an indicator; stripRaw drops each provider's raw_response.
func toIndicatorResponse(ind store.Indicator, stripRaw bool) indicatorResponse {
	results := ind.EnrichmentResults
	if stripRaw {
		results = ind.ResultsWithoutRaw()
	}
	return indicatorResponse{UUID: ind.UUID, Type: ind.Type, Value: ind.Value, FirstSeen: ind.FirstSeen.UTC(), LastSeen: ind.LastSeen.UTC(),
		IsEnriched: ind.IsEnriched, Malice: ind.Malice, MaliceSource: ind.MaliceSource, MaliceOverriddenAt: utcPtr(ind.MaliceOverriddenAt),
		EnrichmentResults: results, CreatedAt: ind.CreatedAt.UTC(), UpdatedAt: ind.UpdatedAt.UTC()}
}

type listIndicatorsQuery struct {
	PageQuery
	Type   []string `query:"type" enum:"$indicator_type" doc:"Comma-separated; any of."`
	Value  string   `query:"value" maxLength:"2048" doc:"Exact value (normalized when one type is given)."`
	Q      string   `query:"q" maxLength:"2048" doc:"Value prefix."`
	Malice []string `query:"malice" enum:"$malice" doc:"Comma-separated; any of."`
}

// Validate refuses NUL characters.
func (q listIndicatorsQuery) Validate() validate.Errors {
	var errs validate.Errors
	if strings.IndexByte(q.Value, 0) >= 0 {
		errs.Add([]any{"value"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	if strings.IndexByte(q.Q, 0) >= 0 {
		errs.Add([]any{"q"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	return errs
}

func (s *Server) listIndicators(c *fiber.Ctx) error {
	var q listIndicatorsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	value := q.Value
	if value != "" && len(q.Type) == 1 {
		// Match what is stored: normalized. A value that is invalid for the type matches nothing.
		if v, err := indicators.Normalize(indicators.Type(q.Type[0]), value); err == nil {
			value = v
		}
	}
	rows, total, err := s.deps.Indicators.ListIndicators(c.UserContext(), store.IndicatorFilter{Types: q.Type, Value: value,
		ValuePrefix: q.Q, Malices: q.Malice, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(rows, func(ind store.Indicator) indicatorResponse { return toIndicatorResponse(ind, true) })
	return respondList(c, out, total, q.PageQuery)
}

func (s *Server) indicatorDetail(ctx context.Context, ind store.Indicator) (indicatorDetail, error) {
	n, err := s.deps.Indicators.IndicatorAlertCount(ctx, ind.UUID)
	if err != nil {
		return indicatorDetail{}, err
	}
	return indicatorDetail{indicatorResponse: toIndicatorResponse(ind, false), AlertCount: n}, nil
}

func (s *Server) getIndicator(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	ind, err := s.deps.Indicators.GetIndicator(ctx, id)
	if err != nil {
		return notFoundAs(err, "Indicator")
	}
	d, err := s.indicatorDetail(ctx, ind)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, d)
}

type patchIndicatorRequest struct {
	Malice Optional[string] `json:"malice" enum:"$malice" doc:"A level (sticky override) or null (recompute from enrichment)."`
}

func (s *Server) patchIndicator(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req patchIndicatorRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	if !req.Malice.Set {
		var errs validate.Errors
		errs.Add([]any{"body", "malice"}, validate.TypeMissing, "Field required (a malice level, or null to recompute).", nil)
		return errs
	}
	var level *string
	if !req.Malice.Null {
		level = &req.Malice.Value
	}
	ctx := c.UserContext()
	ind, err := s.alertRules.SetIndicatorMalice(ctx, id, level, s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Indicator")
	}
	d, err := s.indicatorDetail(ctx, ind)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, d)
}
