package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// The breaker's bookkeeping: a provider without failures has no row (admitted, untracked); failures
// are counted (tracked) and open the circuit at the threshold; an open circuit admits one probe after
// the cool-down; a success closes it and removes the row.
func TestCircuit_AdmitTracksFailuresAndProbes(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	p := "circ_" + uuid.NewString()[:8]
	policy := store.CircuitPolicy{Failures: 2, Cooldown: 50 * time.Millisecond, ProbeFor: time.Minute}

	admitted, tracked, err := st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.True(t, admitted)
	require.False(t, tracked, "no failure yet: a success has nothing to close")

	open, err := st.CircuitFailure(ctx, p, policy)
	require.NoError(t, err)
	require.False(t, open)
	admitted, tracked, err = st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.True(t, admitted)
	require.True(t, tracked, "a counted failure must be reset by the next success")

	open, err = st.CircuitFailure(ctx, p, policy)
	require.NoError(t, err)
	require.True(t, open)
	admitted, tracked, err = st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.False(t, admitted, "open, cool-down not over")
	require.True(t, tracked)

	time.Sleep(100 * time.Millisecond)
	admitted, _, err = st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.True(t, admitted, "the half-open probe")
	admitted, _, err = st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.False(t, admitted, "one probe at a time")

	wasOpen, err := st.CircuitSuccess(ctx, p)
	require.NoError(t, err)
	require.True(t, wasOpen)
	admitted, tracked, err = st.CircuitAdmit(ctx, p, policy)
	require.NoError(t, err)
	require.True(t, admitted)
	require.False(t, tracked, "closed again: the row is gone")
}
