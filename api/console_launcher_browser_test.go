package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// newLauncherConsoleServer is REST and the console over one responses.Service (as cmd/vigil wires
// them), with Temporal UI links and no Temporal server: runs are committed, not started.
func newLauncherConsoleServer(t *testing.T) *testServer {
	t.Helper()
	box, err := secretbox.New(testEncryptionKey)
	require.NoError(t, err)
	return newTestServer(t, func(_ *Config, d *Deps) {
		st := testStore(t)
		rs := responses.New(responses.Deps{Store: st, Log: d.Log})
		d.Workflows, d.Responses = st, rs
		d.Console = console.New(console.Deps{Auth: d.Auth, Box: box, Store: st, Alerts: alerts.New(st, d.Log), Approvals: rs, Runs: rs,
			Log: d.Log, LiveRefresh: time.Hour, Temporal: console.TemporalUI{BaseURL: "http://temporal-ui.test:8233", Namespace: "default"}})
	})
}

// jsString evaluates expression on the page and returns its string.
func (c *cdp) jsString(expression string) string {
	c.t.Helper()
	var out struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	c.call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &out)
	return out.Result.Value
}

// noSideScroll opens every <details> of the page and asserts that at 1280×800 and on a 390×844 phone
// the page is no wider than the viewport (document.documentElement.scrollWidth <= innerWidth), with
// a screenshot of each; the viewport is back at 1280×800 afterwards.
func (c *cdp) noSideScroll(name string) {
	c.t.Helper()
	c.jsNumber(`document.querySelectorAll('details').forEach(d => d.open = true), 0`)
	for _, v := range []struct {
		w, h   int
		mobile bool
		suffix string
	}{{1280, 800, false, ""}, {390, 844, false, "-phone"}} {
		c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": v.w, "height": v.h, "deviceScaleFactor": 1, "mobile": v.mobile}, nil)
		c.call("Page.reload", nil, nil) // laid out afresh at this size (a GET page)
		time.Sleep(300 * time.Millisecond)
		c.waitFor("main")
		c.jsNumber(`document.querySelectorAll('details').forEach(d => d.open = true), 0`)
		var scroll, inner float64
		for range 20 { // the new viewport takes a frame to apply
			time.Sleep(50 * time.Millisecond)
			scroll, inner = c.jsNumber(`document.documentElement.scrollWidth`), c.jsNumber(`window.innerWidth`)
			if scroll <= float64(v.w) && inner == float64(v.w) {
				break
			}
		}
		require.True(c.t, scroll <= inner && inner == float64(v.w), "%s at %d px: scrollWidth %v, innerWidth %v (wider: %s)", name, v.w, scroll, inner,
			c.jsString(fmt.Sprintf(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > %d+1 || (e.scrollWidth > e.clientWidth+1 && getComputedStyle(e).overflowX == 'visible')).slice(-8).map(e => e.tagName+'.'+e.className+'#'+e.id+':'+Math.round(e.getBoundingClientRect().right)+'/'+e.scrollWidth).join(' ')`, v.w)))
		c.screenshotAt(name+v.suffix, v.w, v.h, v.mobile)
	}
	c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// The alert page's launcher, the approval cards and the run page's decisions in headless Chromium
// with JavaScript on (hostile content that ran would change the title): an alert with indicators of
// several types offers per indicator only the workflows that fit; the internal IP is flagged; the
// confirm step shows the steps; running from it starts the run (read back over REST); the inbox lists
// the soonest expiry first, offers no Approve on the analyst's own request and the rule refuses a
// hand-built approve; another key's request approved with a hostile comment shows on the run page
// with who and when; Temporal links on cards, run and runs list; no page scrolls sideways at 1280 or
// 390 px.
func TestConsoleLauncherAndApprovalsInHeadlessChromium(t *testing.T) {
	ts := newLauncherConsoleServer(t)
	st := ts.Store
	ctx := context.Background()
	hostile := `<script>document.title='PWNED'</script><img src=x onerror="document.title='PWNED'">`
	mkWorkflow := func(name, risk, mode string, timeout int, types []string, steps string) store.Workflow {
		w := store.Workflow{Name: name + " " + uuid.NewString()[:6], WorkflowType: "indicator", IndicatorTypes: types, State: store.WorkflowStateActive,
			Steps: json.RawMessage(steps), TimeoutSeconds: 300, RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1, ApprovalMode: mode,
			ApprovalTimeoutSeconds: timeout, RequiredApprovals: 1, RiskLevel: risk}
		require.NoError(t, st.CreateWorkflow(ctx, &w))
		t.Cleanup(func() { _ = st.DeleteWorkflow(context.Background(), w.UUID) })
		return w
	}
	block := mkWorkflow("Block IP at the firewall with a deliberately long name to test wrapping", "critical", store.ApprovalModeAlways, 3600, []string{"ip"},
		`[{"name":"block","method":"POST","url":"https://firewall-management.corp-example.com/api/v2/address-objects/block-list/entries?apikey={{secrets.FW_KEY}}"}]`)
	quarantine := mkWorkflow("Quarantine", "high", store.ApprovalModeAlways, 600, []string{"ip"}, `[{"name":"q","method":"PUT","url":"https://edr.example.com/quarantine"}]`)
	sinkhole := mkWorkflow("Sinkhole", "high", store.ApprovalModeAlways, 3600, []string{"domain"}, `[{"name":"s","method":"POST","url":"https://dns.example.com/sinkhole"}]`)
	ban := mkWorkflow("Ban hash", "medium", store.ApprovalModeAlways, 3600, []string{"hash_md5"}, `[{"name":"b","method":"POST","url":"https://edr.example.com/ban"}]`)

	// An alert with indicators of four types, a hostile title and a 100 KB hostile payload.
	raw := map[string]any{"0</pre><script>document.title='PWNED'</script>": hostile, "long": strings.Repeat("A", 3000)}
	for i := range 100 {
		raw[fmt.Sprintf("f%03d", i)] = strings.Repeat("x", 1000)
	}
	rawJSON, _ := json.Marshal(raw)
	norm, _ := json.Marshal(store.NormalizedRecord{Fields: map[string]any{"note": hostile, "path": strings.Repeat("/very-long-path", 40)}})
	res, err := st.Ingest(ctx, store.IngestAlert{Title: "Beacon " + hostile, Severity: "High", SourceName: "generic", Fingerprint: uuid.NewString(),
		RawPayload: rawJSON, Normalized: norm, ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	alertID := res.AlertUUID
	inds, _, err := st.LinkIndicators(ctx, alertID, []store.IndicatorKey{{Type: "ip", Value: "10.44.0.12"}, {Type: "ip", Value: "8.26.56.26"},
		{Type: "domain", Value: "c2-" + uuid.NewString()[:8] + ".example.org"}, {Type: "hash_md5", Value: "9e107d9d372bb6826bd81d3542a419d6"},
		{Type: "url", Value: "https://x.example.net/" + strings.Repeat("segment-without-breaks", 12)}}, "api")
	require.NoError(t, err)
	var private store.Indicator
	for _, ind := range inds {
		if ind.Value == "10.44.0.12" {
			private = ind
		}
	}
	analyst := namedKey(t, st, "maria.ortiz", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsExecute,
		auth.ScopeWorkflowsRead, auth.ScopeApprovalsWrite)
	omar := namedKey(t, st, "omar.haddad", false, auth.ScopeAlertsRead, auth.ScopeWorkflowsExecute, auth.ScopeWorkflowsRead)

	b := startChromium(t)
	b.open()
	b.scripts(true)
	title := func() { require.NotEqual(t, "PWNED", b.jsString("document.title"), "no hostile script ran") }
	b.navigate(ts.URL + "/console/")
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.click("#signin")
	b.waitFor("#queue")
	b.navigate(ts.URL + "/console/alerts/" + alertID.String())
	page := b.waitFor("#raw-event")
	title()
	require.Zero(t, b.jsNumber(`document.querySelectorAll('#raw-event script, #raw-event img, #indicators script').length`))
	require.True(t, strings.Contains(page, `id="raw-cut"`), "the 100 KB payload is cut")
	require.Equal(t, float64(len(inds)), b.jsNumber(`document.querySelectorAll('#indicators .launch').length`), "one launcher per indicator")
	require.Equal(t, 1.0, b.jsNumber(`document.querySelectorAll('#indicators .internal').length`), "only the RFC 1918 address is flagged")
	require.Contains(t, b.jsString(`document.querySelector('#ind-`+private.UUID.String()+` .internal').textContent`), "private address")
	b.noSideScroll("launcher-alert")

	// Per indicator, only the workflows that fit.
	want := map[string][]store.Workflow{"ip": {block, quarantine}, "domain": {sinkhole}, "hash_md5": {ban}, "url": {}}
	mine := []store.Workflow{block, quarantine, sinkhole, ban}
	for _, ind := range inds {
		b.navigate(ts.URL + "/console/alerts/" + alertID.String() + "/launch?indicator=" + ind.UUID.String())
		b.waitFor("#launcher")
		offered := b.jsString(`[...document.querySelectorAll('input[name=workflow]')].map(i => i.value).join(' ')`)
		for _, w := range mine {
			fits := false
			for _, f := range want[ind.Type] {
				fits = fits || f.UUID == w.UUID
			}
			require.Equal(t, fits, strings.Contains(offered, w.UUID.String()), "%s offered for %s", w.Name, ind.Type)
		}
		require.Zero(t, b.jsNumber(`document.querySelectorAll('input[name=workflow]:checked').length`), "nothing chosen by default")
	}

	// The internal IP: the warning, then the confirm step with the steps, then the run.
	b.navigate(ts.URL + "/console/alerts/" + alertID.String() + "/launch?indicator=" + private.UUID.String())
	b.waitFor("#internal-warning")
	b.noSideScroll("launcher-choose")
	b.click(`input[value="` + block.UUID.String() + `"]`)
	b.click("#review")
	page = b.waitFor("#confirm")
	require.Contains(t, page, `id="internal-warning"`)
	require.Contains(t, page, `<code>POST</code> <code class="host">firewall-management.corp-example.com</code><code class="path">/api/v2/address-objects/block-list/entries</code>`)
	require.NotContains(t, page, "FW_KEY")
	b.noSideScroll("launcher-confirm")
	b.typeInto("#run-reason", "contain the beacon")
	b.click("#run-confirm")
	b.waitFor("#run-status")
	runID := strings.TrimPrefix(b.jsString("location.pathname"), "/console/runs/")
	r := ts.do(t, http.MethodGet, "/v1/workflow-runs/"+runID, analyst, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	run := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, "pending_approval", run["status"])
	require.Equal(t, alertID.String(), run["alert_uuid"])
	require.Equal(t, "10.44.0.12", run["indicator_value"])
	require.Equal(t, block.UUID.String(), run["workflow_uuid"])
	require.Equal(t, "contain the beacon", run["reason"])
	ownApproval := run["approval_request_uuid"].(string)

	// Omar's request on the same alert expires sooner (600 s).
	r = ts.do(t, http.MethodPost, "/v1/workflows/"+quarantine.UUID.String()+"/execute", omar,
		map[string]any{"indicator_type": "ip", "indicator_value": "8.26.56.26", "alert_uuid": alertID.String(), "reason": "beacon"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	ex := r.JSON(t)["data"].(map[string]any)
	omarRun, omarApproval := ex["run_uuid"].(string), ex["approval_request_uuid"].(string)

	b.navigate(ts.URL + "/console/approvals")
	page = b.waitFor("#approval-" + omarApproval)
	title()
	require.Less(t, strings.Index(page, "approval-"+omarApproval), strings.Index(page, "approval-"+ownApproval), "the soonest to expire first")
	require.Zero(t, b.jsNumber(`document.querySelectorAll('#approval-`+ownApproval+` button[value=approve]').length`), "no Approve on one's own request")
	require.Equal(t, 1.0, b.jsNumber(`document.querySelectorAll('#approval-`+omarApproval+` button[value=approve]').length`))
	require.Contains(t, b.jsString(`document.querySelector('#approval-`+omarApproval+` .alert-title').textContent`), "Beacon <script>")
	require.Contains(t, b.jsString(`document.querySelector('#approval-`+omarApproval+` .steps').textContent`), "PUT edr.example.com/quarantine")
	require.Contains(t, b.jsString(`document.querySelector('#approval-`+omarApproval+` .temporal').href`), "http://temporal-ui.test:8233/namespaces/default/workflows?query=")
	require.NotEmpty(t, b.jsString(`document.querySelector('#pending-count').textContent`))
	b.noSideScroll("launcher-approvals")

	// A hand-built approve of one's own request is refused by the rule.
	b.jsNumber(`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/console/approvals/` + ownApproval + `/decide';
		for (const [k, v] of [['csrf', document.querySelector('input[name=csrf]').value], ['decision', 'approve']]) {
			const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i) }
		document.body.appendChild(f); f.submit(); return 0 })()`)
	b.waitForText("may not approve a run it triggered")
	r = ts.do(t, http.MethodGet, "/v1/workflow-runs/"+runID, analyst, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "pending_approval", r.JSON(t)["data"].(map[string]any)["status"], "the refused approve changed nothing")
	own, err := st.GetApproval(ctx, uuid.MustParse(ownApproval))
	require.NoError(t, err)
	require.Empty(t, own.Decisions)

	// Approve Omar's request with a hostile comment; the run page shows who, when and the comment.
	b.navigate(ts.URL + "/console/approvals")
	b.waitFor("#approval-" + omarApproval)
	b.typeInto(`#approval-`+omarApproval+` input[name=comment]`, "ok "+hostile)
	b.click(`#approval-` + omarApproval + ` button[value=approve]`)
	for i := 0; b.jsNumber(`document.querySelectorAll('#approval-`+omarApproval+`').length`) > 0; i++ {
		require.Less(t, i, 200, "the decided request leaves the inbox")
		time.Sleep(50 * time.Millisecond)
	}
	omarReq, err := st.GetApproval(ctx, uuid.MustParse(omarApproval))
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, omarReq.Status)
	b.navigate(ts.URL + "/console/runs/" + omarRun)
	b.waitFor("#decisions")
	title()
	require.Zero(t, b.jsNumber(`document.querySelectorAll('#decisions script, #decisions img').length`))
	dec := b.jsString(`document.querySelector('#decisions tbody tr').textContent`)
	require.Contains(t, dec, "maria.ortiz")
	require.Contains(t, dec, "approved")
	require.Contains(t, dec, "ok <script>document.title='PWNED'</script>")
	require.Regexp(t, `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`, dec)
	require.Contains(t, b.jsString(`document.querySelector('#temporal').href`), "workflow-run-"+omarRun)
	b.noSideScroll("launcher-run")
	b.navigate(ts.URL + "/console/runs")
	b.waitFor("#runs")
	require.Contains(t, b.jsString(`[...document.querySelectorAll('#runs a.temporal')].map(a => a.href).join(' ')`), "workflow-run-"+omarRun)
}
