package store_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// rerun re-runs the statements of a migration after its first split (the backfills), as they run on
// rows made the way they were before it.
func rerun(t *testing.T, st *store.Store, file string) {
	t.Helper()
	sql, err := os.ReadFile("migrations/" + file)
	require.NoError(t, err)
	parts := strings.Split(string(sql), "--bun:split")
	if len(parts) > 1 {
		parts = parts[1:]
	}
	for _, stmt := range parts {
		_, err := st.DB().ExecContext(context.Background(), stmt)
		require.NoError(t, err)
	}
}

// Issue 27: existing agents take the scopes of the key that registered them (when its prefix names
// exactly one key), else none; an agent registered without a key stays unrestricted (NULL).
func TestAgentRegisteredScopesMigration(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	key := func(prefix string, scopes ...string) {
		hash := make([]byte, 32)
		_, _ = rand.Read(hash)
		k := store.APIKey{Name: "mig " + prefix, KeyHash: hash, KeyPrefix: prefix, Scopes: scopes, KeyType: store.KeyTypeHuman, IsActive: true}
		require.NoError(t, st.CreateAPIKey(ctx, &k))
	}
	sfx := uuid.NewString()[:4]
	unique, shared := "cai_u"+sfx[:3], "cai_s"+sfx[:3]
	key(unique, "agents:write", "alerts:read")
	key(shared, "admin")
	key(shared, "agents:write")
	agent := func(createdBy *string) uuid.UUID {
		a := store.Agent{Name: "mig agent " + uuid.NewString(), EndpointURL: "https://agents.example.com/h", SigningSecret: []byte("x"),
			Events: []string{"alert.enriched"}, TriggerOnSources: []string{}, TriggerOnSeverities: []string{}, TimeoutSeconds: 30,
			RetryCount: 3, IsActive: true, CreatedBy: createdBy}
		require.NoError(t, st.CreateAgent(ctx, &a))
		t.Cleanup(func() { _ = st.DeleteAgent(context.Background(), a.UUID) })
		return a.UUID
	}
	gone := "cai_g" + sfx[:3]
	byUnique, byShared, byGone, bySystem := agent(&unique), agent(&shared), agent(&gone), agent(nil)
	rerun(t, st, "20261125140100_agent_registered_scopes.tx.up.sql")
	scopes := func(id uuid.UUID) []string {
		a, err := st.GetAgent(ctx, id)
		require.NoError(t, err)
		return a.RegisteredScopes
	}
	require.Equal(t, []string{"agents:write", "alerts:read"}, scopes(byUnique))
	require.Equal(t, []string{}, scopes(byShared), "two keys share the prefix: none")
	require.Equal(t, []string{}, scopes(byGone), "its key is gone: none")
	require.Nil(t, scopes(bySystem), "registered without a key: unrestricted")
}

// Issue 27: the Entra secrets that allowed the token host also allow Graph, where the token goes.
func TestEntraGraphHostMigration(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	for name, hosts := range map[string][]string{"ENTRA_CLIENT_SECRET": {"login.microsoftonline.com"}, "ENTRA_CLIENT_ID": {"example.com"}} {
		_, err := st.PutWorkflowSecret(ctx, &store.WorkflowSecret{Name: name, ValueSealed: []byte("sealed"), AllowedHosts: hosts})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.DeleteWorkflowSecret(context.Background(), name) })
	}
	rerun(t, st, "20261125140000_entra_graph_host.tx.up.sql")
	rerun(t, st, "20261125140000_entra_graph_host.tx.up.sql")
	hosts, err := st.WorkflowSecretHosts(ctx, []string{"ENTRA_CLIENT_SECRET", "ENTRA_CLIENT_ID"})
	require.NoError(t, err)
	require.Equal(t, []string{"login.microsoftonline.com", "graph.microsoft.com"}, hosts["ENTRA_CLIENT_SECRET"], "once, however often it runs")
	require.Equal(t, []string{"example.com"}, hosts["ENTRA_CLIENT_ID"], "an admin's other choice is left alone")
}
