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

	"github.com/vigil-soc/vigil/metrics"
)

// processMetrics is one process's Prometheus registry (under `vigil dev` the api and the worker
// share it), the Temporal SDK handler recording into it, and the METRICS_ADDR listener, if any.
type processMetrics struct {
	reg      *prometheus.Registry
	temporal client.MetricsHandler
	closer   io.Closer
	ln       net.Listener // nil when METRICS_ADDR is empty
}

// newProcessMetrics creates the registry and listens on METRICS_ADDR, so a taken port fails the
// start rather than the first scrape. Close it when the process stops.
func newProcessMetrics(cfg config, log *slog.Logger) (*processMetrics, error) {
	reg := metrics.NewRegistry()
	h, closer, err := metrics.NewTemporalHandler(reg, log)
	if err != nil {
		return nil, err
	}
	m := &processMetrics{reg: reg, temporal: h, closer: closer}
	if cfg.MetricsAddr != "" {
		if m.ln, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			closer.Close()
			return nil, fmt.Errorf("listen on METRICS_ADDR %s: %w", cfg.MetricsAddr, err)
		}
	}
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

// Close flushes and stops the Temporal SDK's tally scope and closes an unused listener.
func (m *processMetrics) Close() {
	m.closer.Close()
	if m.ln != nil {
		m.ln.Close()
	}
}
