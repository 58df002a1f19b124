package alerts

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Finding limits (API.md §3).
const (
	MaxAgentNameLength         = 200   // characters
	MaxSummaryLength           = 50000 // characters
	MaxRecommendedActionLength = 10000 // characters
	MaxEvidenceBytes           = 64 << 10
)

// Confidences returns the confidence levels a finding may carry.
func Confidences() []string { return []string{"low", "medium", "high"} }

// NewFinding is an agent's finding about an alert. Findings are append-only: there is no update.
type NewFinding struct {
	AgentName         string
	Summary           string
	Confidence        *string
	RecommendedAction *string
	Evidence          map[string]any // free-form, at most MaxEvidenceBytes of JSON
}

// Validate checks the bounds and refuses NUL characters. Locations are the field names.
func (f NewFinding) Validate() validate.Errors {
	var errs validate.Errors
	length := func(loc, v string, minLen, maxLen int) {
		switch n := len([]rune(v)); {
		case n < minLen:
			errs.AddCtx([]any{loc}, validate.TypeStringTooShort, fmt.Sprintf("String should have at least %d character(s).", minLen),
				validate.Truncate(v), map[string]any{"min_length": minLen})
		case n > maxLen:
			errs.AddCtx([]any{loc}, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d character(s).", maxLen),
				validate.Truncate(v), map[string]any{"max_length": maxLen})
		}
	}
	length("agent_name", f.AgentName, 1, MaxAgentNameLength)
	length("summary", f.Summary, 1, MaxSummaryLength)
	if f.RecommendedAction != nil {
		length("recommended_action", *f.RecommendedAction, 0, MaxRecommendedActionLength)
	}
	if f.Confidence != nil && !slices.Contains(Confidences(), *f.Confidence) {
		errs.AddCtx([]any{"confidence"}, validate.TypeEnum, "Input should be one of: "+strings.Join(Confidences(), ", ")+".",
			*f.Confidence, map[string]any{"expected": Confidences()})
	}
	for loc, v := range map[string]string{"agent_name": f.AgentName, "summary": f.Summary} {
		if strings.IndexByte(v, 0) >= 0 {
			errs.Add([]any{loc}, validate.TypeValue, "NUL characters are not accepted.", nil)
		}
	}
	if f.RecommendedAction != nil && strings.IndexByte(*f.RecommendedAction, 0) >= 0 {
		errs.Add([]any{"recommended_action"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	if f.Evidence != nil {
		if size := validate.JSONSize(f.Evidence); size > MaxEvidenceBytes {
			errs.AddCtx([]any{"evidence"}, validate.TypeTooLong, "evidence must be at most 64 KB of JSON.", nil,
				map[string]any{"max_bytes": MaxEvidenceBytes, "bytes": size})
		} else if p, found := validate.FindNUL(f.Evidence); found {
			errs.Add(append([]any{"evidence"}, p...), validate.TypeValue, "NUL characters are not accepted.", nil)
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return validate.LocString(errs[i].Loc) < validate.LocString(errs[j].Loc) })
	return errs
}

// AddFinding appends f to the alert as actor (an agent_finding_posted event in the same transaction)
// and returns the stored finding. A missing alert is store.ErrNotFound.
func (s *Service) AddFinding(ctx context.Context, alertID uuid.UUID, f NewFinding, actor store.Actor) (store.Finding, error) {
	if errs := f.Validate(); len(errs) > 0 {
		return store.Finding{}, errs
	}
	row := store.Finding{AlertUUID: alertID, AgentName: f.AgentName, Summary: f.Summary, Confidence: f.Confidence,
		RecommendedAction: f.RecommendedAction, Evidence: f.Evidence, ActorKeyPrefix: actor.KeyPrefixPtr()}
	if err := s.store.CreateFinding(ctx, &row, actor.Type); err != nil {
		return store.Finding{}, fmt.Errorf("add finding to alert %s: %w", alertID, err)
	}
	return row, nil
}

// Findings returns the alert's findings, oldest first. A missing alert is store.ErrNotFound.
func (s *Service) Findings(ctx context.Context, alertID uuid.UUID) ([]store.Finding, error) {
	if err := s.store.AlertExists(ctx, alertID); err != nil {
		return nil, err
	}
	return s.store.ListFindings(ctx, alertID)
}
