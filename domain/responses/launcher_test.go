package responses_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

func choiceNames(l responses.Launch) []string {
	out := []string{}
	for _, c := range l.Choices {
		out = append(out, c.Name)
	}
	return out
}

// The launcher offers per indicator only the workflows that fit it (its type listed, or every type),
// the least risky first, with the steps as defined and the gate for the caller; internal addresses are
// named; Preview refuses what Execute refuses.
func TestLauncherOffersOnlyFittingWorkflows(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	ipBlock := newWorkflow(t, st, func(w *store.Workflow) {
		w.Name, w.RiskLevel, w.ApprovalMode = "zz block "+uuid.NewString(), "critical", store.ApprovalModeAlways
		w.Steps = json.RawMessage(`[{"name":"block","method":"post","url":"https://fw.example.com/api/block?token={{secrets.FW}}"}]`)
	})
	ipLookup := newWorkflow(t, st, func(w *store.Workflow) { w.Name = "zz lookup " + uuid.NewString() })
	domainOnly := newWorkflow(t, st, func(w *store.Workflow) { w.IndicatorTypes = []string{"domain"} })
	anyType := newWorkflow(t, st, func(w *store.Workflow) { w.IndicatorTypes = []string{}; w.RiskLevel = "medium" })
	inactive := newWorkflow(t, st, func(w *store.Workflow) { w.State = store.WorkflowStateDraft })
	for _, w := range []store.Workflow{ipBlock, ipLookup, domainOnly, anyType, inactive} {
		t.Cleanup(func() { _ = st.DeleteWorkflow(context.Background(), w.UUID) })
	}
	inds := []store.Indicator{{UUID: uuid.New(), Type: "ip", Value: "10.1.2.3"}, {UUID: uuid.New(), Type: "domain", Value: "evil.example.org"},
		{UUID: uuid.New(), Type: "ip", Value: "8.8.8.8"}, {UUID: uuid.New(), Type: "hash_md5", Value: "D41D8CD98F00B204E9800998ECF8427E"}}
	human := actor(auth.KeyTypeHuman)
	ls, err := svc.Launcher(ctx, human, inds)
	require.NoError(t, err)
	require.Len(t, ls, len(inds))
	for i, l := range ls {
		require.Equal(t, inds[i].UUID, l.Indicator.UUID, "in the order given")
		for _, c := range l.Choices {
			w, err := st.GetWorkflow(ctx, c.WorkflowUUID)
			require.NoError(t, err)
			require.True(t, responses.Fits(w, l.Indicator.Type), "%s offered for %s", w.Name, l.Indicator.Type)
			require.Equal(t, store.WorkflowStateActive, w.State)
		}
		names := choiceNames(l)
		require.Contains(t, names, anyType.Name, "a workflow for every type fits every indicator")
		require.NotContains(t, names, inactive.Name)
		switch l.Indicator.Type {
		case "ip":
			require.Contains(t, names, ipBlock.Name)
			require.Contains(t, names, ipLookup.Name)
			require.NotContains(t, names, domainOnly.Name)
			rank := map[string]int{"low": 0, "medium": 1, "high": 2, "critical": 3}
			for j := 1; j < len(l.Choices); j++ {
				require.LessOrEqual(t, rank[l.Choices[j-1].RiskLevel], rank[l.Choices[j].RiskLevel], "the least risky first")
			}
		case "domain":
			require.Contains(t, names, domainOnly.Name)
			require.NotContains(t, names, ipBlock.Name)
		case "hash_md5":
			require.NotContains(t, names, ipBlock.Name)
			require.NotContains(t, names, domainOnly.Name)
		}
	}
	require.Contains(t, ls[0].Internal, "private address", "10.1.2.3 is RFC 1918")
	require.Empty(t, ls[2].Internal, "8.8.8.8 is public")
	for value, want := range map[string]string{"127.0.0.1": "loopback", "169.254.10.1": "link-local", "fd12:3456::1": "private",
		"192.168.1.1": "private", "172.16.0.9": "private", "::1": "loopback", "1.1.1.1": ""} {
		got := responses.InternalAddress("ip", value)
		if want == "" {
			require.Empty(t, got, value)
		} else {
			require.Contains(t, got, want, value)
		}
	}
	i := slices.IndexFunc(ls[0].Choices, func(c responses.Choice) bool { return c.WorkflowUUID == ipBlock.UUID })
	block := ls[0].Choices[i]
	require.True(t, block.Destructive)
	require.True(t, block.Gated)
	require.Equal(t, "POST", block.Steps[0].Method)
	require.Equal(t, "fw.example.com", block.Steps[0].Host)
	require.Equal(t, "/api/block", block.Steps[0].Path, "the query (where credentials go) is never shown")
	j := slices.IndexFunc(ls[0].Choices, func(c responses.Choice) bool { return c.WorkflowUUID == ipLookup.UUID })
	require.False(t, ls[0].Choices[j].Gated, "agent_only: a human's run is not gated")
	agentLs, err := svc.Launcher(ctx, actor(auth.KeyTypeAgent), inds[:1])
	require.NoError(t, err)
	j = slices.IndexFunc(agentLs[0].Choices, func(c responses.Choice) bool { return c.WorkflowUUID == ipLookup.UUID })
	require.True(t, agentLs[0].Choices[j].Gated, "an agent's run is")

	// Preview: the choice and the warning; what Execute refuses is refused.
	p, err := svc.Preview(ctx, human, inds[0], ipBlock.UUID)
	require.NoError(t, err)
	require.Len(t, p.Choices, 1)
	require.Equal(t, ipBlock.Name, p.Choices[0].Name)
	require.NotEmpty(t, p.Internal)
	_, err = svc.Preview(ctx, human, inds[1], ipBlock.UUID)
	require.Equal(t, []string{`["body","indicator_type"]`}, locs(err), "an ip workflow on a domain")
	_, err = svc.Preview(ctx, human, inds[0], inactive.UUID)
	var na *responses.NotActiveError
	require.ErrorAs(t, err, &na)
	_, err = svc.Preview(ctx, human, inds[0], uuid.New())
	var nf *responses.NotFoundError
	require.ErrorAs(t, err, &nf)
	empty, err := svc.Launcher(ctx, human, nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

// Inbox: pending, unexpired requests, the soonest to expire first, with the version's steps; MayDecide
// reads Decide's own rules: no approval (nor rejection) of one's own run, none twice, none by an agent.
func TestInboxAndMayDecide(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	me, other := actor(auth.KeyTypeHuman), actor(auth.KeyTypeHuman)
	now := time.Now()
	late := gatedRun(t, st, 2, other, now.Add(3*time.Hour))
	soon := gatedRun(t, st, 2, other, now.Add(20*time.Minute))
	mine := gatedRun(t, st, 1, me, now.Add(time.Hour))
	gone := gatedRun(t, st, 1, other, now.Add(-time.Minute))
	who := byKey(t, me, "me")
	cards, err := svc.Inbox(ctx, who, now)
	require.NoError(t, err)
	pos := map[uuid.UUID]int{}
	for i, c := range cards {
		pos[c.Request.UUID] = i
		if i > 0 {
			require.False(t, c.Request.ExpiresAt.Before(cards[i-1].Request.ExpiresAt), "sorted by expiry")
		}
	}
	require.NotContains(t, pos, gone.UUID, "expired requests are not listed")
	require.Less(t, pos[soon.UUID], pos[mine.UUID])
	require.Less(t, pos[mine.UUID], pos[late.UUID])
	own := cards[pos[mine.UUID]]
	require.False(t, own.CanApprove, "no approval of one's own run")
	require.ErrorIs(t, own.Refusal, responses.ErrSelfApproval)
	require.Equal(t, "x.example.com", own.Steps[0].Host)
	require.Equal(t, store.ApprovalModeAlways, own.ApprovalMode, "what the version declares")
	require.Equal(t, "workflow-run-"+mine.RunUUID.String(), own.TemporalID)
	require.True(t, cards[pos[soon.UUID]].CanApprove)
	require.Contains(t, own.Internal, "reserved", "192.0.2.1 is a documentation range")
	// The rule MayDecide reads is the one Decide applies.
	_, err = svc.Decide(ctx, mine.UUID, who, true, nil)
	require.ErrorIs(t, err, responses.ErrSelfApproval)
	_, err = svc.Decide(ctx, soon.UUID, who, true, nil)
	require.NoError(t, err)
	cards, err = svc.Inbox(ctx, who, now)
	require.NoError(t, err)
	for _, c := range cards {
		if c.Request.UUID == soon.UUID {
			require.False(t, c.CanApprove, "not twice")
			require.ErrorIs(t, c.Refusal, responses.ErrResponderVoted)
			require.Equal(t, 1, c.Approved)
		}
	}
	_, err = svc.Decide(ctx, soon.UUID, who, false, nil)
	require.ErrorIs(t, err, responses.ErrResponderVoted)
	agentWho, err := responses.ByKey(actor(auth.KeyTypeAgent), nil)
	require.ErrorIs(t, err, responses.ErrAgentCannotApprove)
	require.ErrorIs(t, responses.MayDecide(late, agentWho, true, now), responses.ErrAgentCannotApprove)
	require.ErrorIs(t, responses.MayDecide(late, who, true, now.Add(4*time.Hour)), responses.ErrApprovalExpired)
}
