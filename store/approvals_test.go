package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/store"
)

func keyDecision(approve bool) (store.Decision, uuid.UUID) {
	k := uuid.New()
	return store.Decision{Identity: "key:" + k.String(), ResponderID: "label", KeyUUID: &k, KeyPrefix: "cai_" + k.String()[:4],
		KeyName: "approver", Approve: approve}, k
}

func TestDecideApproval_Quorum(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 2)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))

	d1, _ := keyDecision(true)
	a, err := st.DecideApproval(ctx, ap.UUID, d1)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	// The same identity under another label is the same responder.
	again := d1
	again.ResponderID = "another label"
	_, err = st.DecideApproval(ctx, ap.UUID, again)
	require.ErrorIs(t, err, store.ErrResponderVoted)
	// An agent's decision is recorded but never counted.
	agent, _ := keyDecision(true)
	agent.Agent = true
	a, err = st.DecideApproval(ctx, ap.UUID, agent)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status, "an agent does not make up the quorum")
	d2, _ := keyDecision(true)
	a, err = st.DecideApproval(ctx, ap.UUID, d2)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Len(t, a.Decisions, 3)
	for _, d := range a.Decisions {
		require.NotNil(t, d.KeyPrefix)
		require.Equal(t, "approver", *d.KeyName)
		require.Nil(t, d.VerifiedUser)
	}
	var ev store.ActivityEvent
	require.NoError(t, st.DB().NewSelect().Model(&ev).Where(`event_type = 'approval.decided' AND "references"->>'approval_request_uuid' = ?`, ap.UUID.String()).
		OrderExpr("created_at DESC").Limit(1).Scan(ctx))
	require.Equal(t, d2.KeyPrefix, *ev.ActorKeyPrefix, "the event names who decided")
	require.Equal(t, "approver", ev.References["key_name"])
	_, err = st.DecideApproval(ctx, ap.UUID, func() store.Decision { d, _ := keyDecision(true); return d }())
	require.ErrorIs(t, err, store.ErrApprovalDecided)
}

func TestDecideApproval_RulesUnderTheLock(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 1)

	t.Run("self approval", func(t *testing.T) {
		trigger := uuid.New()
		_, ap := newRun(t, st, w, trigger, time.Now().Add(time.Hour))
		d, _ := keyDecision(true)
		d.KeyUUID = &trigger
		_, err := st.DecideApproval(ctx, ap.UUID, d)
		require.ErrorIs(t, err, store.ErrSelfApproval)
	})
	t.Run("past expires_at", func(t *testing.T) {
		_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(-time.Second))
		d, _ := keyDecision(true)
		_, err := st.DecideApproval(ctx, ap.UUID, d)
		require.ErrorIs(t, err, store.ErrApprovalExpired)
	})
	t.Run("expired by the timer", func(t *testing.T) {
		_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
		a, err := st.ExpireApproval(ctx, ap.UUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalExpired, a.Status)
		d, _ := keyDecision(true)
		_, err = st.DecideApproval(ctx, ap.UUID, d)
		require.ErrorIs(t, err, store.ErrApprovalExpired)
	})
	t.Run("already decided: one rejection rejects", func(t *testing.T) {
		_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
		reject, _ := keyDecision(false)
		reason := "not this one"
		reject.Comment = &reason
		a, err := st.DecideApproval(ctx, ap.UUID, reject)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalRejected, a.Status)
		require.Equal(t, reason, *a.RejectionReason)
		d, _ := keyDecision(true)
		_, err = st.DecideApproval(ctx, ap.UUID, d)
		require.ErrorIs(t, err, store.ErrApprovalDecided)
		// ExpireApproval after a decision changes nothing.
		a, err = st.ExpireApproval(ctx, ap.UUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalRejected, a.Status)
	})
	t.Run("unknown request", func(t *testing.T) {
		d, _ := keyDecision(true)
		_, err := st.DecideApproval(ctx, uuid.New(), d)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
	t.Run("decide-page token: single use, verified user recorded", func(t *testing.T) {
		_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
		tok, hash, err := approvals.NewToken()
		require.NoError(t, err)
		require.NoError(t, st.MarkApprovalNotified(ctx, ap.UUID, "webhook", nil, hash))
		wrong := store.Decision{Identity: "decide-page:x", ResponderID: "browser", TokenHash: approvals.HashToken(tok + "x"), Approve: true}
		_, err = st.DecideApproval(ctx, ap.UUID, wrong)
		require.ErrorIs(t, err, store.ErrDecideToken)
		good := store.Decision{Identity: "decide-page:y", ResponderID: "browser:Dana", VerifiedUser: "decide-page:y", TokenHash: approvals.HashToken(tok), Approve: true}
		a, err := st.DecideApproval(ctx, ap.UUID, good)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalApproved, a.Status)
		require.Equal(t, "decide-page:y", *a.Decisions[0].VerifiedUser)
		require.Nil(t, a.Decisions[0].KeyPrefix)
		_, err = st.DecideApproval(ctx, ap.UUID, good)
		require.ErrorIs(t, err, store.ErrDecideToken, "the token is used")
	})
}

// Concurrent decisions of distinct humans: exactly required_approvals of them commit, the others see
// the request decided; one human pressing many times counts once.
func TestDecideApproval_Concurrent(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 3)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
	same, _ := keyDecision(true)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			d := same
			if i%2 == 1 {
				d, _ = keyDecision(true)
			}
			_, errs[i] = st.DecideApproval(ctx, ap.UUID, d)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.True(t, errors.Is(err, store.ErrApprovalDecided) || errors.Is(err, store.ErrResponderVoted), "%v", err)
	}
	require.Equal(t, 3, ok)
	a, err := st.GetApproval(ctx, ap.UUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Len(t, a.Decisions, 3)
	identities := map[string]bool{}
	for _, d := range a.Decisions {
		identities[d.Identity] = true
	}
	require.Len(t, identities, 3)
}
