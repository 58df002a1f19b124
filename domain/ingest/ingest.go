// Package ingest turns a source's webhook payload into a committed alert (docs/INGEST.md): the checks
// on the source (known, allowed for the key, integration active, signature), the payload checks, the
// plugin's normalization, extraction passes 1 and 2, the fingerprint and the one-statement commit.
//
// Service is the one owner of these rules; the REST handlers only parse the request and map the
// result. The source integrations and indicator mappings it reads are cached for ConfigTTL, so
// ingesting costs one database round trip (the prepared ingest statement).
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Store is what ingestion needs: the one-statement commit and the configuration it reads.
type Store interface {
	Ingest(ctx context.Context, a store.IngestAlert, window time.Duration) (store.IngestResult, error)
	SourceIntegrationByName(ctx context.Context, sourceName string) (store.SourceIntegration, error)
	ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error)
}

// SecretOpener opens a sealed source-integration secret (*secretbox.Box).
type SecretOpener interface {
	OpenJSON(sealed []byte, v any) error
}

// Secret is a source integration's sealed auth_config.
type Secret struct {
	Secret string `json:"secret"`
}

// Errors of the source checks, in the order they are made.
var (
	ErrUnknownSource    = errors.New("unknown source")
	ErrSourceNotAllowed = errors.New("the key may not ingest from this source")
	ErrSourceDisabled   = errors.New("the source's integration is inactive")
	ErrInvalidSignature = sources.ErrInvalidSignature
	// ErrSourceMisconfigured: the integration's signature settings contradict each other (a signing
	// auth type without a secret, a secret with auth type none); the request is refused (fail closed).
	ErrSourceMisconfigured = sources.ErrMisconfigured
	// ErrInvalidJSON: the payload does not decode (json.Valid accepts numbers Go cannot hold).
	ErrInvalidJSON = errors.New("payload is not valid JSON")
)

// PayloadError is a payload refused by Decode: not a JSON object, or a NUL it cannot replace (API.md
// INVALID_PAYLOAD); the plugins refuse nothing. Detail's
// locations are relative to the payload.
type PayloadError struct {
	Message string
	Detail  validate.Errors
}

func (e *PayloadError) Error() string { return e.Message }

// Service ingests payloads.
type Service struct {
	store    Store
	registry *sources.Registry
	secrets  SecretOpener // nil: integrations with a secret cannot be used
	window   time.Duration

	integrations ttlCache[integration]
	mappings     ttlCache[[]indicators.Mapping]
}

// New returns a Service committing through st with the source plugins of registry. window is the
// dedup window (0 disables dedup).
func New(st Store, registry *sources.Registry, secrets SecretOpener, window time.Duration) *Service {
	return &Service{store: st, registry: registry, secrets: secrets, window: window}
}

// Invalidate drops the cached integrations and mappings (after a write to either through this
// process; other processes see a change within ConfigTTL).
func (s *Service) Invalidate() {
	s.integrations.clear()
	s.mappings.clear()
}

type integration struct {
	si     *store.SourceIntegration // nil: none configured
	secret string
}

// Source is a source that passed the checks before the payload.
type Source struct {
	Plugin      sources.Plugin
	integration integration
}

// SeverityMapping is the integration's severity overrides (nil without an integration).
func (src Source) SeverityMapping() map[string]string {
	if src.integration.si == nil {
		return nil
	}
	return src.integration.si.SeverityMapping
}

// Source runs the checks that come before the payload, in order: the source is known
// (ErrUnknownSource), the key may ingest from it (keyAllows, auth.Principal.AllowsSource; else
// ErrSourceNotAllowed), its integration, if any, is active (ErrSourceDisabled).
func (s *Service) Source(ctx context.Context, name string, keyAllows func(string) bool) (Source, error) {
	plugin, ok := s.registry.Get(name)
	if !ok {
		return Source{}, ErrUnknownSource
	}
	if !keyAllows(name) {
		return Source{}, ErrSourceNotAllowed
	}
	in, err := s.integrationFor(ctx, name)
	if err != nil {
		return Source{}, err
	}
	if in.si != nil && !in.si.IsActive {
		return Source{}, ErrSourceDisabled
	}
	return Source{Plugin: plugin, integration: in}, nil
}

// Configured is plugin as a Source with its integration's configuration (severity overrides, secret)
// and none of the checks: for previews such as the test-extraction route.
func (s *Service) Configured(ctx context.Context, plugin sources.Plugin) (Source, error) {
	in, err := s.integrationFor(ctx, plugin.Name())
	if err != nil {
		return Source{}, err
	}
	return Source{Plugin: plugin, integration: in}, nil
}

// VerifySignature checks body's signature against the integration's scheme and secret; a source
// without an integration is not signed. A missing or wrong signature is ErrInvalidSignature; an
// integration with inconsistent settings is ErrSourceMisconfigured.
func (src Source) VerifySignature(header func(string) string, body []byte) error {
	if src.integration.si == nil {
		return nil
	}
	return sources.VerifySignature(src.integration.si.AuthType, src.Plugin.SignatureHeader(), src.integration.secret, header, body)
}

func (s *Service) integrationFor(ctx context.Context, source string) (integration, error) {
	return s.integrations.get(source, func() (integration, error) {
		var in integration
		si, err := s.store.SourceIntegrationByName(ctx, source)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return in, nil
		case err != nil:
			return in, err
		}
		in.si = &si
		if len(si.AuthConfig) > 0 {
			if s.secrets == nil {
				return in, errors.New("source integration has a secret but no encryption key is configured")
			}
			var sec Secret
			if err := s.secrets.OpenJSON(si.AuthConfig, &sec); err != nil {
				return in, fmt.Errorf("open secret of source %s: %w", source, err)
			}
			in.secret = sec.Secret
		}
		return in, nil
	})
}

// Mappings returns the active indicator mappings that apply to source (cached for ConfigTTL).
func (s *Service) Mappings(ctx context.Context, source string) ([]indicators.Mapping, error) {
	return s.mappings.get(source, func() ([]indicators.Mapping, error) {
		return s.store.ActiveMappings(ctx, source)
	})
}

// Result is what Ingest committed.
type Result struct {
	store.IngestResult
	WorkflowID string // the pipeline of the alert (the original's for a duplicate)
	// SeverityUnmapped: the payload's severity was a value no mapping knows, so the alert is Pending
	// (kept in normalized.source_severity and flagged normalized.severity_unmapped; docs/SOURCES.md).
	SeverityUnmapped bool
}

// Decode decodes a payload (valid JSON) into an object, refusing anything else and NUL characters
// (Postgres text and jsonb cannot hold one). Errors are ErrInvalidJSON or *PayloadError.
func Decode(raw []byte) (map[string]any, error) {
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	payload, ok := decoded.(map[string]any)
	if !ok {
		var errs validate.Errors
		errs.Add([]any{}, validate.TypeObject, "The payload must be a JSON object.", nil)
		return nil, &PayloadError{Message: "The payload must be a JSON object.", Detail: errs}
	}
	if path, found := validate.FindNUL(payload); found {
		var errs validate.Errors
		errs.Add(path, validate.TypeValue, "NUL characters are not accepted.", nil)
		return nil, &PayloadError{Message: "The payload contains a NUL character.", Detail: errs}
	}
	return payload, nil
}

// Normalize runs src's plugin over payload with the integration's severity overrides. No payload
// object is refused for its shape (API.md §2): what it lacks is a fallback listed in n.Notes.
func Normalize(src Source, payload map[string]any) sources.Normalized {
	return sources.Normalize(src.Plugin, payload, src.SeverityMapping())
}

// Notes converts a plugin's notes to the stored form (never nil).
func Notes(in []sources.Note) []store.Note {
	out := make([]store.Note, len(in))
	for i, n := range in {
		out[i] = store.Note{Field: n.Field, Note: n.Note}
	}
	return out
}

// Fingerprint is the alert's dedup fingerprint from its normalized form, an extraction over it (passes
// 1-2) and the payload (sources.AlertFingerprint).
func Fingerprint(n sources.Normalized, source string, res indicators.ExtractionResult, payload map[string]any) string {
	return sources.AlertFingerprint(n, source, res.FingerprintIndicators(), payload)
}

// Ingest decodes raw (valid JSON: the payload as received), normalizes it with src's plugin, extracts
// passes 1 and 2 (pass 3, over the raw payload, runs in the pipeline), fingerprints and commits it
// as actor in one statement; the pipeline then starts from the outbox. Errors are ErrInvalidJSON,
// *PayloadError (the payload is not an object), or the store's.
//
// Hostile characters never cost an alert: NUL, lone UTF-16 surrogates and invalid UTF-8 anywhere in
// raw (which Postgres cannot store) are replaced by U+FFFD before anything reads the payload, and
// the alert is committed flagged input_sanitized with raw kept, as received, in original_body. Nor
// do numbers float64 or jsonb cannot hold (1e309, 1e-20000): they are kept as text in raw_payload
// (validate.QuoteWildNumbers), the body as received in original_body, and noted.
func (s *Service) Ingest(ctx context.Context, src Source, raw []byte, actor store.Actor) (Result, error) {
	clean, hostile := validate.SanitizeJSON(raw)
	clean, wild := validate.QuoteWildNumbers(clean)
	payload, err := Decode(clean)
	if err != nil {
		return Result{}, err
	}
	n := Normalize(src, payload)
	if wild > 0 {
		n.Notes = append(n.Notes, sources.Note{Field: "raw_payload",
			Note: fmt.Sprintf("%d number(s) outside the range Vigil stores as numbers kept as text; original_body has the body as received", wild)})
	}
	name := src.Plugin.Name()
	mappings, err := s.Mappings(ctx, name)
	if err != nil {
		return Result{}, err
	}
	pass2 := make([]indicators.Mapping, 0, len(mappings))
	for _, m := range mappings {
		if m.Target == indicators.TargetNormalized {
			pass2 = append(pass2, m)
		}
	}
	res := indicators.Extract(n.Fields, nil, name, n.Indicators, pass2)
	rec := store.NormalizedRecord{Fields: n.Fields, Indicators: make([]store.IndicatorPair, len(n.Indicators)), SourceSeverity: n.SourceSeverity,
		SeverityUnmapped: n.SeverityUnmapped, NormalizationNotes: Notes(n.Notes)}
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
		return Result{}, fmt.Errorf("encode normalized alert: %w", err)
	}
	in := store.IngestAlert{
		Title: n.Title, Severity: string(n.Severity), SourceName: name, OccurredAt: n.OccurredAt, Tags: n.Tags,
		Fingerprint: Fingerprint(n, name, res, payload),
		RawPayload:  clean, Normalized: normalized, ActorType: actor.Type, ActorKeyPrefix: actor.KeyPrefix,
	}
	if hostile.Count > 0 || wild > 0 {
		in.OriginalBody = raw
	}
	if n.Description != "" {
		in.Description = &n.Description
	}
	out, err := s.store.Ingest(ctx, in, s.window)
	if err != nil {
		return Result{}, err
	}
	return Result{IngestResult: out, WorkflowID: ids.Alert(out.AlertUUID), SeverityUnmapped: n.SeverityUnmapped}, nil
}
