package api

import (
	"context"
	"fmt"
	"net/http"
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
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// newCasesConsoleServer is the API (alert routes included, to read the alerts back) with the console
// wired as cmd/vigil wires it, case pages included.
func newCasesConsoleServer(t *testing.T) *testServer {
	t.Helper()
	box, err := secretbox.New(testEncryptionKey)
	require.NoError(t, err)
	return newAlertServer(t, func(_ *Config, d *Deps) {
		st := testStore(t)
		al := alerts.New(st, d.Log)
		d.Console = console.New(console.Deps{Auth: d.Auth, Box: box, Store: st, Alerts: al, Log: d.Log,
			Comments: comments.New(st), Timeline: timeline.New(st), Cases: cases.New(st, al, d.Log), CaseTimeline: timeline.New(st)})
	})
}

// clearInput empties an untouched input (its value attribute) before typing into it.
func (c *cdp) clearInput(selector string) {
	c.t.Helper()
	id := c.query(selector)
	require.NotZero(c.t, id, selector)
	c.call("DOM.setAttributeValue", map[string]any{"nodeId": id, "name": "value", "value": ""}, nil)
}

// The console's cases in headless Chromium, without JavaScript for the work and with it for the
// hostile content: three alerts ticked on the queue become a new case ("New case from selection"),
// one of them is moved to another case from its alert page (the ALERT_IN_OTHER_CASE refusal shown,
// then "Move" on confirmation), the case is moved to Investigating and closed with "close its
// alerts too" (each alert Closed with the classification over REST, one alert_closed event each);
// hostile case titles, descriptions and comments stay inert with scripts on; a read-only key sees
// the case and no form, and its forged post is refused.
func TestConsoleCasesInHeadlessChromium(t *testing.T) {
	ts := newCasesConsoleServer(t)
	st := ts.Store
	ctx := context.Background()
	handle := "lena.berg." + uuid.NewString()[:6]
	analyst := namedKey(t, st, handle, false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	omar := namedKey(t, st, "omar.haddad", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	reader := namedKey(t, st, "reader", false, auth.ScopeAlertsRead)
	tag := "c30-" + uuid.NewString()[:8]
	ids := make([]uuid.UUID, 4)
	for i := range ids {
		res, err := st.Ingest(ctx, store.IngestAlert{Title: fmt.Sprintf("LockBit stage %d %s", i, tag), Severity: []string{"High", "Medium", "Low", "Low"}[i],
			SourceName: "generic", Fingerprint: uuid.NewString(), Tags: []string{tag}, RawPayload: []byte(`{}`),
			Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
		require.NoError(t, err)
		ids[i] = res.AlertUUID
	}
	svc := cases.New(st, alerts.New(st, nil), nil)
	hostileTitle := `<script>document.title='PWNED'</script><img src=x onerror="document.title='PWNED'"> other ` + tag
	hostileDesc := "</pre><script>document.title='PWNED'</script><iframe src=\"https://evil.example\"></iframe> DESC-" + tag
	other, err := svc.Create(ctx, cases.Create{Title: hostileTitle, Description: &hostileDesc, AlertUUIDs: []uuid.UUID{ids[3]}},
		store.Actor{Type: store.ActorAPI})
	require.NoError(t, err)
	hostileComment := "<script>document.title='PWNED'</script> [x](javascript:document.title='PWNED') <img src=x onerror=\"document.title='PWNED'\"> HOSTILE-C"
	r := ts.do(t, http.MethodPost, "/v1/cases/"+other.UUID.String()+"/comments", omar, map[string]any{"body": hostileComment})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))

	b := startChromium(t)
	b.open()
	b.navigate(ts.URL + "/console/")
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.click("#signin")
	b.waitFor("#queue")

	// Tick three alerts on the queue: New case from selection.
	b.navigate(ts.URL + "/console/?tags=" + tag + "&sort_by=title&sort_order=asc")
	b.waitForText("4 alert(s)")
	for _, id := range ids[:3] {
		b.check(`input.pick[value="` + id.String() + `"]`)
	}
	b.click("#bulk-new-case")
	page := b.waitFor("#new-case-title")
	require.Contains(t, page, "New case from 3 alert(s)")
	require.NotContains(t, page, `id="add-existing"`)
	title := "LockBit intrusion on host-7 " + tag
	b.clearInput("#new-case-title")
	b.typeInto("#new-case-title", title)
	b.typeInto("#new-case-description", "Three stages of one intrusion.")
	b.click("#create-case")
	page = b.waitFor("#case-alert-table")
	require.Contains(t, page, title)
	require.Contains(t, page, `<td id="case-alert-count">3</td>`)
	first, _, err := st.ListCases(ctx, store.CaseFilter{Query: title, Page: store.Page{Number: 1, Size: 2}})
	require.NoError(t, err)
	require.Len(t, first, 1)
	caseID := first[0].UUID
	for _, id := range ids[:3] {
		require.Contains(t, page, `href="/console/alerts/`+id.String()+`"`)
	}
	b.screenshot("console-case")

	// Move one of them to the other case, from its alert page: refused first, then confirmed.
	b.navigate(ts.URL + "/console/alerts/" + ids[2].String())
	b.waitFor("#alert-case")
	b.click("#alert-add-case")
	b.waitFor("#pick-case")
	b.selectOption("#pick-case", other.UUID.String())
	b.click("#add-to-case")
	page = b.waitFor("#move-confirm")
	require.Contains(t, page, "LockBit stage 2 "+tag+"” is already in "+first[0].Number())
	a, err := st.GetAlert(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, caseID, *a.CaseUUID, "nothing moves before the confirmation")
	b.screenshot("console-case-move")
	b.click("#move-confirm-button")
	page = b.waitFor("#case-alert-table")
	require.Contains(t, page, ids[2].String())
	a, err = st.GetAlert(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, other.UUID, *a.CaseUUID)

	// Investigate, then close with its alerts.
	b.navigate(ts.URL + "/console/cases/" + caseID.String())
	b.waitFor("#case-to-Investigating")
	b.click("#case-assign-me")
	b.waitForText(`<td id="case-assignee"><a href="/console/cases?assignee=` + handle + `">` + handle)
	b.click("#case-to-Investigating")
	b.waitFor("#case-close")
	class := "True Positive - Suspicious Activity"
	b.selectOption("#case-classification", class)
	b.check("#case-close-alerts")
	b.click("#case-close-button")
	page = b.waitFor("#case-to-Open")
	require.Contains(t, page, `<td id="case-status">Closed (`+class+`)</td>`)
	for _, id := range ids[:2] {
		r := ts.do(t, http.MethodGet, "/v1/alerts/"+id.String(), reader, nil)
		require.Equal(t, http.StatusOK, r.Status)
		d := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "Closed", d["status"])
		require.Equal(t, class, d["close_classification"])
		evs, n, err := st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: []string{"alert_closed"}, Page: store.Page{Number: 1, Size: 5}})
		require.NoError(t, err)
		require.Equal(t, 1, n, "one activity event per alert closed")
		require.Equal(t, store.ActorConsole, evs[0].ActorType)
	}
	a, err = st.GetAlert(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, "Open", a.Status, "the moved alert belongs to the other case now")
	page = b.waitFor("#timeline")
	require.Contains(t, section(t, page, "timeline"), "case_closed")
	b.screenshot("console-case-closed")

	// The list.
	b.click("#nav-cases")
	b.waitFor("#cases")
	b.typeInto("#case-search", tag)
	b.click("#case-filter")
	page = b.waitForText("2 case(s)")
	require.Contains(t, page, first[0].Number())
	require.Contains(t, page, other.Number())
	b.screenshot("console-cases")

	// Hostile title, description and comment: inert with scripts on.
	b.scripts(true)
	b.navigate(ts.URL + "/console/cases/" + other.UUID.String())
	page = b.waitFor("#case-alert-table")
	require.Contains(t, page, "HOSTILE-C")
	require.Contains(t, page, "DESC-"+tag)
	lower := strings.ToLower(page[strings.Index(page, "<main"):])
	for _, bad := range []string{"<script>document", "<img", "<iframe", `href="javascript`} {
		require.NotContains(t, lower, bad, "hostile markup %q rendered inert", bad)
	}
	require.Zero(t, b.jsNumber(`document.querySelectorAll('main script, main img, main iframe, [onerror], a[href^="javascript"]').length`),
		"no hostile element or attribute in the page")
	var doc struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &doc)
	require.True(t, strings.HasPrefix(doc.Result.Value, other.Number()+" "), "no hostile script ran: the title is still the page's (%q)", doc.Result.Value)
	b.navigate(ts.URL + "/console/cases?q=" + tag)
	b.waitFor("#cases")
	b.call("Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &doc)
	require.Equal(t, "Cases · Vigil", doc.Result.Value, "no hostile script ran on the list")
	b.scripts(false)

	// A read-only key sees the case and no form; its forged post is refused.
	b.click(`header button[type="submit"]`) // sign out
	b.waitFor("#signin")
	b.typeInto("#key", reader)
	b.click("#signin")
	page = b.waitFor("#queue")
	require.NotContains(t, page, "bulk-new-case")
	b.navigate(ts.URL + "/console/cases/" + other.UUID.String())
	page = b.waitFor("#case-alert-table")
	for _, form := range []string{"case-assign-me", "case-to-Investigating", "case-close", "add-comment", "remove-alert"} {
		require.NotContains(t, page, form)
	}
	b.scripts(true)
	b.call("Runtime.evaluate", map[string]any{"expression": `(function () {
		var f = document.createElement("form"); f.method = "post"; f.action = "/console/cases/` + other.UUID.String() + `/status";
		[["csrf", document.querySelector('input[name="csrf"]').value], ["status", "Investigating"]].forEach(function (kv) {
			var i = document.createElement("input"); i.type = "hidden"; i.name = kv[0]; i.value = kv[1]; f.appendChild(i); });
		document.body.appendChild(f); f.submit(); })()`}, nil)
	b.waitForText("lacks the scope alerts:write")
	got, err := st.GetCase(ctx, other.UUID)
	require.NoError(t, err)
	require.Equal(t, store.CaseOpen, got.Status, "the read-only key's post changed nothing")
}
