package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// OutboxStats is the outbox at one moment, as the collectors report it.
type OutboxStats struct {
	Depth   int       // entries whose work has not finished, started or not
	Started int       // entries started and not yet finished: pipelines in flight
	Oldest  time.Time // created_at of the oldest entry; zero when the outbox is empty
}

// OutboxReader is what the outbox collectors read at scrape time.
type OutboxReader interface {
	OutboxStats(ctx context.Context) (OutboxStats, error)
}

// ApprovalReader counts the approval requests waiting for a decision.
type ApprovalReader interface {
	PendingApprovals(ctx context.Context) (int, error)
}

// DefaultQueryTimeout bounds the database reads of one scrape.
const DefaultQueryTimeout = 2 * time.Second

// queueCollector reports the outbox depth, the age of its oldest entry and the approvals waiting,
// read from Postgres at every scrape (bounded by timeout): every API replica reports the same
// numbers, so dashboards take max() over instances.
type queueCollector struct {
	outbox    OutboxReader
	approvals ApprovalReader
	timeout   time.Duration
	log       *slog.Logger
	now       func() time.Time

	depth, oldestAge, approvalsWaiting, up *prometheus.Desc
}

// NewQueueCollector returns the API process's scrape-time collector of the outbox and approvals.
func NewQueueCollector(outbox OutboxReader, approvals ApprovalReader, timeout time.Duration, log *slog.Logger) prometheus.Collector {
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	return &queueCollector{
		outbox: outbox, approvals: approvals, timeout: timeout, log: orDiscard(log), now: time.Now,
		depth: prometheus.NewDesc("vigil_outbox_depth",
			"Outbox entries whose durable work has not finished (waiting or started), over every replica.", nil, nil),
		oldestAge: prometheus.NewDesc("vigil_outbox_oldest_age_seconds",
			"Age of the oldest outbox entry; 0 when the outbox is empty.", nil, nil),
		approvalsWaiting: prometheus.NewDesc("vigil_approvals_waiting",
			"Workflow approval requests pending a decision and not yet expired.", nil, nil),
		up: prometheus.NewDesc("vigil_queue_stats_up",
			"1 when the last scrape read the outbox and approval counts from Postgres, 0 when that failed or timed out.", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldestAge
	ch <- c.approvalsWaiting
	ch <- c.up
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.outbox.OutboxStats(ctx)
	var waiting int
	if err == nil {
		waiting, err = c.approvals.PendingApprovals(ctx)
	}
	if err != nil {
		c.log.Warn("metrics: read queue stats", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if !st.Oldest.IsZero() {
		age = max(0, c.now().Sub(st.Oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(st.Depth))
	ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(c.approvalsWaiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

// inFlightCollector reports the pipelines started and not yet finished (the number
// PIPELINE_MAX_IN_FLIGHT caps) and that cap, read at scrape time.
type inFlightCollector struct {
	outbox      OutboxReader
	maxInFlight int
	timeout     time.Duration
	log         *slog.Logger

	inFlight, limit, up *prometheus.Desc
}

// NewInFlightCollector returns the worker process's scrape-time collector of pipelines in flight.
func NewInFlightCollector(outbox OutboxReader, maxInFlight int, timeout time.Duration, log *slog.Logger) prometheus.Collector {
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	return &inFlightCollector{
		outbox: outbox, maxInFlight: maxInFlight, timeout: timeout, log: orDiscard(log),
		inFlight: prometheus.NewDesc("vigil_pipelines_in_flight",
			"Alert pipelines started by the outbox dispatchers and not yet finished, over every worker.", nil, nil),
		limit: prometheus.NewDesc("vigil_pipelines_max_in_flight",
			"PIPELINE_MAX_IN_FLIGHT of this worker: past it new alerts wait in the outbox.", nil, nil),
		up: prometheus.NewDesc("vigil_pipelines_in_flight_up",
			"1 when the last scrape read the pipelines in flight from Postgres, 0 when that failed or timed out.", nil, nil),
	}
}

func (c *inFlightCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inFlight
	ch <- c.limit
	ch <- c.up
}

func (c *inFlightCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(c.maxInFlight))
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.outbox.OutboxStats(ctx)
	if err != nil {
		c.log.Warn("metrics: read pipelines in flight", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.Started))
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
