package alerts

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Bounds of one add-indicators call (API.md §3).
const (
	MinAddIndicators = 1
	MaxAddIndicators = 100
)

// NewIndicator is an indicator an analyst or agent adds to an alert. A nil Type is inferred from the
// value.
type NewIndicator struct {
	Value string
	Type  *string
}

// IndicatorKeys validates ins (1..MaxAddIndicators; each type known, or inferable from the value; each
// value valid for its type) and returns the normalized keys, reporting every bad element. Locations
// are relative to the list ("indicators", i, "value").
func IndicatorKeys(ins []NewIndicator) ([]store.IndicatorKey, validate.Errors) {
	var errs validate.Errors
	switch {
	case len(ins) < MinAddIndicators:
		errs.AddCtx([]any{"indicators"}, validate.TypeTooShort, "List should have at least 1 item(s).", nil, map[string]any{"min_length": MinAddIndicators})
		return nil, errs
	case len(ins) > MaxAddIndicators:
		errs.AddCtx([]any{"indicators"}, validate.TypeTooLong, "List should have at most 100 item(s).", nil, map[string]any{"max_length": MaxAddIndicators})
		return nil, errs
	}
	keys := make([]store.IndicatorKey, 0, len(ins))
	for i, el := range ins {
		loc := []any{"indicators", i}
		var typ indicators.Type
		if el.Type != nil {
			typ = indicators.Type(*el.Type)
			if !typ.Valid() {
				errs.AddCtx(append(loc, "type"), validate.TypeEnum, "Input should be one of: "+strings.Join(indicators.TypeNames(), ", ")+".",
					validate.Truncate(*el.Type), map[string]any{"expected": indicators.TypeNames()})
				continue
			}
		} else {
			t, ok := indicators.Infer(el.Value)
			if !ok {
				errs.Add(append(loc, "value"), validate.TypeValue, "The indicator type cannot be inferred from the value; give a type.", validate.Truncate(el.Value))
				continue
			}
			typ = t
		}
		v, err := indicators.Normalize(typ, el.Value)
		if err != nil {
			errs.AddCtx(append(loc, "value"), validate.TypeValue, err.Error(), validate.Truncate(el.Value), map[string]any{"type": string(typ)})
			continue
		}
		keys = append(keys, store.IndicatorKey{Type: string(typ), Value: v})
	}
	return keys, errs
}

// EnrichAddedByDefault is whether AddIndicators enriches the indicators it adds when the caller does
// not say (enrich nil): REST's enrich query parameter and MCP's enrich argument, both absent.
const EnrichAddedByDefault = true

// Added is what AddIndicators did.
type Added struct {
	Indicators []store.Indicator // every indicator given, upserted, in the order given (deduplicated)
	NewLinks   int               // links to the alert that did not exist before
	Enriched   bool              // their enrichment was queued
}

// AddIndicators upserts ins globally on (type, value) and links them to the alert, as actor. A nil
// enrichArg means EnrichAddedByDefault. With enrich, the links and one enrichment start per linked
// indicator commit together (the start outbox, docs/INGEST.md "Outbox kinds") with an
// alert_enrichment_requested event: the worker's dispatcher starts the EnrichIndicator workflows, so
// the enrichment is never lost and the call never waits on Temporal. Invalid input is validate.Errors
// (locations relative to the list); a missing alert is store.ErrNotFound.
func (s *Service) AddIndicators(ctx context.Context, alertID uuid.UUID, ins []NewIndicator, enrichArg *bool, actor store.Actor) (Added, error) {
	keys, errs := IndicatorKeys(ins)
	if len(errs) > 0 {
		return Added{}, errs
	}
	enrich := EnrichAddedByDefault
	if enrichArg != nil {
		enrich = *enrichArg
	}
	var inds []store.Indicator
	var added int
	var err error
	if enrich {
		inds, added, err = s.store.LinkIndicatorsForEnrichment(ctx, alertID, keys, actor.Type, actor.Type, actor.KeyPrefix)
	} else {
		inds, added, err = s.store.LinkIndicators(ctx, alertID, keys, actor.Type)
	}
	if err != nil {
		return Added{}, fmt.Errorf("link indicators to alert %s: %w", alertID, err)
	}
	return Added{Indicators: inds, NewLinks: added, Enriched: enrich}, nil
}

// SetIndicatorMalice overrides an indicator's malice as actor: a level is a sticky analyst override
// (enrichment no longer changes it); nil removes the override and recomputes malice from the stored
// enrichment results (indicators.ResultsMalice). An unknown level is validate.Errors at "malice"; a
// missing indicator is store.ErrNotFound.
func (s *Service) SetIndicatorMalice(ctx context.Context, id uuid.UUID, level *string, actor store.Actor) (store.Indicator, error) {
	if level != nil && !slices.Contains(indicators.MaliceNames(), *level) {
		var errs validate.Errors
		errs.AddCtx([]any{"malice"}, validate.TypeEnum, "Input should be one of: "+strings.Join(indicators.MaliceNames(), ", ")+".",
			validate.Truncate(*level), map[string]any{"expected": indicators.MaliceNames()})
		return store.Indicator{}, errs
	}
	if actor.AllowedSources != nil { // the override reaches every alert linked to the indicator
		sources, err := s.store.IndicatorAlertSources(ctx, id)
		if err != nil {
			return store.Indicator{}, err
		}
		if err := actor.CheckSources(sources); err != nil {
			return store.Indicator{}, err
		}
	}
	recompute := func(results map[string]any) string { return string(indicators.ResultsMalice(results)) }
	return s.store.SetIndicatorMalice(ctx, id, level, recompute, actor.Type, actor.KeyPrefix)
}

// IndicatorMaliceScopes are what an indicator malice override needs at every door: it answers with
// the indicator's enrichment results and moves the malice of every alert linked to the indicator,
// which pulls them into cases (security review round 4, R4-3).
var IndicatorMaliceScopes = []string{auth.ScopeAlertsRead, auth.ScopeAlertsWrite}
