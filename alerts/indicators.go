package alerts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/indicators"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/validate"
)

// Bounds of one add-indicators call (API.md §3).
const (
	MinAddIndicators = 1
	MaxAddIndicators = 100
)

// enrichStartTimeout bounds the wait for Temporal when starting enrichment of added indicators.
const enrichStartTimeout = 2 * time.Second

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

// Added is what AddIndicators did.
type Added struct {
	Indicators []store.Indicator // every indicator given, upserted, in the order given (deduplicated)
	NewLinks   int               // links to the alert that did not exist before
}

// AddIndicators upserts ins globally on (type, value) and links them to the alert, as actor. With
// enrich, the linked indicators are enriched: through the IndicatorEnricher when one is wired and
// Temporal takes the starts within two seconds, else by queueing the alert's pipeline re-run through
// the outbox (which enriches every indicator of the alert), so the call never depends on Temporal.
// Invalid input is validate.Errors (locations relative to the list); a missing alert is
// store.ErrNotFound.
func (s *Service) AddIndicators(ctx context.Context, alertID uuid.UUID, ins []NewIndicator, enrich bool, actor store.Actor) (Added, error) {
	keys, errs := IndicatorKeys(ins)
	if len(errs) > 0 {
		return Added{}, errs
	}
	inds, added, err := s.store.LinkIndicators(ctx, alertID, keys, actor.Type)
	if err != nil {
		return Added{}, fmt.Errorf("link indicators to alert %s: %w", alertID, err)
	}
	if enrich && len(inds) > 0 {
		if err := s.enrichAdded(ctx, alertID, inds, actor); err != nil {
			return Added{}, err
		}
	}
	return Added{Indicators: inds, NewLinks: added}, nil
}

func (s *Service) enrichAdded(ctx context.Context, alertID uuid.UUID, inds []store.Indicator, actor store.Actor) error {
	if s.enricher != nil {
		ids := make([]uuid.UUID, len(inds))
		for i, ind := range inds {
			ids[i] = ind.UUID
		}
		startCtx, cancel := context.WithTimeout(ctx, enrichStartTimeout)
		defer cancel()
		_, err := s.enricher.StartIndicatorEnrichment(startCtx, ids)
		if err == nil {
			return nil
		}
		s.log.WarnContext(ctx, "start indicator enrichment failed; queueing the alert's pipeline instead", "alert_uuid", alertID.String(), "err", err)
	}
	if err := s.store.EnqueueRerun(ctx, alertID, actor.Type, actor.KeyPrefix); err != nil {
		return fmt.Errorf("queue pipeline re-run of alert %s: %w", alertID, err)
	}
	return nil
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
	recompute := func(results map[string]any) string { return string(indicators.ResultsMalice(results)) }
	return s.store.SetIndicatorMalice(ctx, id, level, recompute, actor.Type, actor.KeyPrefix)
}
