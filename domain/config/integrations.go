package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// IntegrationReader reads one source integration (store.Store.GetSourceIntegration).
type IntegrationReader interface {
	GetSourceIntegration(ctx context.Context, id uuid.UUID) (store.SourceIntegration, error)
}

// Sealer seals a secret at rest (secretbox.Box).
type Sealer interface {
	SealJSON(v any) ([]byte, error)
}

// Integrations applies the rules of source integrations (API.md §2): one per known source, the
// plugin's defaults, the secret sealed (never stored in clear), signature settings that agree
// (sources.CheckAuthConfig); a change commits with its audit event and drops ingestion's cache.
type Integrations struct {
	integrations IntegrationReader
	changes      audit.Store
	sources      SourceRegistry
	sealer       Sealer
	cache        CacheInvalidator
}

// NewIntegrations is the source-integration service over integrations (reads), changes (writes
// with their audit events), the source registry, sealer (nil: no ENCRYPTION_KEY, a secret cannot be
// stored) and ingestion's cache.
func NewIntegrations(integrations IntegrationReader, changes audit.Store, sources SourceRegistry, sealer Sealer, cache CacheInvalidator) *Integrations {
	return &Integrations{integrations: integrations, changes: changes, sources: sources, sealer: sealer, cache: cache}
}

// IntegrationFields are a new integration. Nil fields take the plugin's defaults (display name,
// auth type) or true (IsActive); Secret nil: none.
type IntegrationFields struct {
	SourceName      string
	DisplayName     *string
	IsActive        *bool
	AuthType        *string
	Secret          *string
	SeverityMapping map[string]string
	Documentation   *string
}

// Create stores a new integration with its audit event by actor. An unknown source or contradicting
// signature settings are a validate.Errors (locations relative to the request); a source that has
// an integration store.ErrConflict.
func (s *Integrations) Create(ctx context.Context, actor store.Actor, f IntegrationFields) (store.SourceIntegration, error) {
	if errs := CheckSeverityMapping(f.SeverityMapping); len(errs) > 0 {
		return store.SourceIntegration{}, errs
	}
	plugin, ok := s.sources.Get(f.SourceName)
	if !ok {
		var errs validate.Errors
		errs.AddCtx([]any{"source_name"}, validate.TypeEnum, "Unknown source.", f.SourceName,
			map[string]any{"allowed": SourceNames(s.sources)})
		return store.SourceIntegration{}, errs
	}
	si := store.SourceIntegration{SourceName: plugin.Name(), DisplayName: plugin.DisplayName(), IsActive: true,
		AuthType: plugin.DefaultAuthType(), SeverityMapping: f.SeverityMapping, Documentation: f.Documentation}
	if f.DisplayName != nil {
		si.DisplayName = *f.DisplayName
	}
	if f.IsActive != nil {
		si.IsActive = *f.IsActive
	}
	if f.AuthType != nil {
		si.AuthType = *f.AuthType
	}
	if f.Secret != nil {
		sealed, err := s.seal(*f.Secret)
		if err != nil {
			return store.SourceIntegration{}, err
		}
		si.AuthConfig = sealed
	}
	if err := sources.CheckAuthConfig(si.AuthType, len(si.AuthConfig) > 0).Err(); err != nil {
		return store.SourceIntegration{}, err
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateSourceIntegration(ctx, &si)
		return audit.Subject{Type: audit.SourceIntegration, UUID: si.UUID, Name: si.SourceName, After: si}, err
	})
	if err != nil {
		return store.SourceIntegration{}, taken(fmt.Errorf("create source integration %s: %w", si.SourceName, err), TakenIntegration, si.SourceName)
	}
	s.cache.Invalidate()
	return si, nil
}

func (s *Integrations) seal(secret string) ([]byte, error) {
	if s.sealer == nil {
		return nil, errors.New("seal source secret: no encryption key configured")
	}
	return s.sealer.SealJSON(ingest.Secret{Secret: secret})
}

// IntegrationPatch is an integration update: nil and unset fields are unchanged; a null secret
// removes it, a null documentation clears it; SeverityMapping non-nil replaces the whole mapping.
type IntegrationPatch struct {
	DisplayName     *string
	IsActive        *bool
	AuthType        *string
	Secret          optional.Value[string]
	SeverityMapping map[string]string
	Documentation   optional.Value[string]
}

// Update applies p to integration id with its audit event by actor (none when nothing changed). A
// missing integration is store.ErrNotFound; contradicting signature settings a validate.Errors.
func (s *Integrations) Update(ctx context.Context, actor store.Actor, id uuid.UUID, p IntegrationPatch) (store.SourceIntegration, error) {
	if errs := CheckSeverityMapping(p.SeverityMapping); len(errs) > 0 {
		return store.SourceIntegration{}, errs
	}
	si, err := s.integrations.GetSourceIntegration(ctx, id)
	if err != nil {
		return store.SourceIntegration{}, fmt.Errorf("get source integration %s: %w", id, err)
	}
	before := si
	var cols []string
	cols = setValue(p.DisplayName, &si.DisplayName, "display_name", cols)
	cols = setValue(p.IsActive, &si.IsActive, "is_active", cols)
	cols = setValue(p.AuthType, &si.AuthType, "auth_type", cols)
	if p.Secret.Set {
		si.AuthConfig = nil
		if !p.Secret.Null {
			if si.AuthConfig, err = s.seal(p.Secret.Value); err != nil {
				return store.SourceIntegration{}, err
			}
		}
		cols = append(cols, "auth_config")
	}
	if p.SeverityMapping != nil {
		si.SeverityMapping, cols = p.SeverityMapping, append(cols, "severity_mapping")
	}
	cols = setNullable(p.Documentation, &si.Documentation, "documentation", cols)
	if err := sources.CheckAuthConfig(si.AuthType, len(si.AuthConfig) > 0).Err(); err != nil {
		return store.SourceIntegration{}, err
	}
	if len(cols) == 0 {
		return si, nil
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateSourceIntegration(ctx, &si, cols...)
		return audit.Subject{Type: audit.SourceIntegration, UUID: si.UUID, Name: si.SourceName, Before: before, After: si}, err
	})
	if err != nil {
		return store.SourceIntegration{}, fmt.Errorf("update source integration %s: %w", id, err)
	}
	s.cache.Invalidate()
	return si, nil
}

// Delete removes integration id with its audit event by actor. A missing integration is
// store.ErrNotFound.
func (s *Integrations) Delete(ctx context.Context, actor store.Actor, id uuid.UUID) error {
	err := deleteAudited(ctx, s.changes, actor, "source integration", id, (*store.Store).GetSourceIntegration, (*store.Store).DeleteSourceIntegration,
		func(old store.SourceIntegration) audit.Subject {
			return audit.Subject{Type: audit.SourceIntegration, UUID: id, Name: old.SourceName, Before: old}
		})
	if err != nil {
		return err
	}
	s.cache.Invalidate()
	return nil
}
