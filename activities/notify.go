package activities

import (
	"context"
	"errors"

	"github.com/google/uuid"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/store"
)

// ApprovalNotifier sends an approval request to the configured channel (approvals.Notifier).
type ApprovalNotifier interface {
	Type() string
	Channel(channelOverride string) *string
	Notify(ctx context.Context, r approvals.Request, channelOverride string, token string) (*string, error)
}

// NotifyWorkflowApproval moves the run to pending_approval, issues a fresh single-use decide-page
// token (only its hash is stored), records approval.requested and sends the request to the
// channel. A request that is no longer pending is not sent. A retried attempt issues a new token,
// so only the link in the message that was delivered works.
func (a *Activities) NotifyWorkflowApproval(ctx context.Context, runID uuid.UUID) error {
	run, err := a.WorkflowRuns.GetWorkflowRun(ctx, runID)
	if err != nil {
		return notFoundPermanent(err, "load run")
	}
	if run.ApprovalRequestUUID == nil {
		return sdktemporal.NewNonRetryableApplicationError("run has no approval request", ErrTypeRunBroken, nil)
	}
	if err := a.WorkflowRuns.MarkRunPendingApproval(ctx, runID); err != nil {
		return err
	}
	ap, err := a.WorkflowRuns.GetApproval(ctx, *run.ApprovalRequestUUID)
	if err != nil {
		return notFoundPermanent(err, "load approval")
	}
	if ap.Status != store.ApprovalPending {
		return nil
	}
	notifierType, override := approvals.NotifierNone, ""
	if a.Approvals != nil {
		notifierType = a.Approvals.Type()
	}
	def, err := a.WorkflowRuns.GetWorkflowVersion(ctx, run.WorkflowUUID, run.WorkflowVersion)
	if err != nil {
		return notFoundPermanent(err, "load workflow version")
	}
	if def.ApprovalChannel != nil {
		override = *def.ApprovalChannel
	}
	var token string
	var hash []byte
	if notifierType != approvals.NotifierNone {
		if token, hash, err = approvals.NewToken(); err != nil {
			return err
		}
	}
	var channel *string
	if a.Approvals != nil {
		channel = a.Approvals.Channel(override)
	}
	if err := a.WorkflowRuns.MarkApprovalNotified(ctx, ap.UUID, notifierType, channel, hash); err != nil {
		return err
	}
	if notifierType == approvals.NotifierNone {
		return nil
	}
	req := approvals.Request{UUID: ap.UUID, RunUUID: run.UUID, WorkflowUUID: run.WorkflowUUID, WorkflowName: ap.WorkflowName,
		RiskLevel: ap.RiskLevel, IndicatorType: ap.IndicatorType, IndicatorValue: ap.IndicatorValue, TriggerSource: ap.TriggerSource,
		Confidence: ap.Confidence, RequiredApprovals: ap.RequiredApprovals, ExpiresAt: ap.ExpiresAt.UTC(),
		WorkflowVersion: run.WorkflowVersion, Steps: approvals.Steps(def.Steps)}
	if ap.TriggerKeyPrefix != nil {
		req.TriggerKeyPrefix = *ap.TriggerKeyPrefix
	}
	if ap.Reason != nil {
		req.Reason = *ap.Reason
	}
	if _, err := a.Approvals.Notify(ctx, req, override, token); err != nil {
		var perm *approvals.PermanentError
		if errors.As(err, &perm) {
			return sdktemporal.NewNonRetryableApplicationError("notify approval: "+err.Error(), "ApprovalNotifyPermanent", nil)
		}
		return err
	}
	return nil
}
