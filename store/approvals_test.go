package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// approveAs is a decide func that approves as identity, keyed by an API key, and approves the
// request once required approvals are recorded (a stand-in for responses.Decide's rules, which
// domain/responses tests).
func approveAs(identity string, seen *store.ApprovalRequest) store.DecideFunc {
	return func(a store.ApprovalRequest, now time.Time) (store.ApprovalOutcome, error) {
		if seen != nil {
			*seen = a
		}
		status := store.ApprovalPending
		if len(a.Decisions)+1 >= a.RequiredApprovals {
			status = store.ApprovalApproved
		}
		prefix, name := "cai_"+identity[:4], "approver"
		return store.ApprovalOutcome{Decision: store.ApprovalDecision{Identity: identity, ResponderID: "label", Decision: store.ApprovalApproved,
			KeyPrefix: &prefix, KeyName: &name, Human: true}, Status: status}, nil
	}
}

// The store locks and writes; what it writes is what decide returned, and decide sees the request
// with every decision committed before.
func TestDecideApproval_WritesWhatWasDecided(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 2)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))

	var seen store.ApprovalRequest
	first := uuid.NewString()
	a, err := st.DecideApproval(ctx, ap.UUID, approveAs(first, &seen))
	require.NoError(t, err)
	require.Equal(t, ap.UUID, seen.UUID)
	require.Equal(t, 2, seen.RequiredApprovals)
	require.Empty(t, seen.Decisions)
	require.Equal(t, store.ApprovalPending, a.Status)
	require.Len(t, a.Decisions, 1)
	require.Equal(t, ap.UUID, a.Decisions[0].ApprovalUUID, "the store sets the request")
	require.False(t, a.Decisions[0].DecidedAt.IsZero(), "the store sets the time")

	second := uuid.NewString()
	a, err = st.DecideApproval(ctx, ap.UUID, approveAs(second, &seen))
	require.NoError(t, err)
	require.Len(t, seen.Decisions, 1, "decide sees the decisions committed before")
	require.Equal(t, first, seen.Decisions[0].Identity)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Len(t, a.Decisions, 2)
	for _, d := range a.Decisions {
		require.NotNil(t, d.KeyPrefix)
		require.Equal(t, "approver", *d.KeyName)
		require.Nil(t, d.VerifiedUser)
	}
	var ev store.ActivityEvent
	require.NoError(t, st.DB().NewSelect().Model(&ev).Where(`event_type = 'approval.decided' AND "references"->>'approval_request_uuid' = ?`, ap.UUID.String()).
		OrderExpr("created_at DESC").Limit(1).Scan(ctx))
	require.Equal(t, "cai_"+second[:4], *ev.ActorKeyPrefix, "the event names who decided")
	require.Equal(t, "approver", ev.References["key_name"])
	require.Equal(t, store.ApprovalApproved, ev.References["status"])
	require.Equal(t, store.ActorAPI, ev.ActorType, `"" is api`)
}

func TestDecideApproval_RejectionAndToken(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 1)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
	require.NoError(t, st.MarkApprovalNotified(ctx, ap.UUID, "webhook", nil, []byte("0123456789abcdef0123456789abcdef")))
	reason, user := "not this one", "decide-page:y"
	a, err := st.DecideApproval(ctx, ap.UUID, func(store.ApprovalRequest, time.Time) (store.ApprovalOutcome, error) {
		return store.ApprovalOutcome{Decision: store.ApprovalDecision{Identity: user, ResponderID: "browser:Dana", Decision: store.ApprovalRejected,
			Comment: &reason, VerifiedUser: &user, Human: true}, Status: store.ApprovalRejected, RejectionReason: &reason, UseToken: true,
			ActorType: store.ActorMCP}, nil
	})
	require.NoError(t, err)
	require.Equal(t, store.ApprovalRejected, a.Status)
	require.Equal(t, reason, *a.RejectionReason)
	require.NotNil(t, a.DecideTokenUsedAt, "the token is spent")
	require.Equal(t, user, *a.Decisions[0].VerifiedUser)
	require.Nil(t, a.Decisions[0].KeyPrefix)
	var ev store.ActivityEvent
	require.NoError(t, st.DB().NewSelect().Model(&ev).Where(`event_type = 'approval.decided' AND "references"->>'approval_request_uuid' = ?`, ap.UUID.String()).
		Scan(ctx))
	require.Equal(t, store.ActorMCP, ev.ActorType)
	require.Equal(t, user, ev.References["verified_user"])
	// ExpireApproval after a decision changes nothing.
	a, err = st.ExpireApproval(ctx, ap.UUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalRejected, a.Status)
}

func TestDecideApproval_RefusedWritesNothing(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 1)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
	refused := errors.New("refused")
	_, err := st.DecideApproval(ctx, ap.UUID, func(store.ApprovalRequest, time.Time) (store.ApprovalOutcome, error) {
		return store.ApprovalOutcome{}, refused
	})
	require.ErrorIs(t, err, refused)
	a, err := st.GetApproval(ctx, ap.UUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	require.Empty(t, a.Decisions)
	n, err := st.DB().NewSelect().Table("activity_events").Where(`event_type = 'approval.decided' AND "references"->>'approval_request_uuid' = ?`, ap.UUID.String()).Count(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	called := false
	_, err = st.DecideApproval(ctx, uuid.New(), func(store.ApprovalRequest, time.Time) (store.ApprovalOutcome, error) {
		called = true
		return store.ApprovalOutcome{}, nil
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.False(t, called, "nothing to decide on an unknown request")
}

// Concurrent decisions are serialized by the lock: each decide call sees every decision committed
// before it, so a rule counting them holds under any interleaving.
func TestDecideApproval_Concurrent(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	w := newWorkflow(t, st, store.ApprovalModeAlways, 3)
	_, ap := newRun(t, st, w, uuid.New(), time.Now().Add(time.Hour))
	full := errors.New("full")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = st.DecideApproval(ctx, ap.UUID, func(a store.ApprovalRequest, now time.Time) (store.ApprovalOutcome, error) {
				if a.Status != store.ApprovalPending {
					return store.ApprovalOutcome{}, full
				}
				return approveAs(fmt.Sprintf("identity-%02d", i), nil)(a, now)
			})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, full)
	}
	require.Equal(t, 3, ok)
	a, err := st.GetApproval(ctx, ap.UUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Len(t, a.Decisions, 3)
}
