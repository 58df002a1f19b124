package console_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// hostileTitle is an alert title, comment or payload value that would run script if it were not
// escaped.
const hostileTitle = `<script>document.title='PWNED'</script><img src=x onerror=alert(1)>`

// heavyAlert ingests an alert whose raw payload is about rawKB kilobytes (hostile keys and values
// included) and whose normalized fields include hostile ones, with the indicators keys.
func (h *harness) heavyAlert(t testing.TB, title string, rawKB int, keys []store.IndicatorKey) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	raw := map[string]any{"title": title, "0hostile</pre><script>x()</script>": hostileTitle, "nested": map[string]any{"a": []any{1, "two", nil}}}
	blob := strings.Repeat("0123456789abcdef", 64) // 1 KB
	for i := range rawKB {
		raw[fmt.Sprintf("field_%04d", i)] = blob
	}
	rawJSON, err := json.Marshal(raw)
	require.NoError(t, err)
	norm, err := json.Marshal(store.NormalizedRecord{Fields: map[string]any{"src_ip": "10.0.0.5", "note": hostileTitle,
		"user": map[string]any{"name": "<b>alice</b>"}}, RuleRef: &store.RuleReference{SourceRuleID: "R-1", Name: "<i>rule</i>"},
		SourceSeverity: "sev<3>", Indicators: []store.IndicatorPair{{Type: "ip", Value: "10.0.0.5"}},
		NormalizationNotes: []store.Note{{Field: "severity", Note: `severity_unmapped: "sev<3>" matches no known word`}}})
	require.NoError(t, err)
	res, err := h.st.Ingest(ctx, store.IngestAlert{Title: title, Severity: "High", SourceName: "generic", Fingerprint: uuid.NewString(),
		RawPayload: rawJSON, Normalized: norm, ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	if len(keys) > 0 {
		_, _, err = h.st.LinkIndicators(ctx, res.AlertUUID, keys, "api")
		require.NoError(t, err)
	}
	return res.AlertUUID
}

// typedWorkflow stores an active workflow on types (none: every type) with steps, removed after the test.
func (h *harness) typedWorkflow(t testing.TB, name, risk, mode string, types []string, steps string) store.Workflow {
	t.Helper()
	w := store.Workflow{Name: name + " " + uuid.NewString()[:8], WorkflowType: "indicator", IndicatorTypes: types,
		State: store.WorkflowStateActive, Steps: json.RawMessage(steps), TimeoutSeconds: 300,
		RetryMaxAttempts: 1, RetryInitialIntervalSeconds: 1, ApprovalMode: mode, ApprovalTimeoutSeconds: 3600, RequiredApprovals: 1, RiskLevel: risk}
	require.NoError(t, h.st.CreateWorkflow(context.Background(), &w))
	t.Cleanup(func() { _ = h.st.DeleteWorkflow(context.Background(), w.UUID) })
	return w
}

var radioRE = regexp.MustCompile(`<input type="radio" name="workflow" value="([0-9a-f-]{36})"[^>]*>`)

// The alert page: raw event and normalized fields collapsed, escaped and bounded; per indicator, a
// launcher offering only the workflows that fit it, a warning on internal addresses, a confirm step
// showing the steps; the run goes through the execute rules; bad input gets a page, never a 5xx.
func TestAlertPageLauncherAndRawEvent(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	blockIP := h.typedWorkflow(t, "Block IP", "critical", store.ApprovalModeAlways, []string{"ip"},
		`[{"name":"block","method":"POST","url":"https://fw.example.com/api/v2/block?key={{secrets.FW_KEY}}"}]`)
	lookupIP := h.typedWorkflow(t, "Lookup IP", "low", store.ApprovalModeAgentOnly, []string{"ip"}, `[{"name":"q","url":"https://rep.example.com/ip/{{indicator.value}}"}]`)
	sinkhole := h.typedWorkflow(t, "Sinkhole domain", "high", store.ApprovalModeAlways, []string{"domain"}, `[{"name":"s","method":"PUT","url":"https://dns.example.com/zones/sinkhole"}]`)
	hashBan := h.typedWorkflow(t, "Ban hash", "medium", store.ApprovalModeAlways, []string{"hash_md5", "hash_sha256"}, `[{"name":"b","method":"POST","url":"https://edr.example.com/ban"}]`)
	ticket := h.typedWorkflow(t, "Open ticket", "low", store.ApprovalModeNever, []string{}, `[{"name":"t","method":"POST","url":"https://tickets.example.com/new"}]`)
	mine := []store.Workflow{blockIP, lookupIP, sinkhole, hashBan, ticket}
	fits := map[string][]store.Workflow{"ip": {blockIP, lookupIP, ticket}, "domain": {sinkhole, ticket}, "hash_md5": {hashBan, ticket}, "url": {ticket}}

	keys := []store.IndicatorKey{{Type: "ip", Value: "10.20.30.40"}, {Type: "ip", Value: "8.8.4.4"}, {Type: "ip", Value: "fd00::7"},
		{Type: "domain", Value: "evil-" + uuid.NewString()[:8] + ".example.org"}, {Type: "hash_md5", Value: "d41d8cd98f00b204e9800998ecf8427e"},
		{Type: "url", Value: "https://x.example.net/" + strings.Repeat("long-path-segment/", 30)}}
	id := h.heavyAlert(t, "launcher "+hostileTitle, 100, keys)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsExecute)
	b := h.browser(t)
	b.signIn(key)
	base := "/console/alerts/" + id.String()
	resp, page := b.do(http.MethodGet, base, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInlineTags(t, page)
	require.False(t, strings.Contains(page, "<script>document"))
	require.False(t, strings.Contains(page, "<img src=x"))
	require.True(t, strings.Contains(page, "launcher &lt;script&gt;"))
	require.False(t, strings.Contains(page, `id="run-choice"`), "no list of every workflow × indicator pair")

	// Raw event and normalized fields: collapsed, escaped, the payload cut at 32 KB with a note.
	require.Contains(t, page, `<details id="raw">`)
	require.Contains(t, page, `<details id="normalized">`)
	raw := page[strings.Index(page, `<details id="raw">`):]
	raw = raw[:strings.Index(raw, "</details>")]
	require.True(t, strings.Contains(raw, `id="raw-cut"`), "a 100 KB payload is cut")
	require.False(t, strings.Contains(raw, "<script"), "no markup from the payload")
	require.False(t, strings.Contains(raw, "</pre><script>"))
	require.True(t, strings.Contains(raw, `0hostile\u003c/pre\u003e\u003cscript\u003e`), "JSON escapes markup characters")
	require.Less(t, len(raw), 40<<10)
	norm := page[strings.Index(page, `<details id="normalized">`):]
	norm = norm[:strings.Index(norm, "</details>")]
	require.Contains(t, norm, "<code>src_ip</code>")
	require.Contains(t, norm, "&lt;script&gt;")
	require.Contains(t, norm, "sev&lt;3&gt;")
	require.Contains(t, norm, "R-1 (&lt;i&gt;rule&lt;/i&gt;)")
	require.Contains(t, norm, "note: <code>severity</code>", "the plugin's notes are listed (issue 43)")
	require.Contains(t, norm, "severity_unmapped: &#34;sev&lt;3&gt;&#34; matches no known word")
	require.Less(t, len(page), 200<<10, "the page stays under 200 KB")

	inds, err := h.st.AlertIndicators(ctx, id)
	require.NoError(t, err)
	require.Len(t, inds, len(keys))
	for _, ind := range inds {
		row := page[strings.Index(page, `id="ind-`+ind.UUID.String()+`"`):]
		row = row[:strings.Index(row, "</tr>")]
		internal := ind.Value == "10.20.30.40" || ind.Value == "fd00::7"
		require.Equal(t, internal, strings.Contains(row, "Internal address:"), "warning on %s", ind.Value)
		require.Contains(t, row, base+"/launch?indicator="+ind.UUID.String())

		resp, lp := b.do(http.MethodGet, base+"/launch?indicator="+ind.UUID.String(), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		noInlineTags(t, lp)
		require.Equal(t, internal, strings.Contains(lp, `id="internal-warning"`), "launch page warning on %s", ind.Value)
		require.NotContains(t, lp, " checked", "nothing is chosen for the analyst")
		offered := map[string]bool{}
		for _, m := range radioRE.FindAllStringSubmatch(lp, -1) {
			offered[m[1]] = true
			w, err := h.st.GetWorkflow(ctx, uuid.MustParse(m[1]))
			require.NoError(t, err)
			require.True(t, len(w.IndicatorTypes) == 0 || contains(w.IndicatorTypes, ind.Type), "%s offered for %s", w.Name, ind.Type)
		}
		for _, w := range mine {
			want := false
			for _, f := range fits[ind.Type] {
				want = want || f.UUID == w.UUID
			}
			require.Equal(t, want, offered[w.UUID.String()], "%s for %s %s", w.Name, ind.Type, ind.Value)
		}
	}
	var private, public store.Indicator
	for _, ind := range inds {
		switch ind.Value {
		case "10.20.30.40":
			private = ind
		case "8.8.4.4":
			public = ind
		}
	}
	// The list shows each choice's steps; the least risky first.
	_, lp := b.do(http.MethodGet, base+"/launch?indicator="+private.UUID.String(), nil)
	require.Less(t, strings.Index(lp, lookupIP.Name), strings.Index(lp, blockIP.Name), "the least risky first")
	require.Contains(t, lp, `<code>POST</code> <code class="host">fw.example.com</code><code class="path">/api/v2/block</code>`)
	require.NotContains(t, lp, "FW_KEY", "the query is never shown")
	require.Contains(t, lp, `destructive`)

	// The confirm step: the steps, the warning, the Run button; running starts a gated run.
	resp, cp := b.do(http.MethodGet, base+"/launch?indicator="+private.UUID.String()+"&workflow="+blockIP.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInlineTags(t, cp)
	require.Contains(t, cp, `id="internal-warning"`)
	require.Contains(t, cp, `<code>POST</code> <code class="host">fw.example.com</code><code class="path">/api/v2/block</code>`)
	require.Contains(t, cp, "This run waits for approval")
	require.Contains(t, cp, `name="run" value="`+blockIP.UUID.String()+`|`+private.UUID.String()+`"`)
	resp, _ = b.do(http.MethodPost, base+"/run", url.Values{"csrf": {csrfOf(t, cp)}, "run": {blockIP.UUID.String() + "|" + private.UUID.String()}, "reason": {"contain"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	run, err := h.st.GetWorkflowRun(ctx, uuid.MustParse(strings.TrimPrefix(resp.Header.Get("Location"), "/console/runs/")))
	require.NoError(t, err)
	require.Equal(t, store.RunPendingApproval, run.Status)
	require.Equal(t, "10.20.30.40", run.IndicatorValue)
	require.Equal(t, id, *run.AlertUUID)
	_, cp = b.do(http.MethodGet, base+"/launch?indicator="+public.UUID.String()+"&workflow="+lookupIP.UUID.String(), nil)
	require.NotContains(t, cp, `id="internal-warning"`)
	require.Contains(t, cp, "without approval")

	// Malformed, hostile and out-of-place input: a page with the reason, never a 5xx, nothing run.
	other := h.alert(t, "other "+uuid.NewString())
	otherInds, err := h.st.AlertIndicators(ctx, other)
	require.NoError(t, err)
	draft := h.typedWorkflow(t, "Draft", "low", store.ApprovalModeNever, []string{"ip"}, `[{"name":"a","url":"https://a.example.com/"}]`)
	draft.State = store.WorkflowStateDraft
	require.NoError(t, h.st.UpdateWorkflow(ctx, &draft, false, "state"))
	before := countRuns(t, h, id)
	for _, c := range []struct {
		query, want string
		status      int
	}{
		{"", "Choose an indicator", http.StatusUnprocessableEntity},
		{"indicator=" + url.QueryEscape("<script>x</script>"), "Choose an indicator", http.StatusUnprocessableEntity},
		{"indicator=" + url.QueryEscape("' OR 1=1--"), "Choose an indicator", http.StatusUnprocessableEntity},
		{"indicator=" + otherInds[0].UUID.String(), "not on this alert", http.StatusUnprocessableEntity},
		{"indicator=" + strings.Repeat("9", 3000), "Choose an indicator", http.StatusUnprocessableEntity},
		{"indicator=" + private.UUID.String() + "&workflow=%00", "Choose one of the workflows", http.StatusUnprocessableEntity},
		{"indicator=" + private.UUID.String() + "&workflow=" + url.QueryEscape(`"><script>`), "Choose one of the workflows", http.StatusUnprocessableEntity},
		{"indicator=" + private.UUID.String() + "&workflow=" + sinkhole.UUID.String(), "accepts indicator types: domain", http.StatusUnprocessableEntity},
		{"indicator=" + private.UUID.String() + "&workflow=" + uuid.NewString(), "No such workflow", http.StatusNotFound},
		{"indicator=" + private.UUID.String() + "&workflow=" + draft.UUID.String(), "not active", http.StatusConflict},
		{"indicator=" + private.UUID.String() + "&indicator=" + public.UUID.String() + "&workflow[]=x", "", http.StatusOK},
	} {
		resp, p := b.do(http.MethodGet, base+"/launch?"+c.query, nil)
		require.Equal(t, c.status, resp.StatusCode, c.query[max(0, len(c.query)-40):]+" "+p[:min(len(p), 300)])
		require.Contains(t, p, c.want)
		require.NotContains(t, p, "<script>x")
		require.NotContains(t, p, `"><script>`)
	}
	resp, _ = b.do(http.MethodGet, "/console/alerts/not-a-uuid/launch?indicator="+private.UUID.String(), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.do(http.MethodGet, "/console/alerts/"+uuid.NewString()+"/launch?indicator="+private.UUID.String(), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	csrf := csrfOf(t, page)
	for _, form := range []url.Values{
		{"csrf": {csrf}, "run": {sinkhole.UUID.String() + "|" + private.UUID.String()}},
		{"csrf": {csrf}, "run": {blockIP.UUID.String() + "|" + private.UUID.String()}, "reason": {"a\x00b"}},
		{"csrf": {csrf}, "run": {blockIP.UUID.String() + "|" + private.UUID.String()}, "reason": {strings.Repeat("r", 5001)}},
		{"csrf": {csrf}, "run": {strings.Repeat("|", 5000)}},
		{"csrf": {csrf}, "run": {blockIP.UUID.String() + "|" + otherInds[0].UUID.String()}},
	} {
		resp, p := b.do(http.MethodPost, base+"/run", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, form.Get("run"))
		require.Contains(t, p, `id="error"`)
	}
	require.Equal(t, before, countRuns(t, h, id), "no refused form started a run")

	// Without workflows:execute: no launcher link, and the launch page is refused.
	ro, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	rb := h.browser(t)
	rb.signIn(ro)
	_, page = rb.do(http.MethodGet, base, nil)
	require.NotContains(t, page, "/launch?")
	require.Contains(t, page, "Internal address:", "the warning is shown to every reader")
	resp, _ = rb.do(http.MethodGet, base+"/launch?indicator="+private.UUID.String(), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// noInlineTags is noInline for pages that show hostile text: an event-handler attribute counts only
// inside a tag and outside a quoted value (escaped text such as "&lt;img onerror=" is inert).
func noInlineTags(t *testing.T, page string) {
	t.Helper()
	page = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(page, `""`) // attribute values are text
	require.NotRegexp(t, `<[a-zA-Z][^>]*\sstyle=`, page)
	require.NotRegexp(t, `<script(?:\s+[^>]*)?>[^<]`, page, "no inline script")
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		require.Equal(t, `<script src="/console/static/console.js">`, m)
	}
	require.NotRegexp(t, `<[a-zA-Z][^>]*\son[a-z]+=`, page, "no inline event handlers")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func countRuns(t *testing.T, h *harness, alert uuid.UUID) int {
	t.Helper()
	n, err := h.st.DB().NewSelect().Table("workflow_runs").Where("alert_uuid = ?", alert).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// Approvals: cards with the alert's title (linked, escaped), the indicator's verdict, the steps and
// the risk, soonest to expiry first, a pending count in the header; no Approve on one's own request
// (and its POST still refused); a decision's comment shows on the run page with who and when; Temporal
// links on cards, the run page and the runs list.
func TestApprovalCardsAndRunDecisions(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.typedWorkflow(t, "Isolate host", "high", store.ApprovalModeAlways, []string{"ip"},
		`[{"name":"isolate","method":"POST","url":"https://edr.example.com/hosts/isolate?token=s3cret"},{"name":"note","url":"https://tickets.example.com/n"}]`)
	alertID := h.alert(t, "card "+hostileTitle) // 203.0.113.77, Malicious
	inds, err := h.st.AlertIndicators(ctx, alertID)
	require.NoError(t, err)
	mineKey, mineRow := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsExecute, auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead)
	otherKey, otherRow := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsExecute, auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead)
	gated := func(trigger store.APIKey, expires time.Duration) (store.WorkflowRun, store.ApprovalRequest) {
		k := trigger.UUID
		prefix := trigger.KeyPrefix
		run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunPendingApproval, TriggerSource: "human",
			TriggerKeyUUID: &k, TriggerKeyPrefix: &prefix, IndicatorType: "ip", IndicatorValue: inds[0].Value, AlertUUID: &alertID}
		ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "human", TriggerKeyUUID: &k, TriggerKeyPrefix: &prefix,
			IndicatorType: "ip", IndicatorValue: inds[0].Value, RiskLevel: w.RiskLevel, RequiredApprovals: 1, ExpiresAt: time.Now().Add(expires), NotifierType: "none"}
		_, err := h.st.CreateWorkflowRun(ctx, &run, &ap)
		require.NoError(t, err)
		return run, ap
	}
	_, later := gated(otherRow, 50*time.Minute)
	_, own := gated(mineRow, 30*time.Minute)
	soonRun, soon := gated(otherRow, 10*time.Minute)

	b := h.browser(t)
	b.signIn(mineKey)
	resp, page := b.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInlineTags(t, page)
	require.Regexp(t, `id="pending-count">\d+`, page, "the header counts pending requests")
	iSoon, iOwn, iLater := strings.Index(page, "approval-"+soon.UUID.String()), strings.Index(page, "approval-"+own.UUID.String()), strings.Index(page, "approval-"+later.UUID.String())
	require.True(t, iSoon > 0 && iSoon < iOwn && iOwn < iLater, "the soonest to expire first")
	card := func(id uuid.UUID) string {
		c := page[strings.Index(page, `id="approval-`+id.String()+`"`):]
		return c[:strings.Index(c, "</section>")]
	}
	sc := card(soon.UUID)
	require.Contains(t, sc, `<a href="/console/alerts/`+alertID.String()+`" class="alert-title">card &lt;script&gt;`)
	require.NotContains(t, sc, "<script>document")
	require.Contains(t, sc, `mal-Malicious verdict">Malicious`)
	require.Contains(t, sc, `<code>POST</code> <code class="host">edr.example.com</code><code class="path">/hosts/isolate</code>`)
	require.Contains(t, sc, `<code>GET</code> <code class="host">tickets.example.com</code>`)
	require.NotContains(t, sc, "s3cret")
	require.Contains(t, sc, "high risk")
	require.Contains(t, sc, "Declared: high risk; approval always, 1 approval(s) required")
	require.Contains(t, sc, "destructive")
	require.Contains(t, sc, `value="approve"`)
	require.Contains(t, sc, `http://temporal-ui.test:8233/namespaces/default/workflows?query=WorkflowId%3D%22workflow-run-`+soonRun.UUID.String())
	oc := card(own.UUID)
	require.NotContains(t, oc, `value="approve"`, "no Approve on one's own request")
	require.Contains(t, oc, "may not approve a run it triggered")
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+own.UUID.String()+"/decide", url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the rule still refuses a forged post")
	got, err := h.st.GetApproval(ctx, own.UUID)
	require.NoError(t, err)
	require.Empty(t, got.Decisions)

	// Another person approves with a hostile comment: the run page shows who, when and the comment.
	ob := h.browser(t)
	ob.signIn(otherKey)
	_, opage := ob.do(http.MethodGet, "/console/approvals", nil)
	require.NotContains(t, opage[strings.Index(opage, `id="approval-`+soon.UUID.String()+`"`):][:2000], `value="approve"`, "the other key triggered soon")
	for _, bad := range []url.Values{
		{"decision": {"approve"}, "comment": {"a\x00b"}},
		{"decision": {"approve"}, "comment": {strings.Repeat("c", 5001)}},
		{"decision": {"<script>"}},
		{"decision": {""}, "comment": {"x"}},
	} {
		bad.Set("csrf", csrfOf(t, page))
		resp, p := b.do(http.MethodPost, "/console/approvals/"+soon.UUID.String()+"/decide", bad)
		require.Less(t, resp.StatusCode, 500)
		require.NotEqual(t, http.StatusSeeOther, resp.StatusCode, bad.Encode()[:min(60, len(bad.Encode()))])
		require.NotContains(t, p, "<script>\"")
	}
	got, err = h.st.GetApproval(ctx, soon.UUID)
	require.NoError(t, err)
	require.Empty(t, got.Decisions, "no malformed decision was recorded")
	resp, _ = b.do(http.MethodPost, "/console/approvals/"+soon.UUID.String()+"/decide", url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}, "comment": {"ok " + hostileTitle}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, rp := b.do(http.MethodGet, "/console/runs/"+soonRun.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInlineTags(t, rp)
	dec := rp[strings.Index(rp, `id="decisions"`):]
	dec = dec[:strings.Index(dec, "</section>")]
	require.Contains(t, dec, "console human <small>(key "+mineRow.KeyPrefix+")</small>")
	require.Contains(t, dec, "<td>approved</td>")
	require.Regexp(t, `<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>`, dec)
	require.Contains(t, dec, "ok &lt;script&gt;document.title=")
	require.NotContains(t, dec, "<script>")
	require.Contains(t, rp, `id="temporal"`)
	require.Contains(t, rp, "workflow-run-"+soonRun.UUID.String())
	_, rl := b.do(http.MethodGet, "/console/runs", nil)
	require.Contains(t, rl, `class="temporal"`)
	require.Contains(t, rl, url.QueryEscape(`WorkflowId="workflow-run-`+soonRun.UUID.String()+`"`))
	_, page = b.do(http.MethodGet, "/console/approvals", nil)
	require.NotContains(t, page, "approval-"+soon.UUID.String(), "a decided request leaves the inbox")
}
