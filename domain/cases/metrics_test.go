package cases_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/store"
)

// caseReader is cmd/vigil's adapter of the store's case figures to the collector's.
type caseReader struct{ st *store.Store }

func (c caseReader) CaseStats(ctx context.Context, from, to time.Time) (metrics.CaseStats, error) {
	s, err := c.st.CaseStats(ctx, from, to)
	return metrics.CaseStats{OpenBySeverity: s.OpenBySeverity, MTTCSeconds: s.MTTCSeconds}, err
}

// Open cases by severity and the mean time to close a case, as the summary and the Prometheus
// gauges report them, follow creates, severity changes and closes.
func TestCaseMetrics(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	svc := service(st)
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	before, err := st.CaseStats(ctx, from, to)
	require.NoError(t, err)

	crit := "Critical"
	a, err := svc.Create(ctx, cases.Create{Title: "metrics a", Severity: &crit}, actor)
	require.NoError(t, err)
	_, err = svc.Create(ctx, cases.Create{Title: "metrics b", AlertUUIDs: []uuid.UUID{newAlert(t, st, "High")}}, actor)
	require.NoError(t, err)
	after, err := st.CaseStats(ctx, from, to)
	require.NoError(t, err)
	require.Equal(t, before.Open+2, after.Open)
	require.Equal(t, before.OpenBySeverity["Critical"]+1, after.OpenBySeverity["Critical"])
	require.Equal(t, before.OpenBySeverity["High"]+1, after.OpenBySeverity["High"])
	require.Len(t, after.OpenBySeverity, 6, "every severity, zeros included")

	inv, closed, cls := store.CaseInvestigating, store.CaseClosed, "Duplicate"
	_, err = svc.Patch(ctx, a.UUID, cases.Patch{Status: &inv}, actor)
	require.NoError(t, err)
	_, err = svc.Patch(ctx, a.UUID, cases.Patch{Status: &closed, CloseClassification: &cls}, actor)
	require.NoError(t, err)
	final, err := st.CaseStats(ctx, from, to)
	require.NoError(t, err)
	require.Equal(t, after.Open-1, final.Open)
	require.Equal(t, before.OpenBySeverity["Critical"], final.OpenBySeverity["Critical"])
	require.Equal(t, before.Closed+1, final.Closed)
	require.NotNil(t, final.MTTCSeconds)
	require.GreaterOrEqual(t, *final.MTTCSeconds, 0.0)

	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCaseCollector(caseReader{st}, time.Second, nil))
	n, err := testutil.GatherAndCount(reg, "vigil_cases_open")
	require.NoError(t, err)
	require.Equal(t, 6, n, "one series per severity")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP vigil_case_stats_up 1 when the last scrape read the case figures from Postgres, 0 when that failed or timed out.
# TYPE vigil_case_stats_up gauge
vigil_case_stats_up 1
`), "vigil_case_stats_up"))
	n, err = testutil.GatherAndCount(reg, "vigil_case_mean_time_to_close_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
