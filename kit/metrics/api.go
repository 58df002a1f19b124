package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets (seconds) resolve the ingest promise (an ack under 200 ms) and the slow tail.
func latencyBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10}
}

// API counts what the REST API does; it satisfies api.Metrics.
type API struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
	ingestAcks  *prometheus.CounterVec
	unmapped    *prometheus.CounterVec
}

// NewAPI registers the API's metrics on reg.
func NewAPI(reg prometheus.Registerer) *API {
	m := &API{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_http_requests_total",
			Help: "HTTP requests answered, by method, route template (unmatched for unknown routes) and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_http_request_duration_seconds",
			Help:    "Time from the request read to the response written, by method and route template.",
			Buckets: latencyBuckets(),
		}, []string{"method", "route"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_http_rate_limited_total",
			Help: "Requests refused with 429 by the rate limiter, by bucket kind (key or ip).",
		}, []string{"bucket"}),
		ingestAcks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_ingest_acks_total",
			Help: "Alerts acknowledged with 202 (committed with their outbox row), by source and outcome (queued or deduplicated).",
		}, []string{"source", "outcome"}),
		unmapped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_ingest_severity_unmapped_total",
			Help: "Alerts ingested with a severity value no mapping knows (stored as Pending, the value kept in normalized.source_severity), by source.",
		}, []string{"source"}),
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.ingestAcks, m.unmapped)
	return m
}

// ObserveRequest counts one answered request. route is the matched route template, never the raw path.
func (m *API) ObserveRequest(method, route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// RateLimited counts one 429; bucket is "key" or "ip".
func (m *API) RateLimited(bucket string) { m.rateLimited.WithLabelValues(bucket).Inc() }

// IngestAcked counts one 202 of an ingest route.
func (m *API) IngestAcked(source string, duplicate bool) {
	outcome := "queued"
	if duplicate {
		outcome = "deduplicated"
	}
	m.ingestAcks.WithLabelValues(source, outcome).Inc()
}

// SeverityUnmapped counts one ingested alert whose severity value no mapping knows.
func (m *API) SeverityUnmapped(source string) { m.unmapped.WithLabelValues(source).Inc() }
