package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	storeOnce sync.Once
	sharedSt  *store.Store
	storeErr  error
)

// testStore opens (once per test binary) the package's own fresh, migrated database. Tests share
// it: give rows unique keys.
func testStore(t testing.TB) *store.Store {
	t.Helper()
	dsn := testenv.DatabaseURL(t)
	storeOnce.Do(func() {
		ctx := context.Background()
		sharedSt, storeErr = store.Open(ctx, dsn, store.Options{})
		if storeErr == nil {
			storeErr = sharedSt.Migrate(ctx)
		}
	})
	require.NoError(t, storeErr)
	return sharedSt
}

// The harness itself: a migrated database answers.
func TestStoreHarness(t *testing.T) {
	require.NoError(t, testStore(t).DB().PingContext(context.Background()))
}
