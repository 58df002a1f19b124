package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Errors of DecideApproval.
var (
	ErrApprovalDecided = errors.New("approval already decided")
	ErrApprovalExpired = errors.New("approval expired")
	ErrSelfApproval    = errors.New("self approval")
	ErrResponderVoted  = errors.New("responder already decided")
	ErrDecideToken     = errors.New("decide token invalid or used")
)

// ApprovalRequest gates one run.
type ApprovalRequest struct {
	bun.BaseModel `bun:"table:workflow_approval_requests"`

	UUID              uuid.UUID  `bun:"uuid,pk,type:uuid"`
	WorkflowUUID      uuid.UUID  `bun:"workflow_uuid,type:uuid"`
	WorkflowName      string     `bun:"workflow_name"`
	RunUUID           uuid.UUID  `bun:"run_uuid,type:uuid"`
	TriggerSource     string     `bun:"trigger_source"`
	TriggerKeyUUID    *uuid.UUID `bun:"trigger_key_uuid,type:uuid"`
	TriggerKeyPrefix  *string    `bun:"trigger_key_prefix"`
	Reason            *string    `bun:"reason"`
	Confidence        *float64   `bun:"confidence"`
	IndicatorType     string     `bun:"indicator_type"`
	IndicatorValue    string     `bun:"indicator_value"`
	RiskLevel         string     `bun:"risk_level"`
	Status            string     `bun:"status"`
	RequiredApprovals int        `bun:"required_approvals"`
	ExpiresAt         time.Time  `bun:"expires_at"`
	NotifierType      string     `bun:"notifier_type"`
	NotifierChannel   *string    `bun:"notifier_channel"`
	NotifiedAt        *time.Time `bun:"notified_at"`
	DecideTokenHash   []byte     `bun:"decide_token_hash"`
	DecideTokenUsedAt *time.Time `bun:"decide_token_used_at"`
	RejectionReason   *string    `bun:"rejection_reason"`
	CreatedAt         time.Time  `bun:"created_at"`
	UpdatedAt         time.Time  `bun:"updated_at"`

	Decisions []ApprovalDecision `bun:"-"`
}

// ApprovalDecision is one responder's decision.
type ApprovalDecision struct {
	bun.BaseModel `bun:"table:workflow_approval_decisions"`

	ApprovalUUID uuid.UUID `bun:"approval_uuid,pk,type:uuid"`
	Identity     string    `bun:"identity,pk"`
	ResponderID  string    `bun:"responder_id"`
	Decision     string    `bun:"decision"`
	Comment      *string   `bun:"comment"`
	DecidedAt    time.Time `bun:"decided_at"`
	KeyPrefix    *string   `bun:"key_prefix"`    // the deciding API key
	KeyName      *string   `bun:"key_name"`      // its name
	VerifiedUser *string   `bun:"verified_user"` // the Slack user or decide-page holder, verified by signature or token
	Human        bool      `bun:"human"`         // counts toward the quorum
}

func (s *Store) loadDecisions(ctx context.Context, db bun.IDB, reqs []ApprovalRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(reqs))
	for i, r := range reqs {
		ids[i] = r.UUID
	}
	var ds []ApprovalDecision
	if err := db.NewSelect().Model(&ds).Where("approval_uuid IN (?)", bun.List(ids)).OrderExpr("decided_at ASC, identity ASC").Scan(ctx); err != nil {
		return fmt.Errorf("load approval decisions: %w", mapErr(err))
	}
	for i := range reqs {
		reqs[i].Decisions = []ApprovalDecision{}
		for _, d := range ds {
			if d.ApprovalUUID == reqs[i].UUID {
				reqs[i].Decisions = append(reqs[i].Decisions, d)
			}
		}
	}
	return nil
}

// GetApproval loads one approval request with its decisions.
func (s *Store) GetApproval(ctx context.Context, id uuid.UUID) (ApprovalRequest, error) {
	var a ApprovalRequest
	if err := s.db.NewSelect().Model(&a).Where("uuid = ?", id).Scan(ctx); err != nil {
		return ApprovalRequest{}, fmt.Errorf("get approval %s: %w", id, mapErr(err))
	}
	reqs := []ApprovalRequest{a}
	if err := s.loadDecisions(ctx, s.db, reqs); err != nil {
		return ApprovalRequest{}, err
	}
	return reqs[0], nil
}

// GetApprovalForRun loads the approval request of a run.
func (s *Store) GetApprovalForRun(ctx context.Context, runID uuid.UUID) (ApprovalRequest, error) {
	var a ApprovalRequest
	if err := s.db.NewSelect().Model(&a).Column("uuid").Where("run_uuid = ?", runID).Scan(ctx); err != nil {
		return ApprovalRequest{}, fmt.Errorf("get approval of run %s: %w", runID, mapErr(err))
	}
	return s.GetApproval(ctx, a.UUID)
}

// ApprovalFilter narrows ListApprovals.
type ApprovalFilter struct {
	Statuses     []string
	WorkflowUUID *uuid.UUID
	Page         Page
}

// ListApprovals returns approval requests newest first.
func (s *Store) ListApprovals(ctx context.Context, f ApprovalFilter) ([]ApprovalRequest, int, error) {
	var out []ApprovalRequest
	q := s.db.NewSelect().Model(&out).OrderExpr("created_at DESC, uuid DESC")
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.WorkflowUUID != nil {
		q = q.Where("workflow_uuid = ?", *f.WorkflowUUID)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list approvals: %w", mapErr(err))
	}
	if err := s.loadDecisions(ctx, s.db, out); err != nil {
		return nil, 0, err
	}
	return out, int(total), nil
}

// Decision is one responder's input to DecideApproval.
type Decision struct {
	Identity     string     // what the quorum counts: key:<uuid>, slack:<team>:<user>, decide-page:<token hash>
	ResponderID  string     // shown in the decisions list (free text)
	KeyUUID      *uuid.UUID // the deciding API key, checked against the triggering key
	KeyPrefix    string     // the deciding API key's prefix and name ("" for Slack and the decide page)
	KeyName      string
	VerifiedUser string // the Slack user or decide-page holder ("" for API keys)
	Agent        bool   // an agent decided: recorded, never counted toward the quorum
	ActorType    string // of the approval.decided event; "" is api
	Approve      bool
	Comment      *string
	TokenHash    []byte // decide page: must match the stored token hash, which is then cleared
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// DecideApproval commits one decision under a row lock: only a pending request before expires_at
// can be decided (ErrApprovalDecided / ErrApprovalExpired), never by the key that triggered the run
// (ErrSelfApproval), once per identity (ErrResponderVoted). One rejection rejects; approvals from
// required_approvals distinct human identities approve (responder_id, free text, is never counted).
// The deciding key's prefix and name, or the verified user, are stored with the decision and on the
// event. approval.decided is recorded in the same
// transaction. It returns the request as stored afterwards.
func (s *Store) DecideApproval(ctx context.Context, id uuid.UUID, d Decision) (ApprovalRequest, error) {
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var a ApprovalRequest
		if err := tx.NewSelect().Model(&a).Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock approval %s: %w", id, mapErr(err))
		}
		now := s.Now()
		if d.TokenHash != nil && (len(a.DecideTokenHash) == 0 || subtle.ConstantTimeCompare(a.DecideTokenHash, d.TokenHash) != 1 ||
			a.DecideTokenUsedAt != nil) {
			return ErrDecideToken
		}
		switch {
		case a.Status == ApprovalExpired:
			return ErrApprovalExpired
		case a.Status != ApprovalPending:
			return ErrApprovalDecided
		case !now.Before(a.ExpiresAt):
			return ErrApprovalExpired
		}
		if d.KeyUUID != nil && a.TriggerKeyUUID != nil && *d.KeyUUID == *a.TriggerKeyUUID {
			return ErrSelfApproval
		}
		decision := ApprovalRejected
		if d.Approve {
			decision = ApprovalApproved
		}
		row := &ApprovalDecision{ApprovalUUID: id, Identity: d.Identity, ResponderID: d.ResponderID, Decision: decision, Comment: d.Comment,
			DecidedAt: now, KeyPrefix: optString(d.KeyPrefix), KeyName: optString(d.KeyName), VerifiedUser: optString(d.VerifiedUser), Human: !d.Agent}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			if IsUniqueViolation(err, "") {
				return ErrResponderVoted
			}
			return fmt.Errorf("insert decision: %w", mapErr(err))
		}
		status := ApprovalPending
		if !d.Approve {
			status = ApprovalRejected
		} else {
			// Distinct human identities: the primary key makes each identity decide once.
			n, err := tx.NewSelect().Table("workflow_approval_decisions").Where("approval_uuid = ? AND decision = ? AND human", id, ApprovalApproved).Count(ctx)
			if err != nil {
				return fmt.Errorf("count approvals: %w", mapErr(err))
			}
			if int(n) >= a.RequiredApprovals {
				status = ApprovalApproved
			}
		}
		q := tx.NewUpdate().Table("workflow_approval_requests").Set("status = ?, updated_at = ?", status, now).Where("uuid = ?", id)
		if !d.Approve && d.Comment != nil {
			q = q.Set("rejection_reason = ?", *d.Comment)
		}
		if d.TokenHash != nil {
			q = q.Set("decide_token_used_at = ?", now)
		}
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("update approval %s: %w", id, mapErr(err))
		}
		wf := a.WorkflowUUID
		actor := d.ActorType
		if actor == "" {
			actor = ActorAPI
		}
		refs := map[string]any{"approval_request_uuid": id.String(), "run_uuid": a.RunUUID.String(), "decision": decision,
			"responder_id": d.ResponderID, "status": status}
		if d.KeyName != "" {
			refs["key_name"] = d.KeyName
		}
		if d.VerifiedUser != "" {
			refs["verified_user"] = d.VerifiedUser
		}
		if err := s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "approval.decided", ActorType: actor, ActorKeyPrefix: optString(d.KeyPrefix),
			WorkflowUUID: &wf, References: refs, CreatedAt: now}); err != nil {
			return err
		}
		a.Status = status
		return s.raiseApprovalEvent(ctx, tx, EventApprovalDecided, a, map[string]any{"decision": decision,
			"responder_id": d.ResponderID, "comment": d.Comment, "key_prefix": optString(d.KeyPrefix), "key_name": optString(d.KeyName),
			"verified_user": optString(d.VerifiedUser), "decided_at": now})
	})
	if err != nil {
		return ApprovalRequest{}, err
	}
	return s.GetApproval(ctx, id)
}

// ExpireApproval marks a still-pending request expired (the run's durable timer fired) and returns
// the request as stored: a decision committed before the timer fired wins.
func (s *Store) ExpireApproval(ctx context.Context, id uuid.UUID) (ApprovalRequest, error) {
	_, err := s.db.NewUpdate().Table("workflow_approval_requests").Set("status = ?, updated_at = ?", ApprovalExpired, s.Now()).
		Where("uuid = ? AND status = ?", id, ApprovalPending).Exec(ctx)
	if err != nil {
		return ApprovalRequest{}, fmt.Errorf("expire approval %s: %w", id, mapErr(err))
	}
	return s.GetApproval(ctx, id)
}

// MarkApprovalNotified records where the request was sent and the hash of a fresh decide-page token
// (replacing any earlier one), and records approval.requested the first time.
func (s *Store) MarkApprovalNotified(ctx context.Context, id uuid.UUID, notifierType string, channel *string, tokenHash []byte) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var a ApprovalRequest
		if err := tx.NewSelect().Model(&a).Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock approval %s: %w", id, mapErr(err))
		}
		now := s.Now()
		if _, err := tx.NewUpdate().Table("workflow_approval_requests").
			Set("notifier_type = ?, notifier_channel = ?, decide_token_hash = ?, decide_token_used_at = NULL, notified_at = ?, updated_at = ?",
				notifierType, channel, tokenHash, now, now).
			Where("uuid = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("mark approval %s notified: %w", id, mapErr(err))
		}
		if a.NotifiedAt != nil {
			return nil
		}
		wf := a.WorkflowUUID
		if err := s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "approval.requested", ActorType: ActorWorkflow, WorkflowUUID: &wf,
			References: map[string]any{"approval_request_uuid": id.String(), "run_uuid": a.RunUUID.String(), "notifier_type": notifierType,
				"expires_at": a.ExpiresAt.UTC().Format(time.RFC3339Nano)}, CreatedAt: now}); err != nil {
			return err
		}
		return s.raiseApprovalEvent(ctx, tx, EventApprovalRequested, a, nil)
	})
}

// raiseApprovalEvent raises event (approval.requested or approval.decided) for a, with the run's
// alert (if any) as the event's alert and decision, when not nil, as the facts' decision.
func (s *Store) raiseApprovalEvent(ctx context.Context, tx bun.Tx, event string, a ApprovalRequest, decision map[string]any) error {
	var alert *uuid.UUID
	if err := tx.NewRaw(`SELECT alert_uuid FROM workflow_runs WHERE uuid = ?`, a.RunUUID).Scan(ctx, &alert); err != nil {
		return fmt.Errorf("alert of run %s: %w", a.RunUUID, mapErr(err))
	}
	approval := map[string]any{"uuid": a.UUID, "workflow_uuid": a.WorkflowUUID, "workflow_name": a.WorkflowName,
		"run_uuid": a.RunUUID, "trigger_source": a.TriggerSource, "trigger_key_prefix": a.TriggerKeyPrefix, "reason": a.Reason,
		"confidence": a.Confidence, "indicator_type": a.IndicatorType, "indicator_value": a.IndicatorValue, "risk_level": a.RiskLevel,
		"status": a.Status, "required_approvals": a.RequiredApprovals, "expires_at": a.ExpiresAt.UTC()}
	facts := map[string]any{"approval": approval}
	if decision != nil {
		facts["decision"] = decision
	}
	_, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: event, AlertUUID: alert}, facts)
	return err
}
