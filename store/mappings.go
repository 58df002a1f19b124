package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/vigil-soc/vigil/kit/indicators"
)

// IndicatorMapping is one pass-2/pass-3 extraction rule (API.md §4). System rows are seeded from the
// indicators package's defaults: their field path is read-only and they cannot be deleted.
type IndicatorMapping struct {
	bun.BaseModel `bun:"table:indicator_mappings"`

	UUID             uuid.UUID `bun:"uuid,pk,type:uuid"`
	SourceName       *string   `bun:"source_name"` // nil: every source
	FieldPath        string    `bun:"field_path"`
	IndicatorType    string    `bun:"indicator_type"`
	ExtractionTarget string    `bun:"extraction_target"`
	IsActive         bool      `bun:"is_active"`
	IsSystem         bool      `bun:"is_system"`
	Description      *string   `bun:"description"`
	CreatedAt        time.Time `bun:"created_at"`
	UpdatedAt        time.Time `bun:"updated_at"`
}

// Mapping is the row as the extraction rule it stores (indicators.Mapping): the one conversion, used
// by ingest (pass 2), the pipeline (passes 2 and 3) and the test-extraction route.
func (m IndicatorMapping) Mapping() indicators.Mapping {
	out := indicators.Mapping{FieldPath: m.FieldPath, Type: indicators.Type(m.IndicatorType), Target: indicators.Target(m.ExtractionTarget)}
	if m.SourceName != nil {
		out.SourceName = *m.SourceName
	}
	if m.Description != nil {
		out.Description = *m.Description
	}
	return out
}

const mappingConflict = "(coalesce(source_name, ''), field_path, indicator_type, extraction_target)"

// SeedSystemMappings inserts the system mappings that are missing (matched on source, path, type and
// target). Existing rows keep their is_active and description, which admins may change. Idempotent.
func (s *Store) SeedSystemMappings(ctx context.Context, ms []IndicatorMapping) error {
	if len(ms) == 0 {
		return nil
	}
	now := s.Now()
	rows := make([]IndicatorMapping, len(ms))
	for i, m := range ms {
		m.UUID = uuid.New()
		m.IsSystem, m.IsActive = true, true
		// created_at orders the list; keep the seed order stable.
		m.CreatedAt = now.Add(time.Duration(i) * time.Microsecond)
		m.UpdatedAt = m.CreatedAt
		rows[i] = m
	}
	if _, err := s.db.NewInsert().Model(&rows).On("CONFLICT " + mappingConflict + " DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("seed %d system mappings: %w", len(rows), mapErr(err))
	}
	return nil
}

// CreateIndicatorMapping inserts m; a duplicate rule is ErrConflict.
func (s *Store) CreateIndicatorMapping(ctx context.Context, m *IndicatorMapping) error {
	now := s.Now()
	if m.UUID == uuid.Nil {
		m.UUID = uuid.New()
	}
	m.CreatedAt, m.UpdatedAt = now, now
	if _, err := s.db.NewInsert().Model(m).Exec(ctx); err != nil {
		return fmt.Errorf("insert indicator mapping: %w", mapErr(err))
	}
	return nil
}

// GetIndicatorMapping loads one mapping.
func (s *Store) GetIndicatorMapping(ctx context.Context, id uuid.UUID) (IndicatorMapping, error) {
	var m IndicatorMapping
	if err := s.db.NewSelect().Model(&m).Where("uuid = ?", id).Scan(ctx); err != nil {
		return IndicatorMapping{}, fmt.Errorf("get indicator mapping %s: %w", id, mapErr(err))
	}
	return m, nil
}

// IndicatorMappingFilter narrows ListIndicatorMappings. SourceName matches rows of that source and
// rows for every source.
type IndicatorMappingFilter struct {
	SourceName       string
	ExtractionTarget string
	IsActive         *bool
	IsSystem         *bool
	Page             Page
}

// ListIndicatorMappings returns one page in creation order (system rows first), and the total.
func (s *Store) ListIndicatorMappings(ctx context.Context, f IndicatorMappingFilter) ([]IndicatorMapping, int, error) {
	var out []IndicatorMapping
	q := s.db.NewSelect().Model(&out).OrderExpr("created_at ASC, uuid ASC")
	if f.SourceName != "" {
		q = q.Where("(source_name IS NULL OR source_name = ?)", f.SourceName)
	}
	if f.ExtractionTarget != "" {
		q = q.Where("extraction_target = ?", f.ExtractionTarget)
	}
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	if f.IsSystem != nil {
		q = q.Where("is_system = ?", *f.IsSystem)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list indicator mappings: %w", mapErr(err))
	}
	return out, int(total), nil
}

// ActiveMappings returns, as extraction rules, every active mapping that applies to sourceName ("" = all sources' rows
// only), in creation order: the rule set of extraction passes 2 and 3.
func (s *Store) ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error) {
	var rows []IndicatorMapping
	err := s.db.NewSelect().Model(&rows).
		Where("is_active").
		Where("(source_name IS NULL OR source_name = ?)", sourceName).
		OrderExpr("created_at ASC, uuid ASC").Limit(10_000).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("active mappings of %s: %w", sourceName, mapErr(err))
	}
	out := make([]indicators.Mapping, len(rows))
	for i, r := range rows {
		out[i] = r.Mapping()
	}
	return out, nil
}

// UpdateIndicatorMapping writes the named columns of m (updated_at always).
func (s *Store) UpdateIndicatorMapping(ctx context.Context, m *IndicatorMapping, columns ...string) error {
	m.UpdatedAt = s.Now()
	columns = append(columns, "updated_at")
	res, err := s.db.NewUpdate().Model(m).Column(columns...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update indicator mapping %s: %w", m.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update indicator mapping %s: %w", m.UUID, ErrNotFound)
	}
	return nil
}

// DeleteIndicatorMapping removes a non-system mapping. It returns ErrNotFound when no row matched.
func (s *Store) DeleteIndicatorMapping(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*IndicatorMapping)(nil)).Where("uuid = ?", id).Where("NOT is_system").Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete indicator mapping %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete indicator mapping %s: %w", id, ErrNotFound)
	}
	return nil
}
