package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// WorkflowRunStore is what the workflow-run activities need from the store: the run engine's
// (responses.RunStore) and what notifying an approval writes.
type WorkflowRunStore interface {
	responses.RunStore
	MarkRunPendingApproval(ctx context.Context, id uuid.UUID) error
	MarkApprovalNotified(ctx context.Context, id uuid.UUID, notifierType string, channel *string, tokenHash []byte) error
}

// SecretOpener seals and opens values at rest (secretbox.Box).
type SecretOpener interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Error types of workflow-run activities that retrying cannot fix (the run engine's).
const (
	ErrTypeWorkflowStepPermanent = responses.ErrTypeWorkflowStepPermanent
	ErrTypeRunBroken             = responses.ErrTypeRunBroken
)

// The workflow-run activities' payloads are the run engine's inputs and outputs: their JSON is the
// wire format recorded in running workflows' histories.
type (
	RunGateInput   = responses.RunGateInput
	RunGateResult  = responses.RunGateResult
	RunPlan        = responses.RunPlan
	RunStepInput   = responses.RunStepInput
	RunStepResult  = responses.RunStepResult
	FinishRunInput = responses.FinishRunInput
)

// runner is the response-run engine over this worker's dependencies.
func (a *Activities) runner() *responses.Runner {
	return responses.NewRunner(responses.RunnerDeps{Store: a.WorkflowRuns, Secrets: a.RunSecrets, HTTP: a.StepClient})
}

// runApplicationError raises a run engine failure as the ApplicationError of its type
// (non-retryable unless it says otherwise); other errors are retried as they are.
func runApplicationError(err error) error {
	var e *responses.RunError
	if !errors.As(err, &e) {
		return err
	}
	if e.Retryable {
		return sdktemporal.NewApplicationErrorWithOptions(e.Message, e.Type, sdktemporal.ApplicationErrorOptions{NextRetryDelay: e.RetryAfter})
	}
	return sdktemporal.NewNonRetryableApplicationError(e.Message, e.Type, e.Cause)
}

// ResolveWorkflowRunGate re-reads the run's approval decision from Postgres (responses.Runner.Gate).
func (a *Activities) ResolveWorkflowRunGate(ctx context.Context, in RunGateInput) (RunGateResult, error) {
	out, err := a.runner().Gate(ctx, in)
	return out, runApplicationError(err)
}

// StartWorkflowRunSteps moves the run to running and returns its plan (responses.Runner.Start).
func (a *Activities) StartWorkflowRunSteps(ctx context.Context, runID uuid.UUID) (RunPlan, error) {
	out, err := a.runner().Start(ctx, runID)
	return out, runApplicationError(err)
}

// RunWorkflowStep sends and records one step of the run (responses.Runner.Step). Its permanent
// failures are ApplicationErrors of type ErrTypeWorkflowStepPermanent or ErrTypeRunBroken
// (non-retryable); 5xx, 429 and network errors are retried by the workflow's retry policy.
func (a *Activities) RunWorkflowStep(ctx context.Context, in RunStepInput) (RunStepResult, error) {
	out, err := a.runner().Step(ctx, in)
	return out, runApplicationError(err)
}

// FinishWorkflowRun records the run's final status and result once (responses.Runner.Finish).
func (a *Activities) FinishWorkflowRun(ctx context.Context, in FinishRunInput) (string, error) {
	out, err := a.runner().Finish(ctx, in)
	return out, runApplicationError(err)
}

func notFoundPermanent(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return sdktemporal.NewNonRetryableApplicationError(what+": not found", ErrTypeRunBroken, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
