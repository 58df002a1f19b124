package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	once     sync.Once
	sharedSt *store.Store
	openErr  error
)

func testStore(t *testing.T) *store.Store {
	t.Helper()
	dsn := testenv.DatabaseURL(t)
	once.Do(func() {
		ctx := context.Background()
		if sharedSt, openErr = store.Open(ctx, dsn, store.Options{}); openErr == nil {
			openErr = sharedSt.Migrate(ctx)
		}
	})
	require.NoError(t, openErr)
	return sharedSt
}

func newWorkflow(t *testing.T, st *store.Store, edit func(*store.Workflow)) store.Workflow {
	t.Helper()
	w := store.Workflow{Name: "responses " + uuid.NewString(), WorkflowType: "indicator", State: store.WorkflowStateActive,
		IndicatorTypes: []string{"ip"}, Steps: json.RawMessage(`[{"name":"a","url":"https://x.example.com/"}]`), TimeoutSeconds: 300,
		RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1, ApprovalMode: store.ApprovalModeAgentOnly, ApprovalTimeoutSeconds: 3600,
		RequiredApprovals: 1, RiskLevel: "low"}
	if edit != nil {
		edit(&w)
	}
	require.NoError(t, st.CreateWorkflow(context.Background(), &w))
	return w
}

func actor(keyType string, scopes ...string) responses.Actor {
	id := uuid.New()
	return responses.Actor{KeyUUID: id, KeyPrefix: "cai_" + id.String()[:4], KeyName: "test", KeyType: keyType, Scopes: scopes}
}

func locs(err error) []string {
	var errs validate.Errors
	if !errors.As(err, &errs) {
		return nil
	}
	out := []string{}
	for _, e := range errs {
		b, _ := json.Marshal(e.Loc)
		out = append(out, string(b))
	}
	return out
}

func TestExecute(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	w := newWorkflow(t, st, nil)
	agent, human := actor(auth.KeyTypeAgent), actor(auth.KeyTypeHuman)
	req := responses.ExecuteRequest{WorkflowUUID: w.UUID, IndicatorType: "ip", IndicatorValue: " 192.0.2.1 "}

	// Agents give a reason and a confidence; the trigger source is the key's type.
	_, err := svc.Execute(ctx, agent, req)
	require.ElementsMatch(t, []string{`["body","reason"]`, `["body","confidence"]`}, locs(err))
	blank, conf := "  ", 0.5
	r := req
	r.Reason, r.Confidence = &blank, &conf
	_, err = svc.Execute(ctx, agent, r)
	require.Equal(t, []string{`["body","reason"]`}, locs(err))

	reason := "phishing campaign"
	r.Reason = &reason
	ex, err := svc.Execute(ctx, agent, r)
	require.NoError(t, err)
	require.Equal(t, "agent", ex.Run.TriggerSource)
	require.Equal(t, store.RunPendingApproval, ex.Run.Status, "agent_only gates agents")
	require.NotNil(t, ex.Approval)
	require.Equal(t, "192.0.2.1", ex.Run.IndicatorValue, "normalized")
	ex, err = svc.Execute(ctx, human, req)
	require.NoError(t, err)
	require.Equal(t, store.RunQueued, ex.Run.Status, "agent_only lets humans through")
	require.Nil(t, ex.Approval)

	// Idempotency: one run and one start entry per key, workflow and Idempotency-Key.
	before, err := st.StartsPending(ctx, store.StartWorkflowRun)
	require.NoError(t, err)
	r2 := req
	r2.IdempotencyKey = "retry-" + uuid.NewString()
	a, err := svc.Execute(ctx, human, r2)
	require.NoError(t, err)
	b, err := svc.Execute(ctx, human, r2)
	require.NoError(t, err)
	require.Equal(t, a.Run.UUID, b.Run.UUID)
	after, err := st.StartsPending(ctx, store.StartWorkflowRun)
	require.NoError(t, err)
	require.Equal(t, before+1, after)
	r2.IdempotencyKey = "bad key with spaces"
	_, err = svc.Execute(ctx, human, r2)
	require.Equal(t, []string{`["header","Idempotency-Key"]`}, locs(err))

	// Rules on the workflow and the alert.
	_, err = svc.Execute(ctx, human, responses.ExecuteRequest{WorkflowUUID: w.UUID, IndicatorType: "domain", IndicatorValue: "example.com"})
	require.Equal(t, []string{`["body","indicator_type"]`}, locs(err))
	_, err = svc.Execute(ctx, human, responses.ExecuteRequest{WorkflowUUID: w.UUID, IndicatorType: "ip", IndicatorValue: "999.1.1.1"})
	require.Equal(t, []string{`["body","indicator_value"]`}, locs(err))
	alert := uuid.New()
	r3 := req
	r3.AlertUUID = &alert
	_, err = svc.Execute(ctx, human, r3)
	var nf *responses.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "Alert", nf.What)
	_, err = svc.Execute(ctx, human, responses.ExecuteRequest{WorkflowUUID: uuid.New(), IndicatorType: "ip", IndicatorValue: "192.0.2.1"})
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "Workflow", nf.What)
	draft := newWorkflow(t, st, func(w *store.Workflow) { w.State = store.WorkflowStateDraft })
	_, err = svc.Execute(ctx, human, responses.ExecuteRequest{WorkflowUUID: draft.UUID, IndicatorType: "ip", IndicatorValue: "192.0.2.1"})
	var na *responses.NotActiveError
	require.ErrorAs(t, err, &na)
}

func TestDecide(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	w := newWorkflow(t, st, func(w *store.Workflow) { w.ApprovalMode, w.RequiredApprovals = store.ApprovalModeAlways, 2 })
	trigger := actor(auth.KeyTypeHuman)
	ex, err := svc.Execute(ctx, trigger, responses.ExecuteRequest{WorkflowUUID: w.UUID, IndicatorType: "ip", IndicatorValue: "192.0.2.1"})
	require.NoError(t, err)
	id := ex.Approval.UUID

	_, err = responses.ByKey(actor(auth.KeyTypeAgent), nil)
	require.ErrorIs(t, err, responses.ErrAgentCannotApprove)
	_, err = svc.Decide(ctx, id, responses.Decider{}, true, nil)
	require.ErrorIs(t, err, responses.ErrAgentCannotApprove, "a zero Decider decides nothing")

	self, err := responses.ByKey(trigger, nil)
	require.NoError(t, err)
	_, err = svc.Decide(ctx, id, self, true, nil)
	require.ErrorIs(t, err, responses.ErrSelfApproval)

	approver := actor(auth.KeyTypeHuman)
	label := "alice"
	who, err := responses.ByKey(approver, &label)
	require.NoError(t, err)
	a, err := svc.Decide(ctx, id, who, true, nil)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	require.Equal(t, "alice", a.Decisions[0].ResponderID)
	require.Equal(t, approver.KeyPrefix, *a.Decisions[0].KeyPrefix)
	// A Slack user is another human.
	a, err = svc.Decide(ctx, id, responses.BySlack("T1", "U1", "bob"), true, nil)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	var slack store.ApprovalDecision
	for _, d := range a.Decisions {
		if d.VerifiedUser != nil {
			slack = d
		}
	}
	require.Equal(t, "slack:T1:U1", *slack.VerifiedUser)
	require.Equal(t, "slack:bob", slack.ResponderID)
	_, err = svc.Decide(ctx, uuid.New(), who, true, nil)
	var nf *responses.NotFoundError
	require.ErrorAs(t, err, &nf)
}

func TestDryRun(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	const secret = "dry-run-secret-value"
	sealed, err := box.Seal([]byte(secret))
	require.NoError(t, err)
	name := "DRY_RUN_SECRET"
	var hits atomic.Int32
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/lookup" {
			seen.Store(r.Header.Get("X-Token"))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"live-1"}`))
	}))
	t.Cleanup(srv.Close)
	_, err = st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: name, ValueSealed: sealed,
		AllowedHosts: []string{strings.TrimPrefix(srv.URL, "http://")}})
	require.NoError(t, err)
	steps := `[{"name":"lookup","url":"` + srv.URL + `/lookup","headers":{"X-Token":"{{secrets.` + name + `}}"}},
		{"name":"act","method":"POST","url":"` + srv.URL + `/act/{{steps.lookup.response.id}}","expected_status":[201]}]`
	w := newWorkflow(t, st, func(w *store.Workflow) { w.Steps = json.RawMessage(steps) })
	svc := responses.New(responses.Deps{Store: st, Secrets: box, StepClient: srv.Client()})
	req := responses.TestRequest{WorkflowUUID: w.UUID, IndicatorType: "ip", IndicatorValue: "192.0.2.1",
		Mocks: map[string]responses.MockResponse{"lookup": {Body: map[string]any{"id": "mock-7"}}}}

	// Mocks answer by step name; a step without a mock gets its first expected status.
	res, err := svc.Test(ctx, actor(auth.KeyTypeAgent, auth.ScopeWorkflowsExecute), req)
	require.NoError(t, err)
	require.True(t, res.Result.Success, res.Result.Error)
	require.Len(t, res.Result.Steps, 2)
	require.Equal(t, 200, res.Result.Steps[0].ResponseStatusCode)
	require.Contains(t, res.Result.Steps[1].RequestURL, "/act/"+httpsteps.Mask("mock-7"),
		"the second step reads the first's mock response, masked like the secret it was received for (issue 27)")
	require.NotContains(t, res.Result.Steps[1].RequestURL, "mock-7")
	require.Equal(t, 201, res.Result.Steps[1].ResponseStatusCode)
	require.NotEqual(t, secret, res.Result.Steps[0].RequestHeaders["X-Token"])
	require.Zero(t, hits.Load())

	// Live: admin only, and recorded.
	req.LiveHTTP = true
	_, err = svc.Test(ctx, actor(auth.KeyTypeHuman, auth.ScopeWorkflowsExecute, auth.ScopeWorkflowsWrite), req)
	var fb *responses.ForbiddenError
	require.ErrorAs(t, err, &fb)
	require.Equal(t, []string{auth.ScopeAdmin}, fb.Scopes)
	require.Zero(t, hits.Load())
	admin := actor(auth.KeyTypeHuman, auth.ScopeAdmin)
	res, err = svc.Test(ctx, admin, req)
	require.NoError(t, err)
	require.False(t, res.Result.Success, "the live act step answers 200, not the expected 201")
	require.EqualValues(t, 2, hits.Load())
	require.Equal(t, secret, seen.Load())
	var events int
	require.NoError(t, st.DB().NewRaw("SELECT count(*) FROM activity_events WHERE workflow_uuid = ? AND event_type = 'workflow.tested_live' AND actor_key_prefix = ?",
		w.UUID, admin.KeyPrefix).Scan(ctx, &events))
	require.Equal(t, 1, events)

	// Without a step client, live is unavailable; without secrets, a workflow naming one is too.
	_, err = responses.New(responses.Deps{Store: st, Secrets: box}).Test(ctx, admin, req)
	require.ErrorIs(t, err, responses.ErrUnavailable)
	req.LiveHTTP = false
	_, err = responses.New(responses.Deps{Store: st}).Test(ctx, admin, req)
	require.ErrorIs(t, err, responses.ErrUnavailable)
}

func TestSecretNames(t *testing.T) {
	raw := json.RawMessage(`[{"name":"a","url":"https://x.example.com/{{secrets.B_TOKEN}}","headers":{"K":"{{secrets.A_TOKEN}}"}},
		{"name":"b","url":"https://x.example.com/{{secrets.A_TOKEN}}"}]`)
	require.Equal(t, []string{"A_TOKEN", "B_TOKEN"}, responses.WorkflowSecretNames(raw))
	require.Equal(t, []string{}, responses.WorkflowSecretNames(json.RawMessage(`not json`)))
	require.Equal(t, []string{}, responses.WorkflowSecretNames(json.RawMessage(`[{"name":"a","url":"https://x.example.com/"}]`)))
}
