package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/auth"
	"github.com/vigil-soc/vigil/indicators"
	"github.com/vigil-soc/vigil/sources"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal/ids"
	"github.com/vigil-soc/vigil/validate"
)

// IngestStore is what ingestion needs: the one-statement commit and the configuration it reads
// (cached for ingestConfigTTL).
type IngestStore interface {
	Ingest(ctx context.Context, a store.IngestAlert, window time.Duration) (store.IngestResult, error)
	SourceIntegrationByName(ctx context.Context, sourceName string) (store.SourceIntegration, error)
	ActiveMappings(ctx context.Context, sourceName string) ([]store.IndicatorMapping, error)
}

// ingestConfigTTL bounds how long an API replica uses a source integration or the indicator mappings
// it read, so the ingest path costs one database round trip. Writes through this replica invalidate
// at once; other replicas see a change within the TTL.
const ingestConfigTTL = 2 * time.Second

type cachedIntegration struct {
	si     *store.SourceIntegration // nil: none configured
	secret string
}

// ttlCache keeps values loaded per key for ingestConfigTTL.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

// get returns key's value, loading it when absent or older than ingestConfigTTL. Errors are not cached.
func (c *ttlCache[V]) get(key string, load func() (V, error)) (V, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < ingestConfigTTL {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	c.entries[key] = ttlEntry[V]{v: v, at: now}
	c.mu.Unlock()
	return v, nil
}

func (c *ttlCache[V]) clear() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// ingestCache holds per-source integrations (secret opened) and pass-2 mappings.
type ingestCache struct {
	integrations ttlCache[cachedIntegration]
	mappings     ttlCache[[]indicators.Mapping]
}

func newIngestCache() *ingestCache { return &ingestCache{} }

func (c *ingestCache) invalidate() {
	if c == nil {
		return
	}
	c.integrations.clear()
	c.mappings.clear()
}

func (s *Server) integrationFor(ctx context.Context, source string) (cachedIntegration, error) {
	return s.ingestCfg.integrations.get(source, func() (cachedIntegration, error) {
		var ci cachedIntegration
		si, err := s.deps.Ingest.SourceIntegrationByName(ctx, source)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return ci, nil
		case err != nil:
			return ci, err
		}
		ci.si = &si
		if len(si.AuthConfig) > 0 {
			if s.deps.Secrets == nil {
				return ci, errors.New("source integration has a secret but no encryption key is configured")
			}
			var sec sourceSecret
			if err := s.deps.Secrets.OpenJSON(si.AuthConfig, &sec); err != nil {
				return ci, fmt.Errorf("open secret of source %s: %w", source, err)
			}
			ci.secret = sec.Secret
		}
		return ci, nil
	})
}

func (s *Server) mappingsFor(ctx context.Context, source string) ([]indicators.Mapping, error) {
	return s.ingestCfg.mappings.get(source, func() ([]indicators.Mapping, error) {
		rows, err := s.deps.Ingest.ActiveMappings(ctx, source)
		if err != nil {
			return nil, err
		}
		return toMappings(rows), nil
	})
}

func toMappings(rows []store.IndicatorMapping) []indicators.Mapping {
	out := make([]indicators.Mapping, 0, len(rows))
	for _, r := range rows {
		m := indicators.Mapping{FieldPath: r.FieldPath, Type: indicators.Type(r.IndicatorType), Target: indicators.Target(r.ExtractionTarget)}
		if r.SourceName != nil {
			m.SourceName = *r.SourceName
		}
		if r.Description != nil {
			m.Description = *r.Description
		}
		out = append(out, m)
	}
	return out
}

func (s *Server) ingestRoutes() {
	write := []string{auth.ScopeAlertsWrite}
	s.add(route{Method: http.MethodPost, Path: "/v1/ingest/:source_name", Tag: "Ingestion", Summary: "Ingest a source's webhook payload",
		Description: "The body is the source's own payload (see GET /v1/sources for each shape and signature header). " +
			"Checks, in order: source known (404 UNKNOWN_SOURCE), key's allowed_sources (403 SOURCE_NOT_ALLOWED), integration active " +
			"(403 SOURCE_DISABLED), signature (401 INVALID_SIGNATURE), JSON (400), object (422 INVALID_PAYLOAD), plugin validation " +
			"(422 INVALID_PAYLOAD naming the field). 202 means the alert is committed; the pipeline `alert-<uuid>` starts from the outbox.",
		Scopes: write, Body: map[string]any{}, Response: ingestResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}}, s.ingestSource)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts", Tag: "Ingestion", Summary: "Create an alert from a source payload",
		Description: "`{\"source_name\", \"payload\"}`: the same checks (no signature: the bearer key authenticates), pipeline and response as POST /v1/ingest/{source_name}.",
		Scopes:      write, Body: createAlertRequest{}, Response: ingestResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusForbidden, http.StatusNotFound}}, s.createAlert)
}

type ingestResponse struct {
	AlertUUID      uuid.UUID `json:"alert_uuid"`
	Status         string    `json:"status" enum:"queued,deduplicated"`
	IsDuplicate    bool      `json:"is_duplicate"`
	DuplicateCount int       `json:"duplicate_count"`
	WorkflowID     string    `json:"workflow_id" doc:"alert-<alert uuid>; for a duplicate, the original's pipeline."`
}

type createAlertRequest struct {
	SourceName string          `json:"source_name" required:"true" minLength:"1" maxLength:"100"`
	Payload    json.RawMessage `json:"payload" required:"true" doc:"The source's payload object."`
}

func errInvalidPayload(msg string, detail validate.Errors) *Error {
	e := NewError(http.StatusUnprocessableEntity, "INVALID_PAYLOAD", msg)
	e.Detail = detail
	return e
}

// checkSource runs the checks that come before the payload: source known, allowed for the key,
// integration active.
func (s *Server) checkSource(c *fiber.Ctx, name string) (sources.Plugin, cachedIntegration, error) {
	plugin, ok := s.deps.SourceRegistry.Get(name)
	if !ok {
		return nil, cachedIntegration{}, NewError(http.StatusNotFound, "UNKNOWN_SOURCE", "Unknown source.").
			WithDetails(map[string]any{"source_name": validate.Truncate(name), "known_sources": s.sourceNames()})
	}
	if !principal(c).AllowsSource(name) {
		return nil, cachedIntegration{}, NewError(http.StatusForbidden, "SOURCE_NOT_ALLOWED", "This API key may not ingest from this source.").
			WithDetails(map[string]any{"source_name": name})
	}
	ci, err := s.integrationFor(c.UserContext(), name)
	if err != nil {
		return nil, cachedIntegration{}, err
	}
	if ci.si != nil && !ci.si.IsActive {
		return nil, cachedIntegration{}, NewError(http.StatusForbidden, "SOURCE_DISABLED", "This source's integration is inactive.").
			WithDetails(map[string]any{"source_name": name})
	}
	return plugin, ci, nil
}

func (s *Server) ingestSource(c *fiber.Ctx) error {
	name := c.Params("source_name")
	plugin, ci, err := s.checkSource(c, name)
	if err != nil {
		return err
	}
	body := c.Request().Body()
	if ci.si != nil {
		headers := func(h string) string { return c.Get(h) }
		if err := sources.VerifySignature(ci.si.AuthType, plugin.SignatureHeader(), ci.secret, headers, body); err != nil {
			if errors.Is(err, sources.ErrInvalidSignature) {
				return NewError(http.StatusUnauthorized, "INVALID_SIGNATURE", "The request signature is missing or wrong.").
					WithDetails(map[string]any{"header": plugin.SignatureHeader()})
			}
			return err
		}
	}
	if err := checkJSONBody(c); err != nil {
		return err
	}
	if !json.Valid(body) {
		return errInvalidJSON(body)
	}
	return s.ingestPayload(c, plugin, ci, body, []any{"body"})
}

func (s *Server) createAlert(c *fiber.Ctx) error {
	var req createAlertRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	plugin, ci, err := s.checkSource(c, req.SourceName)
	if err != nil {
		return err
	}
	return s.ingestPayload(c, plugin, ci, bytes.TrimSpace(req.Payload), []any{"body", "payload"})
}

// checkJSONBody refuses compressed and non-JSON bodies (an absent Content-Type is accepted).
func checkJSONBody(c *fiber.Ctx) error {
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Compressed request bodies are not accepted.")
	}
	if ct := string(c.Request().Header.ContentType()); ct != "" && !isJSONContentType(ct) {
		return errUnsupportedMediaType()
	}
	return nil
}

// ingestPayload runs the payload checks, normalizes, fingerprints and commits. raw is valid JSON.
func (s *Server) ingestPayload(c *fiber.Ctx, plugin sources.Plugin, ci cachedIntegration, raw []byte, loc []any) error {
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return errInvalidJSON(raw)
	}
	payload, ok := decoded.(map[string]any)
	if !ok {
		var errs validate.Errors
		errs.Add(loc, validate.TypeObject, "The payload must be a JSON object.", nil)
		return errInvalidPayload("The payload must be a JSON object.", errs)
	}
	if path, found := validate.FindNUL(payload); found {
		var errs validate.Errors
		errs.Add(append(append([]any{}, loc...), path...), validate.TypeValue, "NUL characters are not accepted.", nil)
		return errInvalidPayload("The payload contains a NUL character.", errs)
	}
	var overrides map[string]string
	if ci.si != nil {
		overrides = ci.si.SeverityMapping
	}
	n, verrs := sources.Normalize(plugin, payload, overrides)
	if len(verrs) > 0 {
		var errs validate.Errors
		errs.Merge(loc, verrs)
		return errInvalidPayload("The payload is not a valid "+plugin.Name()+" alert: "+describeFirst(verrs)+".", errs)
	}
	ctx := c.UserContext()
	mappings, err := s.mappingsFor(ctx, plugin.Name())
	if err != nil {
		return err
	}
	// Passes 1 and 2 make the fingerprint; pass 3 (raw payload) runs in the pipeline.
	pass2 := make([]indicators.Mapping, 0, len(mappings))
	for _, m := range mappings {
		if m.Target == indicators.TargetNormalized {
			pass2 = append(pass2, m)
		}
	}
	res := indicators.Extract(n.Fields, nil, plugin.Name(), n.Indicators, pass2)
	rec := store.NormalizedRecord{Fields: n.Fields, Indicators: make([]store.IndicatorPair, len(n.Indicators)), SourceSeverity: n.SourceSeverity}
	if rec.Fields == nil {
		rec.Fields = map[string]any{}
	}
	for i, ind := range n.Indicators {
		rec.Indicators[i] = store.IndicatorPair{Type: string(ind.Type), Value: ind.Value}
	}
	if n.RuleRef != nil {
		rec.RuleRef = &store.RuleReference{SourceRuleID: n.RuleRef.SourceRuleID, Name: n.RuleRef.Name}
	}
	normalized, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode normalized alert: %w", err)
	}
	p := principal(c)
	in := store.IngestAlert{
		Title: n.Title, Severity: string(n.Severity), SourceName: plugin.Name(), OccurredAt: n.OccurredAt, Tags: n.Tags,
		Fingerprint: sources.Fingerprint(n.Title, plugin.Name(), res.FingerprintIndicators()),
		RawPayload:  raw, Normalized: normalized, ActorType: store.ActorAPI, ActorKeyPrefix: p.KeyPrefix,
	}
	if n.Description != "" {
		in.Description = &n.Description
	}
	out, err := s.deps.Ingest.Ingest(ctx, in, s.cfg.AlertDedupWindow)
	if err != nil {
		return err
	}
	resp := ingestResponse{AlertUUID: out.AlertUUID, Status: "queued", WorkflowID: ids.Alert(out.AlertUUID)}
	if out.Duplicate {
		resp.Status, resp.IsDuplicate, resp.DuplicateCount = "deduplicated", true, out.DuplicateCount
	}
	return respond(c, http.StatusAccepted, resp)
}

func describeFirst(errs validate.Errors) string {
	if len(errs) == 0 {
		return "invalid"
	}
	return validate.LocString(errs[0].Loc) + ": " + errs[0].Msg
}
