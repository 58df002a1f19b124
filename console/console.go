// Package console is the analyst console served by `vigil api` at /console (docs/CONSOLE.md):
// server-rendered pages over the same store views and domain services as the REST routes, signed in
// with an API key that stays on the server. It is an adapter: every rule (scopes, transitions,
// approval decisions) belongs to auth, alerts and responses.
package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/yuin/goldmark"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/console.css
var stylesheet []byte

//go:embed static/console.js
var script []byte

// Session settings.
const (
	cookieName = "vigil_console"
	// SessionTTL bounds a session; signing in again starts a new one.
	SessionTTL = 8 * time.Hour
)

// Authenticator resolves an API key (auth.Authenticator, shared with the API).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// Sealer keeps the signed-in key sealed in its session row (secretbox.Box).
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Store is what the pages read, and the sessions.
type Store interface {
	CreateConsoleSession(ctx context.Context, s *store.ConsoleSession) error
	GetConsoleSession(ctx context.Context, idHash []byte) (store.ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, idHash []byte) error
	APIKeyPrefixExists(ctx context.Context, prefix string) (bool, error) // a failed sign-in's claimed prefix
	ListAlerts(ctx context.Context, f store.AlertFilter) ([]store.Alert, int, error)
	GetAlert(ctx context.Context, id uuid.UUID) (store.Alert, error)
	AlertDetail(ctx context.Context, a store.Alert) (store.AlertDetail, error)
	ListActivity(ctx context.Context, f store.ActivityFilter) ([]store.ActivityEvent, int, error)
	ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.ApprovalRequest, int, error)
	PendingApprovals(ctx context.Context) (int, error) // the header's count
	GetApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
	AlertIndicators(ctx context.Context, id uuid.UUID) ([]store.Indicator, error)
	SiblingAlerts(ctx context.Context, alertID uuid.UUID, limit int) ([]store.Sibling, error)
	ApplicableWorkflows(ctx context.Context, types []string) ([]store.Workflow, error)
	ListWorkflowRuns(ctx context.Context, f store.WorkflowRunFilter) ([]store.WorkflowRun, int, error)
	GetWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	WorkflowNames(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]string, error)
	RunAlerts(ctx context.Context, runs []uuid.UUID) (map[uuid.UUID]uuid.UUID, error)
	MetricsSummary(ctx context.Context, w store.MetricsWindow, env store.Env) (store.MetricsSummary, error)
	AlertsPerDay(ctx context.Context, w store.MetricsWindow) ([]store.TimeBucket, error)
	WorkflowMetrics(ctx context.Context, w store.MetricsWindow) (store.WorkflowMetrics, error)
	ListAuditEvents(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, int, error)
	AppendAuditEvent(ctx context.Context, db bun.IDB, e *store.AuditEvent) error
	audit.Store // a sign-in's session and its audit event commit together
}

// AlertService applies the alert rules (alerts.Service).
type AlertService interface {
	Patch(ctx context.Context, id uuid.UUID, p alerts.Patch, actor store.Actor) (store.Alert, error)
	AddFinding(ctx context.Context, alertID uuid.UUID, f alerts.NewFinding, actor store.Actor) (store.Finding, error)
	Bulk(ctx context.Context, ids []uuid.UUID, p alerts.Patch, actor store.Actor) (alerts.Bulked, error)
}

// RunService starts workflow runs and says which fit an indicator and what they would do
// (responses.Service).
type RunService interface {
	Execute(ctx context.Context, actor responses.Actor, req responses.ExecuteRequest) (responses.Executed, error)
	Launcher(ctx context.Context, actor responses.Actor, inds []store.Indicator) ([]responses.Launch, error)
	Preview(ctx context.Context, actor responses.Actor, ind store.Indicator, workflow uuid.UUID) (responses.Launch, error)
}

// ApprovalService lists and decides approval requests (responses.Service).
type ApprovalService interface {
	Decide(ctx context.Context, id uuid.UUID, who responses.Decider, approve bool, comment *string) (store.ApprovalRequest, error)
	Inbox(ctx context.Context, who responses.Decider, now time.Time) ([]responses.Card, error)
}

// Deps are the console's dependencies; Box nil disables sign-in (no ENCRYPTION_KEY to seal keys with).
type Deps struct {
	Auth      Authenticator
	Box       Sealer
	Store     Store
	Alerts    AlertService
	Approvals ApprovalService
	Runs      RunService
	Comments  CommentService  // comments on alerts (comments.Service); nil: the alert page shows none
	Timeline  TimelineService // the alert's timeline (timeline.Service); nil with Comments
	// Cases applies the case rules (cases.Service); nil: no case pages. CaseTimeline reads a case's
	// merged timeline (timeline.Service); without it the case page shows comments and no timeline.
	Cases        CaseService
	CaseTimeline CaseTimelineService
	// Exclusions and Mappings own the never-indicator list and the indicator mappings
	// (config.Exclusions, config.Mappings): an admin adds either from an indicator's row on the alert
	// page. nil: the actions are not offered.
	Exclusions ExclusionService
	Mappings   MappingService
	Temporal   TemporalUI
	Env        store.Env // provider credentials' environment (the dashboard's "configured" providers)
	// LiveRefresh is how often the queue's script asks for new rows (0: every 10 s).
	LiveRefresh time.Duration
	// MaxBodyBytes bounds a signed-in form's body as MAX_REQUEST_BODY_SIZE_MB bounds the API's (0:
	// 10 MB): it is read bounded before the CSRF check looks at it.
	MaxBodyBytes int
	Log          *slog.Logger
	// RateLimit is the doors' one request-budget rule (shared with REST and MCP): pages count against
	// the signed-in key's budget, anything else against the client IP's, sign-in attempts against the
	// client IP's sign-in budget. Its TrustedProxies also decides whether X-Forwarded-Proto/-Host are
	// believed. A nil Limiter counts nothing.
	RateLimit ratelimit.Policy
}

// signInBodyLimit bounds the sign-in form (a key is under 200 bytes; a longer one is a 401): a longer
// body is refused (413) while it is read, before any of it is buffered.
const signInBodyLimit = 8 << 10

// Console serves the pages.
type Console struct {
	deps  Deps
	pages map[string]*template.Template
	md    goldmark.Markdown
}

// New parses the embedded pages.
func New(deps Deps) *Console {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.LiveRefresh <= 0 {
		deps.LiveRefresh = 10 * time.Second
	}
	if deps.MaxBodyBytes <= 0 {
		deps.MaxBodyBytes = 10 << 20
	}
	c := &Console{deps: deps, pages: map[string]*template.Template{}, md: newMarkdown()}
	funcs := template.FuncMap{"has": slices.Contains[[]string], "join": strings.Join, "deref": deref,
		"sub": func(a, b int) int { return a - b }, "add": func(a, b int) int { return a + b }}
	for _, name := range []string{"login", "queue", "alert", "approvals", "runs", "run", "dashboard", "audit", "bulk", "launch", "cases", "case", "case_pick"} {
		files := []string{"templates/layout.html", "templates/" + name + ".html"}
		if name == "alert" || name == "case" {
			files = append(files, "templates/alert_notes.html") // comments and the timeline
		}
		if name == "launch" || name == "approvals" {
			files = append(files, "templates/steps.html") // a workflow's steps: method, host, path
		}
		c.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, files...))
	}
	return c
}

// Register mounts the console on r at /console.
func (c *Console) Register(r fiber.Router) {
	g := r.Group("/console", securityHeaders)
	g.Get("/static/console.css", func(ctx *fiber.Ctx) error {
		ctx.Set(fiber.HeaderContentType, "text/css; charset=utf-8")
		ctx.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		return ctx.Send(stylesheet)
	})
	g.Get("/static/console.js", func(ctx *fiber.Ctx) error {
		ctx.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
		ctx.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		return ctx.Send(script)
	})
	g.Get("/login", c.ipLimited, c.loginPage)
	g.Post("/login", c.login)
	g.Post("/logout", c.session, c.csrf, c.logout)
	g.Get("/", c.session, c.need(auth.ScopeAlertsRead), c.queue)
	g.Get("/alerts/:uuid", c.session, c.need(auth.ScopeAlertsRead), c.alert)
	g.Post("/alerts/bulk", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.bulk)
	g.Post("/alerts/:uuid/status", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.setStatus)
	g.Post("/alerts/:uuid/assign", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.assign)
	g.Post("/alerts/:uuid/malice", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.setMalice)
	g.Post("/alerts/:uuid/findings", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.addFinding)
	if c.deps.Exclusions != nil && c.deps.Mappings != nil {
		g.Post("/alerts/:uuid/never-indicator", c.session, c.csrf, c.need(auth.ScopeAdmin), c.neverIndicator)
		g.Post("/alerts/:uuid/map-field", c.session, c.csrf, c.need(auth.ScopeAdmin), c.mapField)
	}
	g.Get("/alerts/:uuid/launch", c.session, c.need(auth.ScopeAlertsRead, auth.ScopeWorkflowsExecute), c.launch)
	g.Post("/alerts/:uuid/run", c.session, c.csrf, c.need(auth.ScopeWorkflowsExecute), c.runWorkflow)
	c.registerComments(g)
	c.registerCases(g)
	g.Get("/dashboard", c.session, c.need(auth.ScopeAlertsRead), c.dashboard)
	g.Get("/runs", c.session, c.need(auth.ScopeWorkflowsRead), c.runs)
	g.Get("/runs/:uuid", c.session, c.need(auth.ScopeWorkflowsRead), c.run)
	g.Get("/audit", c.session, c.need(auth.ScopeAdmin), c.auditTrail)
	g.Get("/approvals", c.session, c.need(auth.ScopeApprovalsWrite), c.approvals)
	g.Post("/approvals/:uuid/decide", c.session, c.csrf, c.need(auth.ScopeApprovalsWrite), c.decide)
}

// securityHeaders: a strict CSP (script and styles only from the console's own files, no inline script
// or style, fetches only to the console's origin), no
// framing, no referrer outside the console's origin (same-origin, so form posts carry their Origin for the
// CSRF check), no sniffing, no caching of pages.
func securityHeaders(ctx *fiber.Ctx) error {
	ctx.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	ctx.Set("X-Frame-Options", "DENY")
	ctx.Set("X-Content-Type-Options", "nosniff")
	ctx.Set("Referrer-Policy", "same-origin")
	ctx.Set(fiber.HeaderCacheControl, "no-store")
	return ctx.Next()
}

// who is the signed-in caller of a request.
type who struct {
	p      auth.Principal
	idHash []byte
	csrf   string
}

const localWho = "console.who"

func whoOf(ctx *fiber.Ctx) who { w, _ := ctx.Locals(localWho).(who); return w }

func hashID(id string) []byte { h := sha256.Sum256([]byte(id)); return h[:] }

// session loads the caller from the session cookie and re-authenticates its key (so a revoked or
// expired key ends the session at once); without one it redirects to the sign-in page.
func (c *Console) session(ctx *fiber.Ctx) error {
	id := ctx.Cookies(cookieName)
	toSignIn := func() error {
		return c.limitByIP(ctx, func() error { return ctx.Redirect(signInLink(ctx), http.StatusSeeOther) })
	}
	if id == "" || c.deps.Box == nil {
		return toSignIn()
	}
	sess, err := c.deps.Store.GetConsoleSession(ctx.UserContext(), hashID(id))
	if errors.Is(err, store.ErrNotFound) {
		return toSignIn()
	}
	if err != nil {
		return err
	}
	key, err := c.deps.Box.Open(sess.KeySealed)
	if err != nil {
		return toSignIn()
	}
	p, err := c.deps.Auth.Authenticate(ctx.UserContext(), string(key))
	if err != nil {
		_ = c.deps.Store.DeleteConsoleSession(ctx.UserContext(), sess.IDHash)
		return c.limitByIP(ctx, func() error {
			return c.render(ctx, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "Your key is no longer valid; sign in again.", Next: askedFor(ctx)})
		})
	}
	ctx.Locals(localWho, who{p: p, idHash: sess.IDHash, csrf: sess.CSRFToken})
	return c.answer(ctx, c.deps.RateLimit.Take(ctx.UserContext(), ratelimit.Caller{KeyID: p.KeyUUID, KeyLimit: p.RateLimit}), ctx.Next)
}

// limitByIP counts a request with no signed-in key against its client IP's budget, then runs next.
func (c *Console) limitByIP(ctx *fiber.Ctx, next func() error) error {
	return c.answer(ctx, c.deps.RateLimit.Take(ctx.UserContext(), ratelimit.Caller{IP: c.clientIP(ctx)}), next)
}

// ipLimited is limitByIP as a route handler.
func (c *Console) ipLimited(ctx *fiber.Ctx) error { return c.limitByIP(ctx, ctx.Next) }

// answer sets the verdict's X-RateLimit headers and runs next, or answers the refusal as the console
// answers its other errors: a page (429, Retry-After).
func (c *Console) answer(ctx *fiber.Ctx, v ratelimit.Verdict, next func() error) error {
	for _, h := range v.Headers() {
		ctx.Set(h[0], h[1])
	}
	if v.Allowed {
		return next()
	}
	title := "Slow down"
	if v.Kind == "sign-in" {
		title = "Sign in"
	}
	return c.render(ctx, http.StatusTooManyRequests, "login", c.base(ctx, title, "Too many requests: "+v.Message()))
}

// clientIP is the request's client address by the doors' one proxy rule.
func (c *Console) clientIP(ctx *fiber.Ctx) string {
	return c.deps.RateLimit.ClientIP(ctx.Context().RemoteIP().String(), func() []string {
		var xff []string
		for _, h := range ctx.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
			xff = append(xff, string(h))
		}
		return xff
	})
}

// scheme and host are the request's as the browser sent it: from X-Forwarded-Proto/-Host only behind
// trusted proxies (TRUSTED_PROXY_COUNT > 0); otherwise those headers are the client's own words.
func (c *Console) scheme(ctx *fiber.Ctx) string {
	if c.deps.RateLimit.BehindProxy() || ctx.Context().IsTLS() {
		return ctx.Protocol()
	}
	return "http"
}

func (c *Console) host(ctx *fiber.Ctx) string {
	if c.deps.RateLimit.BehindProxy() {
		return ctx.Hostname()
	}
	return string(ctx.Request().URI().Host())
}

// sameSite refuses a form posted from another site: a cross-site Sec-Fetch-Site, or an Origin whose
// host is not this request's.
func (c *Console) sameSite(ctx *fiber.Ctx) bool {
	if s := ctx.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return false
	}
	if o := ctx.Get(fiber.HeaderOrigin); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != c.host(ctx) {
			return false
		}
	}
	return true
}

// csrf checks a form post: same site, and the session's token in the csrf field. The form is read
// bounded first (MaxBodyBytes, the API's body limit): a larger body is refused with 413 before it is
// buffered (security review round 4, R4-9: a signed-in session's 60 MB form was read whole).
func (c *Console) csrf(ctx *fiber.Ctx) error {
	w := whoOf(ctx)
	if !readBounded(ctx, c.deps.MaxBodyBytes) {
		return c.render(ctx, http.StatusRequestEntityTooLarge, "login", c.base(ctx, "Too large", "This form is larger than the request body limit."))
	}
	if !c.sameSite(ctx) || subtle.ConstantTimeCompare([]byte(ctx.FormValue("csrf")), []byte(w.csrf)) != 1 {
		return c.render(ctx, http.StatusForbidden, "login", c.base(ctx, "Refused", "This form was not posted from the console page (CSRF check failed)."))
	}
	return ctx.Next()
}

// need enforces a route's scopes exactly as REST does (auth.Principal.Missing).
func (c *Console) need(scopes ...string) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		if missing := whoOf(ctx).p.Missing(scopes...); len(missing) > 0 {
			return c.render(ctx, http.StatusForbidden, "login", c.base(ctx, "Forbidden", "Your key lacks the scope "+missing[0]+" this page needs."))
		}
		return ctx.Next()
	}
}

// page is what every template gets. The "login" page is also the console's error page: inside the
// signed-in frame (header, navigation, no sign-in form) when Signed, the sign-in form otherwise.
type page struct {
	Title, Error, KeyName, KeyPrefix, CSRF string
	Next                                   string // the sign-in form's return path (safeNext), "" for the queue
	SkipTo, SkipLabel                      string // a page's own first skip link (the queue: its first alert)
	Notice                                 string // a form's status line (role="status"), beside Error
	Signed, CanApprove, CanWrite, CanRuns  bool
	CanAudit                               bool // an admin session: the audit trail
	Pending                                int  // pending, unexpired approval requests (shown with CanApprove)
	CanCases                               bool // the case pages are wired and the key reads alerts
}

func (c *Console) base(ctx *fiber.Ctx, title, errText string) page {
	w := whoOf(ctx)
	if w.idHash == nil {
		return page{Title: title, Error: errText}
	}
	p := page{Title: title, Error: errText, Signed: true, KeyName: w.p.Name, KeyPrefix: w.p.KeyPrefix, CSRF: w.csrf,
		CanApprove: w.p.Has(auth.ScopeApprovalsWrite) && w.p.KeyType != auth.KeyTypeAgent, CanWrite: w.p.Has(auth.ScopeAlertsWrite),
		CanRuns: w.p.Has(auth.ScopeWorkflowsRead), CanAudit: w.p.Has(auth.ScopeAdmin),
		CanCases: c.deps.Cases != nil && w.p.Has(auth.ScopeAlertsRead)}
	if p.CanApprove {
		n, err := c.deps.Store.PendingApprovals(ctx.UserContext())
		if err != nil {
			c.deps.Log.WarnContext(ctx.UserContext(), "console: count pending approvals", "err", err)
		}
		p.Pending = n
	}
	return p
}

func (c *Console) render(ctx *fiber.Ctx, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, name+".html", data); err != nil {
		return err
	}
	ctx.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return ctx.Status(status).Send(buf.Bytes())
}

// renderBlock answers one block of a page (a fragment console.js swaps in).
func (c *Console) renderBlock(ctx *fiber.Ctx, name, block string, data any) error {
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, block, data); err != nil {
		return err
	}
	ctx.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return ctx.Status(http.StatusOK).Send(buf.Bytes())
}

func (c *Console) loginPage(ctx *fiber.Ctx) error {
	next, _ := safeNext(ctx.Query("next"))
	return c.render(ctx, http.StatusOK, "login", page{Title: "Sign in", Next: next})
}

// login checks the key like every request does and opens a session holding it sealed. Every attempt,
// good or bad, counts against the client IP's sign-in budget before the key is looked at (counting
// only failures would need the answer first, and a refusal after it would tell a right guess from a
// wrong one); the form is read bounded.
func (c *Console) login(ctx *fiber.Ctx) error {
	if !c.sameSite(ctx) {
		return c.render(ctx, http.StatusForbidden, "login", page{Title: "Sign in", Error: "Sign in from the console page."})
	}
	v := c.deps.RateLimit.TakeSignIn(ctx.UserContext(), c.clientIP(ctx))
	return c.answer(ctx, v, func() error { return c.signIn(ctx) })
}

func (c *Console) signIn(ctx *fiber.Ctx) error {
	if c.deps.Box == nil {
		return c.render(ctx, http.StatusServiceUnavailable, "login", page{Title: "Sign in", Error: "The console needs ENCRYPTION_KEY to keep your key on the server."})
	}
	if !readBounded(ctx, signInBodyLimit) {
		return c.render(ctx, http.StatusRequestEntityTooLarge, "login", page{Title: "Sign in", Error: "The sign-in form is too large."})
	}
	key := ctx.FormValue("key")
	next, _ := safeNext(ctx.FormValue("next"))
	if len(key) > 200 {
		c.signInFailed(ctx, "")
		return c.render(ctx, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "That key is not valid.", Next: next})
	}
	p, err := c.deps.Auth.Authenticate(ctx.UserContext(), key)
	if err != nil {
		c.signInFailed(ctx, key)
		return c.render(ctx, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "That key is not valid.", Next: next})
	}
	sealed, err := c.deps.Box.Seal([]byte(key))
	if err != nil {
		return err
	}
	id, csrf := randomToken(), randomToken()
	err = audit.Record(ctx.UserContext(), c.deps.Store, c.actor(ctx, p), store.AuditSignedIn,
		func(uctx context.Context, tx *store.Store) (audit.Subject, error) {
			return audit.Subject{Type: audit.ConsoleSession, UUID: p.KeyUUID, Name: p.Name},
				tx.CreateConsoleSession(uctx, &store.ConsoleSession{IDHash: hashID(id), KeySealed: sealed, CSRFToken: csrf, ExpiresAt: time.Now().Add(SessionTTL)})
		})
	if err != nil {
		return err
	}
	ctx.Cookie(&fiber.Cookie{Name: cookieName, Value: id, Path: "/console", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: c.scheme(ctx) == "https", MaxAge: int(SessionTTL.Seconds())})
	if next == "" {
		next = "/console/"
	}
	return ctx.Redirect(next, http.StatusSeeOther)
}

// signInFailed records a refused sign-in (audit.SignInFailed): the client, unauthenticated, as the
// actor; when the text has the key format and its prefix is an existing key's, that prefix as what
// the attempt claimed (never the key, never as the actor). A failure to record is logged; the answer
// stays a 401.
func (c *Console) signInFailed(ctx *fiber.Ctx, key string) {
	a := store.Actor{Type: store.ActorConsole, ClientIP: c.clientIP(ctx)}
	a.RequestID, a.ClientRequestID = requestIDs(ctx)
	var claimed string
	if auth.WellFormed(key) {
		if ok, err := c.deps.Store.APIKeyPrefixExists(ctx.UserContext(), auth.Prefix(key)); err == nil && ok {
			claimed = auth.Prefix(key)
		}
	}
	if err := audit.SignInFailed(ctx.UserContext(), c.deps.Store, a, claimed); err != nil && c.deps.Log != nil {
		c.deps.Log.ErrorContext(ctx.UserContext(), "console sign-in not recorded", "err", err)
	}
}

// requestIDLocal is where the API's middleware keeps the server's id of the request (api's
// localsRequestID), clientRequestIDLocal the client's X-Request-ID: the console is mounted on the
// API's app.
const requestIDLocal, clientRequestIDLocal = "vigil.request_id", "vigil.client_request_id"

// requestIDs are the server's id of the request (a fresh one when the console runs without the
// API's middleware) and the client's X-Request-ID, apart (security review round 4, R4-10).
func requestIDs(ctx *fiber.Ctx) (id, client string) {
	id, _ = ctx.Locals(requestIDLocal).(string)
	if id == "" {
		id = uuid.NewString()
	}
	client, _ = ctx.Locals(clientRequestIDLocal).(string)
	if client == "" {
		client = audit.ClientRequestID(ctx.Get(fiber.HeaderXRequestID))
	}
	return id, client
}

// actor is the signed-in key acting through the console, as the activity and audit trails record it.
func (c *Console) actor(ctx *fiber.Ctx, p auth.Principal) store.Actor {
	a := p.Actor(store.ActorConsole)
	a.RequestID, a.ClientRequestID = requestIDs(ctx)
	a.ClientIP = c.clientIP(ctx)
	return a
}

func (c *Console) logout(ctx *fiber.Ctx) error {
	if err := c.deps.Store.DeleteConsoleSession(ctx.UserContext(), whoOf(ctx).idHash); err != nil {
		return err
	}
	ctx.Cookie(&fiber.Cookie{Name: cookieName, Value: "", Path: "/console", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode, MaxAge: -1})
	return ctx.Redirect("/console/login", http.StatusSeeOther)
}

// readBounded reads the request body into memory if it holds at most limit bytes: a declared
// Content-Length over it is refused before a byte is read, a streamed body is read up to limit+1
// bytes. A refused body is left unread and the connection closed after the answer.
func readBounded(ctx *fiber.Ctx, limit int) bool {
	req := ctx.Request()
	refuse := func() bool {
		ctx.Context().SetConnectionClose()
		_ = req.CloseBodyStream()
		return false
	}
	if req.Header.ContentLength() > limit {
		return refuse()
	}
	if !req.IsBodyStream() {
		return len(req.Body()) <= limit
	}
	body, err := io.ReadAll(io.LimitReader(req.BodyStream(), int64(limit)+1))
	if err != nil || len(body) > limit {
		return refuse()
	}
	_ = req.CloseBodyStream()
	req.SetBody(body)
	return true
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
