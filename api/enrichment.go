package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// EnrichmentStore is what the provider and field-extraction routes need.
type EnrichmentStore interface {
	GetProvider(ctx context.Context, id uuid.UUID) (store.EnrichmentProvider, error)
	ListProviders(ctx context.Context, f store.ProviderFilter) ([]store.EnrichmentProvider, int, error)
	GetFieldExtraction(ctx context.Context, id uuid.UUID) (store.FieldExtraction, error)
	ListFieldExtractions(ctx context.Context, f store.FieldExtractionFilter) ([]store.FieldExtraction, int, error)
}

// Enricher runs enrichments through Temporal (implemented by temporal.Enricher).
type Enricher interface {
	// Enrich enriches a value with every configured provider for its type, cache first, within ctx.
	Enrich(ctx context.Context, typ, value string) ([]enrichment.Answer, error)
	// TestProvider runs one provider's real multi-step call and returns its result and step records.
	TestProvider(ctx context.Context, provider, typ, value string) (enrichment.Answer, []httpsteps.StepRecord, error)
}

// EnrichmentDeps groups the enrichment routes' collaborators.
type EnrichmentDeps struct {
	Store    EnrichmentStore
	Enricher Enricher // nil: enrichment routes answer 503
	// Env looks up the environment variables env_var_mapping names, for has_credentials.
	Env store.Env
}

func (s *Server) enrichmentRoutes() {
	read := []string{auth.ScopeEnrichmentsRead}
	admin := []string{auth.ScopeAdmin}
	const tag = "Enrichment"
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichments", Tag: tag, Summary: "Enrich a value now",
		Description: "Synchronous and cache-first: every configured provider supporting the type runs in parallel (as ProviderCall workflows) and the answer comes within the request's bound. Non-routable values are skipped with a reason.",
		Scopes:      read, Body: enrichmentRequest{}, Response: enrichmentResponse{}, Errors: []int{http.StatusServiceUnavailable}}, s.enrichNow)
	s.add(route{Method: http.MethodGet, Path: "/v1/enrichments/providers", Tag: tag, Summary: "Active providers",
		Scopes: read, Response: enrichmentProviderSummary{}, List: true}, s.listActiveProviders)

	s.add(route{Method: http.MethodGet, Path: "/v1/enrichment-providers", Tag: tag, Summary: "List enrichment providers",
		Description: "Ordered by provider_name. auth_config is never returned.", Scopes: read, Query: listProvidersQuery{},
		Response: providerResponse{}, List: true}, s.listProviders)
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-providers", Tag: tag, Summary: "Create a provider",
		Description: "auth_config is write-only and stored encrypted (AES-256-GCM). Duplicate name: 409 DUPLICATE_PROVIDER.",
		Scopes:      admin, Body: createProviderRequest{}, Response: providerResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusConflict}}, s.createProvider)
	s.add(route{Method: http.MethodGet, Path: "/v1/enrichment-providers/:uuid", Tag: tag, Summary: "Get a provider",
		Scopes: read, Response: providerResponse{}}, s.getProvider)
	s.add(route{Method: http.MethodPatch, Path: "/v1/enrichment-providers/:uuid", Tag: tag, Summary: "Update a provider",
		Description: "Builtins: only is_active, auth_config, description, malice_rules, TTLs and rate_limit may change (400 BUILTIN_RESTRICTED). auth_config null removes the stored credentials.",
		Scopes:      admin, Body: updateProviderRequest{}, Response: providerResponse{}, Errors: []int{http.StatusBadRequest}}, s.updateProvider)
	s.add(route{Method: http.MethodDelete, Path: "/v1/enrichment-providers/:uuid", Tag: tag, Summary: "Delete a custom provider",
		Description: "Deletes its field extractions and cached results too. Builtins cannot be deleted (400 BUILTIN_RESTRICTED).",
		Scopes:      admin, Status: http.StatusNoContent, Errors: []int{http.StatusBadRequest}}, s.deleteProvider)
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-providers/:uuid/activate", Tag: tag, Summary: "Activate a provider",
		Scopes: admin, Response: providerResponse{}}, s.setProviderActive(true))
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-providers/:uuid/deactivate", Tag: tag, Summary: "Deactivate a provider",
		Scopes: admin, Response: providerResponse{}}, s.setProviderActive(false))
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-providers/:uuid/test", Tag: tag, Summary: "Test a provider against one value",
		Description: "Runs the real ProviderCall workflow (no cache, one attempt per step) and returns every step record with secrets masked and bodies cut at 50 KB. A failing provider is reported inside the result with HTTP 200.",
		Scopes:      read, Body: testProviderRequest{}, Response: providerTestResponse{}, Errors: []int{http.StatusServiceUnavailable}}, s.testProvider)

	s.add(route{Method: http.MethodGet, Path: "/v1/enrichment-field-extractions", Tag: tag, Summary: "List field extractions",
		Scopes: read, Query: listExtractionsQuery{}, Response: extractionResponse{}, List: true}, s.listExtractions)
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-field-extractions", Tag: tag, Summary: "Create a field extraction",
		Description: "Duplicate (provider_name, indicator_type, target_key): 409 DUPLICATE_EXTRACTION.",
		Scopes:      admin, Body: extractionRequest{}, Response: extractionResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusConflict}}, s.createExtraction)
	s.add(route{Method: http.MethodPost, Path: "/v1/enrichment-field-extractions/bulk", Tag: tag, Summary: "Create field extractions in bulk",
		Description: "All or nothing: one invalid or duplicate item rejects the whole batch.",
		Scopes:      admin, Body: bulkExtractionRequest{}, Response: extractionResponse{}, List: true, Status: http.StatusCreated, Errors: []int{http.StatusConflict}}, s.bulkCreateExtractions)
	s.add(route{Method: http.MethodGet, Path: "/v1/enrichment-field-extractions/:uuid", Tag: tag, Summary: "Get a field extraction",
		Scopes: read, Response: extractionResponse{}}, s.getExtraction)
	s.add(route{Method: http.MethodPatch, Path: "/v1/enrichment-field-extractions/:uuid", Tag: tag, Summary: "Update a field extraction",
		Description: "System rows only toggle is_active (403 SYSTEM_EXTRACTION_RESTRICTED).",
		Scopes:      admin, Body: updateExtractionRequest{}, Response: extractionResponse{}, Errors: []int{http.StatusForbidden, http.StatusConflict}}, s.updateExtraction)
	s.add(route{Method: http.MethodDelete, Path: "/v1/enrichment-field-extractions/:uuid", Tag: tag, Summary: "Delete a field extraction",
		Description: "System rows cannot be deleted (403 SYSTEM_EXTRACTION_RESTRICTED).",
		Scopes:      admin, Status: http.StatusNoContent, Errors: []int{http.StatusForbidden}}, s.deleteExtraction)
}

func (s *Server) enrichStore() (EnrichmentStore, error) {
	if s.deps.Enrichment.Store == nil {
		return nil, NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "Enrichment is not configured.")
	}
	return s.deps.Enrichment.Store, nil
}

// --- providers -------------------------------------------------------------------------------

type providerResponse struct {
	UUID                    uuid.UUID         `json:"uuid"`
	ProviderName            string            `json:"provider_name"`
	DisplayName             string            `json:"display_name"`
	Description             string            `json:"description"`
	IsBuiltin               bool              `json:"is_builtin"`
	IsActive                bool              `json:"is_active"`
	SupportedIndicatorTypes []string          `json:"supported_indicator_types"`
	HTTPConfig              map[string]any    `json:"http_config"`
	AuthType                string            `json:"auth_type"`
	HasCredentials          bool              `json:"has_credentials" doc:"auth_config stored, or every variable of env_var_mapping set."`
	IsConfigured            bool              `json:"is_configured" doc:"Active and (auth_type none or has_credentials); unconfigured providers are skipped without error."`
	EnvVarMapping           map[string]string `json:"env_var_mapping"`
	DefaultCacheTTLSeconds  int               `json:"default_cache_ttl_seconds"`
	CacheTTLByType          map[string]int    `json:"cache_ttl_by_type"`
	MaliceRules             map[string]any    `json:"malice_rules"`
	RateLimit               *store.RateLimit  `json:"rate_limit"`
	CreatedAt               time.Time         `json:"created_at"`
	UpdatedAt               time.Time         `json:"updated_at"`
}

func (s *Server) toProviderResponse(p store.EnrichmentProvider) providerResponse {
	env := s.deps.Enrichment.Env
	types := p.SupportedIndicatorTypes
	if types == nil {
		types = []string{}
	}
	return providerResponse{UUID: p.UUID, ProviderName: p.ProviderName, DisplayName: p.DisplayName, Description: p.Description,
		IsBuiltin: p.IsBuiltin, IsActive: p.IsActive, SupportedIndicatorTypes: types, HTTPConfig: enrichOrEmpty(p.HTTPConfig),
		AuthType: p.AuthType, HasCredentials: p.HasCredentials(env), IsConfigured: p.IsConfigured(env),
		EnvVarMapping: enrichOrEmptyStrings(p.EnvVarMapping), DefaultCacheTTLSeconds: p.DefaultCacheTTLSeconds,
		CacheTTLByType: enrichOrEmptyInts(p.CacheTTLByType), MaliceRules: enrichOrEmpty(p.MaliceRules), RateLimit: p.RateLimit,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
}

func enrichOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func enrichOrEmptyStrings(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func enrichOrEmptyInts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

type listProvidersQuery struct {
	PageQuery
	IsActive  *bool `query:"is_active"`
	IsBuiltin *bool `query:"is_builtin"`
}

func (s *Server) listProviders(c *fiber.Ctx) error {
	st, err := s.enrichStore()
	if err != nil {
		return err
	}
	var q listProvidersQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ps, total, err := st.ListProviders(c.UserContext(), store.ProviderFilter{IsActive: q.IsActive, IsBuiltin: q.IsBuiltin, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := make([]providerResponse, len(ps))
	for i, p := range ps {
		out[i] = s.toProviderResponse(p)
	}
	return respondList(c, out, total, q.PageQuery)
}

type rateLimitBody struct {
	Requests   int  `json:"requests" required:"true" minimum:"1" maximum:"100000"`
	PerSeconds int  `json:"per_seconds" required:"true" minimum:"1" maximum:"86400"`
	DailyQuota *int `json:"daily_quota" minimum:"1" maximum:"100000000"`
}

func (r *rateLimitBody) toStore() *store.RateLimit {
	if r == nil {
		return nil
	}
	return &store.RateLimit{Requests: r.Requests, PerSeconds: r.PerSeconds, DailyQuota: r.DailyQuota}
}

type createProviderRequest struct {
	ProviderName            string            `json:"provider_name" required:"true" minLength:"1" maxLength:"100" pattern:"^[a-z0-9_]+$"`
	DisplayName             string            `json:"display_name" required:"true" minLength:"1" maxLength:"200"`
	Description             *string           `json:"description" maxLength:"4000"`
	SupportedIndicatorTypes []string          `json:"supported_indicator_types" required:"true" minItems:"1" maxItems:"8" enum:"$indicator_type"`
	HTTPConfig              enrichRaw         `json:"http_config" required:"true" doc:"{steps: [...], url_templates_by_type?}; see API.md §7."`
	AuthType                string            `json:"auth_type" required:"true" enum:"$provider_auth_type"`
	AuthConfig              map[string]string `json:"auth_config" doc:"Write-only credentials (string values), stored encrypted; templates read them as {{auth.<field>}}."`
	EnvVarMapping           map[string]string `json:"env_var_mapping" doc:"auth field → environment variable name, the fallback when auth_config is not set."`
	DefaultCacheTTLSeconds  *int              `json:"default_cache_ttl_seconds" minimum:"0" maximum:"86400" doc:"Default 3600."`
	CacheTTLByType          map[string]int    `json:"cache_ttl_by_type"`
	MaliceRules             enrichRaw         `json:"malice_rules"`
	RateLimit               *rateLimitBody    `json:"rate_limit"`
}

// Validate applies the provider rules (enrichment.ValidateProviderName, ValidateProviderParts).
func (r createProviderRequest) Validate() validate.Errors {
	errs := enrichment.ValidateProviderName(r.ProviderName)
	return append(errs, enrichment.ValidateProviderParts(enrichment.ProviderParts{HTTPConfig: r.HTTPConfig, HTTPConfigRequired: true,
		MaliceRules: r.MaliceRules, AuthConfig: r.AuthConfig, EnvVarMapping: r.EnvVarMapping, CacheTTLByType: r.CacheTTLByType})...)
}

// enrichRaw is a raw JSON body field (kept as given, validated by a domain parser).
type enrichRaw = json.RawMessage

func (s *Server) createProvider(c *fiber.Ctx) error {
	_, err := s.enrichStore()
	if err != nil {
		return err
	}
	var req createProviderRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	p, err := s.config.Providers.Create(c.UserContext(), s.actor(c), config.ProviderFields{ProviderName: req.ProviderName,
		DisplayName: req.DisplayName, Description: req.Description, SupportedIndicatorTypes: req.SupportedIndicatorTypes,
		HTTPConfig: req.HTTPConfig, MaliceRules: req.MaliceRules, AuthType: req.AuthType, AuthConfig: req.AuthConfig,
		EnvVarMapping: req.EnvVarMapping, DefaultCacheTTLSeconds: req.DefaultCacheTTLSeconds, CacheTTLByType: req.CacheTTLByType,
		RateLimit: req.RateLimit.toStore()})
	if err != nil {
		return notFoundAs(err, "Enrichment provider")
	}
	return respond(c, http.StatusCreated, s.toProviderResponse(p))
}

func (s *Server) loadProvider(c *fiber.Ctx) (EnrichmentStore, store.EnrichmentProvider, error) {
	st, err := s.enrichStore()
	if err != nil {
		return nil, store.EnrichmentProvider{}, err
	}
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return nil, store.EnrichmentProvider{}, err
	}
	p, err := st.GetProvider(c.UserContext(), id)
	if err != nil {
		return nil, store.EnrichmentProvider{}, notFoundAs(err, "Enrichment provider")
	}
	return st, p, nil
}

func (s *Server) getProvider(c *fiber.Ctx) error {
	_, p, err := s.loadProvider(c)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.toProviderResponse(p))
}

type updateProviderRequest struct {
	DisplayName             *string                     `json:"display_name" minLength:"1" maxLength:"200"`
	Description             *string                     `json:"description" maxLength:"4000"`
	IsActive                *bool                       `json:"is_active"`
	SupportedIndicatorTypes []string                    `json:"supported_indicator_types" minItems:"1" maxItems:"8" enum:"$indicator_type"`
	HTTPConfig              enrichRaw                   `json:"http_config"`
	AuthType                *string                     `json:"auth_type" enum:"$provider_auth_type"`
	AuthConfig              Optional[map[string]string] `json:"auth_config" doc:"Write-only; null removes the stored credentials."`
	EnvVarMapping           map[string]string           `json:"env_var_mapping"`
	DefaultCacheTTLSeconds  *int                        `json:"default_cache_ttl_seconds" minimum:"0" maximum:"86400"`
	CacheTTLByType          map[string]int              `json:"cache_ttl_by_type"`
	MaliceRules             enrichRaw                   `json:"malice_rules"`
	RateLimit               Optional[rateLimitBody]     `json:"rate_limit" doc:"null removes the limit."`
}

func (r updateProviderRequest) Validate() validate.Errors {
	var errs validate.Errors
	if enrichIsNull(r.HTTPConfig) {
		errs.Add([]any{"http_config"}, validate.TypeNullForbidden, "http_config cannot be null.", nil)
		return errs
	}
	return enrichment.ValidateProviderParts(enrichment.ProviderParts{HTTPConfig: r.HTTPConfig, MaliceRules: r.MaliceRules,
		AuthConfig: r.AuthConfig.Value, EnvVarMapping: r.EnvVarMapping, CacheTTLByType: r.CacheTTLByType})
}

func enrichIsNull(raw enrichRaw) bool { return strings.TrimSpace(string(raw)) == "null" }

func (s *Server) updateProvider(c *fiber.Ctx) error {
	_, p, err := s.loadProvider(c)
	if err != nil {
		return err
	}
	var req updateProviderRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	var rate optional.Value[store.RateLimit]
	if req.RateLimit.Set {
		rate = optional.Value[store.RateLimit]{Set: true, Null: req.RateLimit.Null}
		if !req.RateLimit.Null {
			rate.Value = *req.RateLimit.Value.toStore()
		}
	}
	p, err = s.config.Providers.Update(c.UserContext(), s.actor(c), p, config.ProviderPatch{DisplayName: req.DisplayName,
		Description: req.Description, IsActive: req.IsActive, SupportedIndicatorTypes: req.SupportedIndicatorTypes,
		HTTPConfig: req.HTTPConfig, AuthType: req.AuthType, AuthConfig: req.AuthConfig.kit(), EnvVarMapping: req.EnvVarMapping,
		DefaultCacheTTLSeconds: req.DefaultCacheTTLSeconds, CacheTTLByType: req.CacheTTLByType, MaliceRules: req.MaliceRules,
		RateLimit: rate})
	if err != nil {
		return notFoundAs(err, "Enrichment provider")
	}
	return respond(c, http.StatusOK, s.toProviderResponse(p))
}

func (s *Server) deleteProvider(c *fiber.Ctx) error {
	_, p, err := s.loadProvider(c)
	if err != nil {
		return err
	}
	if err := s.config.Providers.Delete(c.UserContext(), s.actor(c), p); err != nil {
		return notFoundAs(err, "Enrichment provider")
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Server) setProviderActive(active bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		_, p, err := s.loadProvider(c)
		if err != nil {
			return err
		}
		if p, err = s.config.Providers.SetActive(c.UserContext(), s.actor(c), p, active); err != nil {
			return notFoundAs(err, "Enrichment provider")
		}
		return respond(c, http.StatusOK, s.toProviderResponse(p))
	}
}

// --- provider test and on-demand enrichment ---------------------------------------------------

type testProviderRequest struct {
	IndicatorType  string `json:"indicator_type" required:"true" enum:"$indicator_type"`
	IndicatorValue string `json:"indicator_value" required:"true" minLength:"1" maxLength:"2048"`
}

type providerTestResponse struct {
	Success        bool                   `json:"success"`
	ProviderName   string                 `json:"provider_name"`
	IndicatorType  string                 `json:"indicator_type"`
	IndicatorValue string                 `json:"indicator_value"`
	Extracted      map[string]any         `json:"extracted"`
	RawResponse    any                    `json:"raw_response" doc:"The final response, masked and cut at 50 KB."`
	ErrorMessage   string                 `json:"error_message"`
	DurationMS     int64                  `json:"duration_ms"`
	Steps          []httpsteps.StepRecord `json:"steps"`
}

// normalizeIndicator normalizes value for typ (enrichment.Normalize), reporting a 422 at loc.
func normalizeIndicator(typ, value string, loc []any) (string, error) {
	_, norm, errs := enrichment.Normalize(typ, value)
	if errs != nil {
		return "", bodyIndicatorErrors(errs, loc)
	}
	return norm, nil
}

// bodyIndicatorErrors places enrichment's errors at "type" and "value" at body.<loc[0]> and
// body.<loc[1]> (the request's field names), with long inputs cut.
func bodyIndicatorErrors(errs validate.Errors, loc []any) validate.Errors {
	out := make(validate.Errors, 0, len(errs))
	for _, fe := range errs {
		switch fe.Loc[0] {
		case "type":
			fe.Loc = validate.Join([]any{"body"}, loc[0])
		case "value":
			fe.Loc = validate.Join([]any{"body"}, loc[1])
			if in, ok := fe.Input.(string); ok {
				fe.Input = validate.Truncate(in)
			}
		}
		out = append(out, fe)
	}
	return out
}

func (s *Server) enricher() (Enricher, error) {
	if s.deps.Enrichment.Enricher == nil {
		return nil, NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "Enrichment workflows are not available.")
	}
	return s.deps.Enrichment.Enricher, nil
}

func (s *Server) enricherFailed(c *fiber.Ctx, err error) error {
	s.log.ErrorContext(c.UserContext(), "enrichment through temporal failed", "err", err)
	return NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "Enrichment workflows are unavailable; try again later.")
}

func (s *Server) testProvider(c *fiber.Ctx) error {
	_, p, err := s.loadProvider(c)
	if err != nil {
		return err
	}
	var req testProviderRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	value, err := normalizeIndicator(req.IndicatorType, req.IndicatorValue, []any{"indicator_type", "indicator_value"})
	if err != nil {
		return err
	}
	if !p.Supports(req.IndicatorType) {
		var errs validate.Errors
		errs.AddCtx([]any{"body", "indicator_type"}, validate.TypeEnum, "The provider does not support this indicator type.", req.IndicatorType,
			map[string]any{"expected": strings.Join(p.SupportedIndicatorTypes, ",")})
		return errs
	}
	en, err := s.enricher()
	if err != nil {
		return err
	}
	res, steps, err := en.TestProvider(c.UserContext(), p.ProviderName, req.IndicatorType, value)
	if err != nil {
		return s.enricherFailed(c, err)
	}
	if steps == nil {
		steps = []httpsteps.StepRecord{}
	}
	out := providerTestResponse{Success: res.Success, ProviderName: p.ProviderName, IndicatorType: req.IndicatorType,
		IndicatorValue: value, Extracted: enrichOrEmpty(res.Extracted), RawResponse: res.RawResponse, ErrorMessage: res.ErrorMessage,
		DurationMS: res.DurationMS, Steps: steps}
	if out.RawResponse == nil {
		out.RawResponse = map[string]any{}
	}
	return respond(c, http.StatusOK, out)
}

type enrichmentRequest struct {
	Type           *string `json:"type" enum:"$indicator_type"`
	Value          *string `json:"value" minLength:"1" maxLength:"2048"`
	IndicatorType  *string `json:"indicator_type" enum:"$indicator_type" doc:"Alias of type."`
	IndicatorValue *string `json:"indicator_value" minLength:"1" maxLength:"2048" doc:"Alias of value."`
}

func (r enrichmentRequest) Validate() validate.Errors {
	var errs validate.Errors
	pair := func(a, b *string, an, bn string) {
		switch {
		case a == nil && b == nil:
			errs.Add([]any{an}, validate.TypeMissing, "Field required ("+an+" or "+bn+").", nil)
		case a != nil && b != nil && *a != *b:
			errs.Add([]any{bn}, validate.TypeValue, bn+" is an alias of "+an+"; give one of them.", *b)
		}
	}
	pair(r.Type, r.IndicatorType, "type", "indicator_type")
	pair(r.Value, r.IndicatorValue, "value", "indicator_value")
	return errs
}

func enrichFirstOf(a, b *string) string {
	if a != nil {
		return *a
	}
	if b != nil {
		return *b
	}
	return ""
}

type enrichmentProviderResult struct {
	Status       string         `json:"status" enum:"success,failed,skipped"`
	Success      bool           `json:"success"`
	Extracted    map[string]any `json:"extracted"`
	Malice       string         `json:"malice" enum:"$malice"`
	EnrichedAt   *time.Time     `json:"enriched_at"`
	ErrorMessage string         `json:"error_message"`
	CacheHit     bool           `json:"cache_hit"`
}

type enrichmentResponse struct {
	Type       string                              `json:"type"`
	Value      string                              `json:"value"`
	Results    map[string]enrichmentProviderResult `json:"results"`
	Malice     string                              `json:"malice" enum:"$malice" doc:"Worst verdict over the successful providers."`
	EnrichedAt time.Time                           `json:"enriched_at"`
}

func (s *Server) enrichNow(c *fiber.Ctx) error {
	var req enrichmentRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	typeField, valueField := "type", "value"
	if req.Type == nil {
		typeField = "indicator_type"
	}
	if req.Value == nil {
		valueField = "indicator_value"
	}
	var en enrichment.Enricher
	if s.deps.Enrichment.Enricher != nil {
		en = s.deps.Enrichment.Enricher
	}
	res, err := enrichment.OnDemand(c.UserContext(), en, time.Now, enrichFirstOf(req.Type, req.IndicatorType), enrichFirstOf(req.Value, req.IndicatorValue))
	var errs validate.Errors
	switch {
	case errors.As(err, &errs):
		return bodyIndicatorErrors(errs, []any{typeField, valueField})
	case err != nil && en == nil:
		_, err = s.enricher()
		return err
	case err != nil:
		return s.enricherFailed(c, err)
	}
	out := enrichmentResponse{Type: string(res.Type), Value: res.Value, Results: make(map[string]enrichmentProviderResult, len(res.Results)),
		Malice: res.Malice, EnrichedAt: res.EnrichedAt}
	for name, r := range res.Results {
		out.Results[name] = enrichmentProviderResult{Status: r.Status, Success: r.Success, Extracted: r.Extracted, Malice: r.Malice,
			EnrichedAt: r.EnrichedAt, ErrorMessage: r.ErrorMessage, CacheHit: r.CacheHit}
	}
	return respond(c, http.StatusOK, out)
}

type enrichmentProviderSummary struct {
	ProviderName            string         `json:"provider_name"`
	DisplayName             string         `json:"display_name"`
	SupportedIndicatorTypes []string       `json:"supported_indicator_types"`
	IsConfigured            bool           `json:"is_configured"`
	DefaultCacheTTLSeconds  int            `json:"default_cache_ttl_seconds"`
	CacheTTLByType          map[string]int `json:"cache_ttl_by_type"`
}

func (s *Server) listActiveProviders(c *fiber.Ctx) error {
	st, err := s.enrichStore()
	if err != nil {
		return err
	}
	active := true
	ps, total, err := st.ListProviders(c.UserContext(), store.ProviderFilter{IsActive: &active})
	if err != nil {
		return err
	}
	out := make([]enrichmentProviderSummary, len(ps))
	for i, p := range ps {
		out[i] = enrichmentProviderSummary{ProviderName: p.ProviderName, DisplayName: p.DisplayName,
			SupportedIndicatorTypes: p.SupportedIndicatorTypes, IsConfigured: p.IsConfigured(s.deps.Enrichment.Env),
			DefaultCacheTTLSeconds: p.DefaultCacheTTLSeconds, CacheTTLByType: enrichOrEmptyInts(p.CacheTTLByType)}
	}
	return respondList(c, out, total, PageQuery{Page: 1, PageSize: max(total, 1)})
}
