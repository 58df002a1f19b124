package testenv

import (
	"context"
	"testing"

	"github.com/vigil-soc/vigil/store"
)

// Store opens (once per test binary) the binary's own database as a migrated store, closed when Main
// tears down. The package's tests share it: give rows unique keys.
func Store(tb testing.TB) *store.Store {
	tb.Helper()
	dsn := DatabaseURL(tb)
	env.storeOnce.Do(func() {
		ctx := context.Background()
		env.st, env.stErr = store.Open(ctx, dsn, store.Options{})
		if env.stErr != nil {
			return
		}
		addCleanup(func(context.Context) error { return env.st.Close() })
		env.stErr = env.st.Migrate(ctx)
	})
	if env.stErr != nil {
		tb.Fatalf("testenv: open the test store: %v", env.stErr)
	}
	return env.st
}
