package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/store"
)

// ErrNoSealer: credentials cannot be stored, no encryption key is configured.
var ErrNoSealer = errors.New("credentials cannot be stored: no encryption key is configured")

// DefaultCacheTTLSeconds is a new provider's cache TTL when none is given.
const DefaultCacheTTLSeconds = 3600

// Providers applies the rules of enrichment providers (API.md §7) beyond their validation
// (enrichment.ValidateProviderName, ValidateProviderParts): the defaults, supported types without
// repeats, credentials sealed, builtin providers restricted (enrichment.CheckProviderChange,
// CheckProviderDelete); a change commits with its audit event.
type Providers struct {
	changes audit.Store
	sealer  Sealer
}

// NewProviders is the provider service over changes (writes with their audit events) and sealer
// (nil: no ENCRYPTION_KEY, credentials cannot be stored: ErrNoSealer).
func NewProviders(changes audit.Store, sealer Sealer) *Providers {
	return &Providers{changes: changes, sealer: sealer}
}

// ProviderFields are a new provider (already validated). HTTPConfig and MaliceRules are JSON objects
// as given; DefaultCacheTTLSeconds nil is DefaultCacheTTLSeconds; AuthConfig nil: no stored
// credentials.
type ProviderFields struct {
	ProviderName, DisplayName string
	Description               *string
	SupportedIndicatorTypes   []string
	HTTPConfig, MaliceRules   json.RawMessage
	AuthType                  string
	AuthConfig                map[string]string
	EnvVarMapping             map[string]string
	DefaultCacheTTLSeconds    *int
	CacheTTLByType            map[string]int
	RateLimit                 *store.RateLimit
}

// Create stores a new, active provider with its audit event by actor. A taken name is
// store.ErrConflict.
func (s *Providers) Create(ctx context.Context, actor store.Actor, f ProviderFields) (store.EnrichmentProvider, error) {
	p := store.EnrichmentProvider{ProviderName: f.ProviderName, DisplayName: f.DisplayName, IsActive: true,
		SupportedIndicatorTypes: Unique(f.SupportedIndicatorTypes), HTTPConfig: decodeObject(f.HTTPConfig),
		AuthType: f.AuthType, EnvVarMapping: f.EnvVarMapping, DefaultCacheTTLSeconds: DefaultCacheTTLSeconds,
		CacheTTLByType: f.CacheTTLByType, MaliceRules: decodeObject(f.MaliceRules), RateLimit: f.RateLimit}
	if f.Description != nil {
		p.Description = *f.Description
	}
	if f.DefaultCacheTTLSeconds != nil {
		p.DefaultCacheTTLSeconds = *f.DefaultCacheTTLSeconds
	}
	if f.AuthConfig != nil {
		var err error
		if p.AuthConfigSealed, err = s.seal(f.AuthConfig); err != nil {
			return store.EnrichmentProvider{}, err
		}
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateProvider(ctx, &p)
		return audit.Subject{Type: audit.EnrichmentProvider, UUID: p.UUID, Name: p.ProviderName, After: p}, err
	})
	if err != nil {
		return store.EnrichmentProvider{}, taken(fmt.Errorf("create enrichment provider %s: %w", p.ProviderName, err), TakenProvider, p.ProviderName)
	}
	return p, nil
}

func (s *Providers) seal(cfg map[string]string) ([]byte, error) {
	if s.sealer == nil {
		return nil, ErrNoSealer
	}
	sealed, err := s.sealer.SealJSON(cfg)
	if err != nil {
		return nil, fmt.Errorf("seal auth_config: %w", err)
	}
	return sealed, nil
}

// ProviderPatch is a provider update (already validated): nil, empty and unset fields are
// unchanged; a null auth_config removes the stored credentials, a null rate_limit the limit, a null
// malice_rules empties them.
type ProviderPatch struct {
	DisplayName             *string
	Description             *string
	IsActive                *bool
	SupportedIndicatorTypes []string
	HTTPConfig              json.RawMessage
	AuthType                *string
	AuthConfig              optional.Value[map[string]string]
	EnvVarMapping           map[string]string
	DefaultCacheTTLSeconds  *int
	CacheTTLByType          map[string]int
	MaliceRules             json.RawMessage
	RateLimit               optional.Value[store.RateLimit]
}

// Fields lists the fields p changes, in the request's order (what CheckProviderChange judges).
func (p ProviderPatch) Fields() []string {
	set := []struct {
		name string
		set  bool
	}{{"display_name", p.DisplayName != nil}, {"description", p.Description != nil}, {"is_active", p.IsActive != nil},
		{"supported_indicator_types", p.SupportedIndicatorTypes != nil}, {"http_config", len(p.HTTPConfig) > 0},
		{"auth_type", p.AuthType != nil}, {"auth_config", p.AuthConfig.Set}, {"env_var_mapping", p.EnvVarMapping != nil},
		{"default_cache_ttl_seconds", p.DefaultCacheTTLSeconds != nil}, {"cache_ttl_by_type", p.CacheTTLByType != nil},
		{"malice_rules", len(p.MaliceRules) > 0}, {"rate_limit", p.RateLimit.Set}}
	var out []string
	for _, f := range set {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// Update applies patch to provider p (as read) with its audit event by actor (none when nothing
// changed). A restricted change of a builtin is an *enrichment.BuiltinRestrictedError; a provider
// gone meanwhile store.ErrNotFound.
func (s *Providers) Update(ctx context.Context, actor store.Actor, p store.EnrichmentProvider, patch ProviderPatch) (store.EnrichmentProvider, error) {
	if err := enrichment.CheckProviderChange(p, patch.Fields()); err != nil {
		return store.EnrichmentProvider{}, err
	}
	before := p
	var cols []string
	set := func(col string) { cols = append(cols, col) }
	cols = setValue(patch.DisplayName, &p.DisplayName, "display_name", cols)
	cols = setValue(patch.Description, &p.Description, "description", cols)
	cols = setValue(patch.IsActive, &p.IsActive, "is_active", cols)
	if patch.SupportedIndicatorTypes != nil {
		p.SupportedIndicatorTypes = Unique(patch.SupportedIndicatorTypes)
		set("supported_indicator_types")
	}
	if len(patch.HTTPConfig) > 0 {
		p.HTTPConfig = decodeObject(patch.HTTPConfig)
		set("http_config")
	}
	cols = setValue(patch.AuthType, &p.AuthType, "auth_type", cols)
	if patch.AuthConfig.Set {
		p.AuthConfigSealed = nil
		if !patch.AuthConfig.Null {
			var err error
			if p.AuthConfigSealed, err = s.seal(patch.AuthConfig.Value); err != nil {
				return store.EnrichmentProvider{}, err
			}
		}
		set("auth_config_sealed")
	}
	if patch.EnvVarMapping != nil {
		p.EnvVarMapping = patch.EnvVarMapping
		set("env_var_mapping")
	}
	cols = setValue(patch.DefaultCacheTTLSeconds, &p.DefaultCacheTTLSeconds, "default_cache_ttl_seconds", cols)
	if patch.CacheTTLByType != nil {
		p.CacheTTLByType = patch.CacheTTLByType
		set("cache_ttl_by_type")
	}
	if len(patch.MaliceRules) > 0 {
		p.MaliceRules = decodeObject(patch.MaliceRules)
		if isNull(patch.MaliceRules) {
			p.MaliceRules = map[string]any{}
		}
		set("malice_rules")
	}
	cols = setNullable(patch.RateLimit, &p.RateLimit, "rate_limit", cols)
	if len(cols) == 0 {
		return p, nil
	}
	if err := s.write(ctx, actor, before, &p, cols...); err != nil {
		return store.EnrichmentProvider{}, err
	}
	return p, nil
}

// SetActive activates or deactivates provider p (as read) with its audit event by actor; nothing
// when it already is.
func (s *Providers) SetActive(ctx context.Context, actor store.Actor, p store.EnrichmentProvider, active bool) (store.EnrichmentProvider, error) {
	if p.IsActive == active {
		return p, nil
	}
	before := p
	p.IsActive = active
	if err := s.write(ctx, actor, before, &p, "is_active"); err != nil {
		return store.EnrichmentProvider{}, err
	}
	return p, nil
}

// Delete removes provider p (as read) with its audit event by actor. A builtin is
// enrichment.ErrBuiltinNotDeletable; a provider gone meanwhile store.ErrNotFound.
func (s *Providers) Delete(ctx context.Context, actor store.Actor, p store.EnrichmentProvider) error {
	if err := enrichment.CheckProviderDelete(p); err != nil {
		return err
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		return audit.Subject{Type: audit.EnrichmentProvider, UUID: p.UUID, Name: p.ProviderName, Before: p}, tx.DeleteProvider(ctx, p.UUID)
	})
	if err != nil {
		return fmt.Errorf("delete enrichment provider %s: %w", p.ProviderName, err)
	}
	return nil
}

// write stores cols of p with their audit event.
func (s *Providers) write(ctx context.Context, actor store.Actor, before store.EnrichmentProvider, p *store.EnrichmentProvider, cols ...string) error {
	err := audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateProvider(ctx, p, cols...)
		return audit.Subject{Type: audit.EnrichmentProvider, UUID: p.UUID, Name: p.ProviderName, Before: before, After: *p}, err
	})
	if err != nil {
		return fmt.Errorf("update enrichment provider %s: %w", p.ProviderName, err)
	}
	return nil
}

// decodeObject is a validated JSON object as a map; nil for none (absent, null or not an object).
func decodeObject(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return m
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }
