package config_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/validate"
)

// TestExclusionsAddAppendsUnderTheLock: concurrent adds all land (each appends to the list it
// locked, none overwrites another), each with one audit event; an entry already there changes
// nothing and records nothing; a bad entry is Check's 422.
func TestExclusionsAddAppendsUnderTheLock(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	svc := config.NewExclusions(st, st)
	before, err := svc.Get(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = st.PutExtractionExclusions(context.Background(), before.Entries) })
	a := actor()

	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, added, err := svc.Add(ctx, a, fmt.Sprintf("Host-%d.%s.Example.org", i, a.KeyPrefix[4:]))
			if err == nil && !added {
				err = fmt.Errorf("entry %d reported as already there", i)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	list, err := svc.Get(ctx)
	require.NoError(t, err)
	for i := range n {
		require.Contains(t, list.Entries, fmt.Sprintf("host-%d.%s.example.org", i, a.KeyPrefix[4:]), "stored canonical")
	}
	require.Subset(t, list.Entries, before.Entries)
	got := events(t, st, a.KeyPrefix)
	require.Len(t, got, n)
	require.Equal(t, audit.ExtractionExcl, got[0].ResourceType)

	_, added, err := svc.Add(ctx, a, fmt.Sprintf("host-0.%s.example.org", a.KeyPrefix[4:]))
	require.NoError(t, err)
	require.False(t, added)
	require.Len(t, events(t, st, a.KeyPrefix), n, "no event for no change")

	_, _, err = svc.Add(ctx, a, "not a host!")
	var verrs validate.Errors
	require.ErrorAs(t, err, &verrs)
	require.Equal(t, []any{"entries", 0}, verrs[0].Loc)
	after, err := svc.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, list.Entries, after.Entries)
}
