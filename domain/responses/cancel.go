package responses

import (
	"context"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// ErrRunFinal: the run has already ended and cannot be cancelled (409 RUN_NOT_CANCELLABLE).
var ErrRunFinal = store.ErrRunFinal

// CancelRun cancels run id — a queued, waiting or running run, with its pending approval request —
// and then signals its workflow, which re-reads Postgres and stops before its next step. A run that
// already ended is ErrRunFinal; an unknown one a *NotFoundError.
func (s *Service) CancelRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error) {
	r, err := s.deps.Store.CancelWorkflowRun(ctx, id)
	if err != nil {
		return store.WorkflowRun{}, notFoundAs(err, "Workflow run")
	}
	s.signal(ctx, id)
	return r, nil
}

// signal tells run id's workflow to re-read Postgres. The change is already committed, so a failure
// is logged, not returned: the workflow also re-reads before each step and at its durable timers.
func (s *Service) signal(ctx context.Context, id uuid.UUID) {
	if s.deps.Signaler == nil {
		return
	}
	if err := s.deps.Signaler.SignalWorkflowRun(ctx, id); err != nil {
		s.log.WarnContext(ctx, "signal workflow run", "err", err, "run_uuid", id)
	}
}
