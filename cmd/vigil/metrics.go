package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/temporal"
)

// processMetrics is one process's Prometheus registry (under `vigil dev` the api and the worker
// share it), the Temporal SDK handler recording into it, and the METRICS_ADDR listener, if any.
type processMetrics struct {
	reg      *prometheus.Registry
	temporal client.MetricsHandler // nil when METRICS_ADDR is empty
	closer   io.Closer             // of the tally scope; nil with temporal
	ln       net.Listener          // nil when METRICS_ADDR is empty
}

// newProcessMetrics creates the registry and listens on METRICS_ADDR, so a taken port fails the
// start rather than the first scrape. Close it when the process stops.
// Without METRICS_ADDR nobody reads the registry: the SDK then gets no handler (it records nothing).
func newProcessMetrics(cfg config, log *slog.Logger) (*processMetrics, error) {
	m := &processMetrics{reg: metrics.NewRegistry()}
	if cfg.MetricsAddr == "" {
		return m, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on METRICS_ADDR %s: %w", cfg.MetricsAddr, err)
	}
	if m.temporal, m.closer, err = temporal.NewMetricsHandler(m.reg, log); err != nil {
		ln.Close()
		return nil, err
	}
	m.ln = ln
	return m, nil
}

// run runs serve and, when METRICS_ADDR is set, the metrics server beside it, until ctx ends or
// either fails.
func (m *processMetrics) run(ctx context.Context, log *slog.Logger, serve func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	if m.ln != nil {
		g.Go(func() error { return metrics.Serve(gctx, m.ln, m.reg, log) })
	}
	g.Go(func() error { return serve(gctx) })
	return ignoreCanceled(g.Wait())
}

// Close stops the Temporal SDK's tally scope and closes the listener if it is still open.
func (m *processMetrics) Close() {
	if m.closer != nil {
		m.closer.Close()
	}
	if m.ln != nil {
		m.ln.Close()
	}
}
