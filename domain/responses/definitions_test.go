package responses_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// admin saves the workflows of these tests (CheckSave's admin rules have their own tests).
var admin = actor(auth.KeyTypeHuman, auth.ScopeAdmin)

func draftWorkflow(steps string) store.Workflow {
	return store.Workflow{Name: "definitions " + uuid.NewString(), WorkflowType: "indicator", State: store.WorkflowStateDraft,
		Steps: json.RawMessage(steps), TimeoutSeconds: 300, RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1,
		ApprovalMode: store.ApprovalModeAlways, ApprovalTimeoutSeconds: 3600, RequiredApprovals: 1, RiskLevel: "low"}
}

// secretName is a fresh valid secret name.
func secretName(prefix string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(uuid.NewString()[:13], "-", ""))
}

func TestCreateWorkflow_StepRules(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()

	bad := draftWorkflow(`[{"name":"a","url":"https://x.example.com/{{auth.api_key}}"}]`)
	err := svc.CreateWorkflow(ctx, admin, &bad)
	var errs validate.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []string{`["steps",0]`}, locs(err), "no auth namespace in workflows")
	_, err = st.GetWorkflow(ctx, bad.UUID)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing saved")

	secret := secretName("DEFS")
	_, err = st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: secret, ValueSealed: []byte("x"), AllowedHosts: []string{"api.example.com"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.DeleteWorkflowSecret(context.Background(), secret) })
	elsewhere := draftWorkflow(`[{"name":"a","url":"https://other.example.net/","headers":{"X-Key":"{{secrets.` + secret + `}}"}}]`)
	err = svc.CreateWorkflow(ctx, admin, &elsewhere)
	var he *responses.SecretHostError
	require.ErrorAs(t, err, &he)
	require.Equal(t, secret, he.Secret)

	ok := draftWorkflow(`[{"name":"a","url":"https://api.example.com/","headers":{"X-Key":"{{secrets.` + secret + `}}"}}]`)
	require.NoError(t, svc.CreateWorkflow(ctx, admin, &ok))
	require.Equal(t, []string{secret}, ok.RequiredSecrets, "the secrets the steps name")
	got, err := st.GetWorkflow(ctx, ok.UUID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Version)
}

func TestUpdateWorkflow_Versions(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	w := draftWorkflow(`[{"name":"a","url":"https://x.example.com/"}]`)
	require.NoError(t, svc.CreateWorkflow(ctx, admin, &w))

	active := store.WorkflowStateActive
	got, err := svc.UpdateWorkflow(ctx, admin, w.UUID, func(*store.WorkflowDefinition) {}, &active)
	require.NoError(t, err)
	require.Equal(t, store.WorkflowStateActive, got.State)
	require.Equal(t, 1, got.Version, "a state change is no new version")

	got, err = svc.UpdateWorkflow(ctx, admin, w.UUID, func(d *store.WorkflowDefinition) { d.RiskLevel = "high" }, nil)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version, "a changed definition is a new version")
	def, err := st.GetWorkflowVersion(ctx, w.UUID, 2)
	require.NoError(t, err)
	require.Equal(t, "high", def.RiskLevel)

	got, err = svc.UpdateWorkflow(ctx, admin, w.UUID, func(d *store.WorkflowDefinition) { d.RiskLevel = "high" }, nil)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version, "nothing changed, nothing written")

	_, err = svc.UpdateWorkflow(ctx, admin, w.UUID, func(d *store.WorkflowDefinition) { d.Steps = json.RawMessage(`{}`) }, nil)
	var errs validate.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []string{`["steps"]`}, locs(err))

	_, err = svc.UpdateWorkflow(ctx, admin, uuid.New(), func(*store.WorkflowDefinition) {}, nil)
	var nf *responses.NotFoundError
	require.ErrorAs(t, err, &nf)
}

func TestSystemWorkflowRules(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()
	name := secretName("SYS")
	w := draftWorkflow(`[{"name":"a","url":"https://x.example.com/","headers":{"X-Key":"{{secrets.` + name + `}}"}}]`)
	w.IsSystem, w.State, w.RequiredSecrets = true, store.WorkflowStateInactive, []string{name}
	require.NoError(t, st.CreateWorkflow(ctx, &w))

	_, err := svc.UpdateWorkflow(ctx, admin, w.UUID, func(d *store.WorkflowDefinition) { d.Name = "mine" }, nil)
	require.ErrorIs(t, err, responses.ErrSystemReadOnly)
	active := store.WorkflowStateActive
	_, err = svc.UpdateWorkflow(ctx, admin, w.UUID, func(*store.WorkflowDefinition) {}, &active)
	var nc *responses.NotConfiguredError
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []string{name}, nc.Missing)
	require.ErrorIs(t, svc.DeleteWorkflow(ctx, admin, w.UUID), responses.ErrSystemNotDeletable)
	_, err = st.GetWorkflow(ctx, w.UUID)
	require.NoError(t, err, "still there")

	custom := draftWorkflow(`[{"name":"a","url":"https://x.example.com/"}]`)
	require.NoError(t, svc.CreateWorkflow(ctx, admin, &custom))
	require.NoError(t, svc.DeleteWorkflow(ctx, admin, custom.UUID))
	_, err = st.GetWorkflow(ctx, custom.UUID)
	require.ErrorIs(t, err, store.ErrNotFound)
	var nf *responses.NotFoundError
	require.ErrorAs(t, svc.DeleteWorkflow(ctx, admin, custom.UUID), &nf)
}

// Saving a deciding workflow: expressions and code are checked (a 422 naming the step, line and
// column, nothing saved), and a code step's result derived from a secret-carrying step counts as
// derived for who may save it.
func TestCreateWorkflow_DecisionRules(t *testing.T) {
	st := testStore(t)
	svc := responses.New(responses.Deps{Store: st})
	ctx := context.Background()

	bad := draftWorkflow(`[{"name":"enrich","kind":"code","code":"def main(ctx):\n  return nope"}]`)
	err := svc.CreateWorkflow(ctx, admin, &bad)
	var errs validate.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []string{`["steps",0,"code"]`}, locs(err))
	require.Contains(t, errs[0].Msg, `step "enrich": code: line 2, column 10: undefined: nope`)
	require.Equal(t, map[string]any{"step": "enrich", "line": 2, "column": 10}, errs[0].Ctx)
	_, err = st.GetWorkflow(ctx, bad.UUID)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing saved")

	secret := secretName("DECIDE")
	_, err = st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: secret, ValueSealed: []byte("x"), AllowedHosts: []string{"api.example.com"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.DeleteWorkflowSecret(context.Background(), secret) })
	steps := `[{"name":"token","method":"POST","url":"https://api.example.com/token","form_body":{"s":"{{secrets.` + secret + `}}"}},
		{"name":"copy","kind":"code","code":"def main(ctx):\n  return ctx['steps']['token']['response']['t']"},
		{"name":"send","url":"https://api.example.com/use?t={{steps.copy.result}}"}]`
	w := draftWorkflow(steps)
	err = svc.CreateWorkflow(ctx, actor(auth.KeyTypeHuman, auth.ScopeWorkflowsWrite), &w)
	var fe *responses.ForbiddenError
	require.ErrorAs(t, err, &fe, "sending a code result derived from a secret needs admin")
	require.Contains(t, fe.Reason, "step copy")
	w = draftWorkflow(steps)
	require.NoError(t, svc.CreateWorkflow(ctx, admin, &w))
	require.Equal(t, []string{secret}, w.RequiredSecrets)
}
