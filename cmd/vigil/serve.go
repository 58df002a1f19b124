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
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	ingestrules "github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/retention"
	"github.com/vigil-soc/vigil/kit/indicators"
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
	return runProcess(ctx, cfg, log, processKind{addr: cfg.APIAddr, seed: true}, func(ctx context.Context, d door) error {
		return serveAPI(ctx, cfg, log, d.st, d.box, d.tc, d.fd, d.ln, d.reg)
	})
}

// door is what a process (api, mcp, worker) opens before serving; fd and ln are a front door's.
type door struct {
	st  *store.Store
	box *secretbox.Box
	tc  client.Client
	fd  frontDoor
	ln  net.Listener
	reg prometheus.Registerer
}

// processKind says what a process opens: a front door listens on addr (with a lazy Temporal client:
// it serves while Temporal is down); seed: it seeds the built-ins (api and worker; mcp only reads).
type processKind struct {
	addr string
	seed bool
}

// runProcess opens the store, the secret box, the process metrics (METRICS_ADDR), the Temporal client
// and, for a front door, the listener and the front door, then serves until ctx ends.
func runProcess(ctx context.Context, cfg config, log *slog.Logger, kind processKind, serve func(context.Context, door) error) error {
	st, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	var box *secretbox.Box
	if kind.seed {
		box, err = prepareStore(ctx, cfg, st)
	} else {
		box, err = openSecretBox(cfg)
	}
	if err != nil {
		return err
	}
	pm, err := newProcessMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	tcfg, err := temporalConfig(cfg, pm)
	if err != nil {
		return err
	}
	var tc client.Client
	if kind.addr != "" {
		tc, err = temporal.DialLazy(tcfg, log)
	} else {
		tc, err = temporal.Dial(ctx, tcfg, log)
	}
	if err != nil {
		return err
	}
	defer tc.Close()
	d := door{st: st, box: box, tc: tc, reg: pm.reg}
	if kind.addr != "" {
		if d.ln, err = net.Listen("tcp", kind.addr); err != nil {
			return fmt.Errorf("listen on %s: %w", kind.addr, err)
		}
		d.fd = newFrontDoor(cfg, st, box, tc, log)
	}
	return pm.run(ctx, log, func(ctx context.Context) error { return serve(ctx, d) })
}

// frontDoor is what the doors (REST, the console, MCP) share in one process: the key cache (a
// revocation through the API reaches MCP at once), the rate-limit budget and the health checks.
type frontDoor struct {
	authn   *auth.Authenticator
	limiter ratelimit.Limiter
	limits  ratelimit.Policy // the one budget rule over limiter, with RATE_LIMIT_DEFAULT_PER_MINUTE and TRUSTED_PROXY_COUNT
	health  api.HealthChecks
	svc     services // the domain services every door calls, built once
}

func newFrontDoor(cfg config, st *store.Store, box *secretbox.Box, tc client.Client, log *slog.Logger) frontDoor {
	var limiter ratelimit.Limiter = ratelimit.NewMemory()
	if cfg.RateLimitStore == "postgres" {
		limiter = ratelimit.NewPostgres(st)
	}
	limits := ratelimit.Policy{Limiter: limiter, DefaultPerMinute: cfg.RateLimitPerMinute, TrustedProxies: cfg.TrustedProxyCount, Log: log}
	authn := auth.NewAuthenticator(st, log, 2*time.Second)
	return frontDoor{authn: authn, limiter: limiter, limits: limits, svc: newServices(cfg, st, box, tc, authn, log), health: api.HealthChecks{
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
	reg.MustRegister(metrics.NewCaseCollector(caseStats{st}, metrics.DefaultQueryTimeout, log))
	authn, limiter := fd.authn, fd.limiter
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
		Audit:   st,
		// Detection rules and context documents (API.md §5, §6).
		DetectionRules:   st,
		ContextDocuments: st,
		// Ingestion, sources, alerts, indicators and mappings (API.md §2-§4).
		SourceRegistry: fd.svc.sources, Secrets: box,
		Sources: st, Integrations: st, Alerts: st, Indicators: st, Mappings: st,
		Enrichment: api.EnrichmentDeps{Store: st, Env: cfg.ProviderEnv,
			Enricher: fd.svc.enricher},
		Metrics:   st,
		Telemetry: metrics.NewAPI(reg),
	}
	// The codec endpoint for the Temporal UI (API.md §16), answering TEMPORAL_UI_URL's origin.
	codec, err := payloadCodec(cfg)
	if err != nil {
		return err
	}
	// The endpoint only displays: a plaintext payload in a history (one a client without the codec
	// wrote) is shown as it is.
	apiDeps.PayloadCodec, apiCfg.CodecAllowedOrigin = codec.AllowPlaintext(), urlOrigin(cfg.TemporalUIURL)
	wireWorkflowRunAPI(cfg, st, &apiCfg, &apiDeps)
	apiDeps.Agents, apiDeps.AgentStore = fd.svc.agents, st
	apiDeps.AlertRules, apiDeps.Responses = fd.svc.alerts, fd.svc.responses
	apiDeps.Ingest, apiDeps.APIKeyRules, apiDeps.Config = fd.svc.ingest, fd.svc.apiKeys, fd.svc.config
	apiDeps.Comments, apiDeps.Timeline, apiDeps.Cases = fd.svc.comments, fd.svc.timeline, fd.svc.cases
	apiDeps.Console = newConsole(cfg, st, box, fd, log)
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
		if err := srv.Serve(ln); err != nil {
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
	return runProcess(ctx, cfg, log, processKind{addr: cfg.MCPAddr}, func(ctx context.Context, d door) error {
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error {
			d.fd.authn.Run(gctx, 10*time.Second)
			return nil
		})
		g.Go(func() error { return serveMCP(gctx, cfg, log, d.st, d.fd, d.ln) })
		return ignoreCanceled(g.Wait())
	})
}

// serveMCP runs the MCP server on ln until ctx ends (shared by `mcp` and `dev`). Its write tools call
// the domain services the REST handlers call.
func serveMCP(ctx context.Context, cfg config, log *slog.Logger, st *store.Store, fd frontDoor, ln net.Listener) error {
	srv := mcp.New(mcp.Config{
		Version: cfg.Version, RateLimitPerMinute: cfg.RateLimitPerMinute, TrustedProxyCount: cfg.TrustedProxyCount,
		MaxBodyBytes: int64(cfg.MaxBodyMB) << 20, Listener: mcp.ListenerLimits{MaxConnsPerIP: cfg.MaxConnsPerIP},
		Log: log, Auth: fd.authn, Limiter: fd.limiter, Health: api.HealthHandler(fd.health, cfg.Version, log),
		Alerts: st, AlertActivity: st, AlertContext: st, Documents: st, Indicators: st, DetectionRules: st, Workflows: st,
		AlertService: fd.svc.alerts, Executor: fd.svc.responses, Enricher: fd.svc.enricher,
		Comments: fd.svc.comments, Timeline: fd.svc.timeline, Cases: fd.svc.cases,
		Agents: st, Metrics: st, ProviderEnv: cfg.ProviderEnv,
	})
	log.Info("mcp listening", "addr", ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

// runWorker runs the Temporal workers until ctx ends.
func runWorker(ctx context.Context, cfg config, log *slog.Logger) error {
	return runProcess(ctx, cfg, log, processKind{seed: true}, func(ctx context.Context, d door) error {
		return serveWorker(ctx, cfg, log, d.st, d.box, d.tc, d.reg)
	})
}

// serveWorker registers search attributes and runs every worker; its own metrics go to reg (the
// SDK's go through the client's handler).
func serveWorker(ctx context.Context, cfg config, log *slog.Logger, st *store.Store, box *secretbox.Box, tc client.Client, reg prometheus.Registerer) error {
	if err := temporal.RegisterSearchAttributes(ctx, tc, cfg.TemporalNamespace); err != nil {
		return err
	}
	reg.MustRegister(metrics.NewInFlightCollector(outboxStats{st}, cfg.PipelineMaxFlight, metrics.DefaultQueryTimeout, log))
	wm := metrics.NewWorker(reg)
	acts := &activities.Activities{Log: log, Freshness: wm, CaseGroupingWindow: time.Duration(cfg.CaseGroupingHours) * time.Hour}
	acts.Enrichment = enrichmentDeps(st, box, cfg)
	go purgeEnrichmentCache(ctx, st, log, 10*time.Minute)
	acts.Pipeline = pipelineStore{Store: st, mappings: ingestrules.NewMappingCache(st), exclusions: ingestrules.NewExclusionCache(st)}
	acts.MaxIndicatorsPerAlert = cfg.MaxIndicatorsPerAlert
	wireWorkflowRunActivities(cfg, st, box, acts)
	acts.AgentEvents = &activities.AgentEventDeps{Store: st, Payloads: agents.NewPayloads(st, cfg.PublicBaseURL),
		Deliverer: newAgentService(cfg, st, box)}
	ret, err := retention.New(st, cfg.Retention, retention.Options{Counter: wm})
	if err != nil {
		return err
	}
	acts.Retention = ret
	// The hourly retention pass (docs/OPERATIONS.md "Retention"): every worker ensures the Schedule,
	// which is idempotent, and its runs take this worker's retention settings.
	if err := temporal.EnsureRetentionSchedule(ctx, tc, cfg.TaskQueuePrefix); err != nil {
		return err
	}
	queues := temporal.NewQueues(cfg.TaskQueuePrefix)
	// The outbox dispatcher runs beside the workers: ingested alerts reach their pipeline from here.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return temporal.NewDispatcher(st, tc, queues, log, temporal.DispatcherOptions{MaxInFlight: cfg.PipelineMaxFlight,
			RerunMaxInFlight: cfg.PipelineRerunMax, Pace: true, BusyInFlight: cfg.PipelineBusyFlight, IngestLatencyTarget: time.Duration(cfg.PipelineLatencyMS) * time.Millisecond,
			Metrics: wm}).Run(gctx)
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

// temporalConfig is the client's configuration, with the payload codec (payloadCodec); pm, when
// not nil, receives the SDK's metrics.
func temporalConfig(cfg config, pm *processMetrics) (temporal.Config, error) {
	tc := cfg.Temporal
	tc.HostPort, tc.Namespace, tc.TaskQueuePrefix = cfg.TemporalAddress, cfg.TemporalNamespace, cfg.TaskQueuePrefix
	if pm != nil {
		tc.Metrics = pm.temporal
	}
	codec, err := payloadCodec(cfg)
	if err != nil {
		return temporal.Config{}, err
	}
	tc.Codec = codec
	return tc, nil
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
func newConsole(cfg config, st *store.Store, box *secretbox.Box, fd frontDoor, log *slog.Logger) *console.Console {
	deps := console.Deps{Auth: fd.authn, RateLimit: fd.limits, Store: st, Alerts: fd.svc.alerts, Log: log, MaxBodyBytes: cfg.MaxBodyMB << 20,
		Approvals: fd.svc.responses, Runs: fd.svc.responses, Env: cfg.ProviderEnv,
		Comments: fd.svc.comments, Timeline: fd.svc.timeline,
		Cases: fd.svc.cases, CaseTimeline: fd.svc.timeline,
		Exclusions: fd.svc.config.Exclusions, Mappings: fd.svc.config.Mappings,
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

// caseStats adapts the store's case figures to the metrics collector's.
type caseStats struct{ st *store.Store }

func (c caseStats) CaseStats(ctx context.Context, from, to time.Time) (metrics.CaseStats, error) {
	s, err := c.st.CaseStats(ctx, from, to)
	return metrics.CaseStats{OpenBySeverity: s.OpenBySeverity, MTTCSeconds: s.MTTCSeconds}, err
}

// pipelineStore is the pipeline activities' store with the indicator mappings and the
// never-indicator list read through ingest's caches (once per source and ingest.ConfigTTL, not once
// per alert).
type pipelineStore struct {
	*store.Store
	mappings   *ingestrules.MappingCache
	exclusions *ingestrules.ExclusionCache
}

// Exclusions returns the cached never-indicator list.
func (p pipelineStore) Exclusions(ctx context.Context) (*indicators.Exclusions, error) {
	return p.exclusions.Exclusions(ctx)
}

// ActiveMappings returns the cached active mappings of sourceName.
func (p pipelineStore) ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error) {
	return p.mappings.ActiveMappings(ctx, sourceName)
}
