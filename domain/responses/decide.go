package responses

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Decider is who decides an approval request: an API key (human keys only), a Slack user verified by
// Slack's request signature, or the holder of a decide-page token. Build it with ByKey, BySlack or
// ByDecidePage.
type Decider struct {
	d store.Decision
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
	return Decider{d: store.Decision{Identity: "key:" + key.String(), ResponderID: label, KeyUUID: &key,
		KeyPrefix: actor.KeyPrefix, KeyName: actor.KeyName, ActorType: actor.actorType()}}, nil
}

// BySlack is the decider for a Slack user whose request signature was verified (team and user ids
// are Slack's; name is shown).
func BySlack(teamID, userID, userName string) Decider {
	name := userName
	if name == "" {
		name = userID
	}
	identity := "slack:" + teamID + ":" + userID
	return Decider{d: store.Decision{Identity: identity, ResponderID: "slack:" + name, VerifiedUser: identity,
		ActorType: store.ActorAPI}}
}

// ByDecidePage is the decider holding a decide-page token (checked, single-use, by DecideApproval);
// name is what the person typed (optional, shown).
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
	return Decider{d: store.Decision{Identity: identity, ResponderID: responder, VerifiedUser: identity,
		ActorType: store.ActorAPI, TokenHash: hash}}
}

// Decide commits one decision on approval request id (store.DecideApproval: only a pending,
// unexpired request, never by the key that triggered the run, once per identity, one rejection
// rejects, required_approvals distinct humans approve) and then signals the run's workflow, which
// re-reads the decision from Postgres: the signal is direct (not through the outbox) because a lost
// one changes nothing but latency — the workflow also re-reads at its durable expiry timer.
// comment is the approval comment or the rejection reason.
func (s *Service) Decide(ctx context.Context, id uuid.UUID, who Decider, approve bool, comment *string) (store.ApprovalRequest, error) {
	d := who.d
	if d.Identity == "" {
		return store.ApprovalRequest{}, ErrAgentCannotApprove
	}
	d.Approve, d.Comment = approve, comment
	a, err := s.deps.Store.DecideApproval(ctx, id, d)
	if err != nil {
		return store.ApprovalRequest{}, notFoundAs(err, "Approval request")
	}
	if s.deps.Signaler != nil {
		if err := s.deps.Signaler.SignalWorkflowRun(ctx, a.RunUUID); err != nil {
			s.log.WarnContext(ctx, "signal workflow run", "err", err, "run_uuid", a.RunUUID)
		}
	}
	return a, nil
}
