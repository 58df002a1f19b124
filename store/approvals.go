package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
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
	Human        bool      `bun:"human"`         // counts toward the quorum (Counts)
}

// Counts reports whether d counts toward its request's quorum: a human's decision (a human API key,
// a verified Slack user, a decide-page holder). An agent's decision is recorded and shown, never
// counted (API.md §8).
func (d ApprovalDecision) Counts() bool { return d.Human }

// ApprovalTally is what a request's decisions add up to (ApprovalRequest.Tally).
type ApprovalTally struct {
	Approvals  int // approvals that count: distinct identities whose counted decision approves
	Rejections int // counted rejections: one rejects the request
	Remaining  int // approvals still needed for the quorum (RequiredApprovals - Approvals, never below 0)
}

// Tally is the one count of what counts toward a's quorum, over a.Decisions: the decision rule
// (responses.Decide) reads it on the locked request with the new decision added, and the approvals
// inbox, the decide page and the console's run page show it. Only decisions that Count are counted;
// an identity approves once.
func (a ApprovalRequest) Tally() ApprovalTally {
	var t ApprovalTally
	approvers := map[string]bool{}
	for _, d := range a.Decisions {
		if !d.Counts() {
			continue
		}
		switch d.Decision {
		case ApprovalRejected:
			t.Rejections++
		case ApprovalApproved:
			if !approvers[d.Identity] {
				approvers[d.Identity] = true
				t.Approvals++
			}
		}
	}
	t.Remaining = max(a.RequiredApprovals-t.Approvals, 0)
	return t
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

// ApprovalOutcome is what the deciding rule (responses.Decide) made of one decision under the lock:
// the decision to add and the request's status afterwards.
type ApprovalOutcome struct {
	Decision        ApprovalDecision // ApprovalUUID and DecidedAt are set by DecideApproval
	Status          string           // the request's status afterwards
	RejectionReason *string          // stored on the request when not nil
	UseToken        bool             // the decide-page token is spent (decide_token_used_at = now)
	ActorType       string           // of the approval.decided event; "" is api
}

// DecideFunc decides one decision on request a (locked, with its decisions) at now: it returns the
// outcome to write, or an error that leaves the request untouched.
type DecideFunc func(a ApprovalRequest, now time.Time) (ApprovalOutcome, error)

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nonEmpty is s, or nil when it points to "".
func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// DecideApproval locks request id (ErrNotFound when there is none), loads its decisions and calls
// decide with them and the store's clock: the store locks, the caller decides. What decide returns
// is written in the same transaction — the decision row, the request's status (and rejection reason,
// and the decide-page token spent) — with approval.decided recorded and raised to agents; an error
// from decide is returned as is and nothing is written. Decisions on one request are serialized by
// the lock, so decide always sees every decision committed before it. It returns the request as
// stored afterwards.
func (s *Store) DecideApproval(ctx context.Context, id uuid.UUID, decide DecideFunc) (ApprovalRequest, error) {
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var a ApprovalRequest
		if err := tx.NewSelect().Model(&a).Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock approval %s: %w", id, mapErr(err))
		}
		locked := []ApprovalRequest{a}
		if err := s.loadDecisions(ctx, tx, locked); err != nil {
			return err
		}
		now := s.Now()
		out, err := decide(locked[0], now)
		if err != nil {
			return err
		}
		row := out.Decision
		row.ApprovalUUID, row.DecidedAt = id, now
		row.KeyPrefix, row.KeyName, row.VerifiedUser = nonEmpty(row.KeyPrefix), nonEmpty(row.KeyName), nonEmpty(row.VerifiedUser)
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return fmt.Errorf("insert decision of %s on approval %s: %w", row.Identity, id, mapErr(err))
		}
		q := tx.NewUpdate().Table("workflow_approval_requests").Set("status = ?, updated_at = ?", out.Status, now).Where("uuid = ?", id)
		if out.RejectionReason != nil {
			q = q.Set("rejection_reason = ?", *out.RejectionReason)
		}
		if out.UseToken {
			q = q.Set("decide_token_used_at = ?", now)
		}
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("update approval %s: %w", id, mapErr(err))
		}
		wf := a.WorkflowUUID
		actor := out.ActorType
		if actor == "" {
			actor = ActorAPI
		}
		refs := map[string]any{"approval_request_uuid": id.String(), "run_uuid": a.RunUUID.String(), "decision": row.Decision,
			"responder_id": row.ResponderID, "status": out.Status}
		if row.KeyName != nil {
			refs["key_name"] = *row.KeyName
		}
		if row.VerifiedUser != nil {
			refs["verified_user"] = *row.VerifiedUser
		}
		if err := s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "approval.decided", ActorType: actor, ActorKeyPrefix: row.KeyPrefix,
			WorkflowUUID: &wf, References: refs, CreatedAt: now}); err != nil {
			return err
		}
		a.Status = out.Status
		return s.raiseApprovalEvent(ctx, tx, EventApprovalDecided, a, map[string]any{"decision": row.Decision,
			"responder_id": row.ResponderID, "comment": row.Comment, "key_prefix": row.KeyPrefix, "key_name": row.KeyName,
			"verified_user": row.VerifiedUser, "decided_at": now})
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
