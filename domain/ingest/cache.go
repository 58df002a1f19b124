package ingest

import (
	"context"
	"sync"
	"time"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// ConfigTTL bounds how long a process uses a source integration or the indicator mappings it read,
// so the ingest path costs one database round trip. Writes through this process invalidate at once
// (Service.Invalidate); other processes see a change within the TTL.
const ConfigTTL = 2 * time.Second

// ttlCache keeps values loaded per key for ConfigTTL.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

// get returns key's value, loading it when absent or older than ConfigTTL. Errors are not cached.
func (c *ttlCache[V]) get(key string, load func() (V, error)) (V, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < ConfigTTL {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	c.entries[key] = ttlEntry[V]{v: v, at: now}
	c.mu.Unlock()
	return v, nil
}

func (c *ttlCache[V]) clear() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// MappingStore reads the active indicator mappings of a source.
type MappingStore interface {
	ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error)
}

// MappingCache serves the active indicator mappings of each source from memory for ConfigTTL. The
// worker's pipeline extraction (passes 2 and 3) reads them through it once per source and ConfigTTL
// instead of once per alert (issue 26: one statement less per alert); a mapping changed through any
// process applies to pipelines started ConfigTTL later at the latest, as it does to ingest in the
// other processes. The slices it returns are shared: callers must not modify them.
type MappingCache struct {
	store MappingStore
	cache ttlCache[[]indicators.Mapping]
}

// NewMappingCache returns a cache reading through st.
func NewMappingCache(st MappingStore) *MappingCache {
	return &MappingCache{store: st}
}

// ActiveMappings returns the active mappings that apply to sourceName (cached for ConfigTTL).
func (m *MappingCache) ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error) {
	return m.cache.get(sourceName, func() ([]indicators.Mapping, error) {
		return m.store.ActiveMappings(ctx, sourceName)
	})
}

// ExclusionStore reads the never-indicator list.
type ExclusionStore interface {
	ExtractionExclusions(ctx context.Context) (store.ExtractionExclusions, error)
}

// ExclusionCache serves the never-indicator list, parsed, from memory for ConfigTTL: the pipeline's
// extraction reads it once per ConfigTTL instead of once per alert; a change applies to pipelines
// started ConfigTTL later at the latest.
type ExclusionCache struct {
	store ExclusionStore
	cache ttlCache[*indicators.Exclusions]
}

// NewExclusionCache returns a cache reading through st.
func NewExclusionCache(st ExclusionStore) *ExclusionCache { return &ExclusionCache{store: st} }

// Exclusions returns the parsed list (cached for ConfigTTL).
func (c *ExclusionCache) Exclusions(ctx context.Context) (*indicators.Exclusions, error) {
	return c.cache.get("", func() (*indicators.Exclusions, error) {
		x, err := c.store.ExtractionExclusions(ctx)
		if err != nil {
			return nil, err
		}
		return indicators.NewExclusions(x.Entries), nil
	})
}
