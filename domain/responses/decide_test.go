package responses_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// gatedRun commits a run of a workflow needing required approvals, triggered by trigger, whose
// request expires at expires.
func gatedRun(t *testing.T, st *store.Store, required int, trigger responses.Actor, expires time.Time) store.ApprovalRequest {
	t.Helper()
	w := newWorkflow(t, st, func(w *store.Workflow) { w.ApprovalMode, w.RequiredApprovals = store.ApprovalModeAlways, required })
	key := trigger.KeyUUID
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunPendingApproval, TriggerSource: "human",
		TriggerKeyUUID: &key, IndicatorType: "ip", IndicatorValue: "192.0.2.1"}
	ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "human", TriggerKeyUUID: &key,
		IndicatorType: "ip", IndicatorValue: "192.0.2.1", RiskLevel: "low", RequiredApprovals: required, ExpiresAt: expires, NotifierType: "none"}
	created, err := st.CreateWorkflowRun(context.Background(), &run, &ap)
	require.NoError(t, err)
	require.True(t, created)
	return ap
}

func byKey(t *testing.T, a responses.Actor, label string) responses.Decider {
	t.Helper()
	who, err := responses.ByKey(a, &label)
	require.NoError(t, err)
	return who
}

func TestDecide_Quorum(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	ap := gatedRun(t, st, 2, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))

	first := actor(auth.KeyTypeHuman)
	a, err := svc.Decide(ctx, ap.UUID, byKey(t, first, "label"), true, nil)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	// The same identity under another label is the same responder.
	_, err = svc.Decide(ctx, ap.UUID, byKey(t, first, "another label"), true, nil)
	require.ErrorIs(t, err, responses.ErrResponderVoted)
	second := actor(auth.KeyTypeHuman)
	a, err = svc.Decide(ctx, ap.UUID, byKey(t, second, "label"), true, nil)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Len(t, a.Decisions, 2)
	for _, d := range a.Decisions {
		require.NotNil(t, d.KeyPrefix)
		require.Equal(t, "test", *d.KeyName)
		require.Nil(t, d.VerifiedUser)
	}
	var ev store.ActivityEvent
	require.NoError(t, st.DB().NewSelect().Model(&ev).Where(`event_type = 'approval.decided' AND "references"->>'approval_request_uuid' = ?`, ap.UUID.String()).
		OrderExpr("created_at DESC").Limit(1).Scan(ctx))
	require.Equal(t, second.KeyPrefix, *ev.ActorKeyPrefix, "the event names who decided")
	require.Equal(t, "test", ev.References["key_name"])
	_, err = svc.Decide(ctx, ap.UUID, byKey(t, actor(auth.KeyTypeHuman), "late"), true, nil)
	require.ErrorIs(t, err, responses.ErrApprovalDecided)
}

func TestDecide_Rules(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	approver := func() responses.Decider { return byKey(t, actor(auth.KeyTypeHuman), "label") }

	t.Run("self approval", func(t *testing.T) {
		trigger := actor(auth.KeyTypeHuman)
		ap := gatedRun(t, st, 1, trigger, time.Now().Add(time.Hour))
		_, err := svc.Decide(ctx, ap.UUID, byKey(t, trigger, "me"), true, nil)
		require.ErrorIs(t, err, responses.ErrSelfApproval)
	})
	t.Run("past expires_at", func(t *testing.T) {
		ap := gatedRun(t, st, 1, actor(auth.KeyTypeHuman), time.Now().Add(-time.Second))
		_, err := svc.Decide(ctx, ap.UUID, approver(), true, nil)
		require.ErrorIs(t, err, responses.ErrApprovalExpired)
	})
	t.Run("expired by the timer", func(t *testing.T) {
		ap := gatedRun(t, st, 1, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))
		a, err := st.ExpireApproval(ctx, ap.UUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalExpired, a.Status)
		_, err = svc.Decide(ctx, ap.UUID, approver(), true, nil)
		require.ErrorIs(t, err, responses.ErrApprovalExpired)
	})
	t.Run("already decided: one rejection rejects", func(t *testing.T) {
		ap := gatedRun(t, st, 2, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))
		reason := "not this one"
		a, err := svc.Decide(ctx, ap.UUID, approver(), false, &reason)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalRejected, a.Status)
		require.Equal(t, reason, *a.RejectionReason)
		_, err = svc.Decide(ctx, ap.UUID, approver(), true, nil)
		require.ErrorIs(t, err, responses.ErrApprovalDecided)
	})
	t.Run("an approval comment is no rejection reason", func(t *testing.T) {
		ap := gatedRun(t, st, 1, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))
		comment := "fine"
		a, err := svc.Decide(ctx, ap.UUID, approver(), true, &comment)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalApproved, a.Status)
		require.Nil(t, a.RejectionReason)
		require.Equal(t, comment, *a.Decisions[0].Comment)
	})
	t.Run("unknown request", func(t *testing.T) {
		_, err := svc.Decide(ctx, uuid.New(), approver(), true, nil)
		var nf *responses.NotFoundError
		require.ErrorAs(t, err, &nf)
	})
	t.Run("decide-page token: single use, verified user recorded", func(t *testing.T) {
		ap := gatedRun(t, st, 1, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))
		tok, hash, err := approvals.NewToken()
		require.NoError(t, err)
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "Dana"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken, "no token issued yet")
		require.NoError(t, st.MarkApprovalNotified(ctx, ap.UUID, "webhook", nil, hash))
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok+"x", "Dana"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken)
		a, err := svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "Dana"), true, nil)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalApproved, a.Status)
		require.NotNil(t, a.DecideTokenUsedAt)
		require.Equal(t, "browser:Dana", a.Decisions[0].ResponderID)
		require.Contains(t, *a.Decisions[0].VerifiedUser, "decide-page:")
		require.Nil(t, a.Decisions[0].KeyPrefix)
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "Dana"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken, "the token is used")
	})
}

// Concurrent decisions of distinct humans: exactly required_approvals of them commit, the others see
// the request decided; one human pressing many times counts once.
func TestDecide_Concurrent(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	ap := gatedRun(t, st, 3, actor(auth.KeyTypeHuman), time.Now().Add(time.Hour))
	same := actor(auth.KeyTypeHuman)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			a := same
			if i%2 == 1 {
				a = actor(auth.KeyTypeHuman)
			}
			who, err := responses.ByKey(a, nil)
			if err == nil {
				_, err = svc.Decide(ctx, ap.UUID, who, true, nil)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.True(t, errors.Is(err, responses.ErrApprovalDecided) || errors.Is(err, responses.ErrResponderVoted), "%v", err)
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
