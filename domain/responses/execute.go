package responses

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// MaxIdempotencyKeyLen bounds an Idempotency-Key.
const MaxIdempotencyKeyLen = 200

// ExecuteRequest asks to run a workflow against one indicator. Field shapes (enums, lengths, the
// 0..1 range of Confidence) are checked by the front door; the rules are checked here. Validation
// errors name REST locations (body.*, header.Idempotency-Key).
type ExecuteRequest struct {
	WorkflowUUID   uuid.UUID
	IndicatorType  string
	IndicatorValue string
	AlertUUID      *uuid.UUID
	Reason         *string
	Confidence     *float64
	IdempotencyKey string // "" for none
}

// Executed is the committed run, with its approval request when gated.
type Executed struct {
	Run      store.WorkflowRun
	Approval *store.ApprovalRequest
}

// Execute applies the execute rules (API.md §8, seed §4.7) and commits the run, its approval request
// when the gate needs one, and the start outbox entry in one transaction; the worker's dispatcher
// starts the Temporal workflow afterwards, so this never waits on Temporal. A request repeating an
// Idempotency-Key of the same key and workflow returns the run created first, as it is now.
func (s *Service) Execute(ctx context.Context, actor Actor, req ExecuteRequest) (Executed, error) {
	trigger := actor.TriggerSource()
	var errs validate.Errors
	if trigger == auth.KeyTypeAgent {
		if req.Reason == nil || strings.TrimSpace(*req.Reason) == "" {
			errs.Add([]any{"body", "reason"}, validate.TypeMissing, "Agent keys must give a non-empty reason.", nil)
		}
		if req.Confidence == nil {
			errs.Add([]any{"body", "confidence"}, validate.TypeMissing, "Agent keys must give a confidence between 0 and 1.", nil)
		}
	}
	idemKey := req.IdempotencyKey
	if len(idemKey) > MaxIdempotencyKeyLen || strings.ContainsFunc(idemKey, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		errs.Add([]any{"header", "Idempotency-Key"}, validate.TypeValue, "Idempotency-Key must be 1..200 visible ASCII characters.", nil)
	}
	value, nerr := indicators.Normalize(indicators.Type(req.IndicatorType), req.IndicatorValue)
	if nerr != nil {
		errs.Add([]any{"body", "indicator_value"}, validate.TypeValue, "Not a valid "+req.IndicatorType+": "+nerr.Error(), validate.Truncate(req.IndicatorValue))
	}
	if err := errs.Err(); err != nil {
		return Executed{}, err
	}
	st := s.deps.Store
	if idemKey != "" {
		run, err := st.FindIdempotentRun(ctx, actor.KeyUUID, req.WorkflowUUID, idemKey)
		if err == nil {
			return s.executed(ctx, run)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return Executed{}, err
		}
	}
	w, err := st.GetWorkflow(ctx, req.WorkflowUUID)
	if err != nil {
		return Executed{}, notFoundAs(err, "Workflow")
	}
	if w.State != store.WorkflowStateActive {
		return Executed{}, &NotActiveError{State: w.State}
	}
	if err := fitError(w, req.IndicatorType); err != nil {
		return Executed{}, err
	}
	if w.WorkflowType == "alert" && req.AlertUUID == nil {
		var errs validate.Errors
		errs.Add([]any{"body", "alert_uuid"}, validate.TypeMissing, "This workflow acts on an alert: alert_uuid is required.", nil)
		return Executed{}, errs
	}
	if req.AlertUUID != nil {
		if _, err := st.AlertTemplateValues(ctx, *req.AlertUUID); err != nil {
			return Executed{}, notFoundAs(err, "Alert")
		}
	}
	keyUUID, prefix := actor.KeyUUID, actor.KeyPrefix
	run := store.WorkflowRun{UUID: uuid.New(), WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunQueued,
		TriggerSource: trigger, TriggerKeyUUID: &keyUUID, TriggerKeyPrefix: &prefix, Reason: req.Reason, Confidence: req.Confidence,
		IndicatorType: req.IndicatorType, IndicatorValue: value, AlertUUID: req.AlertUUID}
	if idemKey != "" {
		run.IdempotencyKey = &idemKey
	}
	var approval *store.ApprovalRequest
	if approvals.Needed(w.ApprovalMode, trigger) {
		run.Status = store.RunPendingApproval
		approval = &store.ApprovalRequest{UUID: uuid.New(), WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: trigger,
			TriggerKeyUUID: &keyUUID, TriggerKeyPrefix: &prefix, Reason: req.Reason, Confidence: req.Confidence,
			IndicatorType: req.IndicatorType, IndicatorValue: value, RiskLevel: w.RiskLevel, Status: store.ApprovalPending,
			RequiredApprovals: w.RequiredApprovals, ExpiresAt: approvals.ExpiresAt(time.Now(), w.ApprovalTimeoutSeconds),
			NotifierType: approvals.NotifierNone}
	}
	created, err := st.CreateWorkflowRun(ctx, &run, approval)
	if err != nil {
		return Executed{}, err
	}
	if !created {
		// A concurrent request with the same Idempotency-Key won.
		return s.executed(ctx, run)
	}
	return Executed{Run: run, Approval: approval}, nil
}

// executed is an existing run with its approval request.
func (s *Service) executed(ctx context.Context, run store.WorkflowRun) (Executed, error) {
	out := Executed{Run: run}
	if run.ApprovalRequestUUID != nil {
		a, err := s.deps.Store.GetApproval(ctx, *run.ApprovalRequestUUID)
		if err != nil {
			return Executed{}, err
		}
		out.Approval = &a
	}
	return out, nil
}
