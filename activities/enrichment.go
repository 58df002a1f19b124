package activities

import (
	"context"
	"errors"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/enrichment"
)

// EnrichmentDeps are what the enrichment activities need: the engine's dependencies.
type EnrichmentDeps = enrichment.EngineDeps

// The enrichment activities' payloads are the engine's inputs and outputs (domain/enrichment): their
// JSON is the wire format recorded in running workflows' histories.
type (
	EnrichTarget       = enrichment.Target
	EnrichPlanInput    = enrichment.PlanInput
	PlannedStep        = enrichment.PlannedStep
	PlannedCall        = enrichment.PlannedCall
	Outcome            = enrichment.Outcome
	EnrichPlan         = enrichment.Plan
	EnrichStepInput    = enrichment.StepInput
	EnrichStepResult   = enrichment.StepResult
	CallOutcome        = enrichment.CallOutcome
	EnrichRecordInput  = enrichment.RecordInput
	EnrichRecordResult = enrichment.RecordResult
)

// Error types of enrichment activities (ApplicationError types), and the limits the workflows use.
const (
	ErrTypeStepPermanent = enrichment.ErrTypeStepPermanent
	ErrTypeStepRetryable = enrichment.ErrTypeStepRetryable
	ErrTypeCircuitOpen   = enrichment.ErrTypeCircuitOpen
	InlineSlotWait       = enrichment.InlineSlotWait
)

func (a *Activities) engine() (*enrichment.Engine, error) {
	if a.Enrichment == nil || a.Enrichment.Store == nil || a.Enrichment.Box == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("enrichment is not configured on this worker", "EnrichNotConfigured", nil)
	}
	return enrichment.NewEngine(*a.Enrichment, a.Log), nil
}

// applicationError raises an engine failure as the ApplicationError of its type (non-retryable
// unless it says otherwise), with the failed step's record as its details.
func applicationError(err error) error {
	var e *enrichment.Error
	if !errors.As(err, &e) {
		return err
	}
	var details []any
	if e.Record != nil {
		details = append(details, *e.Record)
	}
	if e.Retryable {
		return sdktemporal.NewApplicationError(e.Message, e.Type, details...)
	}
	return sdktemporal.NewNonRetryableApplicationError(e.Message, e.Type, e.Cause, details...)
}

// EnrichPlan (local activity) decides, per target and provider, whether the result is already known
// or a call is needed (enrichment.Engine.Plan).
func (a *Activities) EnrichPlan(ctx context.Context, in EnrichPlanInput) (EnrichPlan, error) {
	e, err := a.engine()
	if err != nil {
		return EnrichPlan{}, err
	}
	plan, err := e.Plan(ctx, in)
	return plan, applicationError(err)
}

// EnrichStep (activity, enrichment queue) runs one HTTP step of a provider call
// (enrichment.Engine.Step). Its failures are ApplicationErrors of type ErrTypeStepPermanent
// (non-retryable), ErrTypeStepRetryable or ErrTypeCircuitOpen, with the masked step record as their
// details.
func (a *Activities) EnrichStep(ctx context.Context, in EnrichStepInput) (EnrichStepResult, error) {
	e, err := a.engine()
	if err != nil {
		return EnrichStepResult{}, err
	}
	res, err := e.Step(ctx, in)
	return res, applicationError(err)
}

// EnrichRecord (local activity) turns finished calls into results and records them
// (enrichment.Engine.Record).
func (a *Activities) EnrichRecord(ctx context.Context, in EnrichRecordInput) (EnrichRecordResult, error) {
	e, err := a.engine()
	if err != nil {
		return EnrichRecordResult{}, err
	}
	res, err := e.Record(ctx, in)
	return res, applicationError(err)
}
