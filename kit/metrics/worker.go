package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// freshnessBuckets (seconds) resolve the freshness targets (an alert Enriched within 2–3 s of its
// 202, an agent told within 3 s) and the minutes a backlog or an outage can add.
func freshnessBuckets() []float64 {
	return []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300, 600, 1800}
}

// Worker counts what the worker process's outbox dispatcher and activities see; it satisfies
// temporal.DispatcherMetrics and activities.Freshness.
type Worker struct {
	staleStarts    prometheus.Counter
	enrichmentLag  prometheus.Histogram
	agentDelivered prometheus.Histogram
	retention      *prometheus.CounterVec
}

// NewWorker registers the worker's metrics on reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	m := &Worker{
		staleStarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_outbox_stale_starts_total",
			Help: "Outbox entries the recheck found still marked started after their pipeline had ended (deleted then): places held in flight for work that was over.",
		}),
		enrichmentLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_alert_enrichment_lag_seconds",
			Help:    "Time from an alert's 202 (ingested_at) to the finish of its first pipeline (Enriched or Failed).",
			Buckets: freshnessBuckets(),
		}),
		agentDelivered: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_agent_delivery_lag_seconds",
			Help:    "Time from an agent event raised (committed) to its delivery acknowledged by the agent, retries included.",
			Buckets: freshnessBuckets(),
		}),
		retention: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_retention_purged_rows_total",
			Help: "Rows the retention pass purged, by kind: raw_payloads (alerts whose raw payload was cleared), alerts, each table deleted with them (alert_indicators, activity_events, ...), indicators, audit_events.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.staleStarts, m.enrichmentLag, m.agentDelivered, m.retention)
	return m
}

// StaleStarts counts n outbox entries found held after their work ended.
func (m *Worker) StaleStarts(n int) { m.staleStarts.Add(float64(n)) }

// AlertEnriched observes an alert's 202 → first pipeline finished.
func (m *Worker) AlertEnriched(lag time.Duration) { m.enrichmentLag.Observe(max(0, lag.Seconds())) }

// AgentEventDelivered observes an agent event raised → delivered.
func (m *Worker) AgentEventDelivered(lag time.Duration) {
	m.agentDelivered.Observe(max(0, lag.Seconds()))
}

// RetentionPurged counts n rows of kind purged by a committed retention batch.
func (m *Worker) RetentionPurged(kind string, n int64) {
	m.retention.WithLabelValues(kind).Add(float64(n))
}
