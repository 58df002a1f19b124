package responses

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Fits reports whether workflow w may run against an indicator of type indicatorType: w accepts every
// type (empty indicator_types) or lists it. Execute refuses what does not fit (422); launchers offer
// only what fits.
func Fits(w store.Workflow, indicatorType string) bool {
	return len(w.IndicatorTypes) == 0 || slices.Contains(w.IndicatorTypes, indicatorType)
}

// Destructive reports whether a workflow's declared risk is high or critical: a launcher never
// preselects it and shows it as such.
func Destructive(riskLevel string) bool { return riskLevel == "high" || riskLevel == "critical" }

// riskRank orders declared risks, the least first (RiskLevels); an unknown one sorts last.
func riskRank(risk string) int {
	levels := RiskLevels()
	if i := slices.Index(levels, risk); i >= 0 {
		return i
	}
	return len(levels)
}

// Choice is a workflow a launcher offers against one indicator, with what it would do: the steps of
// its current version (method, host, path as defined, approvals.Steps) and how it is gated.
type Choice struct {
	WorkflowUUID      uuid.UUID
	Name, RiskLevel   string
	ApprovalMode      string
	RequiredApprovals int
	Version           int
	Tags              []string
	// Gated: a run this actor starts waits for approval (approvals.Needed for the actor's trigger).
	Gated bool
	// Destructive: the declared risk is high or critical.
	Destructive bool
	Steps       []approvals.Step
}

// Launch is one indicator with the workflows that fit it.
type Launch struct {
	Indicator store.Indicator
	// Internal says why the value is an internal, private or otherwise non-routable address or name
	// (netguard.NonRoutable: RFC 1918, loopback, link-local, ULA, CGNAT, reserved ranges, .local and
	// similar names); "" when it is not. Vigil knows no organisation-specific ranges.
	Internal string
	Choices  []Choice
}

// InternalAddress is why an indicator value is an internal address or name ("" when it is not): the
// rule enrichment applies before sending a value to an external provider (netguard.NonRoutable).
func InternalAddress(indicatorType, value string) string {
	reason, internal := netguard.NonRoutable(indicatorType, value)
	if !internal {
		return ""
	}
	return reason
}

// Launcher lists, per indicator (in the order given), the active workflows that fit it (Fits), the
// least risky first, each with its steps and gate for actor; and whether the value is internal. One
// read of the candidate workflows serves every indicator.
func (s *Service) Launcher(ctx context.Context, actor Actor, inds []store.Indicator) ([]Launch, error) {
	var types []string
	for _, ind := range inds {
		if !slices.Contains(types, ind.Type) {
			types = append(types, ind.Type)
		}
	}
	wfs, err := s.deps.Store.WorkflowsForIndicatorTypes(ctx, types)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(wfs, func(a, b store.Workflow) int {
		return cmp.Or(cmp.Compare(riskRank(a.RiskLevel), riskRank(b.RiskLevel)), cmp.Compare(a.Name, b.Name))
	})
	choices := make([]Choice, len(wfs))
	for i, w := range wfs {
		choices[i] = s.choice(actor, w)
	}
	out := make([]Launch, len(inds))
	for i, ind := range inds {
		l := Launch{Indicator: ind, Internal: InternalAddress(ind.Type, ind.Value), Choices: []Choice{}}
		for j, w := range wfs {
			if Fits(w, ind.Type) {
				l.Choices = append(l.Choices, choices[j])
			}
		}
		out[i] = l
	}
	return out, nil
}

// Preview is what running workflow id against ind would do, before it runs: the workflow as a Choice
// and the indicator's Launch (internal address). A workflow that is unknown (NotFoundError), not active
// (NotActiveError) or does not fit the indicator (the validation error Execute answers) is refused as
// Execute would refuse it.
func (s *Service) Preview(ctx context.Context, actor Actor, ind store.Indicator, id uuid.UUID) (Launch, error) {
	w, err := s.deps.Store.GetWorkflow(ctx, id)
	if err != nil {
		return Launch{}, notFoundAs(err, "Workflow")
	}
	if w.State != store.WorkflowStateActive {
		return Launch{}, &NotActiveError{State: w.State}
	}
	if err := fitError(w, ind.Type); err != nil {
		return Launch{}, err
	}
	return Launch{Indicator: ind, Internal: InternalAddress(ind.Type, ind.Value), Choices: []Choice{s.choice(actor, w)}}, nil
}

// fitError is Execute's refusal of a workflow that does not fit the indicator type (422 on
// body.indicator_type), nil when it fits.
func fitError(w store.Workflow, indicatorType string) error {
	if Fits(w, indicatorType) {
		return nil
	}
	var errs validate.Errors
	errs.AddCtx([]any{"body", "indicator_type"}, validate.TypeEnum, "This workflow accepts indicator types: "+strings.Join(w.IndicatorTypes, ", ")+".",
		indicatorType, map[string]any{"expected": w.IndicatorTypes})
	return errs
}

func (s *Service) choice(actor Actor, w store.Workflow) Choice {
	return Choice{WorkflowUUID: w.UUID, Name: w.Name, RiskLevel: w.RiskLevel, ApprovalMode: w.ApprovalMode,
		RequiredApprovals: w.RequiredApprovals, Version: w.Version, Tags: w.Tags,
		Gated: approvals.Needed(w.ApprovalMode, actor.TriggerSource()), Destructive: Destructive(w.RiskLevel), Steps: approvals.Steps(w.Steps)}
}
