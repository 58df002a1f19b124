package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/ids"
)

// WorkflowRun is one execution of a workflow version against one indicator.
type WorkflowRun struct {
	bun.BaseModel `bun:"table:workflow_runs"`

	UUID                uuid.UUID       `bun:"uuid,pk,type:uuid"`
	WorkflowUUID        uuid.UUID       `bun:"workflow_uuid,type:uuid"`
	WorkflowVersion     int             `bun:"workflow_version"`
	Status              string          `bun:"status"`
	TriggerSource       string          `bun:"trigger_source"`
	TriggerKeyUUID      *uuid.UUID      `bun:"trigger_key_uuid,type:uuid"`
	TriggerKeyPrefix    *string         `bun:"trigger_key_prefix"`
	Reason              *string         `bun:"reason"`
	Confidence          *float64        `bun:"confidence"`
	IndicatorType       string          `bun:"indicator_type"`
	IndicatorValue      string          `bun:"indicator_value"`
	AlertUUID           *uuid.UUID      `bun:"alert_uuid,type:uuid"`
	ApprovalRequestUUID *uuid.UUID      `bun:"approval_request_uuid,type:uuid"`
	IdempotencyKey      *string         `bun:"idempotency_key"`
	Steps               json.RawMessage `bun:"steps,type:jsonb"`
	StepState           []byte          `bun:"step_state"`
	Result              json.RawMessage `bun:"result,type:jsonb"`
	Error               *string         `bun:"error"`
	AttemptCount        int             `bun:"attempt_count"`
	DurationMS          *int64          `bun:"duration_ms"`
	StartedAt           *time.Time      `bun:"started_at"`
	CompletedAt         *time.Time      `bun:"completed_at"`
	TemporalWorkflowID  string          `bun:"temporal_workflow_id"`
	CreatedAt           time.Time       `bun:"created_at"`
	UpdatedAt           time.Time       `bun:"updated_at"`
}

// CreateWorkflowRun inserts run (and approval, when the run is gated) and the start outbox entry
// that starts its Temporal workflow in one transaction, then wakes the dispatcher. With an
// idempotency key already used by the same key for the same workflow, nothing is inserted and the
// existing run is returned with created false.
func (s *Store) CreateWorkflowRun(ctx context.Context, run *WorkflowRun, approval *ApprovalRequest) (created bool, err error) {
	now := s.Now()
	if run.UUID == uuid.Nil {
		run.UUID = uuid.New()
	}
	run.TemporalWorkflowID = ids.WorkflowRun(run.UUID)
	run.CreatedAt, run.UpdatedAt = now, now
	if run.Steps == nil {
		run.Steps = json.RawMessage("[]")
	}
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if approval != nil {
			if approval.UUID == uuid.Nil {
				approval.UUID = uuid.New()
			}
			run.ApprovalRequestUUID = &approval.UUID
		}
		if _, err := tx.NewInsert().Model(run).Exec(ctx); err != nil {
			return mapErr(err)
		}
		if approval != nil {
			approval.RunUUID = run.UUID
			approval.CreatedAt, approval.UpdatedAt = now, now
			if approval.Status == "" {
				approval.Status = ApprovalPending
			}
			if _, err := tx.NewInsert().Model(approval).Exec(ctx); err != nil {
				return fmt.Errorf("insert approval request: %w", mapErr(err))
			}
		}
		return insertStart(ctx, tx, StartWorkflowRun, run.UUID)
	})
	if err == nil {
		s.startWake.wake()
		return true, nil
	}
	if run.IdempotencyKey != nil && IsUniqueViolation(err, "workflow_runs_idempotency_key") {
		var existing WorkflowRun
		q := s.db.NewSelect().Model(&existing).Where("workflow_uuid = ? AND idempotency_key = ?", run.WorkflowUUID, *run.IdempotencyKey)
		if run.TriggerKeyUUID != nil {
			q = q.Where("trigger_key_uuid = ?", *run.TriggerKeyUUID)
		}
		if err := q.Scan(ctx); err != nil {
			return false, fmt.Errorf("load idempotent run: %w", mapErr(err))
		}
		*run = existing
		return false, nil
	}
	return false, fmt.Errorf("insert workflow run: %w", err)
}

// FindIdempotentRun returns the run an earlier request with the same key, workflow and
// idempotency key created, or ErrNotFound.
func (s *Store) FindIdempotentRun(ctx context.Context, keyUUID, workflowUUID uuid.UUID, idemKey string) (WorkflowRun, error) {
	var r WorkflowRun
	err := s.db.NewSelect().Model(&r).Where("trigger_key_uuid = ? AND workflow_uuid = ? AND idempotency_key = ?", keyUUID, workflowUUID, idemKey).Scan(ctx)
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("find idempotent run: %w", mapErr(err))
	}
	return r, nil
}

// GetWorkflowRun loads one run.
func (s *Store) GetWorkflowRun(ctx context.Context, id uuid.UUID) (WorkflowRun, error) {
	var r WorkflowRun
	if err := s.db.NewSelect().Model(&r).Where("uuid = ?", id).Scan(ctx); err != nil {
		return WorkflowRun{}, fmt.Errorf("get workflow run %s: %w", id, mapErr(err))
	}
	return r, nil
}

// WorkflowRunFilter narrows ListWorkflowRuns.
type WorkflowRunFilter struct {
	Statuses       []string
	WorkflowUUID   *uuid.UUID
	TriggerSources []string
	Page           Page
}

// ListWorkflowRuns returns runs newest first.
func (s *Store) ListWorkflowRuns(ctx context.Context, f WorkflowRunFilter) ([]WorkflowRun, int, error) {
	var out []WorkflowRun
	q := s.db.NewSelect().Model(&out).ExcludeColumn("step_state").OrderExpr("created_at DESC, uuid DESC")
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.WorkflowUUID != nil {
		q = q.Where("workflow_uuid = ?", *f.WorkflowUUID)
	}
	if len(f.TriggerSources) > 0 {
		q = q.Where("trigger_source IN (?)", bun.List(f.TriggerSources))
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list workflow runs: %w", mapErr(err))
	}
	return out, int(total), nil
}

// MarkRunPendingApproval moves a queued run to pending_approval (no-op otherwise).
func (s *Store) MarkRunPendingApproval(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.NewUpdate().Table("workflow_runs").Set("status = ?, updated_at = ?", RunPendingApproval, s.Now()).
		Where("uuid = ? AND status = ?", id, RunQueued).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark run %s pending approval: %w", id, mapErr(err))
	}
	return nil
}

// StartWorkflowRun moves a queued or approved run to running and returns it. A run already
// running is returned as it is (a retried activity); a final run is returned unchanged so the
// caller sees, e.g., that it was cancelled.
//
// The approval gate is this statement's own condition, not its caller's: a run that has an approval
// request starts only while that request is approved (its quorum met), read in the same UPDATE, so
// no workflow input (a WorkflowRun started straight on Temporal with gated: false, security review
// round 4, R4-5) starts a gated run whose approval is pending, rejected or expired; such a run is
// returned unchanged (still pending_approval).
func (s *Store) StartWorkflowRun(ctx context.Context, id uuid.UUID) (WorkflowRun, error) {
	now := s.Now()
	_, err := s.db.NewUpdate().Table("workflow_runs").
		Set("status = ?, started_at = coalesce(started_at, ?), attempt_count = attempt_count + 1, updated_at = ?", RunRunning, now, now).
		Where("uuid = ? AND status IN (?)", id, bun.List([]string{RunQueued, RunPendingApproval})).
		Where("(approval_request_uuid IS NULL AND status = ?) OR EXISTS (SELECT 1 FROM workflow_approval_requests ar "+
			"WHERE ar.uuid = workflow_runs.approval_request_uuid AND ar.status = ?)", RunQueued, ApprovalApproved).Exec(ctx)
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("start workflow run %s: %w", id, mapErr(err))
	}
	return s.GetWorkflowRun(ctx, id)
}

// RecordRunStep stores step index's masked record (as JSON) and the sealed step state, under a
// row lock so concurrent writers never lose each other's steps.
func (s *Store) RecordRunStep(ctx context.Context, id uuid.UUID, index int, record json.RawMessage, sealedState []byte) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r WorkflowRun
		if err := tx.NewSelect().Model(&r).Column("steps").Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock run %s: %w", id, mapErr(err))
		}
		var steps []json.RawMessage
		if len(r.Steps) > 0 {
			if err := json.Unmarshal(r.Steps, &steps); err != nil {
				return fmt.Errorf("decode steps of run %s: %w", id, err)
			}
		}
		for len(steps) <= index {
			steps = append(steps, json.RawMessage("null"))
		}
		steps[index] = record
		raw, err := json.Marshal(steps)
		if err != nil {
			return fmt.Errorf("encode steps: %w", err)
		}
		q := tx.NewUpdate().Table("workflow_runs").Set("steps = ?, updated_at = ?", string(raw), s.Now()).Where("uuid = ?", id)
		if sealedState != nil {
			q = q.Set("step_state = ?", sealedState)
		}
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("record step %d of run %s: %w", index, id, mapErr(err))
		}
		return nil
	})
}

// FinishWorkflowRun sets a final status once: it changes nothing when the run is already final (a
// cancel that won the race stays). When it does change the run it records workflow_run.completed in
// the same transaction. It returns the run as stored and whether this call finished it.
func (s *Store) FinishWorkflowRun(ctx context.Context, id uuid.UUID, status string, result json.RawMessage, errText *string) (WorkflowRun, bool, error) {
	if !RunFinal(status) {
		return WorkflowRun{}, false, fmt.Errorf("finish run %s: %q is not a final status", id, status)
	}
	changed := false
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r WorkflowRun
		if err := tx.NewSelect().Model(&r).ExcludeColumn("step_state").Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock run %s: %w", id, mapErr(err))
		}
		if RunFinal(r.Status) {
			return nil
		}
		changed = true
		return s.finishLocked(ctx, tx, &r, status, result, errText)
	})
	if err != nil {
		return WorkflowRun{}, false, err
	}
	r, err := s.GetWorkflowRun(ctx, id)
	return r, changed, err
}

func (s *Store) finishLocked(ctx context.Context, tx bun.Tx, r *WorkflowRun, status string, result json.RawMessage, errText *string) error {
	now := s.Now()
	var dur int64
	if r.StartedAt != nil {
		dur = now.Sub(*r.StartedAt).Milliseconds()
	}
	q := tx.NewUpdate().Table("workflow_runs").
		Set("status = ?, error = ?, completed_at = ?, duration_ms = ?, updated_at = ?", status, errText, now, dur, now).
		Where("uuid = ?", r.UUID)
	if result != nil {
		q = q.Set("result = ?", string(result))
	}
	if _, err := q.Exec(ctx); err != nil {
		return fmt.Errorf("finish run %s: %w", r.UUID, mapErr(err))
	}
	if r.ApprovalRequestUUID != nil && (status == RunCancelled) {
		if _, err := tx.NewUpdate().Table("workflow_approval_requests").Set("status = ?, updated_at = ?", ApprovalCancelled, now).
			Where("uuid = ? AND status = ?", *r.ApprovalRequestUUID, ApprovalPending).Exec(ctx); err != nil {
			return fmt.Errorf("cancel approval of run %s: %w", r.UUID, mapErr(err))
		}
	}
	wf := r.WorkflowUUID
	refs := map[string]any{"run_uuid": r.UUID.String(), "status": status, "trigger_source": r.TriggerSource,
		"workflow_version": r.WorkflowVersion}
	if r.ApprovalRequestUUID != nil {
		refs["approval_request_uuid"] = r.ApprovalRequestUUID.String()
	}
	if err := s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "workflow_run.completed", ActorType: ActorWorkflow,
		AlertUUID: r.AlertUUID, WorkflowUUID: &wf, References: refs, CreatedAt: now}); err != nil {
		return err
	}
	// The event carries the run's result (its output step's value when it has one, docs/WORKFLOWS.md).
	var res any
	switch {
	case result != nil:
		res = result
	case len(r.Result) > 0:
		res = r.Result
	}
	_, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventWorkflowRunComplete, AlertUUID: r.AlertUUID},
		map[string]any{"workflow_run": map[string]any{"uuid": r.UUID, "workflow_uuid": r.WorkflowUUID, "result": res,
			"workflow_version": r.WorkflowVersion, "status": status, "trigger_source": r.TriggerSource,
			"trigger_key_prefix": r.TriggerKeyPrefix, "indicator_type": r.IndicatorType, "indicator_value": r.IndicatorValue,
			"alert_uuid": r.AlertUUID, "approval_request_uuid": r.ApprovalRequestUUID, "error": errText,
			"duration_ms": dur, "completed_at": now, "temporal_workflow_id": r.TemporalWorkflowID}})
	return err
}

// ErrRunFinal is returned when cancelling a run that already ended.
var ErrRunFinal = errors.New("run already final")

// CancelWorkflowRun cancels a queued, waiting or running run (and its pending approval request),
// recording workflow_run.completed. A final run gives ErrRunFinal.
func (s *Store) CancelWorkflowRun(ctx context.Context, id uuid.UUID) (WorkflowRun, error) {
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r WorkflowRun
		if err := tx.NewSelect().Model(&r).ExcludeColumn("step_state").Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock run %s: %w", id, mapErr(err))
		}
		if RunFinal(r.Status) {
			return fmt.Errorf("cancel run %s: %w", id, ErrRunFinal)
		}
		msg := "cancelled"
		return s.finishLocked(ctx, tx, &r, RunCancelled, nil, &msg)
	})
	if err != nil {
		return WorkflowRun{}, err
	}
	return s.GetWorkflowRun(ctx, id)
}

// RunAlerts maps each of runs that acts on an alert to that alert's uuid.
func (s *Store) RunAlerts(ctx context.Context, runs []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
	out := make(map[uuid.UUID]uuid.UUID, len(runs))
	if len(runs) == 0 {
		return out, nil
	}
	var rows []struct {
		Run   uuid.UUID `bun:"uuid"`
		Alert uuid.UUID `bun:"alert_uuid"`
	}
	if err := s.db.NewSelect().Table("workflow_runs").Column("uuid", "alert_uuid").
		Where("uuid IN (?) AND alert_uuid IS NOT NULL", bun.List(runs)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("run alerts: %w", err)
	}
	for _, r := range rows {
		out[r.Run] = r.Alert
	}
	return out, nil
}
