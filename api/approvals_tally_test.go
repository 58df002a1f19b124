package api

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// What counts toward a quorum is counted once (store.ApprovalRequest.Tally): with a non-human
// decision recorded beside a human approval on a request needing two, the inbox card, the decide
// page and the quorum all count one approval — the agent's is recorded, never counted — and the
// next human approval is the one that completes the quorum. A door that counted every recorded
// approval would show "2 of 2" on a request still pending.
func TestNonHumanDecisionCountedAlikeByInboxDecidePageAndQuorum(t *testing.T) {
	ts := newTestServer(t, func(_ *Config, d *Deps) { d.Workflows = testStore(t) })
	st := ts.Store
	ctx := context.Background()
	svc := responses.New(responses.Deps{Store: st})
	_, ap, _ := gatedRun(t, st, 2, time.Now().Add(time.Hour))
	_, err := svc.Decide(ctx, ap.UUID, keyDecider(t, uuid.New()), true, nil)
	require.NoError(t, err)
	got, err := st.DecideApproval(ctx, ap.UUID, func(store.ApprovalRequest, time.Time) (store.ApprovalOutcome, error) {
		return store.ApprovalOutcome{Decision: store.ApprovalDecision{Identity: "key:" + uuid.NewString(), ResponderID: "bot",
			Decision: store.ApprovalApproved, Human: false}, Status: store.ApprovalPending, ActorType: store.ActorAPI}, nil
	})
	require.NoError(t, err)
	require.Len(t, got.Decisions, 2)
	require.Equal(t, store.ApprovalTally{Approvals: 1, Remaining: 1}, got.Tally())

	// The inbox.
	cards, err := svc.Inbox(ctx, keyDecider(t, uuid.New()), time.Now())
	require.NoError(t, err)
	var card *responses.Card
	for i := range cards {
		if cards[i].Request.UUID == ap.UUID {
			card = &cards[i]
		}
	}
	require.NotNil(t, card, "the request is pending")
	require.Equal(t, 1, card.Approved, "inbox")

	// The decide page.
	tok, hash, err := approvals.NewToken()
	require.NoError(t, err)
	require.NoError(t, st.MarkApprovalNotified(ctx, ap.UUID, "none", nil, hash))
	r := ts.do(t, http.MethodGet, "/v1/approvals/"+ap.UUID.String()+"/decide?token="+url.QueryEscape(tok), "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "<td>1 of 2 required</td>", "decide page")

	// The quorum: the next human approval completes it, as the count shown said.
	got, err = svc.Decide(ctx, ap.UUID, keyDecider(t, uuid.New()), true, nil)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, got.Status)
	require.Equal(t, store.ApprovalTally{Approvals: 2}, got.Tally())
}
