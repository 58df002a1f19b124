package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// One enrichment pass in one transaction: every cache entry written in one statement (the last of
// two entries with one key wins, TTL ≤ 0 stores nothing, hostile values stay exact), results merged
// over earlier ones, malice recomputed unless an analyst override holds, a deleted indicator left out;
// the batched cache read sees only unexpired entries.
func TestRecordEnrichment_BatchedPass(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	prov := "rec_" + uuid.NewString()[:8]
	a, b := "10.1."+uuid.NewString()[:4], hostile+uuid.NewString()[:4]
	inds, err := st.UpsertIndicators(ctx, nil, []store.IndicatorKey{{Type: "ip", Value: a}, {Type: "domain", Value: b}})
	require.NoError(t, err)
	t.Cleanup(func() {
		bg := context.Background()
		_, _ = st.DB().NewRaw("DELETE FROM enrichment_cache WHERE provider_name = ?", prov).Exec(bg)
		_, _ = st.DB().NewRaw("DELETE FROM indicators WHERE uuid IN (?, ?)", inds[0].UUID, inds[1].UUID).Exec(bg)
	})
	// b carries an analyst's verdict and an earlier provider's result.
	level := "Benign"
	_, err = st.SetIndicatorMalice(ctx, inds[1].UUID, &level, func(map[string]any) string { return "Pending" }, "api", "cai_test")
	require.NoError(t, err)
	_, err = st.DB().NewRaw(`UPDATE indicators SET enrichment_results = '{"earlier": {"status": "success", "success": true, "malice": "Suspicious"}}' WHERE uuid = ?`,
		inds[1].UUID).Exec(ctx)
	require.NoError(t, err)

	malicious := map[string]any{"status": "success", "success": true, "malice": "Malicious"}
	cache := []store.CacheEntry{
		{Provider: prov, Type: "ip", Value: a, Result: map[string]any{"n": 1.0}, TTL: time.Hour},
		{Provider: prov, Type: "domain", Value: b, Result: map[string]any{"n": 2.0}, TTL: time.Hour},
		{Provider: prov, Type: "ip", Value: a, Result: map[string]any{"n": 3.0}, TTL: time.Hour}, // same key: wins
		{Provider: prov, Type: "ip", Value: "not-cached", Result: map[string]any{"n": 4.0}, TTL: 0},
	}
	gone := uuid.New()
	require.NoError(t, st.RecordEnrichment(ctx, cache, []store.IndicatorEnrichment{
		{IndicatorUUID: inds[0].UUID, Results: map[string]any{prov: malicious}},
		{IndicatorUUID: gone, Results: map[string]any{prov: malicious}},
		{IndicatorUUID: inds[1].UUID, Results: map[string]any{prov: malicious}},
	}))

	hits, err := st.GetCachedResults(ctx, []store.CacheKey{{prov, "ip", a}, {prov, "domain", b}, {prov, "ip", "not-cached"}, {prov, "url", a}})
	require.NoError(t, err)
	require.Len(t, hits, 2)
	require.Equal(t, 3.0, hits[store.CacheKey{prov, "ip", a}].Result["n"])
	require.Equal(t, 2.0, hits[store.CacheKey{prov, "domain", b}].Result["n"])
	_, err = st.DB().NewRaw("UPDATE enrichment_cache SET expires_at = now() - interval '1 second' WHERE provider_name = ? AND value = ?", prov, a).Exec(ctx)
	require.NoError(t, err)
	_, ok, err := st.GetCachedResult(ctx, prov, "ip", a)
	require.NoError(t, err)
	require.False(t, ok, "an expired entry is not a hit")

	got, err := st.GetIndicators(ctx, []uuid.UUID{inds[0].UUID, inds[1].UUID})
	require.NoError(t, err)
	require.True(t, got[0].IsEnriched)
	require.Equal(t, "Malicious", got[0].Malice)
	require.Equal(t, "enrichment", *got[0].MaliceSource)
	require.Contains(t, got[0].EnrichmentResults, prov)
	require.True(t, got[1].IsEnriched)
	require.Equal(t, "Benign", got[1].Malice, "the analyst's verdict holds")
	require.Contains(t, got[1].EnrichmentResults, "earlier", "results merge over earlier ones")
	require.Contains(t, got[1].EnrichmentResults, prov)
	require.Equal(t, b, got[1].Value)
}

// The pipeline's finish reads the verdict inputs in one query and parks the failed providers in the
// finish's transaction; a deleted alert is ErrNotFound for both and parks nothing.
func TestFinishEnrichment_ParksInItsTransaction(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	res, err := st.Ingest(ctx, ingestAlert("finish-"+uuid.NewString()), 0)
	require.NoError(t, err)
	id := res.AlertUUID
	t.Cleanup(func() { _, _ = st.DB().NewRaw("DELETE FROM alerts WHERE uuid = ?", id).Exec(context.Background()) })

	override, malices, err := st.AlertVerdictInputs(ctx, id)
	require.NoError(t, err)
	require.Nil(t, override)
	require.Empty(t, malices)
	_, _, err = st.LinkIndicators(ctx, id, []store.IndicatorKey{{Type: "ip", Value: "10.2." + uuid.NewString()[:4]}}, "extraction")
	require.NoError(t, err)
	_, malices, err = st.AlertVerdictInputs(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []string{"Pending"}, malices)

	prov := "park_" + uuid.NewString()[:8]
	finish := func(alert uuid.UUID, failed ...string) error {
		_, err := st.FinishEnrichment(ctx, alert, store.EnrichmentFailed, "run-"+uuid.NewString(), failed,
			func(*string, []string) store.ActivityEvent {
				return store.ActivityEvent{EventType: "alert_enrichment_failed", ActorType: store.ActorWorkflow}
			}, nil)
		return err
	}
	// The event is built from the verdict inputs read in the finish's transaction.
	var gotOverride *string
	var gotMalices []string
	_, err = st.FinishEnrichment(ctx, id, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil, func(o *string, m []string) store.ActivityEvent {
		gotOverride, gotMalices = o, m
		return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow, References: map[string]any{"malices": m}}
	}, nil)
	require.NoError(t, err)
	require.Nil(t, gotOverride)
	require.Equal(t, []string{"Pending"}, gotMalices)
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'
		AND "references"->'malices' = '["Pending"]'::jsonb`, id))

	require.NoError(t, finish(id, prov))
	require.Equal(t, 1, countRows(t, st, "SELECT count(*) FROM enrichment_parked WHERE alert_uuid = ? AND provider_name = ?", id, prov))
	require.NoError(t, finish(id), "a later success unparks")
	require.Equal(t, 0, countRows(t, st, "SELECT count(*) FROM enrichment_parked WHERE alert_uuid = ?", id))

	missing := uuid.New()
	_, _, err = st.AlertVerdictInputs(ctx, missing)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, finish(missing, prov), store.ErrNotFound)
	require.Equal(t, 0, countRows(t, st, "SELECT count(*) FROM enrichment_parked WHERE provider_name = ?", prov))
}

// The finish reports the alert's ingest and finish times and whether it was the alert's first (the
// enrichment lag the worker's /metrics observes): a re-run's or a retried finish's is not.
func TestFinishEnrichment_ReportsTheFirstFinish(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	res, err := st.Ingest(ctx, ingestAlert("first-finish-"+uuid.NewString()), 0)
	require.NoError(t, err)
	id := res.AlertUUID
	t.Cleanup(func() { _, _ = st.DB().NewRaw("DELETE FROM alerts WHERE uuid = ?", id).Exec(context.Background()) })
	a, err := st.GetAlert(ctx, id)
	require.NoError(t, err)

	ev := func(*string, []string) store.ActivityEvent {
		return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
	}
	run := "run-" + uuid.NewString()
	fin, err := st.FinishEnrichment(ctx, id, store.EnrichmentEnriched, run, nil, ev, nil)
	require.NoError(t, err)
	require.True(t, fin.First)
	require.True(t, fin.IngestedAt.Equal(a.IngestedAt), "%s vs %s", fin.IngestedAt, a.IngestedAt)
	b, err := st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, b.EnrichedAt)
	require.True(t, fin.EnrichedAt.Equal(*b.EnrichedAt))
	require.False(t, fin.EnrichedAt.Before(fin.IngestedAt))

	for _, r := range []string{run, "run-" + uuid.NewString()} { // a retried finish, a re-run's finish
		fin, err = st.FinishEnrichment(ctx, id, store.EnrichmentEnriched, r, nil, ev, nil)
		require.NoError(t, err)
		require.False(t, fin.First, r)
	}
	_, err = st.FinishEnrichment(ctx, uuid.New(), store.EnrichmentEnriched, run, nil, ev, nil)
	require.ErrorIs(t, err, store.ErrNotFound)
}
