package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Auth types of enrichment providers. AuthNone needs no credentials.
const (
	AuthNone                    = "none"
	AuthAPIKey                  = "api_key"
	AuthBearer                  = "bearer"
	AuthBasic                   = "basic"
	AuthOAuth2ClientCredentials = "oauth2_client_credentials"
	AuthCustom                  = "custom"
)

// AuthTypes lists the accepted auth_type values.
func AuthTypes() []string {
	return []string{AuthNone, AuthAPIKey, AuthBearer, AuthBasic, AuthOAuth2ClientCredentials, AuthCustom}
}

// RateLimit is a provider's call budget: at most Requests HTTP requests per PerSeconds seconds, and
// at most DailyQuota per UTC day when set. Calls beyond it wait their turn.
type RateLimit struct {
	Requests   int  `json:"requests"`
	PerSeconds int  `json:"per_seconds"`
	DailyQuota *int `json:"daily_quota,omitempty"`
}

// Interval is the spacing between two requests (PerSeconds / Requests).
func (r RateLimit) Interval() time.Duration {
	if r.Requests <= 0 || r.PerSeconds <= 0 {
		return 0
	}
	return time.Duration(r.PerSeconds) * time.Second / time.Duration(r.Requests)
}

// EnrichmentProvider is an enrichment provider (seed §2.5). AuthConfigSealed is the secretbox-sealed
// JSON object of credentials; it never leaves the process in any response.
type EnrichmentProvider struct {
	bun.BaseModel `bun:"table:enrichment_providers"`

	UUID                    uuid.UUID         `bun:"uuid,pk,type:uuid"`
	ProviderName            string            `bun:"provider_name"`
	DisplayName             string            `bun:"display_name"`
	Description             string            `bun:"description"`
	IsBuiltin               bool              `bun:"is_builtin"`
	IsActive                bool              `bun:"is_active"`
	SupportedIndicatorTypes []string          `bun:"supported_indicator_types,array"`
	HTTPConfig              map[string]any    `bun:"http_config,type:jsonb"`
	AuthType                string            `bun:"auth_type"`
	AuthConfigSealed        []byte            `bun:"auth_config_sealed,nullzero"`
	EnvVarMapping           map[string]string `bun:"env_var_mapping,type:jsonb"`
	DefaultCacheTTLSeconds  int               `bun:"default_cache_ttl_seconds"`
	CacheTTLByType          map[string]int    `bun:"cache_ttl_by_type,type:jsonb"`
	MaliceRules             map[string]any    `bun:"malice_rules,type:jsonb"`
	RateLimit               *RateLimit        `bun:"rate_limit,type:jsonb"`
	CreatedAt               time.Time         `bun:"created_at"`
	UpdatedAt               time.Time         `bun:"updated_at"`
}

// Env looks up an environment variable for env_var_mapping ("" when unset). cmd/ builds it from the
// process environment, hiding Vigil's own settings; nil means an empty environment.
type Env func(name string) string

// AllowedEnv is the environment an env_var_mapping may read: only the names in allow (cmd/ passes
// the builtin providers' documented names and the operator's PROVIDER_ENV_ALLOWLIST), and never a
// name in deny (Vigil's own settings). Any other name reads as unset, so a provider definition cannot
// send HOME, PATH or DATABASE_URL to a URL of its choosing.
func AllowedEnv(getenv func(string) string, allow, deny []string) Env {
	ok := map[string]bool{}
	for _, name := range allow {
		ok[name] = true
	}
	for _, name := range deny {
		delete(ok, name)
	}
	return func(name string) string {
		if !ok[name] || getenv == nil {
			return ""
		}
		return getenv(name)
	}
}

// MapEnv is an Env over a map (tests, fixed configurations).
func MapEnv(m map[string]string) Env { return func(name string) string { return m[name] } }

func (e Env) get(name string) string {
	if e == nil {
		return ""
	}
	return e(name)
}

// HasCredentials reports whether the provider has sealed credentials, or every environment
// variable its env_var_mapping names is set (non-empty) in env. A provider without either has none.
func (p EnrichmentProvider) HasCredentials(env Env) bool {
	if len(p.AuthConfigSealed) > 0 {
		return true
	}
	if len(p.EnvVarMapping) == 0 {
		return false
	}
	for _, name := range p.EnvVarMapping {
		if env.get(name) == "" {
			return false
		}
	}
	return true
}

// IsConfigured reports whether the provider may be called: active, and with credentials unless its
// auth_type is none (seed §2.5).
func (p EnrichmentProvider) IsConfigured(env Env) bool {
	if !p.IsActive {
		return false
	}
	return p.AuthType == AuthNone || p.HasCredentials(env)
}

// Supports reports whether the provider handles indicators of type t.
func (p EnrichmentProvider) Supports(t string) bool {
	for _, s := range p.SupportedIndicatorTypes {
		if s == t {
			return true
		}
	}
	return false
}

// Default cache TTLs by indicator type (API.md §7), used when cache_ttl_by_type has no entry.
var defaultTTLByType = map[string]time.Duration{
	"ip": time.Hour, "domain": 6 * time.Hour, "hash_md5": 24 * time.Hour, "hash_sha1": 24 * time.Hour,
	"hash_sha256": 24 * time.Hour, "url": 30 * time.Minute, "email": time.Hour, "account": 15 * time.Minute,
}

// CacheTTL is how long a result for an indicator of type t stays cached: cache_ttl_by_type[t], else
// the per-type default, else default_cache_ttl_seconds. 0 means "do not cache".
func (p EnrichmentProvider) CacheTTL(t string) time.Duration {
	if s, ok := p.CacheTTLByType[t]; ok {
		return time.Duration(s) * time.Second
	}
	if d, ok := defaultTTLByType[t]; ok {
		return d
	}
	return time.Duration(p.DefaultCacheTTLSeconds) * time.Second
}

// CreateProvider inserts p, filling UUID and timestamps. A duplicate name is ErrConflict.
func (s *Store) CreateProvider(ctx context.Context, p *EnrichmentProvider) error {
	now := s.Now()
	if p.UUID == uuid.Nil {
		p.UUID = uuid.New()
	}
	p.CreatedAt, p.UpdatedAt = now, now
	fillProviderDefaults(p)
	if _, err := s.db.NewInsert().Model(p).Exec(ctx); err != nil {
		return fmt.Errorf("insert provider %s: %w", p.ProviderName, mapErr(err))
	}
	return nil
}

func fillProviderDefaults(p *EnrichmentProvider) {
	if p.SupportedIndicatorTypes == nil {
		p.SupportedIndicatorTypes = []string{}
	}
	if p.EnvVarMapping == nil {
		p.EnvVarMapping = map[string]string{}
	}
	if p.CacheTTLByType == nil {
		p.CacheTTLByType = map[string]int{}
	}
	if p.MaliceRules == nil {
		p.MaliceRules = map[string]any{}
	}
	if p.AuthType == "" {
		p.AuthType = AuthNone
	}
}

// GetProvider loads one provider by uuid.
func (s *Store) GetProvider(ctx context.Context, id uuid.UUID) (EnrichmentProvider, error) {
	var p EnrichmentProvider
	if err := s.db.NewSelect().Model(&p).Where("uuid = ?", id).Scan(ctx); err != nil {
		return EnrichmentProvider{}, fmt.Errorf("get provider %s: %w", id, mapErr(err))
	}
	return p, nil
}

// GetProviderByName loads one provider by provider_name.
func (s *Store) GetProviderByName(ctx context.Context, name string) (EnrichmentProvider, error) {
	var p EnrichmentProvider
	if err := s.db.NewSelect().Model(&p).Where("provider_name = ?", name).Scan(ctx); err != nil {
		return EnrichmentProvider{}, fmt.Errorf("get provider %q: %w", name, mapErr(err))
	}
	return p, nil
}

// ProviderFilter narrows ListProviders. A zero Page lists every matching provider.
type ProviderFilter struct {
	IsActive      *bool
	IsBuiltin     *bool
	IndicatorType string // only providers supporting this type
	Names         []string
	Page          Page
}

// ListProviders returns providers ordered by name, and the total.
func (s *Store) ListProviders(ctx context.Context, f ProviderFilter) ([]EnrichmentProvider, int, error) {
	var ps []EnrichmentProvider
	q := s.db.NewSelect().Model(&ps).OrderExpr("provider_name ASC")
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	if f.IsBuiltin != nil {
		q = q.Where("is_builtin = ?", *f.IsBuiltin)
	}
	if f.IndicatorType != "" {
		q = q.Where("supported_indicator_types @> ?", pgdialectArray([]string{f.IndicatorType}))
	}
	if len(f.Names) > 0 {
		q = q.Where("provider_name IN (?)", bun.List(f.Names))
	}
	total, err := scanPage(ctx, q, f.Page, func() int { return len(ps) })
	if err != nil {
		return nil, 0, fmt.Errorf("list providers: %w", mapErr(err))
	}
	return ps, total, nil
}

// UpdateProvider writes the named columns of p (updated_at always).
func (s *Store) UpdateProvider(ctx context.Context, p *EnrichmentProvider, columns ...string) error {
	p.UpdatedAt = s.Now()
	fillProviderDefaults(p)
	res, err := s.db.NewUpdate().Model(p).Column(append(columns, "updated_at")...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update provider %s: %w", p.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update provider %s: %w", p.UUID, ErrNotFound)
	}
	return nil
}

// DeleteProvider deletes a custom provider with its field extractions and cached results.
// Builtins are not deletable here either (ErrNotFound when no custom provider has that uuid).
func (s *Store) DeleteProvider(ctx context.Context, id uuid.UUID) error {
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var name string
		err := tx.NewDelete().Model((*EnrichmentProvider)(nil)).Where("uuid = ? AND NOT is_builtin", id).
			Returning("provider_name").Scan(ctx, &name)
		if err != nil {
			return fmt.Errorf("delete provider %s: %w", id, mapErr(err))
		}
		if _, err := tx.NewDelete().Model((*FieldExtraction)(nil)).Where("provider_name = ?", name).Exec(ctx); err != nil {
			return fmt.Errorf("delete extractions of %s: %w", name, mapErr(err))
		}
		if _, err := tx.NewDelete().Table("enrichment_cache").Where("provider_name = ?", name).Exec(ctx); err != nil {
			return fmt.Errorf("delete cache of %s: %w", name, mapErr(err))
		}
		if _, err := tx.NewDelete().Table("enrichment_rate_state").Where("provider_name = ?", name).Exec(ctx); err != nil {
			return fmt.Errorf("delete rate state of %s: %w", name, mapErr(err))
		}
		if _, err := tx.NewDelete().Table("provider_circuits").Where("provider_name = ?", name).Exec(ctx); err != nil {
			return fmt.Errorf("delete circuit of %s: %w", name, mapErr(err))
		}
		if _, err := tx.NewDelete().Table("enrichment_parked").Where("provider_name = ?", name).Exec(ctx); err != nil {
			return fmt.Errorf("delete alerts parked for %s: %w", name, mapErr(err))
		}
		return nil
	})
}

// ProviderHealth maps every provider name to "configured", "unconfigured" or, for a configured
// provider whose circuit is open (calls refused after repeated failures), "circuit_open" (GET /health).
func (s *Store) ProviderHealth(ctx context.Context, env Env) (map[string]string, error) {
	ps, _, err := s.ListProviders(ctx, ProviderFilter{})
	if err != nil {
		return nil, err
	}
	circuits, err := s.Circuits(ctx)
	if err != nil {
		return nil, err
	}
	open := map[string]bool{}
	for _, c := range circuits {
		open[c.ProviderName] = c.Open()
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		status := "unconfigured"
		if p.IsConfigured(env) {
			status = "configured"
			if open[p.ProviderName] {
				status = "circuit_open"
			}
		}
		out[p.ProviderName] = status
	}
	return out, nil
}
