package store_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/store"
)

// The allowed_hosts migration gives each existing secret the written-out hosts of the workflows that
// already use it (nothing working breaks), Okta's domains to the built-in Okta secrets, and nothing to
// a secret no workflow uses. It is re-run here on rows made the way they were before it.
func TestSecretAllowedHostsMigration(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	sfx := strings.ToUpper(uuid.NewString()[:8])
	used, unused, tplOnly := "USED_"+sfx, "UNUSED_"+sfx, "TPL_"+sfx
	for _, n := range []string{used, unused, tplOnly} {
		_, err := st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: n, ValueSealed: []byte("sealed"), AllowedHosts: []string{}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.DeleteWorkflowSecret(context.Background(), n) })
	}
	steps, _ := json.Marshal([]any{
		map[string]any{"name": "a", "url": "https://API.fw.example.com/v1?x={{indicator.value}}", "headers": map[string]any{"X": "{{secrets." + used + "}}"}},
		map[string]any{"name": "b", "url": "http://10.0.0.5:8080/x", "json_body": map[string]any{"k": "{{ secrets." + used + " }}"}},
		map[string]any{"name": "c", "url": "https://{{indicator.value}}/x", "headers": map[string]any{"X": "{{secrets." + tplOnly + "}}"}},
		map[string]any{"name": "d", "url": "https://other.example.com/", "headers": map[string]any{"X": "{{secrets." + used + "_NOT}}"}},
	})
	w := store.Workflow{Name: "migration " + sfx, WorkflowType: "indicator", State: store.WorkflowStateDraft, Steps: steps,
		TimeoutSeconds: 300, RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1, ApprovalMode: store.ApprovalModeAlways,
		ApprovalTimeoutSeconds: 3600, RequiredApprovals: 1, RiskLevel: "low"}
	require.NoError(t, st.CreateWorkflow(ctx, &w))
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw("DELETE FROM workflows WHERE uuid = ?", w.UUID).Exec(context.Background())
	})

	sql, err := os.ReadFile("migrations/20261124060000_secret_allowed_hosts.tx.up.sql")
	require.NoError(t, err)
	for _, stmt := range strings.Split(string(sql), "--bun:split")[1:] {
		_, err := st.DB().ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	hosts, err := st.WorkflowSecretHosts(ctx, []string{used, unused, tplOnly})
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.5:8080", "api.fw.example.com"}, hosts[used], "the written-out hosts of its steps, not of another secret's")
	require.Empty(t, hosts[unused], "no workflow uses it")
	require.Empty(t, hosts[tplOnly], "its only step's host is a template")
}

// TestOktaSecretsAreBoundToTheTenant: the built-in Okta secrets lose the every-tenant defaults
// (*.okta.com, …) of the first migration (issue 27 item 5), and BindUnboundSecrets (called at start
// with OKTA_DOMAIN's host) binds them to one tenant while hosts an admin set stay.
func TestOktaSecretsAreBoundToTheTenant(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	wildcards := []string{"*.okta.com", "*.oktapreview.com", "*.okta-emea.com"}
	for _, n := range []string{"OKTA_API_TOKEN", "OKTA_ORG_URL"} {
		_, err := st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: n, ValueSealed: []byte("sealed"), AllowedHosts: wildcards})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.DeleteWorkflowSecret(context.Background(), n) })
	}
	sql, err := os.ReadFile("migrations/20261125150100_okta_secret_hosts.tx.up.sql")
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, string(sql))
	require.NoError(t, err)
	// An admin had already narrowed one of them: kept.
	_, err = st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: "OKTA_ORG_URL", ValueSealed: []byte("sealed"), AllowedHosts: []string{"admin-set.okta.com"}})
	require.NoError(t, err)
	n, err := st.BindUnboundSecrets(ctx, []string{"OKTA_API_TOKEN", "OKTA_ORG_URL"}, []string{"acme.okta.com"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	hosts, err := st.WorkflowSecretHosts(ctx, []string{"OKTA_API_TOKEN", "OKTA_ORG_URL"})
	require.NoError(t, err)
	require.Equal(t, []string{"acme.okta.com"}, hosts["OKTA_API_TOKEN"])
	require.Equal(t, []string{"admin-set.okta.com"}, hosts["OKTA_ORG_URL"])
	token := netguard.NewHostList(hosts["OKTA_API_TOKEN"])
	require.True(t, token.Matches("acme.okta.com", "443"))
	require.False(t, token.Matches("attacker.okta.com", "443"), "another tenant is not the tenant")
}
