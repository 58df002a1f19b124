package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/store"
)

// withCases wires the case pages as cmd/vigil does (the case rules, comments, the timelines).
func withCases(d *console.Deps) {
	st := d.Store.(*store.Store)
	d.Cases = cases.New(st, alerts.New(st, slog.New(slog.DiscardHandler)), nil)
	d.Comments, d.Timeline, d.CaseTimeline = comments.New(st), timeline.New(st), timeline.New(st)
}

var caseLocation = regexp.MustCompile(`^/console/cases/([0-9a-f-]{36})$`)

// createCase posts the chooser's new-case form and returns the new case's uuid.
func createCase(t *testing.T, b *browser, csrf, title string, ids ...uuid.UUID) uuid.UUID {
	t.Helper()
	form := url.Values{"csrf": {csrf}, "title": {title}}
	for _, id := range ids {
		form.Add("alert_uuid", id.String())
	}
	resp, page := b.do(http.MethodPost, "/console/cases", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	m := caseLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	return uuid.MustParse(m[1])
}

func caseOf(t *testing.T, st *store.Store, alert uuid.UUID) uuid.UUID {
	t.Helper()
	a, err := st.GetAlert(context.Background(), alert)
	require.NoError(t, err)
	if a.CaseUUID == nil {
		return uuid.Nil
	}
	return *a.CaseUUID
}

// The case pages through the console's own forms: a case from three alerts picked on the queue,
// its page (alerts with malice and status, indicators as queue pivots, hostile title inert), the
// list and its filters, moving an alert that is in another case (refused, then confirmed), the
// status graph and closing the case with its alerts (each alert closed through the alert rules, one
// alert_closed each), assignment, and a comment.
func TestCasePagesAndForms(t *testing.T) {
	h := newHarness(t, withCases)
	ctx := context.Background()
	b := h.browser(t)
	key, k := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	b.signIn(key)
	marker := "cui" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	ids := []uuid.UUID{h.alert(t, "case one "+marker), h.alert(t, "case two "+marker), h.alert(t, "case three "+marker)}

	_, page := b.do(http.MethodGet, "/console/?q="+marker, nil)
	require.Contains(t, page, `id="bulk-add-case"`)
	require.Contains(t, page, `id="bulk-new-case"`)
	require.Contains(t, page, `href="/console/cases" id="nav-cases"`)
	csrf := csrfOf(t, page)

	// The chooser, from the queue's multi-select (every alert of the page).
	form := url.Values{"csrf": {csrf}, "apply_to": {"page"}, "action": {"case-new"}, "back": {"/console/?q=" + marker}}
	for _, id := range ids {
		form.Add("page_alert_uuid", id.String())
	}
	resp, page := b.do(http.MethodPost, "/console/cases/pick", form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "New case from 3 alert(s)")
	for _, id := range ids {
		require.Contains(t, page, `name="alert_uuid" value="`+id.String()+`"`)
	}
	noInline(t, page)

	hostile := `<script>document.title='PWNED'</script><img src=x/onerror=alert(1)> LockBit ` + marker
	first := createCase(t, b, csrf, hostile, ids...)
	for _, id := range ids {
		require.Equal(t, first, caseOf(t, h.st, id))
	}
	resp, page = b.do(http.MethodGet, "/console/cases/"+first.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	noInline(t, page)
	require.NotContains(t, page, "<script>document")
	require.NotContains(t, page, "<img src=x")
	require.Contains(t, page, "&lt;img src=x/onerror")
	require.Contains(t, page, "&lt;script&gt;")
	require.Contains(t, page, `<td id="case-alert-count">3</td>`)
	require.Contains(t, page, `<span class="badge mal-Malicious" id="case-malice">Malicious</span>`)
	require.Contains(t, page, `href="/console/?indicator=203.0.113.77&amp;indicator_type=ip"`, "indicators pivot the queue")
	for _, id := range ids {
		require.Contains(t, page, `href="/console/alerts/`+id.String()+`"`)
	}
	require.Contains(t, page, `id="case-to-Investigating"`)
	require.NotContains(t, page, `id="case-close"`, "Open does not go to Closed")
	cs, err := h.st.GetCase(ctx, first)
	require.NoError(t, err)

	// The list: search by title and by case number, filters, hostile values named and ignored.
	_, page = b.do(http.MethodGet, "/console/cases?q="+marker, nil)
	require.Contains(t, page, "1 case(s)")
	require.Contains(t, page, ">"+cs.Number()+"<")
	noInline(t, page)
	_, page = b.do(http.MethodGet, "/console/cases?q="+cs.Number(), nil)
	require.Contains(t, page, first.String())
	_, page = b.do(http.MethodGet, "/console/cases?q="+marker+"&status=Closed", nil)
	require.Contains(t, page, "0 case(s)")
	resp, page = b.do(http.MethodGet, "/console/cases?q="+marker+"&status=%3Cscript%3E&severity=Nope&sort_by=raw&assignee="+
		url.QueryEscape(strings.Repeat("a", 300))+"&page=-4", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ignored (not valid): assignee, severity, sort, status.")
	require.Contains(t, page, "1 case(s)")
	resp, page = b.do(http.MethodGet, "/console/cases?q=a%FF%FEb", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ignored (not valid): search.")

	// Moving an alert that is in another case asks first.
	second := createCase(t, b, csrf, "second "+marker)
	resp, page = b.do(http.MethodPost, "/console/cases/add", url.Values{"csrf": {csrf}, "case_uuid": {second.String()}, "alert_uuid": {ids[0].String()}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, page, `id="move-confirm"`)
	require.Contains(t, page, "is already in "+cs.Number())
	require.Contains(t, page, `action="/console/cases/`+second.String()+`/alerts"`)
	require.Equal(t, first, caseOf(t, h.st, ids[0]), "nothing moved before the confirmation")
	resp, _ = b.do(http.MethodPost, "/console/cases/"+second.String()+"/alerts", url.Values{"csrf": {csrf}, "move": {"true"}, "alert_uuid": {ids[0].String()}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, second, caseOf(t, h.st, ids[0]))
	// A new case from an alert of another case asks too, and keeps its fields for the confirmation.
	resp, page = b.do(http.MethodPost, "/console/cases", url.Values{"csrf": {csrf}, "title": {"third " + marker}, "severity": {"Low"},
		"alert_uuid": {ids[0].String()}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, page, `action="/console/cases"`)
	require.Contains(t, page, `name="severity" value="Low"`)

	// Status: the graph is the case rules'.
	resp, page = b.do(http.MethodPost, "/console/cases/"+first.String()+"/status", url.Values{"csrf": {csrf}, "status": {"Closed"},
		"close_classification": {"True Positive - Suspicious Activity"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, "Cannot move a case from Open to Closed.")
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/status", url.Values{"csrf": {csrf}, "status": {"Investigating"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/assign", url.Values{"csrf": {csrf}, "to": {"me"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cs, err = h.st.GetCase(ctx, first)
	require.NoError(t, err)
	require.Equal(t, store.CaseInvestigating, cs.Status)
	require.Equal(t, k.Name, *cs.Assignee)

	// A comment on the case (the alert page's rules and forms).
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/comments", url.Values{"csrf": {csrf}, "body": {"**Contained** " + marker}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/cases/"+first.String()+"#comments", resp.Header.Get("Location"))
	_, page = b.do(http.MethodGet, "/console/cases/"+first.String(), nil)
	require.Contains(t, page, "<strong>Contained</strong> "+marker)
	require.Contains(t, page, `id="timeline"`)
	require.Contains(t, page, `class="edit-comment"`)
	own, _, err := h.st.ListComments(ctx, store.CaseCommentSubject(first), store.Page{Number: 1, Size: 5})
	require.NoError(t, err)
	require.Len(t, own, 1)
	require.Equal(t, store.ActorConsole, own[0].ActorType)
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/comments/"+own[0].UUID.String()+"/edit",
		url.Values{"csrf": {csrf}, "body": {"Contained, edited " + marker}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = b.do(http.MethodGet, "/console/cases/"+first.String(), nil)
	require.Contains(t, page, "Contained, edited "+marker)
	require.Regexp(t, `edited \d{4}-\d\d-\d\d`, page)
	require.Contains(t, page, `<td>comment_edited</td>`, "the edit is on the merged timeline")

	// Close with its alerts: each closed with the classification through the alert rules.
	class := "True Positive - Suspicious Activity"
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/status", url.Values{"csrf": {csrf}, "status": {"Closed"},
		"close_classification": {class}, "close_alerts": {"true"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cs, err = h.st.GetCase(ctx, first)
	require.NoError(t, err)
	require.Equal(t, store.CaseClosed, cs.Status)
	for _, id := range ids[1:] {
		a, err := h.st.GetAlert(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusClosed, a.Status)
		require.Equal(t, class, *a.CloseClassification)
		evs, n, err := h.st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: []string{"alert_closed"}, Page: store.Page{Number: 1, Size: 10}})
		require.NoError(t, err)
		require.Equal(t, 1, n, "one alert_closed per alert")
		require.Equal(t, store.ActorConsole, evs[0].ActorType)
	}
	a0, err := h.st.GetAlert(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, "Open", a0.Status, "the moved alert is not this case's any more")
	_, page = b.do(http.MethodGet, "/console/cases/"+first.String(), nil)
	require.Contains(t, page, `id="case-to-Open"`, "a Closed case reopens")
	require.NotContains(t, page, `id="case-close"`)

	// Remove an alert; one not in the case is a 404 page.
	resp, _ = b.do(http.MethodPost, "/console/cases/"+first.String()+"/alerts/"+ids[1].String()+"/remove", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, uuid.Nil, caseOf(t, h.st, ids[1]))
	resp, page = b.do(http.MethodPost, "/console/cases/"+first.String()+"/alerts/"+ids[1].String()+"/remove", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, page, `id="error"`)

	// The alert page offers its case and "Add to case".
	_, page = b.do(http.MethodGet, "/console/alerts/"+ids[0].String(), nil)
	require.Contains(t, page, `href="/console/cases/`+second.String()+`" id="alert-case"`)
	require.Contains(t, page, `id="alert-add-case"`)
}

// Malformed, oversized, wrong-type and hostile case forms: a page with the rule's words (never a
// 5xx) and no change; no CSRF token → 403; a read-only key sees the pages without a form and its
// forged posts are refused.
func TestCaseFormsRefuseHostileInput(t *testing.T) {
	h := newHarness(t, withCases)
	ctx := context.Background()
	b := h.browser(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	b.signIn(key)
	marker := "cuh" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	id := h.alert(t, "hostile "+marker)
	_, page := b.do(http.MethodGet, "/console/", nil)
	csrf := csrfOf(t, page)
	cid := createCase(t, b, csrf, "target "+marker)
	before, err := h.st.GetCase(ctx, cid)
	require.NoError(t, err)

	type post struct {
		path   string
		form   url.Values
		status int
		words  string
	}
	cp := "/console/cases/" + cid.String()
	posts := map[string]post{
		"create: blank title":         {"/console/cases", url.Values{"title": {"   "}, "alert_uuid": {id.String()}}, 422, "A title must say something."},
		"create: oversized title":     {"/console/cases", url.Values{"title": {strings.Repeat("t", 501)}}, 422, "at most 500"},
		"create: NUL title":           {"/console/cases", url.Values{"title": {"a\x00b"}}, 422, `id="error"`},
		"create: bad severity":        {"/console/cases", url.Values{"title": {"x"}, "severity": {"Apocalyptic"}}, 422, "Input should be one of"},
		"create: huge description":    {"/console/cases", url.Values{"title": {"x"}, "description": {strings.Repeat("d", 50001)}}, 422, "at most 50000"},
		"create: malformed alerts":    {"/console/cases", url.Values{"title": {"x"}, "alert_uuid": {"nope", "' OR 1=1 --"}}, 422, "No alert was selected"},
		"create: repeated alerts":     {"/console/cases", url.Values{"title": {"x"}, "alert_uuid": {id.String(), id.String()}}, 422, "Repeated alert uuid."},
		"create: too many alerts":     {"/console/cases", url.Values{"title": {"x"}, "alert_uuid": manyUUIDs(501)}, 422, "at most 500 items"},
		"create: unknown alert":       {"/console/cases", url.Values{"title": {"x"}, "alert_uuid": {uuid.NewString()}}, 404, `id="error"`},
		"create: move not a flag":     {"/console/cases", url.Values{"title": {"x"}, "move": {"yes please"}}, 422, "“move” is a confirmation"},
		"pick: nothing":               {"/console/cases/pick", url.Values{}, 422, "No alert was selected"},
		"pick: too many":              {"/console/cases/pick", url.Values{"alert_uuid": manyUUIDs(501)}, 422, "At most 500"},
		"add: malformed case":         {"/console/cases/add", url.Values{"case_uuid": {"../../etc"}, "alert_uuid": {id.String()}}, 422, "Choose the case"},
		"add: unknown case":           {"/console/cases/add", url.Values{"case_uuid": {uuid.NewString()}, "alert_uuid": {id.String()}}, 404, "No such case."},
		"add: no alerts":              {cp + "/alerts", url.Values{}, 422, "No alert was selected"},
		"add: move not a flag":        {cp + "/alerts", url.Values{"move": {"1"}, "alert_uuid": {id.String()}}, 422, "“move” is a confirmation"},
		"status: unknown":             {cp + "/status", url.Values{"status": {"Done"}}, 422, "Input should be one of"},
		"status: closed, no class":    {cp + "/status", url.Values{"status": {"Closed"}}, 422, "close_classification is required"},
		"status: bad class":           {cp + "/status", url.Values{"status": {"Closed"}, "close_classification": {"<b>x</b>"}}, 422, "Input should be one of"},
		"status: close_alerts wrong":  {cp + "/status", url.Values{"status": {"Closed"}, "close_alerts": {"maybe"}}, 422, "is a checkbox"},
		"status: close_alerts alone":  {cp + "/status", url.Values{"close_alerts": {"true"}}, 422, "close_alerts goes with status Closed"},
		"assign: oversized":           {cp + "/assign", url.Values{"assignee": {strings.Repeat("a", 201)}}, 422, `id="error"`},
		"assign: NUL":                 {cp + "/assign", url.Values{"assignee": {"a\x00b"}}, 422, `id="error"`},
		"assign: escape":              {cp + "/assign", url.Values{"assignee": {"a\x1b[2Jb"}}, 422, `id="error"`},
		"comment: NUL":                {cp + "/comments", url.Values{"body": {"a\x00b"}}, 422, "NUL characters are not accepted."},
		"comment: oversized":          {cp + "/comments", url.Values{"body": {strings.Repeat("c", 20001)}}, 422, "at most 20000 character"},
		"comment: other's edit":       {cp + "/comments/" + uuid.NewString() + "/edit", url.Values{"body": {"x"}}, 404, "No such comment."},
		"remove: malformed alert":     {cp + "/alerts/nope/remove", url.Values{}, 404, `id="error"`},
		"path: malformed case":        {"/console/cases/not-a-uuid/status", url.Values{"status": {"Investigating"}}, 404, "No such case."},
		"path: unknown case":          {"/console/cases/" + uuid.NewString() + "/status", url.Values{"status": {"Investigating"}}, 404, "No such case."},
		"path: unknown case, comment": {"/console/cases/" + uuid.NewString() + "/comments", url.Values{"body": {"x"}}, 404, `id="error"`},
	}
	for name, p := range posts {
		p.form.Set("csrf", csrf)
		p.form.Set("back", "https://evil.example/")
		resp, page := b.do(http.MethodPost, p.path, p.form)
		require.Less(t, resp.StatusCode, 500, name)
		require.Equal(t, p.status, resp.StatusCode, "%s: %s", name, page)
		require.Contains(t, page, p.words, name)
		require.NotContains(t, page, "evil.example", "%s: back never leaves the console", name)
		noInline(t, page)
	}
	after, err := h.st.GetCase(ctx, cid)
	require.NoError(t, err)
	require.Equal(t, before, after, "no refused form changed the case")
	require.Equal(t, uuid.Nil, caseOf(t, h.st, id), "nor put the alert in a case")
	_, n, err := h.st.ListComments(ctx, store.CaseCommentSubject(cid), store.Page{Number: 1, Size: 10})
	require.NoError(t, err)
	require.Zero(t, n)

	// No token, a cross-site post: refused before any rule.
	resp, _ := b.do(http.MethodPost, cp+"/status", url.Values{"status": {"Investigating"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = b.do(http.MethodPost, cp+"/status", url.Values{"csrf": {csrf}, "status": {"Investigating"}}, "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// A read-only key reads every page and changes nothing.
	reader, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	rb := h.browser(t)
	rb.signIn(reader)
	_, page = rb.do(http.MethodGet, "/console/?q="+marker, nil)
	require.NotContains(t, page, "bulk-add-case")
	rcsrf := csrfOf(t, page) // the sign-out form's token: a forged form can carry it
	resp, page = rb.do(http.MethodGet, "/console/cases?q="+marker, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, cid.String())
	resp, page = rb.do(http.MethodGet, cp, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, form := range []string{"case-assign-me", "case-to-Investigating", "case-close", "add-comment", "remove-alert"} {
		require.NotContains(t, page, form)
	}
	_, page = rb.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	require.NotContains(t, page, "alert-add-case")
	for _, p := range []string{"/console/cases", "/console/cases/pick", "/console/cases/add", cp + "/alerts", cp + "/status", cp + "/assign",
		cp + "/comments", cp + "/alerts/" + id.String() + "/remove"} {
		resp, page := rb.do(http.MethodPost, p, url.Values{"csrf": {rcsrf}, "title": {"reader"}, "status": {"Investigating"}, "to": {"me"},
			"case_uuid": {cid.String()}, "alert_uuid": {id.String()}, "body": {"reader"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
		require.Contains(t, page, "lacks the scope alerts:write", p)
	}
	after, err = h.st.GetCase(ctx, cid)
	require.NoError(t, err)
	require.Equal(t, before, after, "the read-only key changed nothing")
	require.Equal(t, uuid.Nil, caseOf(t, h.st, id))
}
