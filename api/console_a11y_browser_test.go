package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// axe runs axe-core (pinned in api/testdata/axe/package-lock.json, installed by npm ci into a
// temporary directory: node_modules never lands in the tree) inside the console's pages.
type axe struct {
	src string // axe.min.js
}

// newAxe installs the pinned axe-core. It fails, never skips, without npm (.ci/run has it).
func newAxe(t *testing.T) *axe {
	t.Helper()
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "npm is required for the accessibility test (axe-core)")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "axe", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (axe-core): %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	require.NoError(t, err)
	return &axe{src: string(src)}
}

// axeViolation is what the test reports of one axe-core violation.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// check runs axe-core (every rule it runs by default: WCAG 2.x A and AA and its best practices) on
// the page b shows, at 1280×800 and on a phone (390×844), and fails on any violation; on the phone
// the page must not scroll sideways nor be zoomed out to fit (scrollWidth ≤ innerWidth ≤ 390). Screenshots of both are saved as
// artefacts named after page. A new page is one more line: a.check(t, b, "case").
func (a *axe) check(t *testing.T, b *cdp, page string) {
	t.Helper()
	b.scripts(true)
	for _, size := range []struct {
		name   string
		w, h   int
		mobile bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": size.w, "height": size.h, "deviceScaleFactor": 1, "mobile": size.mobile}, nil)
		var out struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
			Exception *struct {
				Text string `json:"text"`
			} `json:"exceptionDetails"`
		}
		if b.evalString("typeof window.axe") != "object" {
			b.call("Runtime.evaluate", map[string]any{"expression": a.src + "\n;0"}, nil)
		}
		b.call("Runtime.evaluate", map[string]any{"expression": `axe.run(document).then(function (r) { return JSON.stringify(r.violations); })`,
			"awaitPromise": true, "returnByValue": true}, &out)
		require.Nil(t, out.Exception, "%s (%s): axe-core did not run", page, size.name)
		var violations []axeViolation
		require.NoError(t, json.Unmarshal([]byte(out.Result.Value), &violations), "%s (%s): %s", page, size.name, out.Result.Value)
		var msg strings.Builder
		for _, v := range violations {
			fmt.Fprintf(&msg, "\n  %s (%s): %s", v.ID, v.Impact, v.Help)
			for _, n := range v.Nodes {
				fmt.Fprintf(&msg, "\n    %v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
			}
		}
		require.Empty(t, violations, "%s at %s: axe-core violations:%s", page, size.name, msg.String())
		if size.mobile {
			// Against the phone's width itself: a mobile viewport zooms out to fit wider content, and
			// innerWidth grows with it.
			scroll, inner := b.jsNumber("document.documentElement.scrollWidth"), b.jsNumber("window.innerWidth")
			if scroll > float64(size.w) { // name what sticks out, for the failure below
				t.Logf("%s: wider than %d px: %s", page, size.w, b.evalString(fmt.Sprintf(`Array.prototype.filter.call(document.querySelectorAll("body *"),
					function (e) { return e.getBoundingClientRect().right > %d; }).slice(-6).map(function (e) {
					return e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right); }).join(" | ")`, size.w)))
			}
			require.LessOrEqual(t, scroll, inner, "%s scrolls sideways at %d px (scrollWidth %v)", page, size.w, scroll)
			require.LessOrEqual(t, scroll, float64(size.w), "%s is wider than the %d px phone (scrollWidth %v, innerWidth %v)", page, size.w, scroll, inner)
		}
		b.screenshotAt("a11y-"+page+"-"+size.name, size.w, size.h, size.mobile)
	}
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// evalString evaluates expression on the page and returns its value as a string.
func (c *cdp) evalString(expression string) string {
	c.t.Helper()
	var out struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	c.call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &out)
	return fmt.Sprint(out.Result.Value)
}

// keyPress types one key as a keyboard does, with its code, so a focused link, button or form acts
// on it (Enter activates, Tab moves the focus; shift for Shift+Tab or "?").
func (c *cdp) keyPress(key string, shift bool) {
	c.t.Helper()
	codes := map[string]int{"Enter": 13, "Tab": 9, "Escape": 27, "ArrowDown": 40, "ArrowUp": 38, " ": 32}
	down := map[string]any{"type": "rawKeyDown", "key": key, "code": key, "windowsVirtualKeyCode": codes[key]}
	if shift {
		down["modifiers"] = 8
	}
	switch key {
	case "Enter":
		down["type"], down["text"] = "keyDown", "\r"
	case "Tab", "Escape", "ArrowDown", "ArrowUp":
	default:
		down = map[string]any{"type": "keyDown", "key": key, "text": key, "windowsVirtualKeyCode": int(strings.ToUpper(key)[0])}
		if shift {
			down["modifiers"] = 8
		}
	}
	c.call("Input.dispatchKeyEvent", down, nil)
	up := map[string]any{"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": down["windowsVirtualKeyCode"]}
	c.call("Input.dispatchKeyEvent", up, nil)
}

// tabTo presses Tab until the focused element matches selector and returns how many Tabs it took
// (failing after max).
func (c *cdp) tabTo(selector string, max int) int {
	c.t.Helper()
	q, err := json.Marshal(selector)
	require.NoError(c.t, err)
	for n := 1; n <= max; n++ {
		c.keyPress("Tab", false)
		if c.evalString("document.activeElement && document.activeElement.matches("+string(q)+") ? 'yes' : 'no'") == "yes" {
			return n
		}
	}
	c.t.Fatalf("%d Tabs never reached %s (at %s)", max, selector, c.evalString("document.activeElement && document.activeElement.outerHTML.slice(0, 200)"))
	return 0
}

// waitJS polls until expression is true on the page. It waits across navigations: an evaluation the
// page's navigation cut off ("Inspected target navigated or closed", "Execution context was
// destroyed") is one more "not yet".
func (c *cdp) waitJS(expression string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var out struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
		}
		err := c.try("Runtime.evaluate", map[string]any{"expression": "!!(" + expression + ")", "returnByValue": true}, &out)
		if err != nil && !strings.Contains(err.Error(), "navigated or closed") && !strings.Contains(err.Error(), "context was destroyed") {
			require.NoError(c.t, err, "Runtime.evaluate")
		}
		if err == nil && out.Result.Value == true {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%s never held", expression)
}

// An analyst's shift by keyboard alone in headless Chromium, each outcome read back over REST: sign
// in, search by a hash, tick three alerts (j, x), assign them to herself (a), close them with a
// classification (c), approve an agent's gated run from the approvals page. On the way: Enter on
// a focused link or button does what it says (never opens the selected alert); the skip link
// reaches the first alert in one Tab; the help overlay (?); an ended session is said so by the live
// refresh, which offers to sign in and returns to the queue as it was. Then axe-core on every page
// at desktop and phone size, with no sideways scroll on the phone. Screenshots are artefacts.
func TestConsoleKeyboardShiftAndAccessibility(t *testing.T) {
	ax := newAxe(t)
	h := newRunHarness(t, "-kbd")
	st := h.ts.Store
	ctx := context.Background()
	handle := "sam.keys." + uuid.NewString()[:6]
	analyst := mustKeyWith(t, st, func(k *store.APIKey) { k.Name = handle }, auth.ScopeAlertsRead, auth.ScopeAlertsWrite,
		auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead, auth.ScopeWorkflowsWrite, auth.ScopeAdmin)
	_, agent, _, _ := h.keys(t)
	path := "/kbd/" + uuid.NewString()
	wf := h.createWorkflow(t, analyst, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	require.Equal(t, "pending_approval", ex.Status)

	hash := strings.ReplaceAll(uuid.NewString()+uuid.NewString(), "-", "") // stored as ingest normalizes it
	var ids []uuid.UUID
	for i, sev := range []string{"Critical", "High", "Low", "Medium"} {
		res, err := st.Ingest(ctx, store.IngestAlert{Title: fmt.Sprintf("Ransomware dropper %d <b>seen</b>", i), Severity: sev, SourceName: "generic",
			Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
		require.NoError(t, err)
		if i < 3 { // three carry the hash; the fourth is another alert
			_, _, err = st.LinkIndicators(ctx, res.AlertUUID, []store.IndicatorKey{{Type: "hash_sha256", Value: hash}}, "api")
			require.NoError(t, err)
		}
		ids = append(ids, res.AlertUUID)
	}
	rest := newAlertServer(t, nil) // the alert routes over the same database (the run harness serves the workflow ones)
	restAlert := func(id uuid.UUID) map[string]any {
		r := rest.do(t, http.MethodGet, "/v1/alerts/"+id.String(), analyst, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		return r.JSON(t)["data"].(map[string]any)
	}

	b := startChromium(t)
	b.open()
	b.scripts(true)
	// onQueue waits for a queue page newer than the last one it returned (that page's window is
	// marked) with selector, and for its script's keys to listen.
	onQueue := func(selector string) string {
		b.waitJS(`!window.vigilSeen && document.querySelector("#queue[data-keys]")`)
		page := b.waitFor(selector)
		b.evalString("window.vigilSeen = true")
		return page
	}
	// Asked for the queue filtered by the hash: sign in by keyboard, and come back to it.
	asked := "/console/?q=" + hash
	b.navigate(h.ts.URL + asked)
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.keyPress("Enter", false)
	page := onQueue("#pivot")
	require.Contains(t, page, "3 alert(s)", "back at the queue asked for, filtered by the hash")
	require.Equal(t, asked, b.evalString("location.pathname + location.search"))

	// No key is taken while typing in a field: j, x, a, c and ? typed into the search box are text
	// (replacing the search, which / selects).
	b.keyPress("/", false)
	for _, k := range []string{"j", "x", "a", "c", "?"} {
		b.keyPress(k, k == "?")
	}
	require.Equal(t, "jxac?", b.evalString(`document.getElementById("search").value`), "typed over the prefilled hash (/ selects it)")
	require.Equal(t, "0", b.evalString(`document.querySelectorAll("tr.sel, input.pick:checked, dialog[open]").length`))

	// Search by the hash with the keyboard: "/" focuses the search, Enter filters.
	b.navigate(h.ts.URL + "/console/")
	onQueue("#queue")
	b.keyPress("/", false)
	require.Equal(t, "search", b.evalString("document.activeElement.id"))
	b.call("Input.insertText", map[string]any{"text": strings.ToUpper(hash)}, nil) // the pivot normalizes it
	b.keyPress("Enter", false)
	onQueue("#pivot")
	b.waitJS(`document.getElementById("total") && /^3 alert/.test(document.getElementById("total").textContent)`)

	// The skip link: one Tab, Enter, and the first alert has the focus.
	require.Equal(t, 1, b.tabTo(`a.skip[href="#first-alert"]`, 3), "the first Tab reaches the skip link")
	b.keyPress("Enter", false)
	b.waitJS(`document.activeElement && document.activeElement.id === "first-alert"`)
	// With an alert selected, Enter on the focused Filter button filters (it used to open the alert).
	b.keyPress("j", false)
	b.waitJS(`document.querySelector("tr.sel")`)
	b.keyPress("/", false)
	n := b.tabTo("#filter", 40)
	t.Logf("from the search box to the Filter button: %d Tabs", n)
	b.keyPress("Enter", false)
	onQueue("#pivot")
	require.Equal(t, "/console/", b.evalString("location.pathname"), "Enter on Filter filtered, it did not open the selected alert")
	b.keyPress("?", true)
	b.waitJS(`document.getElementById("keys-help").open`)
	b.screenshot("kbd-help")
	b.keyPress("Escape", false)
	b.waitJS(`!document.getElementById("keys-help").open`)

	// Select three (j, x) and assign them to me (a).
	for range 3 {
		b.keyPress("j", false)
		b.keyPress("x", false)
	}
	require.Equal(t, "3", b.evalString(`document.querySelectorAll("input.pick:checked").length`))
	b.screenshot("kbd-three-ticked")
	b.keyPress("a", false)
	page = b.waitFor("#bulk-summary")
	require.Contains(t, page, `<strong id="bulk-succeeded">3</strong>`)
	for _, id := range ids[:3] {
		require.Equal(t, handle, restAlert(id)["assignee"], "assigned to me, as REST reads it")
	}
	require.Nil(t, restAlert(ids[3])["assignee"], "the alert without the hash is untouched")
	// Back to the queue by keyboard: Tab to the link, Enter.
	b.tabTo("#bulk-back", 20)
	b.keyPress("Enter", false)
	onQueue("#pivot")

	// Close the three (c): the dialog asks the classification; ArrowDown picks the second one.
	for range 3 {
		b.keyPress("j", false)
		b.keyPress("x", false)
	}
	b.keyPress("c", false)
	b.waitJS(`document.getElementById("close-dialog").open && document.activeElement.id === "close-as"`)
	b.keyPress("ArrowDown", false)
	classification := b.evalString(`document.getElementById("close-as").value`)
	require.Equal(t, store.CloseClassifications()[1], classification)
	b.screenshot("kbd-close-dialog")
	b.tabTo("#close-go", 3)
	b.keyPress("Enter", false)
	page = b.waitFor("#bulk-summary")
	require.Contains(t, page, `<strong id="bulk-succeeded">3</strong>`, page)
	for _, id := range ids[:3] {
		a := restAlert(id)
		require.Equal(t, store.StatusClosed, a["status"])
		require.Equal(t, classification, a["close_classification"])
	}
	require.Equal(t, store.StatusOpen, restAlert(ids[3])["status"])

	// Approve the agent's gated run: Tab to Approvals in the header, Enter; Tab to Approve, Enter.
	b.tabTo(`nav a[href="/console/approvals"]`, 10)
	b.keyPress("Enter", false)
	b.waitFor("#approval-" + ex.ApprovalRequestUUID.String())
	// The inbox lists the soonest to expire first, and other tests of the package may leave pending
	// requests of their own before this card in the shared database: the bound allows for them.
	b.tabTo("#approval-"+ex.ApprovalRequestUUID.String()+` button[value="approve"]`, 200)
	b.keyPress("Enter", false)
	// Back on the approvals page without this card (other tests of the package may have pending
	// requests of their own in the shared database, so the page need not be empty).
	b.waitJS(`location.pathname === "/console/approvals" && document.querySelector("main h1") !== null && !document.getElementById("approval-` + ex.ApprovalRequestUUID.String() + `")`)
	r := h.ts.do(t, http.MethodGet, "/v1/workflow-approvals/"+ex.ApprovalRequestUUID.String(), analyst, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "approved", r.JSON(t)["data"].(map[string]any)["status"], string(r.Body))
	require.Eventually(t, func() bool {
		r := h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+ex.RunUUID.String(), analyst, nil)
		return r.Status == http.StatusOK && r.JSON(t)["data"].(map[string]any)["status"] == store.RunSucceeded
	}, 30*time.Second, 100*time.Millisecond, "the approved run succeeded (REST)")

	// Honest live state: the session ends (its cookie gone) and the queue says so, offering to sign
	// in and come back to the queue as it was.
	b.navigate(h.ts.URL + "/console/?q=" + hash)
	onQueue("#pivot")
	b.waitJS(`/up to date/.test(document.getElementById("live").textContent)`)
	b.call("Network.clearBrowserCookies", nil, nil)
	b.waitFor("#live-expired")
	require.NotContains(t, b.evalString(`document.getElementById("live").textContent`), "up to date")
	b.screenshot("kbd-session-ended")
	b.tabTo("#live-signin", 60)
	b.keyPress("Enter", false)
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.keyPress("Enter", false)
	onQueue("#pivot")
	require.Equal(t, "/console/?q="+hash, b.evalString("location.pathname + location.search"))

	// axe-core on every page, desktop and phone; no sideways scroll on the phone.
	b.navigate(h.ts.URL + "/console/")
	b.waitFor("#queue")
	ax.check(t, b, "queue")
	b.navigate(h.ts.URL + "/console/alerts/" + ids[0].String())
	b.waitFor("#indicators")
	ax.check(t, b, "alert")
	ex2 := h.execute(t, agent, wf, map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.9", "reason": "beacon <b>again</b>", "confidence": 0.7})
	b.navigate(h.ts.URL + "/console/approvals")
	b.waitFor("#approval-" + ex2.ApprovalRequestUUID.String())
	ax.check(t, b, "approvals")
	b.navigate(h.ts.URL + "/console/runs/" + ex.RunUUID.String())
	b.waitFor("#run-status")
	ax.check(t, b, "run")
	b.navigate(h.ts.URL + "/console/runs")
	b.waitFor("main")
	ax.check(t, b, "runs")
	b.navigate(h.ts.URL + "/console/dashboard")
	b.waitFor("#alerts-over-time")
	ax.check(t, b, "dashboard")
	b.navigate(h.ts.URL + "/console/audit")
	b.waitFor("main h1")
	ax.check(t, b, "audit")
	cr := h.ts.do(t, http.MethodPost, "/v1/cases", analyst, map[string]any{
		"title": "Beacon <b>intrusion</b>", "alert_uuids": []string{ids[0].String(), ids[1].String(), ids[2].String()}})
	require.Equal(t, http.StatusCreated, cr.Status, string(cr.Body))
	b.navigate(h.ts.URL + "/console/cases/" + cr.JSON(t)["data"].(map[string]any)["uuid"].(string))
	b.waitFor("#case-status")
	ax.check(t, b, "case")
	b.navigate(h.ts.URL + "/console/cases")
	b.waitFor("#cases")
	ax.check(t, b, "cases")
	b.navigate(h.ts.URL + "/console/alerts/" + uuid.NewString())
	b.waitFor("#back-to-queue")
	ax.check(t, b, "not-found")
	b.call("Network.clearBrowserCookies", nil, nil)
	b.navigate(h.ts.URL + "/console/login")
	b.waitFor("#signin")
	ax.check(t, b, "sign-in")
}
