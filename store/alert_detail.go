package store

import (
	"context"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/targeting"
)

// AlertDetail is an alert with everything its detail view shows (API.md §3 GET /v1/alerts/{uuid}):
// its indicators, detection rule, applicable context documents and findings, and the values computed
// from them (its effective malice is the alert's own, Alert.EffectiveMalice). REST and MCP both read
// it through (*Store).AlertDetail.
type AlertDetail struct {
	Alert            Alert
	Indicators       []Indicator
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
	ds, err := s.AlertDetails(ctx, []Alert{a})
	if err != nil {
		return AlertDetail{}, err
	}
	return ds[a.UUID], nil
}

// AlertDetails loads the detail (AlertDetail) of each alert of as, keyed by its uuid, in six
// statements whatever their number: what a batch of agent events carries.
func (s *Store) AlertDetails(ctx context.Context, as []Alert) (map[uuid.UUID]AlertDetail, error) {
	ids := make([]uuid.UUID, len(as))
	ruleIDs := map[int64]bool{}
	for i, a := range as {
		ids[i] = a.UUID
		if a.DetectionRuleID != nil {
			ruleIDs[*a.DetectionRuleID] = true
		}
	}
	inds, err := s.alertsIndicators(ctx, ids)
	if err != nil {
		return nil, err
	}
	rules, err := s.detectionRulesByID(ctx, slices.Collect(maps.Keys(ruleIDs)))
	if err != nil {
		return nil, err
	}
	findings, err := s.alertsFindings(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]AlertDetail, len(as))
	subjs := make([]targeting.Subject, len(as))
	for i, a := range as {
		d := AlertDetail{Alert: a, Indicators: append([]Indicator{}, inds[a.UUID]...), Findings: append([]Finding{}, findings[a.UUID]...)}
		if a.DetectionRuleID != nil {
			if r, ok := rules[*a.DetectionRuleID]; ok { // absent: the rule was deleted
				d.DetectionRule = &r
			}
		}
		succeeded, failed := map[string]bool{}, map[string]bool{}
		for _, ind := range d.Indicators {
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
		// Never nil: the lists are answered as JSON arrays.
		d.EnrichmentSucceeded = append([]string{}, slices.Sorted(maps.Keys(succeeded))...)
		d.EnrichmentFailed = append([]string{}, slices.Sorted(maps.Keys(failed))...)
		subjs[i] = SubjectFor(a.SourceName, a.Severity, a.Title, a.Tags, d.DetectionRule)
		out[a.UUID] = d
	}
	docs, err := s.applicableContextDocuments(ctx, subjs)
	if err != nil {
		return nil, err
	}
	for i, a := range as {
		d := out[a.UUID]
		d.ContextDocuments = docs[i]
		out[a.UUID] = d
	}
	return out, nil
}
