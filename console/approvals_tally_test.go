package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// The approvals inbox and the run page count what the quorum counts (store.ApprovalRequest.Tally):
// with a human approval and a non-human one recorded on a request needing two, both say one of two,
// and the run page marks the non-human decision "not counted".
func TestInboxAndRunPageCountAsTheQuorum(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.workflow(t, "console tally", store.ApprovalModeAlways, "high")
	trigger := uuid.New()
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: 1, Status: store.RunPendingApproval, TriggerSource: "agent",
		TriggerKeyUUID: &trigger, IndicatorType: "ip", IndicatorValue: "192.0.2.45"}
	ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "agent", TriggerKeyUUID: &trigger,
		IndicatorType: "ip", IndicatorValue: "192.0.2.45", RiskLevel: "high", RequiredApprovals: 2,
		ExpiresAt: time.Now().Add(time.Hour), NotifierType: "none"}
	_, err := h.st.CreateWorkflowRun(ctx, &run, &ap)
	require.NoError(t, err)
	for _, human := range []bool{true, false} {
		_, err := h.st.DecideApproval(ctx, ap.UUID, func(store.ApprovalRequest, time.Time) (store.ApprovalOutcome, error) {
			return store.ApprovalOutcome{Decision: store.ApprovalDecision{Identity: "key:" + uuid.NewString(), ResponderID: "r",
				Decision: store.ApprovalApproved, Human: human}, Status: store.ApprovalPending, ActorType: store.ActorAPI}, nil
		})
		require.NoError(t, err)
	}

	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeApprovalsWrite, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead)
	b := h.browser(t)
	b.signIn(key)
	resp, page := b.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	start := strings.Index(page, `id="approval-`+ap.UUID.String()+`"`)
	require.GreaterOrEqual(t, start, 0, "the request is in the inbox")
	card, _, _ := strings.Cut(page[start:], "</section>")
	require.Contains(t, card, "1 of 2 approvals", "inbox")
	resp, page = b.do(http.MethodGet, "/console/runs/"+run.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<span id="approval-tally">1 of 2 approval(s) counted</span>`, "run page")
	require.Contains(t, page, "not counted")
}
