// Package metrics is Vigil's Prometheus instrumentation: one registry per process (passed in,
// never a global), the /metrics handler and its own listener, the API's request counters, the
// scrape-time outbox and approvals gauges, the worker's dispatcher counters, and the Temporal SDK's metrics through tally's
// Prometheus reporter.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where every Vigil process serves its metrics.
const Path = "/metrics"

// NewRegistry returns a registry holding the Go runtime and process collectors; the caller adds
// Vigil's own.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg in the Prometheus text format (or OpenMetrics when the scraper asks for it).
// A collector that fails is reported in the log and leaves its metrics out; the rest is served.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:          slogErrorLog{orDiscard(log)},
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg, // promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	})
}

// Serve answers GET /metrics on ln until ctx ends. It is METRICS_ADDR's listener, apart from the
// public API.
func Serve(ctx context.Context, ln net.Listener, reg *prometheus.Registry, log *slog.Logger) error {
	log = orDiscard(log)
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, Handler(reg, log))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("metrics listening", "addr", ln.Addr().String(), "path", Path)
	select {
	case err := <-done:
		return fmt.Errorf("serve metrics: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("stop metrics server: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}

// slogErrorLog adapts the process logger to promhttp's ErrorLog.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }
