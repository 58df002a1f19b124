package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// IndicatorMappingStore is what the indicator-mapping routes need.
type IndicatorMappingStore interface {
	GetIndicatorMapping(ctx context.Context, id uuid.UUID) (store.IndicatorMapping, error)
	ListIndicatorMappings(ctx context.Context, f store.IndicatorMappingFilter) ([]store.IndicatorMapping, int, error)
	ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error)
	ExtractionExclusions(ctx context.Context) (store.ExtractionExclusions, error)
}

func (s *Server) indicatorMappingRoutes() {
	admin := []string{auth.ScopeAdmin}
	const tag = "Indicator mappings"
	s.add(route{Method: http.MethodGet, Path: "/v1/indicator-mappings", Tag: tag, Summary: "List indicator mappings",
		Description: "Pass-2 (extraction_target normalized) and pass-3 (raw_payload) extraction rules, system rows first.",
		Scopes:      admin, Query: listMappingsQuery{}, Response: mappingResponse{}, List: true}, s.listMappings)
	s.add(route{Method: http.MethodPost, Path: "/v1/indicator-mappings", Tag: tag, Summary: "Create an indicator mapping",
		Description: "409 MAPPING_EXISTS when the same (source, field_path, indicator_type, extraction_target) exists.",
		Scopes:      admin, Body: createMappingRequest{}, Response: mappingResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusConflict}}, s.createMapping)
	s.add(route{Method: http.MethodPost, Path: "/v1/indicator-mappings/test-extraction", Tag: tag, Summary: "Try extraction on a payload",
		Description: "Runs the source plugin and the three passes with the active mappings; nothing is stored.",
		Scopes:      admin, Body: testExtractionRequest{}, Response: testExtractionResponse{}}, s.testExtraction)
	s.add(route{Method: http.MethodGet, Path: "/v1/extraction-exclusions", Tag: tag, Summary: "Get the never-indicator list",
		Description: "Host names, domains (*.example.com covers the names below), IP addresses and CIDR ranges that extraction passes 2-4 never report; pass 1's explicit indicators are kept. A new installation starts with the vendors' consoles and documentation hosts.",
		Scopes:      admin, Response: exclusionsResponse{}}, s.getExclusions)
	s.add(route{Method: http.MethodPut, Path: "/v1/extraction-exclusions", Tag: tag, Summary: "Replace the never-indicator list",
		Description: "Replaces the whole list; entries are stored canonical (lower-case, ranges masked), sorted and without repeats. Applies to pipelines started a few seconds later (the worker's cache); links already made stay. Audited.",
		Scopes:      admin, Body: putExclusionsRequest{}, Response: exclusionsResponse{}}, s.putExclusions)
	s.add(route{Method: http.MethodGet, Path: "/v1/indicator-mappings/:uuid", Tag: tag, Summary: "Get an indicator mapping",
		Scopes: admin, Response: mappingResponse{}}, s.getMapping)
	s.add(route{Method: http.MethodPatch, Path: "/v1/indicator-mappings/:uuid", Tag: tag, Summary: "Update an indicator mapping",
		Description: "System rows: only is_active and description may change (422 SYSTEM_MAPPING_READONLY otherwise).",
		Scopes:      admin, Body: updateMappingRequest{}, Response: mappingResponse{}}, s.updateMapping)
	s.add(route{Method: http.MethodDelete, Path: "/v1/indicator-mappings/:uuid", Tag: tag, Summary: "Delete an indicator mapping",
		Description: "System rows cannot be deleted (422 SYSTEM_MAPPING_READONLY); deactivate them instead.",
		Scopes:      admin, Status: http.StatusNoContent}, s.deleteMapping)
}

type mappingResponse struct {
	UUID             uuid.UUID `json:"uuid"`
	SourceName       *string   `json:"source_name" doc:"null: every source."`
	FieldPath        string    `json:"field_path"`
	IndicatorType    string    `json:"indicator_type" enum:"$indicator_type"`
	ExtractionTarget string    `json:"extraction_target" enum:"$extraction_target"`
	IsActive         bool      `json:"is_active"`
	IsSystem         bool      `json:"is_system"`
	Description      *string   `json:"description"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func toMappingResponse(m store.IndicatorMapping) mappingResponse {
	return mappingResponse{UUID: m.UUID, SourceName: m.SourceName, FieldPath: m.FieldPath, IndicatorType: m.IndicatorType,
		ExtractionTarget: m.ExtractionTarget, IsActive: m.IsActive, IsSystem: m.IsSystem, Description: m.Description,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
}

type listMappingsQuery struct {
	PageQuery
	SourceName       string `query:"source_name" maxLength:"100" doc:"Rows of this source and rows for every source."`
	ExtractionTarget string `query:"extraction_target" enum:"$extraction_target"`
	IsActive         *bool  `query:"is_active"`
	IsSystem         *bool  `query:"is_system"`
}

func (s *Server) listMappings(c *fiber.Ctx) error {
	var q listMappingsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.Mappings.ListIndicatorMappings(c.UserContext(), store.IndicatorMappingFilter{SourceName: q.SourceName,
		ExtractionTarget: q.ExtractionTarget, IsActive: q.IsActive, IsSystem: q.IsSystem, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(rows, toMappingResponse)
	return respondList(c, out, total, q.PageQuery)
}

type createMappingRequest struct {
	SourceName       *string `json:"source_name" minLength:"1" maxLength:"100" doc:"null (default): every source."`
	FieldPath        string  `json:"field_path" required:"true" minLength:"1" maxLength:"500" doc:"Dot path; numeric segments index arrays, * fans out (Entities.*.Address)."`
	IndicatorType    string  `json:"indicator_type" required:"true" enum:"$indicator_type"`
	ExtractionTarget string  `json:"extraction_target" required:"true" enum:"$extraction_target"`
	IsActive         *bool   `json:"is_active" doc:"Default true."`
	Description      *string `json:"description" maxLength:"1000"`
}

// Validate applies ingest.ValidateMapping.
func (r createMappingRequest) Validate() validate.Errors {
	return ingest.ValidateMapping(r.FieldPath, r.IndicatorType, r.ExtractionTarget, r.Description)
}

func (s *Server) createMapping(c *fiber.Ctx) error {
	var req createMappingRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	m, err := s.config.Mappings.Create(c.UserContext(), s.actor(c), config.MappingFields{SourceName: req.SourceName,
		FieldPath: req.FieldPath, IndicatorType: req.IndicatorType, ExtractionTarget: req.ExtractionTarget,
		IsActive: req.IsActive, Description: req.Description})
	if err != nil {
		return mappingError(err)
	}
	return respond(c, http.StatusCreated, toMappingResponse(m))
}

func (s *Server) getMapping(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	m, err := s.deps.Mappings.GetIndicatorMapping(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Indicator mapping")
	}
	return respond(c, http.StatusOK, toMappingResponse(m))
}

type updateMappingRequest struct {
	SourceName       Optional[string] `json:"source_name" minLength:"1" maxLength:"100" doc:"An explicit null applies the mapping to every source."`
	FieldPath        *string          `json:"field_path" minLength:"1" maxLength:"500"`
	IndicatorType    *string          `json:"indicator_type" enum:"$indicator_type"`
	ExtractionTarget *string          `json:"extraction_target" enum:"$extraction_target"`
	IsActive         *bool            `json:"is_active"`
	Description      Optional[string] `json:"description" maxLength:"1000" doc:"An explicit null clears it."`
}

// mappingError names a missing mapping and places validation errors in the body; every code is
// domain/errcode's.
func mappingError(err error) error {
	return notFoundAs(inBody(err), "Indicator mapping")
}

func (s *Server) updateMapping(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateMappingRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	m, err := s.config.Mappings.Update(c.UserContext(), s.actor(c), id, config.MappingPatch{SourceName: req.SourceName.kit(),
		FieldPath: req.FieldPath, IndicatorType: req.IndicatorType, ExtractionTarget: req.ExtractionTarget,
		IsActive: req.IsActive, Description: req.Description.kit()})
	if err != nil {
		return mappingError(err)
	}
	return respond(c, http.StatusOK, toMappingResponse(m))
}

func (s *Server) deleteMapping(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.config.Mappings.Delete(c.UserContext(), s.actor(c), id); err != nil {
		return mappingError(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type exclusionsResponse struct {
	Entries   []string   `json:"entries"`
	UpdatedAt *time.Time `json:"updated_at" doc:"null: the list was never stored."`
}

type putExclusionsRequest struct {
	Entries []string `json:"entries" required:"true" maxItems:"1000" doc:"Host names, domains, *.domain, IP addresses, CIDR ranges."`
}

func toExclusionsResponse(x store.ExtractionExclusions) exclusionsResponse {
	out := exclusionsResponse{Entries: x.Entries}
	if out.Entries == nil {
		out.Entries = []string{}
	}
	if !x.UpdatedAt.IsZero() {
		t := x.UpdatedAt.UTC()
		out.UpdatedAt = &t
	}
	return out
}

func (s *Server) getExclusions(c *fiber.Ctx) error {
	x, err := s.config.Exclusions.Get(c.UserContext())
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, toExclusionsResponse(x))
}

func (s *Server) putExclusions(c *fiber.Ctx) error {
	var req putExclusionsRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	x, err := s.config.Exclusions.Put(c.UserContext(), s.actor(c), req.Entries)
	if err != nil {
		return inBody(err)
	}
	return respond(c, http.StatusOK, toExclusionsResponse(x))
}

type testExtractionRequest struct {
	SourceName string          `json:"source_name" required:"true" minLength:"1" maxLength:"100"`
	RawPayload json.RawMessage `json:"raw_payload" required:"true" doc:"The source's payload object."`
}

type normalizedPreview struct {
	Title          string                 `json:"title"`
	Severity       string                 `json:"severity"`
	SourceSeverity string                 `json:"source_severity"`
	OccurredAt     *time.Time             `json:"occurred_at" doc:"null: the payload has no usable timestamp (ingestion uses its own time)."`
	Description    string                 `json:"description"`
	Tags           []string               `json:"tags"`
	RuleRef        *store.RuleReference   `json:"rule_ref"`
	Fields         map[string]any         `json:"fields"`
	Pass1Raw       []indicators.Indicator `json:"pass1_candidates" doc:"What the plugin found, before normalization."`
	Notes          []store.Note           `json:"normalization_notes" doc:"The fallbacks the plugin used and the payload fields it ignored ([] when none), as the alert would list them."`
}

// extractedIndicator is an indicator with where extraction found it.
type extractedIndicator struct {
	Type        indicators.Type     `json:"type" enum:"$indicator_type"`
	Value       string              `json:"value"`
	ExtractedBy []indicators.Origin `json:"extracted_by" doc:"Each pass that found it and where: pass 1 without a path (the plugin), passes 2-3 the mapping's field path, pass 4 the path of the string in the raw payload."`
}

type testExtractionResponse struct {
	Pass1          []indicators.Indicator    `json:"pass1"`
	Pass2          []indicators.Indicator    `json:"pass2"`
	Pass3          []indicators.Indicator    `json:"pass3"`
	Pass4          []indicators.Indicator    `json:"pass4" doc:"The scan of every string of the raw payload (docs/SOURCES.md \"Pass 4\")."`
	Indicators     []extractedIndicator      `json:"indicators" doc:"Merged in pass order, deduplicated on (type, value), without the never-indicator list's entries (passes 2-4), as the pipeline links them (before MAX_INDICATORS_PER_ALERT)."`
	Scan           indicators.ScanStats      `json:"scan" doc:"What pass 4 visited, why it stopped early when it did, and how many values the never-indicator list dropped."`
	Skipped        []indicators.SkippedValue `json:"skipped"`
	SkippedOmitted int                       `json:"skipped_omitted"`
	Truncated      bool                      `json:"truncated"`
	Fingerprint    string                    `json:"fingerprint"`
	Normalized     normalizedPreview         `json:"normalized"`
}

func (s *Server) testExtraction(c *fiber.Ctx) error {
	var req testExtractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	plugin, ok := s.deps.SourceRegistry.Get(req.SourceName)
	if !ok {
		var errs validate.Errors
		errs.AddCtx([]any{"body", "source_name"}, validate.TypeEnum, "Unknown source.", req.SourceName, map[string]any{"allowed": s.sourceNames()})
		return errs
	}
	var payload map[string]any
	rawPayload, _ := validate.QuoteWildNumbers(req.RawPayload)
	if err := json.Unmarshal(rawPayload, &payload); err != nil || payload == nil {
		var errs validate.Errors
		errs.Add([]any{"body", "raw_payload"}, validate.TypeObject, "raw_payload must be a JSON object.", nil)
		return errs
	}
	src, err := s.ingest.Configured(c.UserContext(), plugin)
	if err != nil {
		return err
	}
	n := ingest.Normalize(src, payload)
	mappings, err := s.deps.Mappings.ActiveMappings(c.UserContext(), plugin.Name())
	if err != nil {
		return err
	}
	excl, err := s.deps.Mappings.ExtractionExclusions(c.UserContext())
	if err != nil {
		return err
	}
	res := indicators.ExtractForPipeline(n.Fields, payload, plugin.Name(), n.Indicators, mappings, indicators.NewExclusions(excl.Entries))
	// The fingerprint is ingestion's: passes 1-2 without the never-indicator list.
	fp := ingest.Fingerprint(n, plugin.Name(), indicators.Extract(n.Fields, nil, plugin.Name(), n.Indicators, mappings), payload)
	found := make([]extractedIndicator, len(res.Indicators))
	for i, ind := range res.Indicators {
		found[i] = extractedIndicator{Type: ind.Type, Value: ind.Value, ExtractedBy: res.ExtractedBy[i]}
	}
	prev := normalizedPreview{Title: n.Title, Severity: string(n.Severity), SourceSeverity: n.SourceSeverity, Description: n.Description,
		Tags: n.Tags, Fields: n.Fields, Pass1Raw: n.Indicators, Notes: ingest.Notes(n.Notes)}
	if !n.OccurredAt.IsZero() {
		t := n.OccurredAt.UTC()
		prev.OccurredAt = &t
	}
	if n.RuleRef != nil {
		prev.RuleRef = &store.RuleReference{SourceRuleID: n.RuleRef.SourceRuleID, Name: n.RuleRef.Name}
	}
	if prev.Fields == nil {
		prev.Fields = map[string]any{}
	}
	if prev.Pass1Raw == nil {
		prev.Pass1Raw = []indicators.Indicator{}
	}
	return respond(c, http.StatusOK, testExtractionResponse{Pass1: res.Pass1, Pass2: res.Pass2, Pass3: res.Pass3, Pass4: res.Pass4,
		Indicators: found, Scan: res.Scan, Skipped: res.Skipped, SkippedOmitted: res.SkippedOmitted, Truncated: res.Truncated,
		Fingerprint: fp, Normalized: prev})
}
