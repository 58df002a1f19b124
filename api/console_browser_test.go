package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// selectOption chooses the option of value in select (no JavaScript runs: the option's selected
// attribute is what the form submits).
func (c *cdp) selectOption(selectSel, value string) {
	c.t.Helper()
	var doc struct {
		Root struct {
			NodeID int `json:"nodeId"`
		} `json:"root"`
	}
	c.call("DOM.getDocument", map[string]any{"depth": 1}, &doc)
	var all struct {
		NodeIDs []int `json:"nodeIds"`
	}
	c.call("DOM.querySelectorAll", map[string]any{"nodeId": doc.Root.NodeID, "selector": selectSel + " option"}, &all)
	for _, id := range all.NodeIDs {
		_ = c.try("DOM.removeAttribute", map[string]any{"nodeId": id, "name": "selected"}, nil)
	}
	id := c.query(selectSel + ` option[value="` + value + `"]`)
	require.NotZero(c.t, id, "%s has %s", selectSel, value)
	c.call("DOM.setAttributeValue", map[string]any{"nodeId": id, "name": "selected", "value": "selected"}, nil)
}

// check ticks the checkbox selector (its checked attribute, which an untouched box reflects).
func (c *cdp) check(selector string) {
	c.t.Helper()
	id := c.query(selector)
	require.NotZero(c.t, id, selector)
	c.call("DOM.setAttributeValue", map[string]any{"nodeId": id, "name": "checked", "value": "checked"}, nil)
}

// scripts turns JavaScript on or off for the page (open starts with it off).
func (c *cdp) scripts(on bool) {
	c.call("Emulation.setScriptExecutionDisabled", map[string]any{"value": !on}, nil)
}

// press types one key on the focused page (keydown with its text, keyup).
func (c *cdp) press(key string) {
	c.t.Helper()
	ev := map[string]any{"type": "keyDown", "key": key, "text": key}
	if key == "Enter" {
		ev = map[string]any{"type": "keyDown", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"}
	}
	c.call("Input.dispatchKeyEvent", ev, nil)
	c.call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key}, nil)
}

// screenshot saves the page at 1280×800 as PNG under $VIGIL_ARTIFACTS (or the test's temp dir).
func (c *cdp) screenshot(name string) { c.screenshotAt(name, 1280, 800, false) }

// screenshotAt saves the page at width×height (mobile: a phone's viewport) and logs where. A
// screenshot is an artefact, not an assertion: when Chromium's compositor does not deliver a frame in
// time (seen on a loaded 2-core CI machine) the test logs it and goes on.
func (c *cdp) screenshotAt(name string, width, height int, mobile bool) {
	c.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, nil)
	c.call("Page.bringToFront", nil, nil) // a page in the background gets no new frame to capture
	if err := c.tryWithin(10*time.Second, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		require.ErrorIs(c.t, err, errNoAnswer)
		c.t.Logf("screenshot %s skipped: %v", name, err)
		return
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(c.t, err)
	dir := os.Getenv("VIGIL_ARTIFACTS")
	if dir == "" {
		dir = c.t.TempDir()
	}
	require.NoError(c.t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name+".png")
	require.NoError(c.t, os.WriteFile(path, png, 0o644))
	c.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// The console in headless Chromium (no JavaScript): sign in, filter the queue, open an alert and see
// its indicators' verdicts, close it with a classification, approve an agent's gated run from the
// inbox and see the run finish; a read-only key sees no write action. Screenshots of the queue, the
// alert page and the inbox are saved as artefacts.
func TestConsoleInHeadlessChromium(t *testing.T) {
	h := newRunHarness(t, "-console")
	st := h.ts.Store
	ctx := context.Background()
	analyst := mustKey(t, st, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead,
		auth.ScopeWorkflowsWrite)
	_, agent, _, _ := h.keys(t)
	path := "/console/" + uuid.NewString()
	wf := h.createWorkflow(t, analyst, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	require.Equal(t, "pending_approval", ex.Status)

	title := "Console impossible travel " + uuid.NewString()[:8]
	res, err := st.Ingest(ctx, store.IngestAlert{Title: title, Severity: "High", SourceName: "generic", Fingerprint: uuid.NewString(),
		RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	inds, _, err := st.LinkIndicators(ctx, res.AlertUUID, []store.IndicatorKey{{Type: "ip", Value: "198.51.100.201"}}, "api")
	require.NoError(t, err)
	_, err = st.DB().NewRaw(`UPDATE indicators SET enrichment_results = ?, malice = 'Suspicious' WHERE uuid = ?`,
		`{"abuseipdb":{"status":"success","malice":"Suspicious"}}`, inds[0].UUID).Exec(ctx)
	require.NoError(t, err)

	b := startChromium(t)
	b.open()
	b.navigate(h.ts.URL + "/console/")
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.click("#signin")
	b.waitFor("#queue")

	b.check(`input[name="severity"][value="High"]`)
	b.typeInto(`input[name="q"]`, title[len(title)-8:])
	b.click("#filter")
	page := b.waitForText("1 alert(s)")
	require.Contains(t, page, title)
	b.screenshot("console-queue")

	b.click(`a[href="/console/alerts/` + res.AlertUUID.String() + `"]`)
	page = b.waitFor("#indicators")
	require.Contains(t, page, "198.51.100.201")
	require.Contains(t, page, "abuseipdb: Suspicious", "the enriched indicator's verdict per provider")
	b.screenshot("console-alert")
	b.selectOption(`select[name="status"]`, "Closed")
	b.selectOption(`select[name="close_classification"]`, "Benign Positive - Suspicious but Expected")
	b.click("#set-status")
	b.waitForText("Closed (Benign Positive - Suspicious but Expected)")
	a, err := st.GetAlert(ctx, res.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, store.StatusClosed, a.Status)

	b.navigate(h.ts.URL + "/console/approvals")
	page = b.waitFor("#approval-" + ex.ApprovalRequestUUID.String())
	require.Contains(t, page, "c2 beacon", "the requesting agent's reason")
	require.Contains(t, page, "confidence 0.9")
	b.screenshot("console-inbox")
	b.click("#approval-" + ex.ApprovalRequestUUID.String() + ` button[value="approve"]`)
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path), "the approved run ran once")
	b.navigate(h.ts.URL + "/console/runs/" + ex.RunUUID.String())
	page = b.waitForText(`id="run-status">succeeded`)
	require.Contains(t, page, "c2 beacon")
	b.screenshot("console-run")
	b.navigate(h.ts.URL + "/console/dashboard")
	b.waitFor("#alerts-over-time")
	b.screenshot("console-dashboard")

	// A read-only key sees no write action.
	readOnly := mustKey(t, st, auth.ScopeAlertsRead)
	b.navigate(h.ts.URL + "/console/")
	b.waitFor("#queue")
	b.click(`header button[type="submit"]`) // sign out
	b.waitFor("#signin")
	b.typeInto("#key", readOnly)
	b.click("#signin")
	b.waitFor("#queue")
	b.navigate(h.ts.URL + "/console/alerts/" + res.AlertUUID.String())
	page = b.waitFor("#indicators")
	require.NotContains(t, page, `id="set-status"`)
	require.False(t, strings.Contains(page, "/console/approvals"), "no inbox link without approvals:write")
	// A form it builds itself (with the session's own CSRF token) is refused by the scope check.
	b.scripts(true)
	b.navigate(h.ts.URL + "/console/alerts/" + res.AlertUUID.String())
	b.waitFor("#indicators")
	b.call("Runtime.evaluate", map[string]any{"expression": `(function () {
		var f = document.createElement("form"); f.method = "post"; f.action = location.pathname + "/status";
		[["csrf", document.querySelector('input[name="csrf"]').value], ["status", "Open"]].forEach(function (kv) {
			var i = document.createElement("input"); i.type = "hidden"; i.name = kv[0]; i.value = kv[1]; f.appendChild(i); });
		document.body.appendChild(f); f.submit(); })()`}, nil)
	b.waitForText("lacks the scope alerts:write")
	a, err = st.GetAlert(ctx, res.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, store.StatusClosed, a.Status, "the read-only key's post changed nothing")
	b.scripts(false)

	b.screenshotAt("console-alert-phone", 390, 844, true)

	// With JavaScript: the queue refreshes itself with a new alert, and the keyboard opens it.
	b.scripts(true)
	tag := uuid.NewString()[:8]
	b.navigate(h.ts.URL + "/console/?q=" + tag)
	b.waitForText("0 alert(s)")
	fresh, err := st.Ingest(ctx, store.IngestAlert{Title: "Live " + tag, Severity: "Medium", SourceName: "generic", Fingerprint: uuid.NewString(),
		RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`), ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	page = b.waitFor(`tr.new[data-id="` + fresh.AlertUUID.String() + `"]`)
	require.Contains(t, page, "Live "+tag, "the new alert appeared without a reload")
	b.screenshotAt("console-queue-phone", 390, 844, true)
	b.press("j")
	b.waitFor(`tr.sel[data-id="` + fresh.AlertUUID.String() + `"]`)
	b.press("Enter")
	page = b.waitFor("#indicators")
	require.Contains(t, page, "Live "+tag, "Enter opened the selected alert")

	// A form posted from another origin (same host, other port: same-site, so the Strict cookie goes
	// along) is refused by the CSRF check, and the alert does not change.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = fmt.Fprintf(w, `<form method="post" action="%s/console/alerts/%s/status"><input type="hidden" name="status" value="Open">`+
			`<button type="submit" id="go">Win a prize</button></form>`, h.ts.URL, res.AlertUUID)
	}))
	defer evil.Close()
	b.navigate(evil.URL)
	b.waitFor("#go")
	b.click("#go")
	b.waitForText("CSRF check failed")
	a, err = st.GetAlert(ctx, res.AlertUUID)
	require.NoError(t, err)
	require.Equal(t, store.StatusClosed, a.Status, "the cross-site post changed nothing")
}
