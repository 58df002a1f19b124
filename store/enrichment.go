package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// FieldExtraction copies one field of a provider's response into the extracted map of an
// enrichment result, for one indicator type. System rows come with builtin providers: only is_active
// may change.
type FieldExtraction struct {
	bun.BaseModel `bun:"table:enrichment_field_extractions"`

	UUID          uuid.UUID `bun:"uuid,pk,type:uuid"`
	ProviderName  string    `bun:"provider_name"`
	IndicatorType string    `bun:"indicator_type"`
	SourcePath    string    `bun:"source_path"`
	TargetKey     string    `bun:"target_key"`
	ValueType     string    `bun:"value_type"`
	Description   string    `bun:"description"`
	IsSystem      bool      `bun:"is_system"`
	IsActive      bool      `bun:"is_active"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

// CreateFieldExtractions inserts every extraction in one transaction (all or nothing). A duplicate
// (provider, type, target_key) is ErrConflict.
func (s *Store) CreateFieldExtractions(ctx context.Context, exts []*FieldExtraction) error {
	if len(exts) == 0 {
		return nil
	}
	now := s.Now()
	for _, e := range exts {
		if e.UUID == uuid.Nil {
			e.UUID = uuid.New()
		}
		e.CreatedAt, e.UpdatedAt = now, now
	}
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, e := range exts {
			if _, err := tx.NewInsert().Model(e).Exec(ctx); err != nil {
				return fmt.Errorf("insert field extraction %s/%s/%s: %w", e.ProviderName, e.IndicatorType, e.TargetKey, mapErr(err))
			}
		}
		return nil
	})
}

// GetFieldExtraction loads one extraction by uuid.
func (s *Store) GetFieldExtraction(ctx context.Context, id uuid.UUID) (FieldExtraction, error) {
	var e FieldExtraction
	if err := s.db.NewSelect().Model(&e).Where("uuid = ?", id).Scan(ctx); err != nil {
		return FieldExtraction{}, fmt.Errorf("get field extraction %s: %w", id, mapErr(err))
	}
	return e, nil
}

// FieldExtractionFilter narrows ListFieldExtractions. A zero Page lists every match.
type FieldExtractionFilter struct {
	ProviderName  string
	IndicatorType string
	IsActive      *bool
	IsSystem      *bool
	Page          Page
}

// ListFieldExtractions returns extractions ordered by provider, type and target key, and the total.
func (s *Store) ListFieldExtractions(ctx context.Context, f FieldExtractionFilter) ([]FieldExtraction, int, error) {
	var exts []FieldExtraction
	q := s.db.NewSelect().Model(&exts).OrderExpr("provider_name, indicator_type, target_key")
	if f.ProviderName != "" {
		q = q.Where("provider_name = ?", f.ProviderName)
	}
	if f.IndicatorType != "" {
		q = q.Where("indicator_type = ?", f.IndicatorType)
	}
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	if f.IsSystem != nil {
		q = q.Where("is_system = ?", *f.IsSystem)
	}
	total, err := scanPage(ctx, q, f.Page, func() int { return len(exts) })
	if err != nil {
		return nil, 0, fmt.Errorf("list field extractions: %w", mapErr(err))
	}
	return exts, total, nil
}

// UpdateFieldExtraction writes the named columns of e (updated_at always).
func (s *Store) UpdateFieldExtraction(ctx context.Context, e *FieldExtraction, columns ...string) error {
	e.UpdatedAt = s.Now()
	res, err := s.db.NewUpdate().Model(e).Column(append(columns, "updated_at")...).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update field extraction %s: %w", e.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update field extraction %s: %w", e.UUID, ErrNotFound)
	}
	return nil
}

// DeleteFieldExtraction deletes a non-system extraction (ErrNotFound otherwise).
func (s *Store) DeleteFieldExtraction(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*FieldExtraction)(nil)).Where("uuid = ? AND NOT is_system", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete field extraction %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete field extraction %s: %w", id, ErrNotFound)
	}
	return nil
}

// CachedResult is one cached provider answer.
type CachedResult struct {
	Result    map[string]any
	ExpiresAt time.Time
}

// CacheKey names one cached provider answer.
type CacheKey struct{ Provider, Type, Value string }

// GetCachedResult returns the unexpired cached result for (provider, type, value).
func (s *Store) GetCachedResult(ctx context.Context, provider, typ, value string) (CachedResult, bool, error) {
	k := CacheKey{provider, typ, value}
	hits, err := s.GetCachedResults(ctx, []CacheKey{k})
	hit, ok := hits[k]
	return hit, ok, err
}

// GetCachedResults returns the unexpired cached results among keys, in one query.
func (s *Store) GetCachedResults(ctx context.Context, keys []CacheKey) (map[CacheKey]CachedResult, error) {
	out := make(map[CacheKey]CachedResult, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	provs, types, values := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		provs[i], types[i], values[i] = k.Provider, k.Type, k.Value
	}
	var rows []struct {
		Provider  string         `bun:"provider_name"`
		Type      string         `bun:"indicator_type"`
		Value     string         `bun:"value"`
		Result    map[string]any `bun:"result,type:jsonb"`
		ExpiresAt time.Time      `bun:"expires_at"`
	}
	err := s.db.NewRaw(`SELECT c.provider_name, c.indicator_type, c.value, c.result, c.expires_at
		FROM enrichment_cache AS c JOIN unnest(?::text[], ?::text[], ?::text[]) AS k (provider_name, indicator_type, value)
			USING (provider_name, indicator_type, value)
		WHERE c.expires_at > now()`, pgdialectArray(provs), pgdialectArray(types), pgdialectArray(values)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read %d cache entries: %w", len(keys), mapErr(err))
	}
	for _, r := range rows {
		out[CacheKey{r.Provider, r.Type, r.Value}] = CachedResult{Result: r.Result, ExpiresAt: r.ExpiresAt}
	}
	return out, nil
}

// CacheEntry is one provider answer to cache for TTL (TTL ≤ 0: not cached).
type CacheEntry struct {
	Provider, Type, Value string
	Result                map[string]any
	TTL                   time.Duration
}

// putCachedResults stores entries (each replacing any earlier entry for its key; the last of
// entries with one key wins) in one statement; TTL ≤ 0 stores nothing.
func putCachedResults(ctx context.Context, db bun.IDB, entries []CacheEntry) error {
	var provs, types, values, results []string
	var ttls []int64
	for _, e := range entries {
		if e.TTL <= 0 {
			continue
		}
		raw, err := json.Marshal(e.Result)
		if err != nil {
			return fmt.Errorf("encode cache entry %s/%s: %w", e.Provider, e.Type, err)
		}
		provs, types, values = append(provs, e.Provider), append(types, e.Type), append(values, e.Value)
		results, ttls = append(results, string(raw)), append(ttls, e.TTL.Microseconds())
	}
	if len(provs) == 0 {
		return nil
	}
	// DISTINCT ON keeps one row per key (an upsert may not touch a row twice): the last given.
	_, err := db.NewRaw(`INSERT INTO enrichment_cache AS c (provider_name, indicator_type, value, result, created_at, expires_at)
SELECT DISTINCT ON (p, t, v) p, t, v, r::jsonb, now(), now() + ttl * interval '1 microsecond'
FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS e (p, t, v, r, ttl, n)
ORDER BY p, t, v, n DESC
ON CONFLICT (provider_name, indicator_type, value) DO UPDATE
SET result = EXCLUDED.result, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
		pgdialectArray(provs), pgdialectArray(types), pgdialectArray(values), pgdialectArray(results), pgdialectArray(ttls)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("write %d cache entries: %w", len(provs), mapErr(err))
	}
	return nil
}

// PurgeExpiredCache deletes up to limit expired cache entries (oldest expiry first; limit ≤ 0 means
// 10 000) and returns how many. Reads already ignore expired entries; this only reclaims space.
func (s *Store) PurgeExpiredCache(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		limit = 10_000
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM enrichment_cache WHERE (provider_name, indicator_type, value) IN (
  SELECT provider_name, indicator_type, value FROM enrichment_cache WHERE expires_at <= now()
  ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge cache: %w", mapErr(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ErrQuotaExhausted is returned (wrapped) by ReserveProviderSlot when the daily quota is used up;
// the slot returned is then the start of the next UTC day.
var ErrQuotaExhausted = errors.New("daily quota exhausted")

// ReserveProviderSlot reserves the next request slot of provider under limit, atomically across
// processes, and returns the slot time (Postgres clock) and the database's now. Slots are spaced by
// limit.Interval(); with a daily quota, a day whose quota is used pushes the slot to the next UTC day.
// A zero limit returns now.
func (s *Store) ReserveProviderSlot(ctx context.Context, provider string, limit RateLimit) (slot, now time.Time, err error) {
	interval := limit.Interval()
	quota := 0
	if limit.DailyQuota != nil && *limit.DailyQuota > 0 {
		quota = *limit.DailyQuota
	}
	if interval <= 0 && quota == 0 {
		err = s.db.NewRaw("SELECT now(), now()").Scan(ctx, &slot, &now)
		return slot.UTC(), now.UTC(), mapErr(err)
	}
	// The row is locked for the reservation, so concurrent reservations queue up on it. The slot is
	// max(next_slot, now); when the day of that slot has used its quota, it moves to the start of the
	// following UTC day. The row keeps the slot after the reserved one.
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO enrichment_rate_state (provider_name, next_slot, day, day_count)
VALUES (?, now(), (now() AT TIME ZONE 'UTC')::date, 0) ON CONFLICT (provider_name) DO NOTHING`, provider); err != nil {
			return err
		}
		var next time.Time
		var day time.Time
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT next_slot, day::timestamp AT TIME ZONE 'UTC', day_count, now() FROM enrichment_rate_state
WHERE provider_name = ? FOR UPDATE`, provider).Scan(&next, &day, &count, &now); err != nil {
			return err
		}
		slot = next
		if now.After(slot) {
			slot = now
		}
		slotDay := utcDay(slot)
		if !slotDay.Equal(utcDay(day)) {
			count = 0
		}
		if quota > 0 && count >= quota {
			slot, count = slotDay.AddDate(0, 0, 1), 0
			slotDay = slot
		}
		_, err := tx.ExecContext(ctx, `UPDATE enrichment_rate_state SET next_slot = ?, day = ?::date, day_count = ? WHERE provider_name = ?`,
			slot.Add(interval), slotDay.Format("2006-01-02"), count+1, provider)
		return err
	})
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("reserve rate slot for %s: %w", provider, mapErr(err))
	}
	return slot.UTC(), now.UTC(), nil
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// IndicatorEnrichment is the outcome of one enrichment pass over an indicator.
type IndicatorEnrichment struct {
	IndicatorUUID uuid.UUID
	// Results are provider name → result object (status, success, extracted, malice, enriched_at,
	// error_message, raw_response, ...), merged into enrichment_results over earlier ones.
	Results map[string]any
}

// RecordEnrichment commits one enrichment pass in one transaction (one durable commit, at most three
// statements): the cache entries (replacing earlier ones; TTL ≤ 0 stores nothing), then the
// indicators' results: each indicator's rows are locked in uuid order (so concurrent passes over
// overlapping indicators cannot deadlock), its results merged into enrichment_results over earlier
// ones, its malice recomputed as the worst verdict over its successful provider results (unless an
// analyst override holds: malice_overridden_at set), is_enriched set and last_seen bumped. An
// indicator deleted meanwhile is left out.
func (s *Store) RecordEnrichment(ctx context.Context, cache []CacheEntry, inds []IndicatorEnrichment) error {
	if len(cache) == 0 && len(inds) == 0 {
		return nil
	}
	results := map[uuid.UUID]map[string]any{} // one pass may name an indicator twice: merged in order
	ids := make([]uuid.UUID, 0, len(inds))
	for _, e := range inds {
		if results[e.IndicatorUUID] == nil {
			results[e.IndicatorUUID] = map[string]any{}
			ids = append(ids, e.IndicatorUUID)
		}
		maps.Copy(results[e.IndicatorUUID], e.Results)
	}
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := putCachedResults(ctx, tx, cache); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		var locked []Indicator
		err := tx.NewSelect().Model(&locked).Column("uuid", "enrichment_results", "malice", "malice_overridden_at").
			Where("uuid IN (?)", bun.List(ids)).OrderExpr("uuid").For("UPDATE").Scan(ctx)
		if err != nil {
			return fmt.Errorf("lock %d indicators: %w", len(ids), mapErr(err))
		}
		if len(locked) == 0 {
			return nil
		}
		uuids, merged, malices := make([]uuid.UUID, len(locked)), make([]string, len(locked)), make([]string, len(locked))
		var changed []uuid.UUID // indicators whose malice this pass changes: their alerts' indicator_malice follows
		for i, ind := range locked {
			m := maps.Clone(ind.EnrichmentResults)
			if m == nil {
				m = map[string]any{}
			}
			maps.Copy(m, results[ind.UUID])
			raw, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode enrichment results of indicator %s: %w", ind.UUID, err)
			}
			uuids[i], merged[i], malices[i] = ind.UUID, string(raw), string(indicators.ResultsMalice(m))
			if ind.MaliceOverriddenAt == nil && malices[i] != ind.Malice {
				changed = append(changed, ind.UUID)
			}
		}
		now := s.Now()
		_, err = tx.NewRaw(`UPDATE indicators AS i SET enrichment_results = d.results::jsonb, is_enriched = true,
				updated_at = ?0, last_seen = GREATEST(i.last_seen, ?0),
				malice = CASE WHEN i.malice_overridden_at IS NULL THEN d.malice ELSE i.malice END,
				malice_source = CASE WHEN i.malice_overridden_at IS NULL THEN 'enrichment' ELSE i.malice_source END
			FROM unnest(?1::uuid[], ?2::text[], ?3::text[]) AS d (uuid, results, malice) WHERE i.uuid = d.uuid`,
			now, pgdialectArray(uuids), pgdialectArray(merged), pgdialectArray(malices)).Exec(ctx)
		if err != nil {
			return fmt.Errorf("update %d indicators: %w", len(uuids), mapErr(err))
		}
		return refreshIndicatorMalice(ctx, tx, changed)
	})
}

// GetIndicators loads indicators by uuid (missing ones are left out), in the order given.
func (s *Store) GetIndicators(ctx context.Context, ids []uuid.UUID) ([]Indicator, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []Indicator
	if err := s.db.NewSelect().Model(&rows).Where("uuid IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get %d indicators: %w", len(ids), mapErr(err))
	}
	byID := make(map[uuid.UUID]Indicator, len(rows))
	for _, r := range rows {
		byID[r.UUID] = r
	}
	out := make([]Indicator, 0, len(rows))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
			delete(byID, id)
		}
	}
	return out, nil
}

// Enrichment result statuses.
const (
	EnrichSuccess = "success"
	EnrichFailed  = "failed"
	EnrichSkipped = "skipped"
)
