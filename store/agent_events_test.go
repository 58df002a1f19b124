package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// GetAgentEvents reads a batch's events in one statement; an event that is gone is absent.
func TestGetAgentEvents(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	a := &store.AgentEvent{Event: store.EventAlertEnriched, Facts: []byte(`{"n": 1}`)}
	b := &store.AgentEvent{Event: store.EventAlertUpdated}
	for _, e := range []*store.AgentEvent{a, b} {
		require.NoError(t, st.RecordAgentEvent(ctx, nil, e))
	}
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw("DELETE FROM agent_events WHERE uuid IN (?, ?)", a.UUID, b.UUID).Exec(context.Background())
	})
	gone := uuid.New()
	got, err := st.GetAgentEvents(ctx, []uuid.UUID{a.UUID, gone, b.UUID})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, store.EventAlertEnriched, got[a.UUID].Event)
	require.JSONEq(t, `{"n": 1}`, string(got[a.UUID].Facts))
	require.Equal(t, store.EventAlertUpdated, got[b.UUID].Event)
	none, err := st.GetAgentEvents(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}
