package activities

import (
	"context"
	"errors"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/enrichment"
)

// engine is the enrichment engine over this worker's dependencies. The enrichment activities'
// payloads are the engine's inputs and outputs (enrichment.Plan, enrichment.StepInput, …): their JSON
// is the wire format recorded in running workflows' histories.
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

// runEngine runs one engine operation as an activity: not configured is a non-retryable failure,
// and the engine's failures become ApplicationErrors of their types.
func runEngine[I, O any](a *Activities, ctx context.Context, in I, op func(*enrichment.Engine, context.Context, I) (O, error)) (O, error) {
	e, err := a.engine()
	if err != nil {
		var zero O
		return zero, err
	}
	out, err := op(e, ctx, in)
	return out, applicationError(err)
}

// EnrichPlan (local activity) decides, per target and provider, whether the result is already known
// or a call is needed (enrichment.Engine.Plan).
func (a *Activities) EnrichPlan(ctx context.Context, in enrichment.PlanInput) (enrichment.Plan, error) {
	return runEngine(a, ctx, in, (*enrichment.Engine).Plan)
}

// EnrichStep (activity, enrichment queue) runs one HTTP step of a provider call
// (enrichment.Engine.Step). Its failures are ApplicationErrors of type ErrTypeStepPermanent
// (non-retryable), ErrTypeStepRetryable or ErrTypeCircuitOpen, with the masked step record as their
// details.
func (a *Activities) EnrichStep(ctx context.Context, in enrichment.StepInput) (enrichment.StepResult, error) {
	return runEngine(a, ctx, in, (*enrichment.Engine).Step)
}

// EnrichRecord (local activity) turns finished calls into results and records them
// (enrichment.Engine.Record).
func (a *Activities) EnrichRecord(ctx context.Context, in enrichment.RecordInput) (enrichment.RecordResult, error) {
	return runEngine(a, ctx, in, (*enrichment.Engine).Record)
}
