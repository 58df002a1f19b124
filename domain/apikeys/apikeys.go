// Package apikeys owns the rules of API keys (API.md §1): how a key and its plaintext are made
// (default key type, scopes sorted and deduplicated, only the hash stored), that an expiry lies in
// the future, that revocation is final, and that every change commits with its audit event and
// drops the key from the authenticator's cache. The REST routes and `vigil create-api-key` call it.
package apikeys

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// ErrRevoked: a revoked key cannot be made active again (revocation is final).
var ErrRevoked = store.ErrKeyRevoked

// Reader reads one key (store.Store.GetAPIKey).
type Reader interface {
	GetAPIKey(ctx context.Context, id uuid.UUID) (store.APIKey, error)
}

// Invalidator drops a key from the authenticator's cache (auth.Authenticator.Invalidate).
type Invalidator interface {
	Invalidate(keyUUID uuid.UUID)
}

// Service applies the API-key rules.
type Service struct {
	keys    Reader
	changes audit.Store
	cache   Invalidator
	now     func() time.Time
}

// New is the service over keys (reads), changes (writes with their audit events) and cache (nil:
// no authenticator to tell, as on the command line).
func New(keys Reader, changes audit.Store, cache Invalidator) *Service {
	return &Service{keys: keys, changes: changes, cache: cache, now: time.Now}
}

// Fields are a new key's settings. KeyType "" is auth.KeyTypeHuman; nil AllowedSources: any
// source; nil RateLimitPerMinute: the default limit.
type Fields struct {
	Name               string
	Scopes             []string
	KeyType            string
	AllowedSources     []string
	ExpiresAt          *time.Time
	RateLimitPerMinute *int
}

// CheckExpiry refuses an expiry that is not in the future (location "expires_at").
func CheckExpiry(expiresAt *time.Time, now time.Time) validate.Errors {
	var errs validate.Errors
	if expiresAt != nil && !expiresAt.After(now) {
		errs.Add([]any{"expires_at"}, validate.TypeValue, "expires_at must be in the future.", expiresAt.Format(time.RFC3339))
	}
	return errs
}

// Build makes a key record and its plaintext from f, without storing it (the key's hash and
// prefix come from the plaintext, which is never stored).
func Build(f Fields) (store.APIKey, string, error) {
	plain, err := auth.NewKey()
	if err != nil {
		return store.APIKey{}, "", fmt.Errorf("new api key: %w", err)
	}
	keyType := f.KeyType
	if keyType == "" {
		keyType = auth.KeyTypeHuman
	}
	return store.APIKey{Name: f.Name, KeyHash: auth.Hash(plain), KeyPrefix: auth.Prefix(plain), Scopes: normalScopes(f.Scopes),
		KeyType: keyType, AllowedSources: f.AllowedSources, RateLimitPerMinute: f.RateLimitPerMinute, IsActive: true,
		ExpiresAt: f.ExpiresAt}, plain, nil
}

// normalScopes sorts and deduplicates scopes (in place, as the callers hand over their slice).
func normalScopes(scopes []string) []string {
	slices.Sort(scopes)
	return slices.Compact(scopes)
}

// Create stores a new key made from f, with its audit event by actor, and returns it with its
// plaintext (shown once). An expiry not in the future is a validate.Errors.
func (s *Service) Create(ctx context.Context, actor store.Actor, f Fields) (store.APIKey, string, error) {
	if errs := CheckExpiry(f.ExpiresAt, s.now()); len(errs) > 0 {
		return store.APIKey{}, "", errs
	}
	k, plain, err := Build(f)
	if err != nil {
		return store.APIKey{}, "", err
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateAPIKey(ctx, &k)
		return audit.Subject{Type: audit.APIKey, UUID: k.UUID, Name: k.Name, After: k}, err
	})
	if err != nil {
		return store.APIKey{}, "", fmt.Errorf("create api key: %w", err)
	}
	return k, plain, nil
}

// Patch is a key update; a field left absent (nil, or optional.Value not Set) is unchanged.
type Patch struct {
	Name               *string
	Scopes             []string
	AllowedSources     optional.Value[[]string] // null: any source
	IsActive           *bool                    // false revokes; true on a revoked key is ErrRevoked
	ExpiresAt          optional.Value[time.Time]
	RateLimitPerMinute optional.Value[int] // null: the default limit
}

// Update applies p to key id with its audit event by actor (action revoked when it deactivates the
// key, updated otherwise; none when p changes nothing) and returns the key. A missing key is
// store.ErrNotFound; re-activating a revoked one is ErrRevoked.
func (s *Service) Update(ctx context.Context, actor store.Actor, id uuid.UUID, p Patch) (store.APIKey, error) {
	k, err := s.keys.GetAPIKey(ctx, id)
	if err != nil {
		return store.APIKey{}, fmt.Errorf("get api key %s: %w", id, err)
	}
	before := k
	var cols []string
	if p.Name != nil {
		k.Name, cols = *p.Name, append(cols, "name")
	}
	if p.Scopes != nil {
		k.Scopes, cols = normalScopes(p.Scopes), append(cols, "scopes")
	}
	if p.AllowedSources.Set {
		k.AllowedSources, cols = nil, append(cols, "allowed_sources")
		if !p.AllowedSources.Null {
			k.AllowedSources = p.AllowedSources.Value
		}
	}
	if p.IsActive != nil {
		k.IsActive, cols = *p.IsActive, append(cols, "is_active")
	}
	if p.ExpiresAt.Set {
		k.ExpiresAt, cols = p.ExpiresAt.Ptr(), append(cols, "expires_at")
	}
	if p.RateLimitPerMinute.Set {
		k.RateLimitPerMinute, cols = p.RateLimitPerMinute.Ptr(), append(cols, "rate_limit_per_minute")
	}
	if len(cols) == 0 {
		return k, nil
	}
	action := store.AuditUpdated
	if before.IsActive && !k.IsActive {
		action = store.AuditRevoked
	}
	if err := s.write(ctx, actor, action, before, &k, cols...); err != nil {
		return store.APIKey{}, err
	}
	return k, nil
}

// Revoke deactivates key id with its audit event by actor; revoking a revoked key changes and
// records nothing. A missing key is store.ErrNotFound.
func (s *Service) Revoke(ctx context.Context, actor store.Actor, id uuid.UUID) error {
	k, err := s.keys.GetAPIKey(ctx, id)
	if err != nil {
		return fmt.Errorf("get api key %s: %w", id, err)
	}
	if k.IsActive {
		before := k
		k.IsActive = false
		return s.write(ctx, actor, store.AuditRevoked, before, &k, "is_active")
	}
	s.invalidate(k.UUID)
	return nil
}

// write stores cols of k with the audit event of action, then drops k from the cache.
func (s *Service) write(ctx context.Context, actor store.Actor, action string, before store.APIKey, k *store.APIKey, cols ...string) error {
	err := audit.Record(ctx, s.changes, actor, action, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateAPIKey(ctx, k, cols...)
		if err == nil { // the agents it registered follow it, in the same transaction (R4-6)
			err = agents.FollowKey(ctx, tx, *k, actor, time.Now())
		}
		return audit.Subject{Type: audit.APIKey, UUID: k.UUID, Name: k.Name, Before: before, After: *k}, err
	})
	if err != nil {
		return fmt.Errorf("update api key %s: %w", k.UUID, err) // store.ErrKeyRevoked is ErrRevoked
	}
	s.invalidate(k.UUID)
	return nil
}

func (s *Service) invalidate(id uuid.UUID) {
	if s.cache != nil {
		s.cache.Invalidate(id)
	}
}
