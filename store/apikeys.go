package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// APIKey is a stored API key. The plaintext key is never stored: only its SHA-256 and a display prefix.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	UUID               uuid.UUID  `bun:"uuid,pk,type:uuid"`
	Name               string     `bun:"name"`
	KeyHash            []byte     `bun:"key_hash"`
	KeyPrefix          string     `bun:"key_prefix"`
	Scopes             []string   `bun:"scopes,array"`
	KeyType            string     `bun:"key_type"`
	AllowedSources     []string   `bun:"allowed_sources,array"`
	RateLimitPerMinute *int       `bun:"rate_limit_per_minute"`
	IsActive           bool       `bun:"is_active"`
	ExpiresAt          *time.Time `bun:"expires_at"`
	LastUsedAt         *time.Time `bun:"last_used_at"`
	CreatedAt          time.Time  `bun:"created_at"`
	UpdatedAt          time.Time  `bun:"updated_at"`
}

// Key types.
const (
	KeyTypeHuman = "human"
	KeyTypeAgent = "agent"
)

// CreateAPIKey inserts k, filling UUID and timestamps.
func (s *Store) CreateAPIKey(ctx context.Context, k *APIKey) error {
	now := s.Now()
	if k.UUID == uuid.Nil {
		k.UUID = uuid.New()
	}
	k.CreatedAt, k.UpdatedAt = now, now
	if _, err := s.db.NewInsert().Model(k).Exec(ctx); err != nil {
		return fmt.Errorf("insert api key: %w", mapErr(err))
	}
	return nil
}

// GetAPIKey loads one key by uuid.
func (s *Store) GetAPIKey(ctx context.Context, id uuid.UUID) (APIKey, error) {
	var k APIKey
	if err := s.db.NewSelect().Model(&k).Where("uuid = ?", id).Scan(ctx); err != nil {
		return APIKey{}, fmt.Errorf("get api key %s: %w", id, mapErr(err))
	}
	return k, nil
}

// GetAPIKeyByHash loads the key whose SHA-256 is hash.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (APIKey, error) {
	var k APIKey
	if err := s.db.NewSelect().Model(&k).Where("key_hash = ?", hash).Scan(ctx); err != nil {
		return APIKey{}, fmt.Errorf("get api key by hash: %w", mapErr(err))
	}
	return k, nil
}

// APIKeyFilter narrows ListAPIKeys.
type APIKeyFilter struct {
	IsActive *bool
	Page     Page
}

// ListAPIKeys returns one page of keys, newest first, and the total.
func (s *Store) ListAPIKeys(ctx context.Context, f APIKeyFilter) ([]APIKey, int, error) {
	var keys []APIKey
	q := s.db.NewSelect().Model(&keys).OrderExpr("created_at DESC, uuid DESC")
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list api keys: %w", mapErr(err))
	}
	return keys, int(total), nil
}

// CountAPIKeys counts keys, optionally only active admin ones.
func (s *Store) CountActiveAdminKeys(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*APIKey)(nil)).
		Where("is_active AND 'admin' = ANY(scopes)").
		Where("expires_at IS NULL OR expires_at > now()").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count admin keys: %w", mapErr(err))
	}
	return int(n), nil
}

// ErrKeyRevoked: a revoked key cannot be made active again (revocation is final).
var ErrKeyRevoked = errors.New("api key revoked")

// UpdateAPIKey writes the named columns of k (updated_at always). Revocation is final: writing is_active
// true onto a key that is stored inactive fails with ErrKeyRevoked, decided in the same statement so a
// concurrent revoke cannot be undone.
func (s *Store) UpdateAPIKey(ctx context.Context, k *APIKey, columns ...string) error {
	k.UpdatedAt = s.Now()
	reactivating := k.IsActive && slices.Contains(columns, "is_active")
	q := s.db.NewUpdate().Model(k).Column(append(columns, "updated_at")...).WherePK()
	if reactivating {
		q = q.Where("is_active")
	}
	res, err := q.Returning("*").Exec(ctx)
	n := int64(0)
	if err == nil {
		n, _ = res.RowsAffected()
	} else if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("update api key %s: %w", k.UUID, mapErr(err))
	}
	if n == 0 {
		if reactivating {
			exists, xerr := s.db.NewSelect().Model((*APIKey)(nil)).Where("uuid = ?", k.UUID).Exists(ctx)
			if xerr != nil {
				return fmt.Errorf("update api key %s: %w", k.UUID, mapErr(xerr))
			}
			if exists {
				return fmt.Errorf("update api key %s: %w", k.UUID, ErrKeyRevoked)
			}
		}
		return fmt.Errorf("update api key %s: %w", k.UUID, ErrNotFound)
	}
	return nil
}

// TouchAPIKeys records last-used times for many keys in one statement. Times only move forward.
func (s *Store) TouchAPIKeys(ctx context.Context, used map[uuid.UUID]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, t := range used {
		ids = append(ids, id)
		times = append(times, t)
	}
	_, err := s.db.ExecContext(ctx, `
		UPDATE api_keys k SET last_used_at = u.t
		FROM unnest(?::uuid[], ?::timestamptz[]) AS u(id, t)
		WHERE k.uuid = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.t)`,
		pgdialectArray(ids), pgdialectArray(times))
	if err != nil {
		return fmt.Errorf("touch api keys: %w", mapErr(err))
	}
	return nil
}

// APIKeyPrefixExists reports whether a key (active or not) has the display prefix prefix.
func (s *Store) APIKeyPrefixExists(ctx context.Context, prefix string) (bool, error) {
	ok, err := s.db.NewSelect().Table("api_keys").Where("key_prefix = ?", prefix).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("look up key prefix: %w", mapErr(err))
	}
	return ok, nil
}
