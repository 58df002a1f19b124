// Package api is Vigil's REST API: a Fiber app with request ids, security headers, body and rate
// limits, bearer-key auth with scopes, one error funnel, and one file per resource group.
package api

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/conncap"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
)

// Config holds the API's settings.
type Config struct {
	Version            string // info.version of the OpenAPI document and /health
	MaxRequestBodyMB   int    // MAX_REQUEST_BODY_SIZE_MB, default 10
	RateLimitPerMinute int    // RATE_LIMIT_DEFAULT_PER_MINUTE, default 60
	TrustedProxyCount  int    // TRUSTED_PROXY_COUNT
	RequestTimeout     time.Duration
	PublicBaseURL      string        // base URL used in links sent to people (decide pages), e.g. http://127.0.0.1:8000
	AlertDedupWindow   time.Duration // ALERT_DEDUP_WINDOW_HOURS; 0 disables dedup
	SlackSigningSecret string        // SLACK_SIGNING_SECRET: verifies POST /v1/approvals/callback/slack
	MaxConnsPerIP      int           // MAX_CONNS_PER_IP: concurrent connections one client IP may hold (0: no cap)
	CodecAllowedOrigin string        // the Temporal UI's origin (from TEMPORAL_UI_URL): the one origin /codec answers with CORS; "" answers none
	// ReadHeaderTimeout bounds what a client sends before it is authenticated: a request's headers and
	// the part of its body fasthttp reads with them (at most 8 KB). Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the rest of the body, which starts after authentication. Default 60 s.
	ReadTimeout time.Duration
}

// prefetchedBody is how much of a body fasthttp reads with the headers, before any handler runs
// (readBodyWithStreaming): a body of a declared length up to it is already read when a request is
// refused.
const prefetchedBody = 8 << 10

// Deps are the API's collaborators. Each resource file declares the small interface it needs.
type Deps struct {
	Log     *slog.Logger
	Auth    Authenticator
	Limiter RateLimiter
	Health  HealthChecks
	APIKeys APIKeyStore // reads; changes go through APIKeyRules
	Audit   AuditStore  // the audit trail

	DetectionRules   DetectionRuleStore
	ContextDocuments ContextDocumentStore

	SourceRegistry *sources.Registry // the source plugins
	Secrets        *secretbox.Box    // seals workflow secrets (ENCRYPTION_KEY)
	Sources        SourceStore
	Integrations   SourceIntegrationStore
	Alerts         AlertStore
	Indicators     IndicatorStore
	Mappings       IndicatorMappingStore

	Enrichment EnrichmentDeps // providers, field extractions, on-demand enrichment

	Workflows WorkflowStore // workflows, versions, runs, approvals, workflow secrets

	Metrics    MetricsStore // alert, workflow and summary metrics
	Agents     AgentService // agent registrations and test deliveries (agents.Service)
	AgentStore AgentStore

	Telemetry Telemetry // request, 429 and ingest-ack counters for /metrics (metrics.API); nil counts nothing

	Console Mounter // the analyst console at /console (console.Console); nil serves none
	// PayloadCodec is the Temporal payload codec (temporal/payloadcodec) behind POST /codec/decode and
	// /codec/encode (API.md §16); nil serves neither.
	PayloadCodec PayloadCodec

	// The domain services, built once in cmd/vigil and shared with MCP, the console and the activities.
	Ingest      *ingest.Service    // ingestion, with the integrations and mappings it caches
	APIKeyRules *apikeys.Service   // API-key changes
	Config      config.Owners      // the owners of the other configuration changes
	AlertRules  *alerts.Service    // alert PATCH, findings, adding indicators, indicator malice
	Responses   *responses.Service // the rules of response workflows: execute, dry runs, decisions, cancellation
	Comments    CommentService     // comments on alerts (comments.Service); nil serves no comment routes
	Timeline    TimelineService    // an alert's one timeline (timeline.Service); nil with Comments
	Cases       CaseService        // cases (cases.Service, API.md §14); nil serves no case routes
}

// Mounter adds routes of its own to the app (the console, with its own sign-in).
type Mounter interface {
	Register(r fiber.Router)
}

// Authenticator resolves a bearer token to a principal.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
	Invalidate(keyUUID uuid.UUID)
}

// Server is the API: the Fiber app plus the route table the OpenAPI document is built from.
type Server struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	app    *fiber.App
	routes []route
	apiDoc docCache
	// routePaths are the registered route templates: the metrics label a request by one of them.
	routePaths map[string]bool
	limits     ratelimit.Policy // the doors' one request-budget rule, over Deps.Limiter

	ingest     *ingest.Service    // ingestion, with the integrations and mappings it caches
	alertRules *alerts.Service    // alert PATCH, findings, adding indicators, indicator malice
	responses  *responses.Service // the rules of response workflows: execute, dry runs, decisions
	apiKeys    *apikeys.Service   // API-key changes
	config     config.Owners      // the owners of the other configuration changes
}

// New builds the Fiber app with every route registered.
func New(cfg Config, deps Deps) *Server {
	if cfg.MaxRequestBodyMB <= 0 {
		cfg.MaxRequestBodyMB = 10
	}
	if cfg.RateLimitPerMinute <= 0 {
		cfg.RateLimitPerMinute = 60
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, deps: deps, log: deps.Log, limits: ratelimit.Policy{Limiter: deps.Limiter,
		DefaultPerMinute: cfg.RateLimitPerMinute, TrustedProxies: cfg.TrustedProxyCount, Log: deps.Log}}
	s.responses, s.alertRules, s.ingest, s.apiKeys, s.config = deps.Responses, deps.AlertRules, deps.Ingest, deps.APIKeyRules, deps.Config
	if s.deps.SourceRegistry == nil {
		s.deps.SourceRegistry = sources.NewRegistry()
	}
	s.app = fiber.New(fiber.Config{
		AppName: "vigil",
		// Every body is streamed: fasthttp hands the request over after the headers (and at most 8 KiB
		// of body), and readBody reads the rest only after authentication, bounded by the limit on the
		// bytes actually read (chunked included). A caller without a valid key cannot make the API
		// buffer or read anything more: its refused body is left unread and the connection closed
		// (finishUnreadBody); a declared Content-Length over the limit is refused before a byte is read.
		// fasthttp's read deadline of a request is ReadHeaderTimeout: it covers what a client sends
		// before it is authenticated (headers, prefetched body); readBody gives the rest ReadTimeout.
		StreamRequestBody:     true,
		BodyLimit:             cfg.MaxRequestBodyMB << 20,
		ErrorHandler:          errorHandler(deps.Log, cfg.MaxRequestBodyMB),
		DisableStartupMessage: true,
		Immutable:             true,
		ReadTimeout:           cfg.ReadHeaderTimeout,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		ReadBufferSize:        16 << 10,
		// Multipart bodies are parsed by the routes that take them (bounded, after auth), not eagerly.
		DisablePreParseMultipartForm: true,
		// Errors from fasthttp (body too large, bad requests) go through the same funnel.
	})
	if s.deps.Telemetry == nil {
		s.deps.Telemetry = noTelemetry{}
	}
	s.app.Use(s.observe) // first: it sees every answer, errors included
	s.app.Use(s.requestContext)
	s.registerRoutes()
	if deps.Console != nil {
		deps.Console.Register(s.app)
	}
	s.routePaths = make(map[string]bool, len(s.routes))
	for _, r := range s.routes {
		s.routePaths[r.Path] = true
	}
	s.app.Use(s.notFound) // last: unknown routes and wrong methods
	return s
}

// App returns the Fiber app (for Listen and app.Test).
func (s *Server) App() *fiber.App { return s.app }

// Serve answers on ln until the app shuts down, one client IP holding at most MaxConnsPerIP
// connections (kit/conncap: capped at the listener, not by fasthttp's own per-IP counter).
func (s *Server) Serve(ln net.Listener) error {
	return s.app.Listener(conncap.Wrap(ln, s.cfg.MaxConnsPerIP))
}

// registerRoutes is the whole API surface in one place.
func (s *Server) registerRoutes() {
	s.metaRoutes()
	s.apiKeyRoutes()
	s.detectionRuleRoutes()
	s.contextDocumentRoutes()
	s.sourceRoutes()
	s.sourceIntegrationRoutes()
	s.ingestRoutes()
	s.alertRoutes()
	s.commentRoutes()
	s.caseRoutes()
	s.indicatorRoutes()
	s.indicatorMappingRoutes()
	s.enrichmentRoutes()
	s.workflowRoutes()
	s.metricsRoutes()
	s.agentRoutes()
	s.auditRoutes()
	s.codecRoutes()
}

// route describes one operation: its handler chain and its OpenAPI description.
type route struct {
	Method      string
	Path        string // Fiber syntax: /v1/api-keys/:uuid
	Summary     string
	Description string
	Tag         string
	Scopes      []string // required scopes (all of them); empty with Public
	Public      bool     // no bearer key
	NoRateLimit bool
	Query       any // zero value of the query struct
	Body        any // zero value of the body struct
	Response    any // zero value of the data type; nil for 204
	List        bool
	Status      int // success status, default 200
	ContentType string
	Errors      []int // extra documented error statuses
}

// add registers r with its middleware chain.
func (s *Server) add(r route, h fiber.Handler) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	s.routes = append(s.routes, r)
	chain := []fiber.Handler{}
	if !r.NoRateLimit {
		chain = append(chain, s.rateLimit)
	}
	if !r.Public {
		chain = append(chain, s.authenticate(r.Scopes))
	}
	chain = append(chain, s.readBody)
	chain = append(chain, h)
	s.app.Add(r.Method, r.Path, chain...)
}

// notFound answers 405 with Allow when the path exists under other methods, else 404.
func (s *Server) notFound(c *fiber.Ctx) error {
	var allow []string
	for _, r := range s.routes {
		if pathMatches(r.Path, c.Path()) && !containsString(allow, r.Method) {
			allow = append(allow, r.Method)
		}
	}
	if len(allow) > 0 {
		e := NewError(http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method "+c.Method()+" is not allowed on this route.")
		e.Headers = map[string]string{"Allow": strings.Join(allow, ", ")}
		e.Details = map[string]any{"allowed_methods": allow}
		return e
	}
	return NewError(http.StatusNotFound, "NOT_FOUND", "Route not found.")
}

func pathMatches(pattern, path string) bool {
	pp := strings.Split(strings.Trim(pattern, "/"), "/")
	xp := strings.Split(strings.Trim(path, "/"), "/")
	if len(pp) != len(xp) {
		return false
	}
	for i := range pp {
		if strings.HasPrefix(pp[i], ":") {
			if xp[i] == "" {
				return false
			}
			continue
		}
		if pp[i] != xp[i] {
			return false
		}
	}
	return true
}

// Response helpers: the {data, meta} envelope.

type envelope struct {
	Data any `json:"data"`
	Meta any `json:"meta"`
}

// ListMeta is the pagination meta of list responses.
type ListMeta struct {
	Total      int `json:"total"`
	Page       int `json:"page"`
	PageSize   int `json:"page_size"`
	TotalPages int `json:"total_pages"`
}

func respond(c *fiber.Ctx, status int, data any) error {
	return c.Status(status).JSON(envelope{Data: data, Meta: struct{}{}})
}

func respondMeta(c *fiber.Ctx, status int, data, meta any) error {
	return c.Status(status).JSON(envelope{Data: data, Meta: meta})
}

func respondList[T any](c *fiber.Ctx, items []T, total int, p PageQuery) error {
	if items == nil {
		items = []T{}
	}
	pages := 0
	if total > 0 {
		pages = (total + p.PageSize - 1) / p.PageSize
	}
	return c.Status(http.StatusOK).JSON(envelope{Data: items, Meta: ListMeta{Total: total, Page: p.Page, PageSize: p.PageSize, TotalPages: pages}})
}

// PageQuery is embedded in every list route's query struct.
type PageQuery struct {
	Page     int `query:"page" minimum:"1" default:"1" doc:"1-based page number."`
	PageSize int `query:"page_size" minimum:"1" maximum:"500" default:"50" doc:"Items per page (1..500)."`
}

// mapSlice converts every element of in with f (a response mapper); the result is never nil, so
// empty lists encode as [].
func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
