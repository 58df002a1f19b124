package store

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// AlertDetail is an alert with everything its detail view shows (API.md §3 GET /v1/alerts/{uuid}):
// its indicators, detection rule, applicable context documents and findings, and the values computed
// from them. REST and MCP both read it through (*Store).AlertDetail.
type AlertDetail struct {
	Alert            Alert
	Indicators       []Indicator
	Malice           string         // effective malice (indicators.AlertMalice)
	DetectionRule    *DetectionRule // nil: no rule, or the rule was deleted
	ContextDocuments []ContextDocument
	Findings         []Finding
	// EnrichmentSucceeded and EnrichmentFailed name the providers (sorted) with a success or failure
	// result on any of the alert's indicators.
	EnrichmentSucceeded []string
	EnrichmentFailed    []string
}

// RuleMatched reports whether the alert's rule is a documented (non-stub) rule.
func (d AlertDetail) RuleMatched() bool { return d.DetectionRule != nil && !d.DetectionRule.IsStub }

// AlertDetail loads what the detail view of a shows beside the alert itself.
func (s *Store) AlertDetail(ctx context.Context, a Alert) (AlertDetail, error) {
	inds, err := s.AlertIndicators(ctx, a.UUID)
	if err != nil {
		return AlertDetail{}, err
	}
	d := AlertDetail{Alert: a, Indicators: inds}
	malices := make([]string, len(inds))
	succeeded, failed := map[string]bool{}, map[string]bool{}
	for i, ind := range inds {
		malices[i] = ind.Malice
		for provider, r := range ind.EnrichmentResults {
			m, _ := r.(map[string]any)
			switch status, _ := m["status"].(string); status {
			case EnrichSuccess:
				succeeded[provider] = true
			case EnrichFailed:
				failed[provider] = true
			}
		}
	}
	d.Malice = string(indicators.AlertMalice(a.MaliceOverride, malices))
	// Never nil: the lists are answered as JSON arrays.
	d.EnrichmentSucceeded = append([]string{}, slices.Sorted(maps.Keys(succeeded))...)
	d.EnrichmentFailed = append([]string{}, slices.Sorted(maps.Keys(failed))...)
	if a.DetectionRuleID != nil {
		r, err := s.GetDetectionRuleByID(ctx, *a.DetectionRuleID)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return AlertDetail{}, err
		default:
			d.DetectionRule = &r
		}
	}
	if d.ContextDocuments, err = s.ApplicableContextDocuments(ctx, SubjectFor(a.SourceName, a.Severity, a.Title, a.Tags, d.DetectionRule)); err != nil {
		return AlertDetail{}, err
	}
	if d.Findings, err = s.ListFindings(ctx, a.UUID); err != nil {
		return AlertDetail{}, err
	}
	return d, nil
}
