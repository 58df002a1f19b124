package responses

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// An agent's decision is recorded but never counted toward the quorum, and only human approvals
// already recorded count.
func TestDecideLocked_AgentNeverCounted(t *testing.T) {
	now := time.Now()
	a := store.ApprovalRequest{UUID: uuid.New(), Status: store.ApprovalPending, RequiredApprovals: 2, ExpiresAt: now.Add(time.Hour),
		Decisions: []store.ApprovalDecision{{Identity: "key:human", Decision: store.ApprovalApproved, Human: true}}}
	agent := decision{identity: "key:agent", responderID: "bot", agent: true}
	out, err := decideLocked(a, agent, true, nil, now)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, out.Status, "an agent does not make up the quorum")
	require.False(t, out.Decision.Human)
	require.Equal(t, store.ApprovalApproved, out.Decision.Decision, "but its decision is recorded")

	a.Decisions = append(a.Decisions, out.Decision)
	out, err = decideLocked(a, decision{identity: "key:other", responderID: "r"}, true, nil, now)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, out.Status)

	_, err = decideLocked(a, decision{identity: "key:agent", responderID: "bot again"}, true, nil, now)
	require.ErrorIs(t, err, ErrResponderVoted, "an identity decides once")
}

// The outcome is the request's Tally with the new decision added: an agent's rejection is recorded
// and shown, never counted, so it rejects nothing (agent keys are refused before Decide; this holds
// the rule itself).
func TestDecideLocked_AgentRejectionNotCounted(t *testing.T) {
	now := time.Now()
	a := store.ApprovalRequest{UUID: uuid.New(), Status: store.ApprovalPending, RequiredApprovals: 1, ExpiresAt: now.Add(time.Hour),
		Decisions: []store.ApprovalDecision{}}
	reason := "no"
	out, err := decideLocked(a, decision{identity: "key:agent", responderID: "bot", agent: true}, false, &reason, now)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, out.Status)
	require.Nil(t, out.RejectionReason)
	require.Equal(t, store.ApprovalRejected, out.Decision.Decision)

	out, err = decideLocked(a, decision{identity: "key:human", responderID: "r"}, false, &reason, now)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalRejected, out.Status)
	require.Equal(t, &reason, out.RejectionReason)
}
