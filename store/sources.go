package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Source is one alert source plugin the platform knows (GET /v1/sources). Rows are seeded from the
// plugin registry at start (SeedSources) so each has a stable uuid and timestamps.
type Source struct {
	bun.BaseModel `bun:"table:sources"`

	UUID          uuid.UUID `bun:"uuid,pk,type:uuid"`
	SourceName    string    `bun:"source_name"`
	DisplayName   string    `bun:"display_name"`
	IsActive      bool      `bun:"is_active"`
	AuthType      string    `bun:"auth_type"`
	Documentation string    `bun:"documentation"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

// SeedSources inserts the sources that are missing and refreshes display name, auth type and
// documentation of the others (updated_at moves only when something changed). Idempotent and safe
// for concurrent starts.
func (s *Store) SeedSources(ctx context.Context, srcs []Source) error {
	if len(srcs) == 0 {
		return nil
	}
	now := s.Now()
	rows := make([]Source, len(srcs))
	for i, src := range srcs {
		src.UUID = uuid.New()
		src.IsActive = true
		src.CreatedAt, src.UpdatedAt = now, now
		rows[i] = src
	}
	_, err := s.db.NewInsert().Model(&rows).
		On("CONFLICT (source_name) DO UPDATE").
		Set("display_name = EXCLUDED.display_name, auth_type = EXCLUDED.auth_type, documentation = EXCLUDED.documentation, updated_at = EXCLUDED.updated_at").
		Where("(source.display_name, source.auth_type, source.documentation) IS DISTINCT FROM (EXCLUDED.display_name, EXCLUDED.auth_type, EXCLUDED.documentation)").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("seed %d sources: %w", len(rows), mapErr(err))
	}
	return nil
}

// ListSources returns one page of sources ordered by name, and the total.
func (s *Store) ListSources(ctx context.Context, p Page) ([]Source, int, error) {
	var out []Source
	total, err := s.db.NewSelect().Model(&out).OrderExpr("source_name ASC").
		Limit(p.Limit()).Offset(p.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list sources: %w", mapErr(err))
	}
	return out, int(total), nil
}

// GetSource loads one source by uuid.
func (s *Store) GetSource(ctx context.Context, id uuid.UUID) (Source, error) {
	var src Source
	if err := s.db.NewSelect().Model(&src).Where("uuid = ?", id).Scan(ctx); err != nil {
		return Source{}, fmt.Errorf("get source %s: %w", id, mapErr(err))
	}
	return src, nil
}

// SourceIntegration configures how one source's ingestion is authenticated and mapped. AuthConfig is
// sealed (secretbox) by the caller; the store never sees the plaintext.
type SourceIntegration struct {
	bun.BaseModel `bun:"table:source_integrations"`

	UUID            uuid.UUID         `bun:"uuid,pk,type:uuid"`
	SourceName      string            `bun:"source_name"`
	DisplayName     string            `bun:"display_name"`
	IsActive        bool              `bun:"is_active"`
	AuthType        string            `bun:"auth_type"`
	AuthConfig      []byte            `bun:"auth_config"`
	SeverityMapping map[string]string `bun:"severity_mapping,type:jsonb"`
	Documentation   *string           `bun:"documentation"`
	CreatedAt       time.Time         `bun:"created_at"`
	UpdatedAt       time.Time         `bun:"updated_at"`
}

// CreateSourceIntegration inserts si, filling uuid and timestamps. A second integration for the same
// source is ErrConflict.
func (s *Store) CreateSourceIntegration(ctx context.Context, si *SourceIntegration) error {
	now := s.Now()
	if si.UUID == uuid.Nil {
		si.UUID = uuid.New()
	}
	if si.SeverityMapping == nil {
		si.SeverityMapping = map[string]string{}
	}
	si.CreatedAt, si.UpdatedAt = now, now
	if _, err := s.db.NewInsert().Model(si).Exec(ctx); err != nil {
		return fmt.Errorf("insert source integration: %w", mapErr(err))
	}
	return nil
}

// GetSourceIntegration loads one integration by uuid.
func (s *Store) GetSourceIntegration(ctx context.Context, id uuid.UUID) (SourceIntegration, error) {
	var si SourceIntegration
	if err := s.db.NewSelect().Model(&si).Where("uuid = ?", id).Scan(ctx); err != nil {
		return SourceIntegration{}, fmt.Errorf("get source integration %s: %w", id, mapErr(err))
	}
	return si, nil
}

// SourceIntegrationByName loads the integration of sourceName; ErrNotFound when none is configured.
func (s *Store) SourceIntegrationByName(ctx context.Context, sourceName string) (SourceIntegration, error) {
	var si SourceIntegration
	if err := s.db.NewSelect().Model(&si).Where("source_name = ?", sourceName).Scan(ctx); err != nil {
		return SourceIntegration{}, fmt.Errorf("get source integration of %s: %w", sourceName, mapErr(err))
	}
	return si, nil
}

// SourceIntegrationFilter narrows ListSourceIntegrations.
type SourceIntegrationFilter struct {
	SourceName string
	IsActive   *bool
	Page       Page
}

// ListSourceIntegrations returns one page, newest first, and the total.
func (s *Store) ListSourceIntegrations(ctx context.Context, f SourceIntegrationFilter) ([]SourceIntegration, int, error) {
	var out []SourceIntegration
	q := s.db.NewSelect().Model(&out).OrderExpr("created_at DESC, uuid DESC")
	if f.SourceName != "" {
		q = q.Where("source_name = ?", f.SourceName)
	}
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list source integrations: %w", mapErr(err))
	}
	return out, int(total), nil
}

// UpdateSourceIntegration writes the named columns of si (updated_at always).
func (s *Store) UpdateSourceIntegration(ctx context.Context, si *SourceIntegration, columns ...string) error {
	si.UpdatedAt = s.Now()
	columns = append(columns, "updated_at")
	res, err := s.db.NewUpdate().Model(si).Column(columns...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update source integration %s: %w", si.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update source integration %s: %w", si.UUID, ErrNotFound)
	}
	return nil
}

// DeleteSourceIntegration removes one integration.
func (s *Store) DeleteSourceIntegration(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*SourceIntegration)(nil)).Where("uuid = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete source integration %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete source integration %s: %w", id, ErrNotFound)
	}
	return nil
}
