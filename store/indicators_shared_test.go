package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/store"
)

// Alerts that share indicators link them without waiting for each other: a link transaction still
// open (a slow pipeline step, a storm of one detection) holding the shared indicators does not block
// the next alert's link, and last_seen is bumped at most once per store.LastSeenGrain. An upsert that
// updated every existing row held its lock until commit and queued every such link behind it.
func TestUpsertIndicators_SharedRowsDoNotQueue(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	keys := []store.IndicatorKey{{Type: "ip", Value: "198.51.100." + uuid.NewString()[:2]}, {Type: "domain", Value: "shared-" + uuid.NewString()[:8] + ".example.com"}}
	first, err := st.UpsertIndicators(ctx, nil, keys)
	require.NoError(t, err)
	require.Len(t, first, 2)
	// last_seen an hour ago: the next upsert bumps it.
	_, err = st.DB().NewRaw(`UPDATE indicators SET last_seen = last_seen - interval '1 hour' WHERE uuid IN (?, ?)`, first[0].UUID, first[1].UUID).Exec(ctx)
	require.NoError(t, err)

	tx, err := st.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	held, err := st.UpsertIndicators(ctx, tx, keys) // bumps last_seen: holds both rows until commit
	require.NoError(t, err)
	require.Equal(t, first[0].UUID, held[0].UUID)

	done := make(chan error, 1)
	go func() {
		_, err := st.LinkExtraction(ctx, newAlert(t, st), store.ExtractionLinks{Keys: keys}, "extraction", "generic", nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "the second alert links while the first transaction is open")
	case <-time.After(5 * time.Second):
		t.Fatal("the second alert's link waited for the first transaction's row locks")
	}
	require.NoError(t, tx.Commit())

	var bumped []store.Indicator
	require.NoError(t, st.DB().NewSelect().Model(&bumped).Where("uuid IN (?)", bun.List([]uuid.UUID{first[0].UUID, first[1].UUID})).Scan(ctx))
	for _, ind := range bumped {
		require.WithinDuration(t, time.Now(), ind.LastSeen, time.Minute, "bumped once")
	}
}
