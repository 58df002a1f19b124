package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CaseStats are the case figures a scrape reports (store.CaseStats, API.md §14).
type CaseStats struct {
	OpenBySeverity map[string]int // cases not Closed now, per severity
	MTTCSeconds    *float64       // mean creation-to-close of the cases closed in the window; nil when none
}

// CaseReader reads the case figures over [from, to).
type CaseReader interface {
	CaseStats(ctx context.Context, from, to time.Time) (CaseStats, error)
}

// CaseCloseWindow is the window of the mean time to close a case the gauge reports.
const CaseCloseWindow = 30 * 24 * time.Hour

// caseCollector reports the open cases by severity and the mean time to close a case, read from
// Postgres at every scrape (bounded by timeout); every API replica reports the same numbers.
type caseCollector struct {
	cases   CaseReader
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time

	open, mttc, up *prometheus.Desc
}

// NewCaseCollector returns the API process's scrape-time collector of cases.
func NewCaseCollector(cases CaseReader, timeout time.Duration, log *slog.Logger) prometheus.Collector {
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	return &caseCollector{cases: cases, timeout: timeout, log: orDiscard(log), now: time.Now,
		open: prometheus.NewDesc("vigil_cases_open",
			"Cases not Closed, by the case's severity (set by hand, else the worst of its alerts).", []string{"severity"}, nil),
		mttc: prometheus.NewDesc("vigil_case_mean_time_to_close_seconds",
			"Mean time from a case's creation to its latest close, over the cases closed in the last 30 days; absent when none.", nil, nil),
		up: prometheus.NewDesc("vigil_case_stats_up",
			"1 when the last scrape read the case figures from Postgres, 0 when that failed or timed out.", nil, nil),
	}
}

func (c *caseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.mttc
	ch <- c.up
}

func (c *caseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	now := c.now()
	st, err := c.cases.CaseStats(ctx, now.Add(-CaseCloseWindow), now)
	if err != nil {
		c.log.Warn("metrics: read case stats", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	for sev, n := range st.OpenBySeverity {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(n), sev)
	}
	if st.MTTCSeconds != nil {
		ch <- prometheus.MustNewConstMetric(c.mttc, prometheus.GaugeValue, *st.MTTCSeconds)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}
