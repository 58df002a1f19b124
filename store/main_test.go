package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testStore is the package's own fresh, migrated database (testenv.Store); tests share it: give
// rows unique keys.
func testStore(t testing.TB) *store.Store { return testenv.Store(t) }

// The harness itself: a migrated database answers.
func TestStoreHarness(t *testing.T) {
	require.NoError(t, testStore(t).DB().PingContext(context.Background()))
}
