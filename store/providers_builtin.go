package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// BuiltinExtraction is one system field extraction of a builtin provider.
type BuiltinExtraction struct {
	Types       []string
	SourcePath  string
	TargetKey   string
	ValueType   string
	Description string
}

// BuiltinProvider is the definition of a builtin provider and its system extractions (the data lives
// in package builtins).
type BuiltinProvider struct {
	Provider    EnrichmentProvider
	Extractions []BuiltinExtraction
}

// SeedBuiltinProviders inserts or refreshes the builtin providers defs (package builtins) and their
// system extractions in one transaction. Idempotent: what users may change on a builtin (is_active,
// auth_config, description, malice_rules, TTLs, rate_limit) and the is_active of system extractions
// are kept; the definition (display name, types, http_config, auth_type, env_var_mapping) follows
// defs. A custom provider that already holds a builtin's name is left alone.
func (s *Store) SeedBuiltinProviders(ctx context.Context, defs []BuiltinProvider) error {
	now := s.Now()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// One seeder at a time across replicas starting together.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7361204920)"); err != nil {
			return fmt.Errorf("seed lock: %w", err)
		}
		for _, b := range defs {
			p := b.Provider
			p.UUID, p.IsBuiltin, p.IsActive, p.CreatedAt, p.UpdatedAt = uuid.New(), true, true, now, now
			fillProviderDefaults(&p)
			_, err := tx.NewInsert().Model(&p).
				On("CONFLICT (provider_name) DO UPDATE").
				Set("display_name = EXCLUDED.display_name").
				Set("supported_indicator_types = EXCLUDED.supported_indicator_types").
				Set("http_config = EXCLUDED.http_config").
				Set("auth_type = EXCLUDED.auth_type").
				Set("env_var_mapping = EXCLUDED.env_var_mapping").
				Where("enrichment_provider.is_builtin").
				Exec(ctx)
			if err != nil {
				return fmt.Errorf("seed provider %s: %w", p.ProviderName, mapErr(err))
			}
			for _, e := range b.Extractions {
				for _, t := range e.Types {
					row := FieldExtraction{UUID: uuid.New(), ProviderName: p.ProviderName, IndicatorType: t, SourcePath: e.SourcePath,
						TargetKey: e.TargetKey, ValueType: e.ValueType, Description: e.Description, IsSystem: true, IsActive: true,
						CreatedAt: now, UpdatedAt: now}
					_, err := tx.NewInsert().Model(&row).
						On("CONFLICT (provider_name, indicator_type, target_key) DO UPDATE").
						Set("source_path = EXCLUDED.source_path").
						Set("value_type = EXCLUDED.value_type").
						Set("description = EXCLUDED.description").
						Set("is_system = true").
						Exec(ctx)
					if err != nil {
						return fmt.Errorf("seed extraction %s/%s/%s: %w", p.ProviderName, t, e.TargetKey, mapErr(err))
					}
				}
			}
		}
		return nil
	})
}
