package responses

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Errors of Decide (besides ErrAgentCannotApprove and NotFoundError); front doors map them to their
// codes (API.md §8).
var (
	ErrApprovalDecided = errors.New("approval already decided")     // 409 APPROVAL_ALREADY_DECIDED
	ErrApprovalExpired = errors.New("approval expired")             // 409 APPROVAL_EXPIRED
	ErrSelfApproval    = errors.New("self approval")                // 403 SELF_APPROVAL_FORBIDDEN
	ErrResponderVoted  = errors.New("responder already decided")    // 409 APPROVAL_ALREADY_DECIDED
	ErrDecideToken     = errors.New("decide token invalid or used") // 403 INVALID_DECIDE_TOKEN
)

// decision is one responder's input to a decision.
type decision struct {
	identity     string     // what the quorum counts: key:<uuid>, slack:<team>:<user>, decide-page:<token hash>
	responderID  string     // shown in the decisions list (free text, never counted)
	keyUUID      *uuid.UUID // the deciding API key, checked against the triggering key
	keyPrefix    string     // the deciding API key's prefix and name ("" for Slack and the decide page)
	keyName      string
	verifiedUser string // the Slack user or decide-page holder ("" for API keys)
	agent        bool   // an agent decided: recorded, never counted toward the quorum
	actorType    string // of the approval.decided event
	tokenHash    []byte // decide page: must match the stored token hash, which is then spent
}

// Decider is who decides an approval request: an API key (human keys only), a Slack user verified by
// Slack's request signature, or the holder of a decide-page token. Build it with ByKey, BySlack or
// ByDecidePage.
type Decider struct {
	d decision
}

// MaxResponderLen bounds the free-text responder label.
const MaxResponderLen = 200

// ByKey is the decider for an API key. responder is the free-text label shown in decisions (default:
// the key prefix); the quorum never counts it. Agent keys cannot decide: ErrAgentCannotApprove.
func ByKey(actor Actor, responder *string) (Decider, error) {
	if actor.KeyType == auth.KeyTypeAgent {
		return Decider{}, ErrAgentCannotApprove
	}
	label := actor.KeyPrefix
	if responder != nil {
		label = *responder
	}
	key := actor.KeyUUID
	return Decider{d: decision{identity: "key:" + key.String(), responderID: label, keyUUID: &key,
		keyPrefix: actor.KeyPrefix, keyName: actor.KeyName, actorType: actor.actorType()}}, nil
}

// BySlack is the decider for a Slack user whose request signature was verified (team and user ids
// are Slack's; name is shown).
func BySlack(teamID, userID, userName string) Decider {
	name := userName
	if name == "" {
		name = userID
	}
	identity := "slack:" + teamID + ":" + userID
	return Decider{d: decision{identity: identity, responderID: "slack:" + name, verifiedUser: identity, actorType: ActorAPI}}
}

// ByDecidePage is the decider holding a decide-page token (checked and spent by Decide under the
// request's lock); name is what the person typed (optional, shown).
func ByDecidePage(token, name string) Decider {
	name = strings.TrimSpace(name)
	if r := []rune(name); len(r) > MaxResponderLen {
		name = string(r[:MaxResponderLen])
	}
	responder := "browser"
	if name != "" {
		responder = "browser:" + name
	}
	hash := approvals.HashToken(token)
	identity := "decide-page:" + hex.EncodeToString(hash[:12])
	return Decider{d: decision{identity: identity, responderID: responder, verifiedUser: identity, actorType: ActorAPI, tokenHash: hash}}
}

// Decide commits one decision on approval request id and then signals the run's workflow, which
// re-reads the decision from Postgres: the signal is direct (not through the outbox) because a lost
// one changes nothing but latency — the workflow also re-reads at its durable expiry timer.
// comment is the approval comment or the rejection reason. The rules (decideLocked) are applied to
// the request as locked by store.DecideApproval, which writes what they decided in the same
// transaction.
func (s *Service) Decide(ctx context.Context, id uuid.UUID, who Decider, approve bool, comment *string) (store.ApprovalRequest, error) {
	d := who.d
	if d.identity == "" {
		return store.ApprovalRequest{}, ErrAgentCannotApprove
	}
	a, err := s.deps.Store.DecideApproval(ctx, id, func(a store.ApprovalRequest, now time.Time) (store.ApprovalOutcome, error) {
		return decideLocked(a, d, approve, comment, now)
	})
	if err != nil {
		return store.ApprovalRequest{}, notFoundAs(err, "Approval request")
	}
	s.signal(ctx, a.RunUUID)
	return a, nil
}

// decideLocked decides d on request a (locked, with every decision committed before) at now. A
// decide-page token must match the request's and be unspent (ErrDecideToken); only a pending request
// before expires_at can be decided (ErrApprovalExpired / ErrApprovalDecided), never by the key that
// triggered the run (ErrSelfApproval), once per identity (ErrResponderVoted). The outcome is the
// request's Tally with the new decision added (store.ApprovalRequest.Tally, the one count the inbox
// and the pages show too): one counted rejection rejects; approvals from required_approvals distinct
// human identities approve (the free-text responder label is never counted, an agent's decision is
// recorded but never counted).
func decideLocked(a store.ApprovalRequest, d decision, approve bool, comment *string, now time.Time) (store.ApprovalOutcome, error) {
	if d.tokenHash != nil && (len(a.DecideTokenHash) == 0 || subtle.ConstantTimeCompare(a.DecideTokenHash, d.tokenHash) != 1 ||
		a.DecideTokenUsedAt != nil) {
		return store.ApprovalOutcome{}, ErrDecideToken
	}
	switch {
	case a.Status == store.ApprovalExpired:
		return store.ApprovalOutcome{}, ErrApprovalExpired
	case a.Status != store.ApprovalPending:
		return store.ApprovalOutcome{}, ErrApprovalDecided
	case !now.Before(a.ExpiresAt):
		return store.ApprovalOutcome{}, ErrApprovalExpired
	}
	if d.keyUUID != nil && a.TriggerKeyUUID != nil && *d.keyUUID == *a.TriggerKeyUUID {
		return store.ApprovalOutcome{}, ErrSelfApproval
	}
	for _, x := range a.Decisions {
		if x.Identity == d.identity {
			return store.ApprovalOutcome{}, ErrResponderVoted
		}
	}
	verdict := store.ApprovalRejected
	if approve {
		verdict = store.ApprovalApproved
	}
	row := store.ApprovalDecision{Identity: d.identity, ResponderID: d.responderID, Decision: verdict, Comment: comment,
		KeyPrefix: nonEmpty(d.keyPrefix), KeyName: nonEmpty(d.keyName), VerifiedUser: nonEmpty(d.verifiedUser), Human: !d.agent}
	next := a
	next.Decisions = append(slices.Clip(a.Decisions), row)
	status, reason := store.ApprovalPending, (*string)(nil)
	switch t := next.Tally(); {
	case t.Rejections > 0:
		status, reason = store.ApprovalRejected, comment
	case t.Remaining == 0:
		status = store.ApprovalApproved
	}
	return store.ApprovalOutcome{Decision: row, Status: status, RejectionReason: reason, UseToken: d.tokenHash != nil,
		ActorType: d.actorType}, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
