package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Indicator is a global indicator of compromise, unique on (Type, Value). Values are stored
// normalized (package indicators).
type Indicator struct {
	bun.BaseModel `bun:"table:indicators"`

	UUID               uuid.UUID      `bun:"uuid,pk,type:uuid"`
	Type               string         `bun:"type"`
	Value              string         `bun:"value"`
	FirstSeen          time.Time      `bun:"first_seen"`
	LastSeen           time.Time      `bun:"last_seen"`
	IsEnriched         bool           `bun:"is_enriched"`
	Malice             string         `bun:"malice"`
	MaliceSource       *string        `bun:"malice_source"`
	MaliceOverriddenAt *time.Time     `bun:"malice_overridden_at"`
	EnrichmentResults  map[string]any `bun:"enrichment_results,type:jsonb"`
	CreatedAt          time.Time      `bun:"created_at"`
	UpdatedAt          time.Time      `bun:"updated_at"`
}

// IndicatorKey identifies an indicator by its natural key.
type IndicatorKey struct {
	Type  string
	Value string
}

// UpsertIndicators inserts the indicators that do not exist yet and bumps last_seen on the others, in
// one statement on db (the store or a transaction), returning every row in input order. Idempotent.
func (s *Store) UpsertIndicators(ctx context.Context, db bun.IDB, keys []IndicatorKey) ([]Indicator, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if db == nil {
		db = s.db
	}
	now := s.Now()
	rows := make([]Indicator, 0, len(keys))
	seen := make(map[IndicatorKey]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		rows = append(rows, Indicator{UUID: uuid.New(), Type: k.Type, Value: k.Value, FirstSeen: now, LastSeen: now,
			Malice: "Pending", CreatedAt: now, UpdatedAt: now})
	}
	// Lock order by (type, value) avoids deadlocks between concurrent upserts of overlapping sets.
	sortIndicatorRows(rows)
	_, err := db.NewInsert().Model(&rows).
		Column("uuid", "type", "value", "first_seen", "last_seen", "malice", "created_at", "updated_at").
		On("CONFLICT (type, value) DO UPDATE").
		Set("last_seen = GREATEST(indicators.last_seen, EXCLUDED.last_seen)").
		Returning("*").
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("upsert %d indicators: %w", len(rows), mapErr(err))
	}
	byKey := make(map[IndicatorKey]Indicator, len(rows))
	for _, r := range rows {
		byKey[IndicatorKey{r.Type, r.Value}] = r
	}
	out := make([]Indicator, 0, len(byKey))
	for _, k := range keys {
		if r, ok := byKey[k]; ok {
			out = append(out, r)
			delete(byKey, k)
		}
	}
	return out, nil
}

func sortIndicatorRows(rows []Indicator) {
	slices.SortFunc(rows, func(a, b Indicator) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Value, b.Value))
	})
}

// GetIndicator loads one indicator by uuid.
func (s *Store) GetIndicator(ctx context.Context, id uuid.UUID) (Indicator, error) {
	var ind Indicator
	if err := s.db.NewSelect().Model(&ind).Where("uuid = ?", id).Scan(ctx); err != nil {
		return Indicator{}, fmt.Errorf("get indicator %s: %w", id, mapErr(err))
	}
	return ind, nil
}
