package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/store"
)

// TestMappingCache: the worker's pipeline reads a source's mappings once per ConfigTTL (issue 26), and
// a mapping created meanwhile applies once the TTL has passed; each source has its own entry.
func TestMappingCache(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	source := "cache-src-" + uuid.NewString()[:8]
	c := ingest.NewMappingCache(st)
	has := func(ms []string, path string) bool {
		for _, m := range ms {
			if m == path {
				return true
			}
		}
		return false
	}
	paths := func() []string {
		ms, err := c.ActiveMappings(ctx, source)
		require.NoError(t, err)
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.FieldPath
		}
		return out
	}
	first := paths()
	start := time.Now()
	path := "cache.path" + uuid.NewString()[:8]
	src := source
	require.NoError(t, st.CreateIndicatorMapping(ctx, &store.IndicatorMapping{SourceName: &src, FieldPath: path, IndicatorType: "domain",
		ExtractionTarget: "raw_payload", IsActive: true}))
	if time.Since(start) < ingest.ConfigTTL/2 {
		require.Equal(t, first, paths(), "served from memory within the TTL")
	}
	// Another source's entry is its own: it reads the store now.
	other, err := c.ActiveMappings(ctx, "other-"+source)
	require.NoError(t, err)
	require.False(t, has(func() []string {
		out := []string{}
		for _, m := range other {
			out = append(out, m.FieldPath)
		}
		return out
	}(), path), "a mapping of one source does not apply to another")
	time.Sleep(ingest.ConfigTTL - time.Since(start) + 50*time.Millisecond)
	require.True(t, has(paths(), path), "the new mapping applies once the TTL has passed")
}
