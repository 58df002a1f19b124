package api

import (
	"context"
	"encoding/json"
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

// keyDecider is the decider of API key k (a human's), labelled "r".
func keyDecider(t *testing.T, k uuid.UUID) responses.Decider {
	t.Helper()
	label := "r"
	who, err := responses.ByKey(responses.Actor{KeyUUID: k, KeyPrefix: "cai_" + k.String()[:4], KeyType: auth.KeyTypeHuman}, &label)
	require.NoError(t, err)
	return who
}

// gatedRun inserts a workflow, a run and its pending approval directly in the store.
func gatedRun(t *testing.T, st *store.Store, required int, expires time.Time) (store.WorkflowRun, store.ApprovalRequest, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	w := store.Workflow{Name: "concurrency " + uuid.NewString(), WorkflowType: "indicator", State: store.WorkflowStateActive,
		Steps: json.RawMessage(`[{"name":"a","url":"https://x.example.com/"}]`), TimeoutSeconds: 300, RetryMaxAttempts: 1,
		RetryInitialIntervalSeconds: 1, ApprovalMode: store.ApprovalModeAlways, ApprovalTimeoutSeconds: 3600, RequiredApprovals: required, RiskLevel: "low"}
	require.NoError(t, st.CreateWorkflow(ctx, &w))
	trigger := uuid.New()
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: 1, Status: store.RunPendingApproval, TriggerSource: "agent",
		TriggerKeyUUID: &trigger, IndicatorType: "ip", IndicatorValue: "192.0.2.1"}
	ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "agent", TriggerKeyUUID: &trigger,
		IndicatorType: "ip", IndicatorValue: "192.0.2.1", RiskLevel: "low", RequiredApprovals: required, ExpiresAt: expires, NotifierType: "none"}
	created, err := st.CreateWorkflowRun(ctx, &run, &ap)
	require.NoError(t, err)
	require.True(t, created)
	return run, ap, trigger
}

func TestApprovalDecisionsUnderConcurrency(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := responses.New(responses.Deps{Store: st})

	t.Run("quorum of 2 among 12 distinct responders", func(t *testing.T) {
		_, ap, _ := gatedRun(t, st, 2, time.Now().Add(time.Hour))
		var wg sync.WaitGroup
		errs := make([]error, 12)
		for i := range errs {
			wg.Go(func() {
				k := uuid.New()
				_, errs[i] = svc.Decide(ctx, ap.UUID, keyDecider(t, k), true, nil)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, responses.ErrApprovalDecided)
			}
		}
		require.Equal(t, 2, ok)
		got, err := st.GetApproval(ctx, ap.UUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalApproved, got.Status)
		require.Len(t, got.Decisions, 2)
	})

	t.Run("one responder pressing 10 times counts once", func(t *testing.T) {
		_, ap, _ := gatedRun(t, st, 2, time.Now().Add(time.Hour))
		k := uuid.New()
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = svc.Decide(ctx, ap.UUID, keyDecider(t, k), true, nil)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, responses.ErrResponderVoted)
			}
		}
		require.Equal(t, 1, ok)
		got, err := st.GetApproval(ctx, ap.UUID)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalPending, got.Status)
	})

	t.Run("approve racing the expiry timer", func(t *testing.T) {
		for range 15 {
			_, ap, _ := gatedRun(t, st, 1, time.Now().Add(time.Hour))
			var wg sync.WaitGroup
			var decideErr error
			wg.Go(func() {
				k := uuid.New()
				_, decideErr = svc.Decide(ctx, ap.UUID, keyDecider(t, k), true, nil)
			})
			wg.Go(func() {
				_, err := st.ExpireApproval(ctx, ap.UUID)
				require.NoError(t, err)
			})
			wg.Wait()
			got, err := st.GetApproval(ctx, ap.UUID)
			require.NoError(t, err)
			switch got.Status {
			case store.ApprovalApproved:
				require.NoError(t, decideErr)
				require.Len(t, got.Decisions, 1)
			case store.ApprovalExpired:
				require.True(t, errors.Is(decideErr, responses.ErrApprovalExpired), "%v", decideErr)
				require.Empty(t, got.Decisions)
			default:
				t.Fatalf("status %s", got.Status)
			}
		}
	})

	t.Run("past expires_at is refused even before the timer fires", func(t *testing.T) {
		_, ap, _ := gatedRun(t, st, 1, time.Now().Add(-time.Second))
		k := uuid.New()
		_, err := svc.Decide(ctx, ap.UUID, keyDecider(t, k), true, nil)
		require.ErrorIs(t, err, responses.ErrApprovalExpired)
	})

	t.Run("self approval and token checks", func(t *testing.T) {
		_, ap, trigger := gatedRun(t, st, 1, time.Now().Add(time.Hour))
		_, err := svc.Decide(ctx, ap.UUID, keyDecider(t, trigger), true, nil)
		require.ErrorIs(t, err, responses.ErrSelfApproval)
		tok, hash, err := approvals.NewToken()
		require.NoError(t, err)
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "b"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken, "no token issued yet")
		require.NoError(t, st.MarkApprovalNotified(ctx, ap.UUID, "webhook", nil, hash))
		wrong := []byte(tok)
		wrong[len(wrong)-1] ^= 1
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(string(wrong), "b"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken)
		got, err := svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "b"), false, nil)
		require.NoError(t, err)
		require.Equal(t, store.ApprovalRejected, got.Status)
		require.NotNil(t, got.DecideTokenUsedAt)
		_, err = svc.Decide(ctx, ap.UUID, responses.ByDecidePage(tok, "c"), true, nil)
		require.ErrorIs(t, err, responses.ErrDecideToken, "a used token never decides again")
	})
}
