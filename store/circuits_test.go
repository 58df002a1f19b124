package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// The breaker's bookkeeping as a call sees it: a provider without failures has no circuit row
// (untracked: a success has nothing to close); failures are counted (tracked) and open the circuit at
// the threshold; an open circuit admits one probe after the cool-down; a success closes it and
// removes the row. The provider and its circuit state come in one read.
func TestCircuit_ProviderForCallTracksFailuresAndProbes(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	name := "circ_" + uuid.NewString()[:8]
	require.NoError(t, st.CreateProvider(ctx, &store.EnrichmentProvider{ProviderName: name, DisplayName: name, IsActive: true,
		SupportedIndicatorTypes: []string{"ip"}, HTTPConfig: map[string]any{"steps": []any{}}, AuthType: store.AuthNone}))
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw("DELETE FROM enrichment_providers WHERE provider_name = ?", name).Exec(context.Background())
	})
	policy := store.CircuitPolicy{Failures: 2, Cooldown: 50 * time.Millisecond, ProbeFor: time.Minute}
	state := func() store.CallCircuit {
		t.Helper()
		p, c, err := st.GetProviderForCall(ctx, name)
		require.NoError(t, err)
		require.Equal(t, name, p.ProviderName)
		return c
	}
	admit := func() bool {
		t.Helper()
		ok, err := st.CircuitAdmit(ctx, name, state(), policy)
		require.NoError(t, err)
		return ok
	}

	require.Equal(t, store.CallCircuit{}, state(), "no failure yet")
	require.True(t, admit())
	open, err := st.CircuitFailure(ctx, name, policy)
	require.NoError(t, err)
	require.False(t, open)
	require.Equal(t, store.CallCircuit{Tracked: true}, state(), "a counted failure must be reset by the next success")
	require.True(t, admit())

	open, err = st.CircuitFailure(ctx, name, policy)
	require.NoError(t, err)
	require.True(t, open)
	require.Equal(t, store.CallCircuit{Tracked: true, Open: true}, state())
	require.False(t, admit(), "open, cool-down not over")
	time.Sleep(100 * time.Millisecond)
	require.True(t, admit(), "the half-open probe")
	require.False(t, admit(), "one probe at a time")

	wasOpen, err := st.CircuitSuccess(ctx, name)
	require.NoError(t, err)
	require.True(t, wasOpen)
	require.Equal(t, store.CallCircuit{}, state(), "closed again: the row is gone")
	_, _, err = st.GetProviderForCall(ctx, "no_such_provider")
	require.ErrorIs(t, err, store.ErrNotFound)
}
