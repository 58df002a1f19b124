package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// StartStore is what the dispatcher needs to start the entries of the start outbox (workflow runs,
// indicator enrichments and agent-event deliveries; docs/INGEST.md "Outbox kinds").
type StartStore interface {
	DispatchStarts(ctx context.Context, limit int, start store.StartFunc) (int, error)
	GetWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	GetWorkflowVersion(ctx context.Context, id uuid.UUID, version int) (store.WorkflowDefinition, error)
	GetApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
}

// DrainStarts starts due start-outbox entries until none is left (entries backed off are left for
// later) and returns how many it claimed.
func (d *Dispatcher) DrainStarts(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := d.st.DispatchStarts(ctx, d.opts.Batch, d.startEntries)
		total += n
		if err != nil {
			return total, err
		}
		if n < d.opts.Batch {
			return total, nil
		}
	}
}

// startEntries starts the claimed entries and reports each outcome: the agent events of the claim
// together, as one DeliverEvents batch (their outcome is the batch start's), every other entry as one
// Temporal workflow of its own, concurrently.
func (d *Dispatcher) startEntries(ctx context.Context, entries []store.StartEntry) []error {
	var events []uuid.UUID
	var others []store.StartEntry
	var otherAt []int
	for i, e := range entries {
		if e.Kind == store.StartAgentEvent {
			events = append(events, e.SubjectUUID)
			continue
		}
		others, otherAt = append(others, e), append(otherAt, i)
	}
	errs := make([]error, len(entries))
	if len(events) > 0 {
		sctx, cancel := context.WithTimeout(ctx, d.opts.StartLimit)
		err := NewEventStarter(d.c, d.queues).StartAgentEvents(sctx, events)
		cancel()
		if err != nil {
			d.log.Warn("start agent event batch failed; will retry", "events", len(events), "err", err)
		}
		for i, e := range entries {
			if e.Kind == store.StartAgentEvent {
				errs[i] = err
			}
		}
	}
	otherErrs := startConcurrently(others, d.opts.Concurrency, func(e store.StartEntry) error {
		err := d.startEntry(ctx, e)
		if err != nil && !errors.Is(err, store.ErrOutboxDone) {
			d.log.Warn("start failed; will retry", "kind", e.Kind, "subject_uuid", e.SubjectUUID.String(),
				"attempts", e.Attempts+1, "err", err)
		}
		return err
	})
	for j, err := range otherErrs {
		errs[otherAt[j]] = err
	}
	return errs
}

func (d *Dispatcher) startEntry(ctx context.Context, e store.StartEntry) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartLimit)
	defer cancel()
	switch e.Kind {
	case store.StartWorkflowRun:
		return d.startRun(ctx, e.SubjectUUID)
	case store.StartIndicatorEnrichment:
		_, err := StartEnrichIndicator(ctx, d.c, d.queues, e.SubjectUUID)
		return err
	}
	// A kind this binary does not know (a newer one wrote it): leave it for a worker that does.
	return fmt.Errorf("unknown start kind %q", e.Kind)
}

// startRun starts workflow-run-<id>. A run gone has nothing to start. A run cancelled before its start
// is started all the same: its workflow reads the final status and ends cancelled at once (nothing is
// notified or sent), so every run has its Temporal workflow. A run already started (an entry replayed
// after a crash) is not started again: REJECT_DUPLICATE and already-started count as done.
func (d *Dispatcher) startRun(ctx context.Context, id uuid.UUID) error {
	run, err := d.st.GetWorkflowRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.ErrOutboxDone
	}
	if err != nil {
		return err
	}
	def, err := d.st.GetWorkflowVersion(ctx, run.WorkflowUUID, run.WorkflowVersion)
	if err != nil {
		return fmt.Errorf("load workflow of run %s: %w", id, err)
	}
	var expires time.Time
	if run.ApprovalRequestUUID != nil {
		a, err := d.st.GetApproval(ctx, *run.ApprovalRequestUUID)
		if err != nil {
			return fmt.Errorf("load approval of run %s: %w", id, err)
		}
		expires = a.ExpiresAt
	}
	return startWorkflowRun(ctx, d.c, d.queues, run, def.Name, run.ApprovalRequestUUID != nil, expires)
}

// startWorkflowRun starts workflow-run-<uuid> for run. Starting a run that was already started is not
// an error, and a closed run is never started again. A gated run starts with SignalRunUpdate already
// delivered (signal-with-start): a decision committed before the workflow existed (the signal sent
// then found nothing) is read at once instead of at expires_at; a pending one is re-read and waited
// for as before.
func startWorkflowRun(ctx context.Context, c client.Client, queues Queues, run store.WorkflowRun, workflowName string, gated bool, expiresAt time.Time) error {
	id := ids.WorkflowRun(run.UUID)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                queues.Actions,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    workflows.RunSearchAttributes(workflowName, run.TriggerSource, run.Status),
	}
	in := workflows.WorkflowRunInput{RunUUID: run.UUID, Gated: gated, ExpiresAt: expiresAt.UTC()}
	var err error
	if gated {
		_, err = c.SignalWithStartWorkflow(ctx, id, workflows.SignalRunUpdate, nil, opts, "WorkflowRun", in)
	} else {
		_, err = c.ExecuteWorkflow(ctx, opts, "WorkflowRun", in)
	}
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s: %w", id, err)
	}
	return nil
}
