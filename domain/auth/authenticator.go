package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// Authentication outcomes.
var (
	ErrInvalidKey = errors.New("invalid or revoked api key")
	ErrKeyExpired = errors.New("api key expired")
)

// KeyStore is what the authenticator needs from the store.
type KeyStore interface {
	GetAPIKeyByHash(ctx context.Context, hash []byte) (store.APIKey, error)
	TouchAPIKeys(ctx context.Context, used map[uuid.UUID]time.Time) error
}

// Authenticator resolves bearer keys to principals. Lookups are cached for CacheTTL (a revocation in
// this process takes effect at once through Invalidate; in another replica within CacheTTL), and
// last_used_at is written in batches instead of once per request.
type Authenticator struct {
	keys     KeyStore
	log      *slog.Logger
	now      func() time.Time
	cacheTTL time.Duration

	mu    sync.Mutex
	cache map[string]cacheEntry // by hash
	used  map[uuid.UUID]time.Time
}

type cacheEntry struct {
	p       Principal
	found   bool
	expires time.Time
}

const maxCacheEntries = 10_000

// NewAuthenticator builds an authenticator over keys. cacheTTL 0 disables caching.
func NewAuthenticator(keys KeyStore, log *slog.Logger, cacheTTL time.Duration) *Authenticator {
	return &Authenticator{keys: keys, log: log, now: time.Now, cacheTTL: cacheTTL,
		cache: map[string]cacheEntry{}, used: map[uuid.UUID]time.Time{}}
}

// Authenticate returns the principal of token, or ErrInvalidKey / ErrKeyExpired.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !WellFormed(token) {
		return Principal{}, ErrInvalidKey
	}
	hash := Hash(token)
	now := a.now()
	a.mu.Lock()
	e, ok := a.cache[string(hash)]
	a.mu.Unlock()
	if !ok || now.After(e.expires) {
		k, err := a.keys.GetAPIKeyByHash(ctx, hash)
		switch {
		case errors.Is(err, store.ErrNotFound):
			e = cacheEntry{found: false}
		case err != nil:
			return Principal{}, fmt.Errorf("look up api key: %w", err)
		default:
			if subtle.ConstantTimeCompare(k.KeyHash, hash) != 1 {
				return Principal{}, ErrInvalidKey
			}
			e = cacheEntry{found: true, p: PrincipalOf(k)}
		}
		e.expires = now.Add(a.cacheTTL)
		if a.cacheTTL > 0 {
			a.mu.Lock()
			if len(a.cache) >= maxCacheEntries {
				clear(a.cache)
			}
			a.cache[string(hash)] = e
			a.mu.Unlock()
		}
	}
	if !e.found || !e.p.IsActive {
		return Principal{}, ErrInvalidKey
	}
	if e.p.Expired(now) {
		return Principal{}, ErrKeyExpired
	}
	a.mu.Lock()
	a.used[e.p.KeyUUID] = now.UTC()
	a.mu.Unlock()
	return e.p, nil
}

// PrincipalOf converts a stored key into a principal.
func PrincipalOf(k store.APIKey) Principal {
	p := Principal{KeyUUID: k.UUID, KeyPrefix: k.KeyPrefix, Name: k.Name, Scopes: k.Scopes, KeyType: k.KeyType,
		AllowedSources: k.AllowedSources, IsActive: k.IsActive, ExpiresAt: k.ExpiresAt}
	if k.RateLimitPerMinute != nil {
		p.RateLimit = *k.RateLimitPerMinute
	}
	return p
}

// Invalidate drops cached lookups of the key (after an update or revocation).
func (a *Authenticator) Invalidate(keyUUID uuid.UUID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for h, e := range a.cache {
		if e.p.KeyUUID == keyUUID {
			delete(a.cache, h)
		}
	}
}

// Flush writes pending last_used_at times.
func (a *Authenticator) Flush(ctx context.Context) error {
	a.mu.Lock()
	used := a.used
	a.used = map[uuid.UUID]time.Time{}
	a.mu.Unlock()
	return a.keys.TouchAPIKeys(ctx, used)
}

// Run flushes last_used_at every interval until ctx ends, then once more.
func (a *Authenticator) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := a.Flush(flushCtx); err != nil {
				a.log.Warn("flush api key last_used_at", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := a.Flush(ctx); err != nil {
				a.log.Warn("flush api key last_used_at", "err", err)
			}
		}
	}
}
