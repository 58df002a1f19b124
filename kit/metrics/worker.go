package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Worker counts what the worker process's outbox dispatcher sees; it satisfies
// temporal.DispatcherMetrics.
type Worker struct {
	staleStarts prometheus.Counter
}

// NewWorker registers the worker's metrics on reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	m := &Worker{
		staleStarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_outbox_stale_starts_total",
			Help: "Outbox entries the recheck found still marked started after their pipeline had ended (deleted then): places held in flight for work that was over.",
		}),
	}
	reg.MustRegister(m.staleStarts)
	return m
}

// StaleStarts counts n outbox entries found held after their work ended.
func (m *Worker) StaleStarts(n int) { m.staleStarts.Add(float64(n)) }
