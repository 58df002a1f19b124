package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/store"
)

// groupingAlert ingests an alert (occurred at occurred) linked to the given ips and returns it.
func groupingAlert(t *testing.T, st *store.Store, occurred time.Time, ips ...string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	in := ingestAlert("grouping-" + uuid.NewString())
	in.OccurredAt = occurred
	res, err := st.Ingest(ctx, in, 0)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw("DELETE FROM alerts WHERE uuid = ?", res.AlertUUID).Exec(context.Background())
	})
	keys := make([]store.IndicatorKey, len(ips))
	for i, ip := range ips {
		keys[i] = store.IndicatorKey{Type: "ip", Value: ip}
	}
	_, _, err = st.LinkIndicators(ctx, res.AlertUUID, keys, "extraction")
	require.NoError(t, err)
	return res.AlertUUID
}

func groupingVerdict(t *testing.T, st *store.Store, ip, level string) {
	t.Helper()
	ctx := context.Background()
	inds, err := st.UpsertIndicators(ctx, st.DB(), []store.IndicatorKey{{Type: "ip", Value: ip}})
	require.NoError(t, err)
	_, err = st.SetIndicatorMalice(ctx, inds[0].UUID, &level, nil, store.ActorAPI, "cai_test")
	require.NoError(t, err)
}

func finishGrouping(t *testing.T, st *store.Store, id uuid.UUID, run string, window time.Duration) store.FinishedEnrichment {
	t.Helper()
	fin, err := cases.Grouping{Window: window}.FinishEnrichment(context.Background(), st, id, store.EnrichmentEnriched, run, nil,
		func(*string, []string) store.ActivityEvent {
			return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
		})
	require.NoError(t, err)
	return fin
}

func alertCase(t *testing.T, st *store.Store, id uuid.UUID) uuid.UUID {
	t.Helper()
	var c uuid.NullUUID
	require.NoError(t, st.DB().NewRaw("SELECT case_uuid FROM alerts WHERE uuid = ?", id).Scan(context.Background(), &c))
	return c.UUID
}

// The finish's grouping (store.FinishEnrichment with cases.Grouping's rule): off at 0; once per alert whatever
// retries and re-runs follow; the links' copy of the case follows joins, links added later and a
// deleted case.
func TestFinishEnrichment_Groups(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	n := uuid.New().ID()
	bad, benign := fmt.Sprintf("185.%d.%d.1", 100+n%50, n%200), fmt.Sprintf("185.%d.%d.2", 100+n%50, n%200)
	groupingVerdict(t, st, bad, "Malicious")
	groupingVerdict(t, st, benign, "Benign")
	now := time.Now()
	seed := groupingAlert(t, st, now, bad, benign)
	c := &store.Case{Title: "grouping " + bad}
	require.NoError(t, st.CreateCase(ctx, store.CaseCreate{Case: c, Alerts: []uuid.UUID{seed}, Join: cases.DecideJoin(false, store.Actor{Type: store.ActorSystem}), Actor: store.Actor{Type: store.ActorSystem}}))
	t.Cleanup(func() { _ = st.DeleteCase(context.Background(), c.UUID, store.Actor{Type: store.ActorSystem}) })
	require.Equal(t, 2, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ? AND case_uuid = ?", seed, c.UUID),
		"a join gives the alert's links its case")

	a := groupingAlert(t, st, now, bad)
	require.Equal(t, 0, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ? AND case_uuid IS NOT NULL", a))
	// Window 0: grouping is off.
	fin := finishGrouping(t, st, a, "run-off-"+uuid.NewString(), 0)
	require.Equal(t, uuid.Nil, fin.GroupedInto)
	require.Equal(t, uuid.Nil, alertCase(t, st, a))

	run := "run-" + uuid.NewString()
	fin = finishGrouping(t, st, a, run, 24*time.Hour)
	require.Equal(t, c.UUID, fin.GroupedInto)
	require.Equal(t, c.UUID, alertCase(t, st, a))
	// The join moved the case's updated_at (the cases' trigger, from the alert's) to the finish's time.
	got, err := st.GetCase(ctx, c.UUID)
	require.NoError(t, err)
	require.True(t, got.UpdatedAt.Equal(fin.EnrichedAt), "case updated_at %s, finish %s", got.UpdatedAt, fin.EnrichedAt)
	// A retried finish (same run) and a re-run's finish (another run) group nothing twice.
	require.Equal(t, uuid.Nil, finishGrouping(t, st, a, run, 24*time.Hour).GroupedInto)
	require.Equal(t, uuid.Nil, finishGrouping(t, st, a, "run-"+uuid.NewString(), 24*time.Hour).GroupedInto)
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_grouped' AND case_uuid = ?
		AND "references"->'indicator'->>'value' = ? AND "references"->'indicator'->>'malice' = 'Malicious' AND actor_type = 'workflow'`, a, c.UUID, bad))

	// The join added the alert to the case's aggregates: the values a recount gives.
	requireCaseAggregates(t, st, c.UUID)

	// A link added to an alert in a case takes the case; one of an alert outside a case does not.
	_, _, err = st.LinkIndicators(ctx, a, []store.IndicatorKey{{Type: "ip", Value: benign}}, "api")
	require.NoError(t, err)
	require.Equal(t, 2, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ? AND case_uuid = ?", a, c.UUID))
	// Only a Benign indicator shared: no grouping.
	b := groupingAlert(t, st, now, benign)
	require.Equal(t, uuid.Nil, finishGrouping(t, st, b, "run-"+uuid.NewString(), 24*time.Hour).GroupedInto)
	require.Equal(t, 0, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ? AND case_uuid IS NOT NULL", b))

	// Deleting the case frees its alerts and their links.
	require.NoError(t, st.DeleteCase(ctx, c.UUID, store.Actor{Type: store.ActorSystem}))
	require.Equal(t, 0, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid IN (?, ?) AND case_uuid IS NOT NULL", seed, a))
}

// The lookup reads the links of alerts in a case through the partial index, not every link of the
// shared indicator.
func TestFinishEnrichment_GroupingLookupUsesTheCaseIndex(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	var plan []string
	require.NoError(t, st.DB().NewRaw(`EXPLAIN SELECT other.alert_uuid FROM alert_indicators AS other
		WHERE other.indicator_uuid = ? AND other.case_uuid IS NOT NULL`, uuid.New()).Scan(ctx, &plan))
	require.Contains(t, fmt.Sprint(plan), "alert_indicators_case_idx")
}

// requireCaseAggregates holds case id's maintained aggregates to a recount of its alerts.
func requireCaseAggregates(t *testing.T, st *store.Store, id uuid.UUID) {
	t.Helper()
	type agg struct {
		Count    int     `bun:"n"`
		Severity *string `bun:"sev"`
		Malice   string  `bun:"mal"`
	}
	var kept, counted agg
	ctx := context.Background()
	require.NoError(t, st.DB().NewRaw("SELECT alert_count AS n, alert_severity AS sev, malice AS mal FROM cases WHERE uuid = ?", id).Scan(ctx, &kept))
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) AS n,
			(ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'])[max(array_position(ARRAY['Pending', 'Informational', 'Low', 'Medium', 'High', 'Critical'], a.severity))] AS sev,
			coalesce((ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Pending', 'Benign', 'Suspicious', 'Malicious'], a.effective_malice))], 'Pending') AS mal
		FROM alerts AS a WHERE a.case_uuid = ?`, id).Scan(ctx, &counted))
	require.Equal(t, counted, kept)
	require.Equal(t, 2, kept.Count)
	require.Equal(t, "Malicious", kept.Malice)
}

// A finish that fails after its grouping join (here its activity insert: an actor type the table
// refuses) rolls the join back with the rest: the alert in no case, the case's aggregates and trail
// as before, so its retry decides again.
func TestFinishEnrichment_FailedFinishLeavesNoJoin(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	n := uuid.New().ID()
	bad := fmt.Sprintf("185.%d.%d.3", 100+n%50, n%200)
	groupingVerdict(t, st, bad, "Malicious")
	now := time.Now()
	seed := groupingAlert(t, st, now, bad)
	c := &store.Case{Title: "grouping rollback " + bad}
	require.NoError(t, st.CreateCase(ctx, store.CaseCreate{Case: c, Alerts: []uuid.UUID{seed}, Join: cases.DecideJoin(false, store.Actor{Type: store.ActorSystem}), Actor: store.Actor{Type: store.ActorSystem}}))
	t.Cleanup(func() { _ = st.DeleteCase(context.Background(), c.UUID, store.Actor{Type: store.ActorSystem}) })
	before, err := st.GetCase(ctx, c.UUID)
	require.NoError(t, err)

	a := groupingAlert(t, st, now, bad)
	_, err = cases.Grouping{Window: 24 * time.Hour}.FinishEnrichment(ctx, st, a, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil,
		func(*string, []string) store.ActivityEvent {
			return store.ActivityEvent{EventType: "alert_enriched", ActorType: "bogus"}
		})
	require.Error(t, err)
	require.Equal(t, uuid.Nil, alertCase(t, st, a))
	after, err := st.GetCase(ctx, c.UUID)
	require.NoError(t, err)
	require.Equal(t, before.AlertCount, after.AlertCount)
	require.True(t, before.UpdatedAt.Equal(after.UpdatedAt))
	require.Zero(t, countRows(t, st, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_grouped'", a))
	require.Zero(t, countRows(t, st, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ? AND case_uuid IS NOT NULL", a))
	var status string
	require.NoError(t, st.DB().NewRaw("SELECT enrichment_status FROM alerts WHERE uuid = ?", a).Scan(ctx, &status))
	require.Equal(t, store.EnrichmentPending, status)

	// Its retry groups it.
	require.Equal(t, c.UUID, finishGrouping(t, st, a, "run-"+uuid.NewString(), 24*time.Hour).GroupedInto)
}
