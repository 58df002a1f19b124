// Package enrichment owns the rules of enrichment on demand: enriching one indicator value now with
// every configured provider that supports its type, and the verdict over their results. Every front
// door calls it: REST (POST /v1/enrichments) and the MCP tool enrich_indicator. The providers
// themselves run as Temporal workflows (docs/ENRICHMENT-ENGINE.md) behind the Enricher interface.
package enrichment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Enricher runs the providers for one value, cache first, within ctx (temporal.Enricher).
type Enricher interface {
	Enrich(ctx context.Context, typ, value string) ([]Answer, error)
}

// ErrUnavailable wraps every failure of the Enricher (Temporal unreachable, the bound exceeded): the
// caller may try again later. Front doors answer it as "unavailable" (REST: 503).
var ErrUnavailable = errors.New("enrichment unavailable")

// ProviderResult is one provider's answer.
type ProviderResult struct {
	Status       string // store.EnrichSuccess, EnrichFailed or EnrichSkipped
	Success      bool
	Extracted    map[string]any // never nil
	Malice       string         // the provider's verdict; Pending when it gave none
	EnrichedAt   *time.Time     // UTC; nil when the provider was not called
	ErrorMessage string
	CacheHit     bool
}

// Result is an on-demand enrichment of one value.
type Result struct {
	Type       indicators.Type
	Value      string                    // normalized
	Results    map[string]ProviderResult // by provider name; never nil
	Malice     string                    // worst verdict over the successful providers; Pending without one
	EnrichedAt time.Time                 // UTC
}

// Normalize checks an indicator given on demand and returns its normalized value. Errors are
// validate.Errors located at "type" (not an indicator type) or "value" (not a valid value of it),
// with the input as given; callers relocate them to their own field names.
func Normalize(typ, value string) (indicators.Type, string, validate.Errors) {
	t, err := indicators.ParseType(typ)
	if err != nil {
		var errs validate.Errors
		types := make([]string, 0, len(indicators.Types()))
		for _, t := range indicators.Types() {
			types = append(types, string(t))
		}
		errs.AddCtx([]any{"type"}, validate.TypeEnum, "Unknown indicator type.", typ, map[string]any{"expected": strings.Join(types, ",")})
		return "", "", errs
	}
	norm, err := indicators.Normalize(t, value)
	if err != nil {
		var errs validate.Errors
		errs.Add([]any{"value"}, validate.TypeValue, "Invalid "+typ+" value: "+err.Error(), value)
		return "", "", errs
	}
	return t, norm, nil
}

// OnDemand enriches value (of type typ) now with every configured provider supporting the type,
// through en, and returns each provider's result and the worst verdict over the successful ones. An
// invalid type or value is a validate.Errors (see Normalize); a failing or missing Enricher is
// ErrUnavailable. now stamps the answer once the providers have answered.
func OnDemand(ctx context.Context, en Enricher, now func() time.Time, typ, value string) (Result, error) {
	t, norm, errs := Normalize(typ, value)
	if errs != nil {
		return Result{}, errs
	}
	if en == nil {
		return Result{}, fmt.Errorf("%w: no enricher", ErrUnavailable)
	}
	results, err := en.Enrich(ctx, string(t), norm)
	if err != nil {
		return Result{}, fmt.Errorf("%w: enrich %s: %w", ErrUnavailable, t, err)
	}
	out := Result{Type: t, Value: norm, Results: make(map[string]ProviderResult, len(results)), EnrichedAt: now().UTC()}
	var verdicts []string
	for _, r := range results {
		pr := ProviderResult{Status: r.Status, Success: r.Success, Extracted: r.Extracted, Malice: r.Malice,
			ErrorMessage: r.ErrorMessage, CacheHit: r.CacheHit}
		if pr.Extracted == nil {
			pr.Extracted = map[string]any{}
		}
		if pr.Malice == "" {
			pr.Malice = string(indicators.MalicePending)
		}
		if r.EnrichedAt != nil {
			at := r.EnrichedAt.UTC()
			pr.EnrichedAt = &at
		}
		out.Results[r.Provider] = pr
		if r.Success {
			verdicts = append(verdicts, r.Malice)
		}
	}
	out.Malice = string(indicators.WorstOf(verdicts...))
	return out, nil
}
