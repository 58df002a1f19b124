package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/indicators"
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
	// ExtractedBy is set by the reads of an alert's indicators: where extraction found this
	// indicator for that alert (alert_indicators.extracted_by; nil for older links and analysts' adds).
	ExtractedBy []indicators.Origin `bun:"-"`
}

// IndicatorKey identifies an indicator by its natural key.
type IndicatorKey struct {
	Type  string
	Value string
}

// LastSeenGrain is how stale an existing indicator's last_seen may be before a link bumps it: a
// storm of alerts sharing an indicator writes its row about once a minute instead of once per alert.
const LastSeenGrain = time.Minute

// UpsertIndicators inserts the indicators that do not exist yet and bumps last_seen on the others
// when it is older than LastSeenGrain, on db (the store or a transaction), returning every row in
// input order. Idempotent. An existing row is never waited for: it is read without a lock, only the
// missing ones are inserted (ON CONFLICT DO NOTHING, in (type, value) order, for a concurrent insert
// of the same), and a stale last_seen is bumped only where no other transaction holds the row (SKIP
// LOCKED: that one is bumping it). So concurrent links of alerts that share indicators — a storm of
// one detection — do not queue behind each other until commit, as an upsert that updated every row
// (and an insert that met the updated row's uncommitted version) did.
func (s *Store) UpsertIndicators(ctx context.Context, db bun.IDB, keys []IndicatorKey) ([]Indicator, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if db == nil {
		db = s.db
	}
	now := s.Now()
	byKey, err := s.indicatorsByKey(ctx, db, keys)
	if err != nil {
		return nil, err
	}
	var missing []Indicator
	var stale []uuid.UUID
	for _, k := range keys {
		r, ok := byKey[k]
		switch {
		case !ok && !slices.ContainsFunc(missing, func(m Indicator) bool { return m.Type == k.Type && m.Value == k.Value }):
			missing = append(missing, Indicator{UUID: uuid.New(), Type: k.Type, Value: k.Value, FirstSeen: now, LastSeen: now,
				Malice: "Pending", CreatedAt: now, UpdatedAt: now})
		case ok && r.LastSeen.Before(now.Add(-LastSeenGrain)) && !slices.Contains(stale, r.UUID):
			stale = append(stale, r.UUID)
		}
	}
	if len(missing) > 0 {
		// Insert order by (type, value): two transactions inserting overlapping new keys wait for
		// each other in one order, never in a cycle.
		sortIndicatorRows(missing)
		if _, err := db.NewInsert().Model(&missing).
			Column("uuid", "type", "value", "first_seen", "last_seen", "malice", "created_at", "updated_at").
			On("CONFLICT (type, value) DO NOTHING").Exec(ctx); err != nil {
			return nil, fmt.Errorf("insert %d indicators: %w", len(missing), mapErr(err))
		}
		// What another transaction inserted meanwhile is read with ours.
		mk := make([]IndicatorKey, len(missing))
		for i, m := range missing {
			mk[i] = IndicatorKey{m.Type, m.Value}
		}
		added, err := s.indicatorsByKey(ctx, db, mk)
		if err != nil {
			return nil, err
		}
		for k, r := range added {
			byKey[k] = r
		}
	}
	if len(stale) > 0 {
		if _, err := db.NewRaw(`UPDATE indicators SET last_seen = ?0 WHERE uuid IN (
				SELECT uuid FROM indicators WHERE uuid IN (?1) AND last_seen < ?2 FOR NO KEY UPDATE SKIP LOCKED)`,
			now, bun.List(stale), now.Add(-LastSeenGrain)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("bump last_seen of %d indicators: %w", len(stale), mapErr(err))
		}
	}
	out := make([]Indicator, 0, len(byKey))
	emitted := make(map[IndicatorKey]bool, len(keys))
	for _, k := range keys {
		if emitted[k] {
			continue // a repeated key: its row once, at its first place
		}
		r, ok := byKey[k]
		if !ok { // deleted (retention) between the insert and the read
			return nil, fmt.Errorf("indicator %s %q: %w", k.Type, k.Value, ErrConflict)
		}
		emitted[k] = true
		out = append(out, r)
	}
	return out, nil
}

// indicatorsByKey reads the indicators of keys that exist, without locking them.
func (s *Store) indicatorsByKey(ctx context.Context, db bun.IDB, keys []IndicatorKey) (map[IndicatorKey]Indicator, error) {
	types, values := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		types[i], values[i] = k.Type, k.Value
	}
	var found []Indicator
	if err := db.NewRaw(`SELECT i.* FROM indicators AS i JOIN unnest(?0::text[], ?1::text[]) AS k(t, v) ON i.type = k.t AND i.value = k.v`,
		pgdialectArray(types), pgdialectArray(values)).Scan(ctx, &found); err != nil {
		return nil, fmt.Errorf("read %d indicators: %w", len(keys), mapErr(err))
	}
	out := make(map[IndicatorKey]Indicator, len(found))
	for _, r := range found {
		out[IndicatorKey{r.Type, r.Value}] = r
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

// IndicatorFilter narrows ListIndicators.
type IndicatorFilter struct {
	Types       []string
	Value       string // exact (normalized) value
	ValuePrefix string // value prefix
	Malices     []string
	Page        Page
}

// ListIndicators returns one page of indicators, most recently seen first, and the total.
func (s *Store) ListIndicators(ctx context.Context, f IndicatorFilter) ([]Indicator, int, error) {
	var out []Indicator
	q := s.db.NewSelect().Model(&out).OrderExpr("last_seen DESC, uuid")
	if len(f.Types) > 0 {
		q = q.Where("type IN (?)", bun.List(f.Types))
	}
	if f.Value != "" {
		q = q.Where("value = ?", f.Value)
	}
	if f.ValuePrefix != "" {
		q = q.Where("value LIKE ? ESCAPE '\\'", escapeLike(f.ValuePrefix)+"%")
	}
	if len(f.Malices) > 0 {
		q = q.Where("malice IN (?)", bun.List(f.Malices))
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list indicators: %w", mapErr(err))
	}
	return out, int(total), nil
}

// IndicatorAlertCount counts the alerts linked to an indicator.
func (s *Store) IndicatorAlertCount(ctx context.Context, id uuid.UUID) (int, error) {
	n, err := s.db.NewSelect().Table("alert_indicators").Where("indicator_uuid = ?", id).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count alerts of indicator %s: %w", id, mapErr(err))
	}
	return int(n), nil
}

// Malice sources of an indicator.
const (
	MaliceSourceAnalyst    = "analyst"
	MaliceSourceEnrichment = "enrichment"
)

// SetIndicatorMalice applies an analyst override (level != nil: sticky, malice_source "analyst") or
// clears it (nil: malice recomputed by recompute from the stored enrichment results, malice_source
// "enrichment", or Pending/NULL when there are none), recording an indicator_malice_updated event.
func (s *Store) SetIndicatorMalice(ctx context.Context, id uuid.UUID, level *string, recompute func(results map[string]any) string, actorType, actorKeyPrefix string) (Indicator, error) {
	var ind Indicator
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(&ind).Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock indicator %s: %w", id, mapErr(err))
		}
		now := s.Now()
		before := ind.Malice
		if level != nil {
			src := MaliceSourceAnalyst
			ind.Malice, ind.MaliceSource, ind.MaliceOverriddenAt = *level, &src, &now
		} else {
			ind.Malice, ind.MaliceSource, ind.MaliceOverriddenAt = recompute(ind.EnrichmentResults), nil, nil
			if len(ind.EnrichmentResults) > 0 {
				src := MaliceSourceEnrichment
				ind.MaliceSource = &src
			}
		}
		ind.UpdatedAt = now
		if _, err := tx.NewUpdate().Model(&ind).Column("malice", "malice_source", "malice_overridden_at", "updated_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("update indicator %s: %w", id, mapErr(err))
		}
		if before != ind.Malice {
			if err := refreshIndicatorMalice(ctx, tx, []uuid.UUID{id}); err != nil {
				return err
			}
		}
		var prefix *string
		if actorKeyPrefix != "" {
			prefix = &actorKeyPrefix
		}
		return s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "indicator_malice_updated", ActorType: actorType, ActorKeyPrefix: prefix,
			References: map[string]any{"indicator_uuid": id.String(), "from": before, "to": ind.Malice, "override": level != nil}})
	})
	if err != nil {
		return Indicator{}, err
	}
	return ind, nil
}

// ResultsWithoutRaw returns the indicator's enrichment results without each provider's raw_response
// (what an alert's indicator list shows; GET /v1/indicators/{uuid} keeps them).
func (ind Indicator) ResultsWithoutRaw() map[string]any {
	if ind.EnrichmentResults == nil {
		return nil
	}
	stripped := make(map[string]any, len(ind.EnrichmentResults))
	for provider, r := range ind.EnrichmentResults {
		if m, ok := r.(map[string]any); ok {
			c := make(map[string]any, len(m))
			for k, v := range m {
				if k != "raw_response" {
					c[k] = v
				}
			}
			r = c
		}
		stripped[provider] = r
	}
	return stripped
}
