package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// AlertsPerDay (the roll-up) agrees with AlertMetrics' per-day series (the alerts themselves), day by
// day, over windows whose ends fall mid-day.
func TestAlertsPerDayMatchesAlertMetrics(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	_, err := st.DB().NewRaw(`
		INSERT INTO alerts (title, severity, source_name, occurred_at, created_at)
		SELECT 'per day ' || g, 'High', 'generic', now() - g * interval '7 hours', now() - g * interval '7 hours'
		FROM generate_series(0, 120) g`).Exec(ctx)
	require.NoError(t, err)
	now := time.Now()
	for _, w := range []store.MetricsWindow{
		{From: now.Add(-30 * 24 * time.Hour), To: now},
		{From: now.Add(-10*24*time.Hour - 5*time.Hour), To: now.Add(-2*24*time.Hour - 3*time.Hour)},
		{From: now.Add(-60 * time.Hour), To: now.Add(-59 * time.Hour)},
	} {
		got, err := st.AlertsPerDay(ctx, w)
		require.NoError(t, err)
		am, err := st.AlertMetrics(ctx, store.AlertMetricsFilter{Window: w})
		require.NoError(t, err)
		total := 0
		for _, b := range got {
			total += b.Count
		}
		require.Equal(t, am.Total, total, "window %s..%s", w.From, w.To)
		if am.Bucket == "day" {
			require.Len(t, got, len(am.AlertsOverTime))
			for i := range got {
				require.Equal(t, am.AlertsOverTime[i].Start.UTC(), got[i].Start, "bucket %d", i)
				require.Equal(t, am.AlertsOverTime[i].Count, got[i].Count, "bucket %d", i)
			}
		}
	}
	_, err = st.AlertsPerDay(ctx, store.MetricsWindow{From: now, To: now.Add(-time.Hour)})
	require.Error(t, err, "an empty window")
}
