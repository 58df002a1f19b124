package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/api"
	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/mcp"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// runAPI serves the REST API until ctx ends.
func runAPI(ctx context.Context, cfg config, log *slog.Logger) error {
	st, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	box, err := prepareStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	pm, err := newProcessMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	tc, err := temporal.DialLazy(temporalConfig(cfg, pm), log)
	if err != nil {
		return err
	}
	defer tc.Close()
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.APIAddr, err)
	}
	fd := newFrontDoor(cfg, st, tc, log)
	return pm.run(ctx, log, func(ctx context.Context) error { return serveAPI(ctx, cfg, log, st, box, tc, fd, ln, pm.reg) })
}

// frontDoor is what the API and the MCP server share in one process: the key cache (a revocation
// through the API reaches MCP at once), the rate-limit budget and the health checks.
type frontDoor struct {
	authn   *auth.Authenticator
	limiter api.RateLimiter
	health  api.HealthChecks
}

func newFrontDoor(cfg config, st *store.Store, tc client.Client, log *slog.Logger) frontDoor {
	var limiter api.RateLimiter = ratelimit.NewMemory()
	if cfg.RateLimitStore == "postgres" {
		limiter = ratelimit.NewPostgres(st)
	}
	return frontDoor{authn: auth.NewAuthenticator(st, log, 2*time.Second), limiter: limiter, health: api.HealthChecks{
		Database: st.Ping,
		Temporal: func(ctx context.Context) error { return temporal.Check(ctx, tc) },
		Providers: func(ctx context.Context) (map[string]string, error) {
			return st.ProviderHealth(ctx, cfg.ProviderEnv)
		},
	}}
}

// serveAPI runs the API on ln until ctx ends (shared by `api` and `dev`); it also runs fd's key-usage
// writer. Its metrics go to reg.
func serveAPI(ctx context.Context, cfg config, log *slog.Logger, st *store.Store, box *secretbox.Box, tc client.Client, fd frontDoor, ln net.Listener, reg prometheus.Registerer) error {
	reg.MustRegister(metrics.NewQueueCollector(outboxStats{st}, st, metrics.DefaultQueryTimeout, log))
	authn, limiter := fd.authn, fd.limiter
	apiActs := &activities.Activities{Log: log, Enrichment: enrichmentDeps(st, box, cfg)}
	apiCfg, apiDeps := api.Config{
		Version:            cfg.Version,
		MaxRequestBodyMB:   cfg.MaxBodyMB,
		RateLimitPerMinute: cfg.RateLimitPerMinute,
		TrustedProxyCount:  cfg.TrustedProxyCount,
		MaxConnsPerIP:      cfg.MaxConnsPerIP,
		PublicBaseURL:      cfg.PublicBaseURL,
		AlertDedupWindow:   time.Duration(cfg.AlertDedupHours) * time.Hour,
	}, api.Deps{
		Log:     log,
		Auth:    authn,
		Limiter: limiter,
		Health:  fd.health,
		APIKeys: st,
		// Detection rules and context documents (API.md §5, §6).
		DetectionRules:   st,
		ContextDocuments: st,
		// Ingestion, sources, alerts, indicators and mappings (API.md §2-§4).
		SourceRegistry: sources.NewRegistry(), Secrets: box,
		Sources: st, Integrations: st, Ingest: st, Alerts: st, Indicators: st, Mappings: st,
		Enrichment: api.EnrichmentDeps{Store: st, Sealer: box, Env: cfg.ProviderEnv,
			Enricher: temporal.NewEnricher(tc, temporal.NewQueues(cfg.TaskQueuePrefix), apiActs)},
		Metrics:   st,
		Telemetry: metrics.NewAPI(reg),
	}
	wireWorkflowRunAPI(cfg, st, tc, &apiCfg, &apiDeps)
	apiDeps.Agents, apiDeps.AgentStore = newAgentService(cfg, st, box), st
	apiDeps.Console = newConsole(cfg, st, box, authn, tc, log)
	srv := api.New(apiCfg, apiDeps)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		authn.Run(gctx, 10*time.Second)
		return nil
	})
	g.Go(func() error {
		// Starts that set search attributes need them registered; do not wait for a worker to do it.
		registerSearchAttributesWhenReachable(gctx, tc, cfg.TemporalNamespace, log)
		return nil
	})
	g.Go(func() error {
		log.Info("api listening", "addr", ln.Addr().String())
		if err := srv.App().Listener(ln); err != nil {
			return fmt.Errorf("serve api: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 10*time.Second)
		defer cancel()
		return srv.App().ShutdownWithContext(shutdownCtx)
	})
	return ignoreCanceled(g.Wait())
}

// runMCP serves the MCP server until ctx ends, and its process metrics (Go runtime, the Temporal
// client) on METRICS_ADDR when set.
func runMCP(ctx context.Context, cfg config, log *slog.Logger) error {
	st, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	box, err := openSecretBox(cfg)
	if err != nil {
		return err
	}
	pm, err := newProcessMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	tc, err := temporal.DialLazy(temporalConfig(cfg, pm), log)
	if err != nil {
		return err
	}
	defer tc.Close()
	ln, err := net.Listen("tcp", cfg.MCPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.MCPAddr, err)
	}
	fd := newFrontDoor(cfg, st, tc, log)
	return pm.run(ctx, log, func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error {
			fd.authn.Run(gctx, 10*time.Second)
			return nil
		})
		g.Go(func() error { return serveMCP(gctx, cfg, log, st, box, tc, fd, ln) })
		return ignoreCanceled(g.Wait())
	})
}

// serveMCP runs the MCP server on ln until ctx ends (shared by `mcp` and `dev`). Its write tools call
// the domain services the REST handlers call.
func serveMCP(ctx context.Context, cfg config, log *slog.Logger, st *store.Store, box *secretbox.Box, tc client.Client, fd frontDoor, ln net.Listener) error {
	acts := &activities.Activities{Log: log, Enrichment: enrichmentDeps(st, box, cfg)}
	srv := mcp.New(mcp.Config{
		Version: cfg.Version, RateLimitPerMinute: cfg.RateLimitPerMinute, MaxBodyBytes: int64(cfg.MaxBodyMB) << 20,
		Log: log, Auth: fd.authn, Limiter: fd.limiter, Health: api.HealthHandler(fd.health, cfg.Version, log),
		Alerts: st, AlertActivity: st, AlertContext: st, Documents: st, Indicators: st, DetectionRules: st, Workflows: st,
		AlertService: alerts.New(st, log), Executor: responses.New(responses.Deps{Store: st, Log: log}),
		Enricher: temporal.NewEnricher(tc, temporal.NewQueues(cfg.TaskQueuePrefix), acts),
		Agents:   st, Metrics: st, ProviderEnv: cfg.ProviderEnv,
	})
	log.Info("mcp listening", "addr", ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

// runWorker runs the Temporal workers until ctx ends.
func runWorker(ctx context.Context, cfg config, log *slog.Logger) error {
	st, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	box, err := prepareStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	pm, err := newProcessMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	tc, err := temporal.Dial(ctx, temporalConfig(cfg, pm), log)
	if err != nil {
		return err
	}
	defer tc.Close()
	return pm.run(ctx, log, func(ctx context.Context) error { return serveWorker(ctx, cfg, log, st, box, tc, pm.reg) })
}

// serveWorker registers search attributes and runs every worker; its own metrics go to reg (the
// SDK's go through the client's handler).
func serveWorker(ctx context.Context, cfg config, log *slog.Logger, st *store.Store, box *secretbox.Box, tc client.Client, reg prometheus.Registerer) error {
	if err := temporal.RegisterSearchAttributes(ctx, tc, cfg.TemporalNamespace); err != nil {
		return err
	}
	reg.MustRegister(metrics.NewInFlightCollector(outboxStats{st}, cfg.PipelineMaxFlight, metrics.DefaultQueryTimeout, log))
	acts := &activities.Activities{Log: log}
	acts.Enrichment = enrichmentDeps(st, box, cfg)
	go purgeEnrichmentCache(ctx, st, log, 10*time.Minute)
	acts.Pipeline = st
	wireWorkflowRunActivities(cfg, st, box, acts)
	acts.AgentEvents = &activities.AgentEventDeps{Store: st, Payloads: agents.NewPayloads(st, cfg.PublicBaseURL),
		Deliverer: newAgentService(cfg, st, box)}
	queues := temporal.NewQueues(cfg.TaskQueuePrefix)
	// The outbox dispatcher runs beside the workers: ingested alerts reach their pipeline from here.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return temporal.NewDispatcher(st, tc, queues, log, temporal.DispatcherOptions{MaxInFlight: cfg.PipelineMaxFlight,
			Pace: true, BusyInFlight: cfg.PipelineBusyFlight}).Run(gctx)
	})
	g.Go(func() error { return temporal.RunWorkersTuned(gctx, tc, queues, acts, log, cfg.WorkerTuning) })
	// Alerts a provider outage left un-enriched are re-run once the provider answers again.
	g.Go(func() error {
		return temporal.NewCircuitHealer(st, tc, queues, log, temporal.CircuitHealerOptions{}).Run(gctx)
	})
	return ignoreCanceled(g.Wait())
}

// prepareStore opens the secret box and seeds the builtin rows (package builtins: providers, sources
// and system mappings, system workflows; the Okta secrets' tenant host). Idempotent; each process does it once at start, before
// serving. It is the only place outside tests that seeds.
func prepareStore(ctx context.Context, cfg config, st *store.Store) (*secretbox.Box, error) {
	box, err := openSecretBox(cfg)
	if err != nil {
		return nil, err
	}
	if err := builtins.Seed(ctx, st, sources.NewRegistry()); err != nil {
		return nil, err
	}
	// The Okta workflow secrets go only to the tenant's own host (OKTA_DOMAIN, the Okta provider's
	// variable), unless an admin set their hosts.
	if cfg.ProviderEnv != nil {
		if err := builtins.BindOktaSecrets(ctx, st, cfg.ProviderEnv("OKTA_DOMAIN")); err != nil {
			return nil, err
		}
	}
	return box, nil
}

// temporalConfig is the client's configuration; pm, when not nil, receives the SDK's metrics.
func temporalConfig(cfg config, pm *processMetrics) temporal.Config {
	tc := cfg.Temporal
	tc.HostPort, tc.Namespace, tc.TaskQueuePrefix = cfg.TemporalAddress, cfg.TemporalNamespace, cfg.TaskQueuePrefix
	if pm != nil {
		tc.Metrics = pm.temporal
	}
	return tc
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// registerSearchAttributesWhenReachable registers Vigil's search attributes, retrying while Temporal
// is unreachable, until it succeeds or ctx ends.
func registerSearchAttributesWhenReachable(ctx context.Context, tc client.Client, namespace string, log *slog.Logger) {
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := temporal.RegisterSearchAttributes(attemptCtx, tc, namespace)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("register search attributes; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// newConsole wires the analyst console over the same rules as the API (alerts, responses).
func newConsole(cfg config, st *store.Store, box *secretbox.Box, authn *auth.Authenticator, tc client.Client, log *slog.Logger) *console.Console {
	rs := responses.New(responses.Deps{Store: st, Signaler: temporal.NewRunSignaler(tc), Log: log})
	deps := console.Deps{Auth: authn, Store: st, Alerts: alerts.New(st, log), Log: log, Approvals: rs, Runs: rs, Env: cfg.ProviderEnv,
		Temporal: console.TemporalUI{BaseURL: cfg.TemporalUIURL, Namespace: cfg.TemporalNamespace}}
	if box != nil { // a nil *Box in the interface would not read as "no key"
		deps.Box = box
	}
	return console.New(deps)
}

// outboxStats reads the outbox for the metrics collectors (the kit imports no store).
type outboxStats struct{ st *store.Store }

func (o outboxStats) OutboxStats(ctx context.Context) (metrics.OutboxStats, error) {
	s, err := o.st.OutboxStats(ctx)
	return metrics.OutboxStats(s), err
}
