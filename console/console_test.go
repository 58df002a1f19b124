package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type harness struct {
	st  *store.Store
	srv *httptest.Server
}

func newHarness(t testing.TB, mutate ...func(*console.Deps)) *harness {
	st := testenv.Store(t)
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	rs := responses.New(responses.Deps{Store: st, Log: log})
	deps := console.Deps{Auth: auth.NewAuthenticator(st, log, 0), Box: box, Store: st, Alerts: alerts.New(st, log),
		Approvals: rs, Runs: rs, Log: log, Temporal: console.TemporalUI{BaseURL: "http://temporal-ui.test:8233", Namespace: "default"}}
	for _, m := range mutate {
		m(&deps)
	}
	c := console.New(deps)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	c.Register(app)
	h := &harness{st: st}
	h.srv = httptest.NewServer(adaptor(app))
	t.Cleanup(h.srv.Close)
	return h
}

// adaptor serves the Fiber app through net/http for httptest.
func adaptor(app *fiber.App) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := app.Test(r, -1)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func (h *harness) key(t testing.TB, keyType string, scopes ...string) (string, store.APIKey) {
	t.Helper()
	plain, err := auth.NewKey()
	require.NoError(t, err)
	k := store.APIKey{UUID: uuid.New(), Name: "console " + keyType, KeyHash: auth.Hash(plain), KeyPrefix: auth.Prefix(plain),
		Scopes: scopes, KeyType: keyType, IsActive: true}
	require.NoError(t, h.st.CreateAPIKey(context.Background(), &k))
	return plain, k
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	t      testing.TB
	base   string
	client *http.Client
	cookie *http.Cookie
}

func (h *harness) browser(t testing.TB) *browser {
	return &browser{t: t, base: h.srv.URL, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) do(method, path string, form url.Values, headers ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == "vigil_console" {
			if c.MaxAge < 0 || c.Value == "" {
				b.cookie = nil
			} else {
				b.cookie = c
			}
		}
	}
	return resp, string(raw)
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	resp, _ := b.do(http.MethodPost, "/console/login", url.Values{"key": {key}})
	require.Equal(b.t, http.StatusSeeOther, resp.StatusCode)
	require.NotNil(b.t, b.cookie)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	require.NotNil(t, m, "the page has a CSRF field")
	return m[1]
}

// workflow stores an active workflow on ip indicators named name, gated by mode, removed after the test.
func (h *harness) workflow(t *testing.T, name, mode, risk string) store.Workflow {
	t.Helper()
	w := store.Workflow{Name: name + " " + uuid.NewString(), WorkflowType: "indicator", IndicatorTypes: []string{"ip"},
		State: store.WorkflowStateActive, Steps: json.RawMessage(`[{"name":"a","url":"https://edr.example.com/"}]`), TimeoutSeconds: 300,
		RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1, ApprovalMode: mode, ApprovalTimeoutSeconds: 3600, RequiredApprovals: 1, RiskLevel: risk}
	require.NoError(t, h.st.CreateWorkflow(context.Background(), &w))
	t.Cleanup(func() { _ = h.st.DeleteWorkflow(context.Background(), w.UUID) })
	return w
}

func (h *harness) alert(t *testing.T, title string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	res, err := h.st.Ingest(ctx, store.IngestAlert{Title: title, Severity: "High", SourceName: "generic", Fingerprint: uuid.NewString(),
		RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	inds, _, err := h.st.LinkIndicators(ctx, res.AlertUUID, []store.IndicatorKey{{Type: "ip", Value: "203.0.113.77"}}, "api")
	require.NoError(t, err)
	_, err = h.st.DB().NewRaw(`UPDATE indicators SET enrichment_results = ?, malice = 'Malicious' WHERE uuid = ?`,
		`{"vt":{"status":"success","malice":"Malicious"}}`, inds[0].UUID).Exec(ctx)
	require.NoError(t, err)
	// What the store does in the transaction that records a verdict: the linked alerts' worst
	// indicator malice follows (their effective malice, which the pages show, is computed from it).
	_, err = h.st.DB().NewRaw(`UPDATE alerts SET indicator_malice = 'Malicious'
		WHERE uuid IN (SELECT alert_uuid FROM alert_indicators WHERE indicator_uuid = ?)`, inds[0].UUID).Exec(ctx)
	require.NoError(t, err)
	return res.AlertUUID
}

// noInline asserts a page has no inline script or style: the only script is the console's file.
func noInline(t *testing.T, page string) {
	t.Helper()
	require.NotContains(t, page, "style=")
	require.NotRegexp(t, `<script(?:\s+[^>]*)?>[^<]`, page, "no inline script")
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		require.Equal(t, `<script src="/console/static/console.js">`, m)
	}
	require.NotRegexp(t, `\son[a-z]+=`, page, "no inline event handlers")
}

func TestSignInQueueAndAlert(t *testing.T) {
	h := newHarness(t)
	b := h.browser(t)
	resp, _ := b.do(http.MethodGet, "/console/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no session: to the sign-in page")
	require.Equal(t, "/console/login", resp.Header.Get("Location"))

	resp, page := b.do(http.MethodGet, "/console/login", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "script-src 'self';", "script only from the console's own file")
	require.NotContains(t, csp, "unsafe-")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	noInline(t, page)

	resp, page = b.do(http.MethodPost, "/console/login", url.Values{"key": {"cai_" + strings.Repeat("x", 32)}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, page, "not valid")
	resp, _ = b.do(http.MethodPost, "/console/login", url.Values{"key": {strings.Repeat("k", 5000)}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "oversized key")
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	resp, _ = b.do(http.MethodPost, "/console/login", url.Values{"key": {key}}, "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-site sign-in (login CSRF) is refused")
	b.signIn(key)
	require.True(t, b.cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, b.cookie.SameSite)
	require.Equal(t, "/console", b.cookie.Path)
	require.NotContains(t, b.cookie.Value, key[:12], "the browser holds a session id, not the key")

	title := "console <script>alert(1)</script> " + uuid.NewString()
	id := h.alert(t, title)
	resp, page = b.do(http.MethodGet, "/console/?severity=High&status=Open&q="+url.QueryEscape(title[28:]), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "1 alert(s)")
	require.Contains(t, page, "/console/alerts/"+id.String())
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;", "titles are escaped")
	require.NotContains(t, page, "<script>alert(1)")
	require.Contains(t, page, "mal-Malicious")
	_, page = b.do(http.MethodGet, "/console/?status=Closed&q="+url.QueryEscape(title[28:]), nil)
	require.Contains(t, page, "0 alert(s)")
	resp, _ = b.do(http.MethodGet, "/console/?status=Bogus&severity=%00&q="+url.QueryEscape("a\x00b")+"&page=-5", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "hostile filters are ignored, not an error")

	resp, page = b.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "203.0.113.77")
	require.Contains(t, page, "vt: Malicious", "each provider's verdict")
	require.Contains(t, page, "alert_created")
	resp, _ = b.do(http.MethodGet, "/console/alerts/not-a-uuid", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.do(http.MethodGet, "/console/alerts/"+uuid.NewString(), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Status change: the CSRF token, same-site, then the alert rules.
	csrf := csrfOf(t, page)
	path := "/console/alerts/" + id.String() + "/status"
	closeForm := url.Values{"status": {"Closed"}, "close_classification": {"Duplicate"}}
	resp, _ = b.do(http.MethodPost, path, closeForm)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	closeForm.Set("csrf", "wrong")
	resp, _ = b.do(http.MethodPost, path, closeForm)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "wrong CSRF token")
	closeForm.Set("csrf", csrf)
	resp, _ = b.do(http.MethodPost, path, closeForm, "Origin", "https://evil.example.com")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-site form post")
	resp, page = b.do(http.MethodPost, path, url.Values{"csrf": {csrf}, "status": {"Closed"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "the transition rules: closing needs a classification")
	require.Contains(t, page, "close_classification")
	resp, _ = b.do(http.MethodPost, path, closeForm)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	a, err := h.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.StatusClosed, a.Status)
	require.Equal(t, "Duplicate", *a.CloseClassification)
	evs, _, err := h.st.ListActivity(context.Background(), store.ActivityFilter{AlertUUID: &id, EventTypes: []string{"alert_closed"}, Page: store.Page{Size: 5}})
	require.NoError(t, err)
	require.Equal(t, store.ActorConsole, evs[0].ActorType)
	resp, page = b.do(http.MethodPost, path, url.Values{"csrf": {csrf}, "status": {"Escalated"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, "Cannot move an alert from Closed to Escalated")

	// Sign out ends the session.
	resp, _ = b.do(http.MethodPost, "/console/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b2 := h.browser(t)
	b2.cookie = &http.Cookie{Name: "vigil_console", Value: "stolen-or-old"}
	resp, _ = b2.do(http.MethodGet, "/console/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestScopesAndRevocation(t *testing.T) {
	h := newHarness(t)
	id := h.alert(t, "console scopes "+uuid.NewString())
	readOnly, k := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	b := h.browser(t)
	b.signIn(readOnly)
	resp, page := b.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, page, "/status\"", "a read-only key sees no write action")
	require.NotContains(t, page, "/console/approvals", "nor the approvals inbox")
	csrf := csrfOf(t, page) // the sign-out form's
	resp, _ = b.do(http.MethodPost, "/console/alerts/"+id.String()+"/status", url.Values{"csrf": {csrf}, "status": {"Triaging"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "and is refused if it posts one")
	resp, _ = b.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	a, err := h.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.StatusOpen, a.Status)

	// A revoked key ends its session at the next request.
	k.IsActive = false
	require.NoError(t, h.st.UpdateAPIKey(context.Background(), &k, "is_active"))
	resp, page = b.do(http.MethodGet, "/console/", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, page, "no longer valid")
}

func TestApprovalsInbox(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.workflow(t, "console isolate", store.ApprovalModeAlways, "high")
	trigger := uuid.New()
	reason, conf := "beaconing <b>hard</b>", 0.9
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: 1, Status: store.RunPendingApproval, TriggerSource: "agent",
		TriggerKeyUUID: &trigger, IndicatorType: "ip", IndicatorValue: "192.0.2.44", Reason: &reason, Confidence: &conf}
	ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "agent", TriggerKeyUUID: &trigger,
		IndicatorType: "ip", IndicatorValue: "192.0.2.44", RiskLevel: "high", RequiredApprovals: 1, Reason: &reason, Confidence: &conf,
		ExpiresAt: time.Now().Add(time.Hour), NotifierType: "none"}
	_, err := h.st.CreateWorkflowRun(ctx, &run, &ap)
	require.NoError(t, err)

	agentKey, _ := h.key(t, auth.KeyTypeAgent, auth.ScopeApprovalsWrite, auth.ScopeAlertsRead)
	ab := h.browser(t)
	ab.signIn(agentKey)
	resp, page := ab.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, page = ab.do(http.MethodPost, "/console/approvals/"+ap.UUID.String()+"/decide", url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, page, "Agent keys cannot approve")

	human, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeApprovalsWrite, auth.ScopeAlertsRead)
	b := h.browser(t)
	b.signIn(human)
	resp, page = b.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, w.Name)
	require.Contains(t, page, "beaconing &lt;b&gt;hard&lt;/b&gt;", "the agent's reason, escaped")
	require.Contains(t, page, "confidence 0.9")
	require.Contains(t, page, "0 of 1 approvals")
	require.Contains(t, page, "No alert (run on an indicator alone)")
	csrf := csrfOf(t, page)
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+ap.UUID.String()+"/decide", url.Values{"csrf": {csrf}, "decision": {"maybe"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+ap.UUID.String()+"/decide",
		url.Values{"csrf": {csrf}, "decision": {"approve"}, "comment": {strings.Repeat("c", 6000)}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "oversized comment")
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+ap.UUID.String()+"/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}, "comment": {"ok"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	got, err := h.st.GetApproval(ctx, ap.UUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, got.Status)
	resp, page = b.do(http.MethodPost, "/console/approvals/"+ap.UUID.String()+"/decide", url.Values{"csrf": {csrf}, "decision": {"reject"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, page, "already decided")
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+uuid.NewString()+"/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestForwardedHeadersNeedATrustedProxy: X-Forwarded-Proto and X-Forwarded-Host are the client's own
// words unless TRUSTED_PROXY_COUNT > 0: they neither set the cookie's Secure flag nor pass the
// same-site check for a forged Origin.
func TestForwardedHeadersNeedATrustedProxy(t *testing.T) {
	direct := newHarness(t)
	key, _ := direct.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	b := direct.browser(t)
	resp, _ := b.do(http.MethodPost, "/console/login", url.Values{"key": {key}}, "X-Forwarded-Proto", "https")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotNil(t, b.cookie)
	require.False(t, b.cookie.Secure, "a client-sent X-Forwarded-Proto does not make a plain-HTTP cookie Secure")
	resp, _ = direct.browser(t).do(http.MethodPost, "/console/login", url.Values{"key": {key}},
		"Origin", "http://evil.test", "X-Forwarded-Host", "evil.test")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a client-sent X-Forwarded-Host does not vouch for a forged Origin")

	proxied := newHarness(t, func(d *console.Deps) { d.RateLimit = ratelimit.Policy{TrustedProxies: 1} })
	pb := proxied.browser(t)
	resp, _ = pb.do(http.MethodPost, "/console/login", url.Values{"key": {key}}, "X-Forwarded-Proto", "https")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, pb.cookie.Secure, "behind a trusted proxy, its X-Forwarded-Proto is the browser's scheme")
	resp, _ = proxied.browser(t).do(http.MethodPost, "/console/login", url.Values{"key": {key}},
		"Origin", "https://vigil.example", "X-Forwarded-Host", "vigil.example")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "behind a trusted proxy, its X-Forwarded-Host is the browser's host")
}
