package temporal

import (
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// tallyFlush is how often tally hands buffered SDK metrics to the Prometheus reporter.
const tallyFlush = time.Second

// NewMetricsHandler returns a Temporal SDK metrics handler that records into reg through tally's
// Prometheus reporter (the SDK's supported route: go.temporal.io/sdk/contrib/tally), with timers as
// histograms so replicas aggregate: temporal_workflow_task_execution_latency_seconds,
// temporal_activity_execution_latency_seconds, temporal_workflow_task_schedule_to_start_latency_seconds,
// temporal_activity_schedule_to_start_latency_seconds, temporal_request_*, and so on. Close the
// returned closer when the process stops. A metric the registry refuses (a name clash) is logged,
// never fatal.
func NewMetricsHandler(reg *prometheus.Registry, log *slog.Logger) (client.MetricsHandler, io.Closer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		Gatherer:         reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  func(err error) { log.Warn("metrics: register temporal sdk metric", "err", err) },
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, tallyFlush)
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), closer, nil
}
