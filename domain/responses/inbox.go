package responses

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
)

// MaxInbox bounds how many pending requests Inbox returns.
const MaxInbox = 200

// Card is a pending approval request with what a person needs to decide it: the alert (uuid and
// title), the indicator's verdict, what will run (the steps of the version the run executes: method,
// host, path) and the risk the workflow declares (risk level, destructive), and whether the caller
// may approve or reject it by the rules Decide applies (MayDecide).
type Card struct {
	Request     store.ApprovalRequest
	AlertUUID   *uuid.UUID
	AlertTitle  string
	Malice      string // the indicator's malice ("" when it is not stored)
	Internal    string // why the indicator is an internal address ("" when not: InternalAddress)
	Steps       []approvals.Step
	Destructive bool
	// ApprovalMode and Tags: what the workflow version declares.
	ApprovalMode string
	Tags         []string
	Approved     int    // approvals that count so far (store.ApprovalRequest.Tally)
	TemporalID   string // the run's Temporal workflow id
	// CanApprove and CanReject: the caller's decision would be accepted now; Refusal says why not
	// (the rule's error, nil when both are allowed).
	CanApprove, CanReject bool
	Refusal               error
}

// Inbox lists the pending, unexpired approval requests at now, the soonest to expire first (at most
// MaxInbox), as cards for who.
func (s *Service) Inbox(ctx context.Context, who Decider, now time.Time) ([]Card, error) {
	reqs, err := s.deps.Store.ListPendingApprovals(ctx, now, MaxInbox)
	if err != nil {
		return nil, err
	}
	runs := make([]uuid.UUID, len(reqs))
	for i, a := range reqs {
		runs[i] = a.RunUUID
	}
	rc, err := s.deps.Store.RunContexts(ctx, runs)
	if err != nil {
		return nil, err
	}
	out := make([]Card, len(reqs))
	for i, a := range reqs {
		c := rc[a.RunUUID]
		card := Card{Request: a, AlertUUID: c.AlertUUID, AlertTitle: c.AlertTitle, Malice: c.Malice, Steps: []approvals.Step{},
			Destructive: Destructive(a.RiskLevel), TemporalID: ids.WorkflowRun(a.RunUUID),
			Internal: InternalAddress(a.IndicatorType, a.IndicatorValue), ApprovalMode: c.ApprovalMode, Tags: c.Tags}
		if c.Steps != nil {
			card.Steps = approvals.Steps(c.Steps)
		}
		card.Approved = a.Tally().Approvals
		errApprove, errReject := MayDecide(a, who, true, now), MayDecide(a, who, false, now)
		card.CanApprove, card.CanReject = errApprove == nil, errReject == nil
		card.Refusal = errApprove
		if card.Refusal == nil {
			card.Refusal = errReject
		}
		out[i] = card
	}
	return out, nil
}

// MayDecide reports whether who's decision (approve or reject) on request a would be accepted at now,
// by the rules Decide applies under the lock (decideLocked), without deciding: nil, or the error
// Decide would return (ErrSelfApproval on the caller's own run, ErrResponderVoted after its own
// decision, ErrApprovalExpired, ErrApprovalDecided, ErrAgentCannotApprove).
func MayDecide(a store.ApprovalRequest, who Decider, approve bool, now time.Time) error {
	if who.d.identity == "" {
		return ErrAgentCannotApprove
	}
	d := who.d
	d.tokenHash = nil // a decide-page token is checked when it is spent, not here
	_, err := decideLocked(a, d, approve, nil, now)
	return err
}
