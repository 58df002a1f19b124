package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Signing in returns to the page asked for, and only to a path of the console on this origin:
// hostile next values (another host, a scheme, backslashes, CR/LF, dot segments, encoded slashes,
// the sign-in page itself, an oversized one) land on the queue instead and never reach the form.
func TestSignInReturnsToThePageAskedFor(t *testing.T) {
	h := newHarness(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	id := h.alert(t, "next "+uuid.NewString())
	asked := "/console/alerts/" + id.String() + "?tab=activity"

	b := h.browser(t)
	resp, _ := b.do(http.MethodGet, asked, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.Equal(t, "/console/login?"+url.Values{"next": {asked}}.Encode(), loc)
	resp, page := b.do(http.MethodGet, loc, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `<input type="hidden" name="next" value="/console/alerts/`+id.String()+`?tab=activity">`)
	resp, _ = b.do(http.MethodPost, "/console/login", url.Values{"key": {key}, "next": {asked}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, asked, resp.Header.Get("Location"), "back to the page asked for")

	// The live refresh's fragment is no page to come back to: its sign-in link has no next.
	resp, _ = h.browser(t).do(http.MethodGet, "/console/?q=x&partial=rows", nil)
	require.Equal(t, "/console/login", resp.Header.Get("Location"))
	// A wrong key keeps next for the second try.
	_, page = h.browser(t).do(http.MethodPost, "/console/login", url.Values{"key": {"nope"}, "next": {asked}})
	require.Contains(t, page, `name="next" value="/console/alerts/`+id.String())

	hostile := []string{"//evil.example", "//evil.example/console/", "https://evil", "https://evil.example/console/", "javascript:alert(1)",
		"javascript://console/%0aalert(1)", `\\evil`, `/\evil`, `/console/\\evil`, "/console/\r\nSet-Cookie: vigil_console=x",
		"/console/\nLocation: https://evil", "/\t/evil.example", "/console/\t/x", "/console/../../v1/api-keys", "/console/./x",
		"/console/%2f%2fevil.example", "/console/%5c%5cevil", "/console/%00", "/console/login", "/console/login?next=//evil",
		"/v1/alerts", "/console", "console/", " /console/", "/console/" + strings.Repeat("a", 3000), "data:text/html,<script>alert(1)</script>",
		"/console/\x7f", "/console/#//evil"}
	for _, next := range hostile {
		// On the sign-in page: no hidden field carries it.
		resp, page := h.browser(t).do(http.MethodGet, "/console/login?"+url.Values{"next": {next}}.Encode(), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%q", next)
		require.NotContains(t, page, `name="next"`, "%q is not offered", next)
		// Posted: the sign-in works and lands on the queue.
		b := h.browser(t)
		resp, _ = b.do(http.MethodPost, "/console/login", url.Values{"key": {key}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%q", next)
		loc := resp.Header.Get("Location")
		require.True(t, strings.HasPrefix(loc, "/console/") && !strings.HasPrefix(loc, "//") && !strings.ContainsAny(loc, "\\\r\n\t"),
			"%q redirected to %q", next, loc)
		require.Equal(t, "/console/", loc, "%q", next)
	}
	// Wrong types and shapes: a repeated next, an empty one.
	resp, _ = h.browser(t).do(http.MethodPost, "/console/login?next=//evil", url.Values{"key": {key}, "next": {"", "//evil"}})
	require.Equal(t, "/console/", resp.Header.Get("Location"))
}

// 403 and 404 pages keep a signed-in analyst inside the console (header, navigation, a way back),
// never the sign-in form; without a session the form is what is shown.
func TestErrorPagesInsideTheSignedInFrame(t *testing.T) {
	h := newHarness(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	b := h.browser(t)
	b.signIn(key)
	for path, status := range map[string]int{"/console/audit": http.StatusForbidden, "/console/approvals": http.StatusForbidden,
		"/console/alerts/" + uuid.NewString(): http.StatusNotFound, "/console/alerts/not-a-uuid": http.StatusNotFound} {
		resp, page := b.do(http.MethodGet, path, nil)
		require.Equal(t, status, resp.StatusCode, path)
		require.Contains(t, page, `<nav aria-label="Console">`, path)
		require.Contains(t, page, `id="back-to-queue"`, path)
		require.Contains(t, page, `id="error"`, path)
		require.NotContains(t, page, `id="signin"`, "%s: no sign-in form for a signed-in analyst", path)
		require.NotContains(t, page, `name="key"`, path)
		noInline(t, page)
	}
	// A forged post without the CSRF token: refused inside the frame too.
	resp, page := b.do(http.MethodPost, "/console/logout", url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.NotContains(t, page, `id="signin"`)
	// Not signed in: the sign-in form.
	resp, page = h.browser(t).do(http.MethodGet, "/console/login", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="signin"`)
	require.NotContains(t, page, "<nav")
}

// The queue's default order is triage-first: open before closed, unassigned before assigned, worst
// severity first, oldest first; the page says so, and a column sort is announced with aria-sort.
// Each row shows the alert's age and the time since it last changed.
func TestQueueTriageOrderAgeAndSortState(t *testing.T) {
	h := newHarness(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	ctx := context.Background()
	tag := "tri" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	mk := func(name, sev, status, assignee string, age time.Duration) uuid.UUID {
		res, err := h.st.Ingest(ctx, store.IngestAlert{Title: name + " " + tag, Severity: sev, SourceName: "generic", Fingerprint: uuid.NewString(),
			RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
		require.NoError(t, err)
		_, err = h.st.DB().NewRaw(`UPDATE alerts SET status = ?, assignee = NULLIF(?, ''), created_at = now() - ?::interval,
			updated_at = now() - ?::interval, close_classification = CASE WHEN ? = 'Closed' THEN ? END WHERE uuid = ?`,
			status, assignee, age.String(), (age / 2).String(), status, store.CloseClassifications()[0], res.AlertUUID).Exec(ctx)
		require.NoError(t, err)
		return res.AlertUUID
	}
	// Made in an order that none of the other sorts gives.
	closedCrit := mk("closed-critical", "Critical", "Closed", "", 90*time.Hour)
	openLowOld := mk("open-low-old", "Low", "Open", "", 50*time.Hour)
	assignedCrit := mk("assigned-critical", "Critical", "Triaging", "ana", 80*time.Hour)
	openCritNew := mk("open-critical-new", "Critical", "Open", "", 2*time.Hour)
	escalatedHigh := mk("escalated-high", "High", "Escalated", "", 3*time.Minute)
	openCritOld := mk("open-critical-old", "Critical", "Open", "", 30*time.Hour)
	want := []uuid.UUID{openCritOld, openCritNew, escalatedHigh, openLowOld, assignedCrit, closedCrit}

	b := h.browser(t)
	b.signIn(key)
	order := func(page string) []uuid.UUID {
		var out []uuid.UUID
		for _, m := range regexp.MustCompile(`<tr data-id="([0-9a-f-]{36})"`).FindAllStringSubmatch(page, -1) {
			out = append(out, uuid.MustParse(m[1]))
		}
		return out
	}
	resp, page := b.do(http.MethodGet, "/console/?q="+tag, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, want, order(page), "triage order by default")
	require.Contains(t, page, "Triage order: open first")
	require.Contains(t, page, "sorted by triage ascending")
	require.NotContains(t, page, "aria-sort", "no column holds the triage order")
	require.Contains(t, page, `<a href="/console/alerts/`+openCritOld.String()+`" id="first-alert">`, "the skip link's target")
	require.Contains(t, page, `href="#first-alert">Skip to the first alert</a>`)
	require.Regexp(t, `title="received [0-9-]+ [0-9:]+ UTC">1d 6h</time>`, page, "the age of the oldest open critical")
	require.Regexp(t, `title="changed [0-9-]+ [0-9:]+ UTC">15h 0m</time>`, page, "the time since it changed")
	require.Regexp(t, `>(3|4)m</time>`, page, "minutes for a fresh alert")
	// The reverse of the triage order, and back by the explicit default.
	_, page = b.do(http.MethodGet, "/console/?q="+tag+"&sort_by=triage&sort_order=desc", nil)
	rev := order(page)
	for i := range want {
		require.Equal(t, want[len(want)-1-i], rev[i])
	}
	// A column sort is announced on its header, and only there.
	_, page = b.do(http.MethodGet, "/console/?q="+tag+"&sort_by=severity&sort_order=desc", nil)
	require.Regexp(t, `<th scope="col" aria-sort="descending"><a href="[^"]*">severity</a>`, page)
	require.Equal(t, 1, strings.Count(page, "aria-sort="))
	_, page = b.do(http.MethodGet, "/console/?q="+tag+"&sort_by=created_at&sort_order=asc", nil)
	require.Regexp(t, `<th scope="col" aria-sort="ascending"><a href="[^"]*">age</a>`, page)
	// Hostile and wrong sorts are named and ignored: the triage order stays.
	for _, bad := range []string{"triage;DROP TABLE alerts", "updated_at", "TRIAGE", strings.Repeat("t", 3000)} {
		resp, page = b.do(http.MethodGet, "/console/?q="+tag+"&sort_by="+url.QueryEscape(bad)+"&sort_order=sideways", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, bad)
		require.Contains(t, page, "Ignored (not valid): sort.", bad)
		require.Equal(t, want, order(page), bad)
	}
}
