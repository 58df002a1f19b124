package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func TestQueueFiltersAndSorts(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tag := "q" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	a := h.alert(t, "queue-b "+tag)
	b := h.alert(t, "queue-a "+tag)
	_, err := h.st.DB().NewRaw(`UPDATE alerts SET tags = ARRAY[?], status = 'Triaging', severity = 'Low' WHERE uuid = ?`, tag, a).Exec(ctx)
	require.NoError(t, err)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	br := h.browser(t)
	br.signIn(key)

	_, page := br.do(http.MethodGet, "/console/?q="+tag+"&status=Open&status=Triaging&sort_by=title&sort_order=asc", nil)
	require.Contains(t, page, "2 alert(s)")
	require.Less(t, strings.Index(page, "queue-a "+tag), strings.Index(page, "queue-b "+tag), "sorted by title ascending")
	noInline(t, page)
	_, page = br.do(http.MethodGet, "/console/?q="+tag+"&sort_by=title&sort_order=desc", nil)
	require.Greater(t, strings.Index(page, "queue-a "+tag), strings.Index(page, "queue-b "+tag))
	_, page = br.do(http.MethodGet, "/console/?tags="+tag, nil)
	require.Contains(t, page, "1 alert(s)")
	require.Contains(t, page, a.String())
	_, page = br.do(http.MethodGet, "/console/?q="+tag+"&severity=Low,High&status=Open", nil)
	require.Contains(t, page, "1 alert(s)", "comma-separated like the REST route")
	require.Contains(t, page, b.String())
	_, page = br.do(http.MethodGet, "/console/?q="+tag+"&enrichment_status=Pending&is_enriched=false&source_name=generic", nil)
	require.Contains(t, page, "2 alert(s)")
	_, page = br.do(http.MethodGet, "/console/?q="+tag+"&from_time=2000-01-01T00:00&to_time="+time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04"), nil)
	require.Contains(t, page, "2 alert(s)")
	_, page = br.do(http.MethodGet, "/console/?q="+tag+"&from_time=2999-01-01T00:00", nil)
	require.Contains(t, page, "0 alert(s)")

	// Hostile and malformed values: named, left out of the filter, never an error.
	resp, page := br.do(http.MethodGet, "/console/?q="+tag+"&status=%3Cscript%3E&sort_by=raw_payload&from_time=yesterday&detection_rule_uuid=1%27%20OR%201=1&is_enriched=maybe&tags="+url.QueryEscape("a\x00b")+"&page=99999999999", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ignored (not valid): detection rule, enriched, from, sort, status, tags.")
	require.NotContains(t, page, "<script>")
	resp, _ = br.do(http.MethodGet, "/console/?q="+strings.Repeat("x", 600)+"&from_time=2030-01-01T00:00&to_time=2020-01-01T00:00", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Live refresh asks for the rows only.
	resp, page = br.do(http.MethodGet, "/console/?q="+tag+"&partial=rows", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(page, "<tr data-id="), page)
	require.NotContains(t, page, "<html")
	resp, js := br.do(http.MethodGet, "/console/static/console.js", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, js, "partial=rows")
}

func TestAlertPageActions(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id := h.alert(t, "actions "+uuid.NewString())
	sibling := h.alert(t, "sibling <b>alert</b> "+uuid.NewString()) // shares 203.0.113.77
	_, err := h.st.DB().NewRaw(`UPDATE indicators SET enrichment_results = ? WHERE value = '203.0.113.77'`,
		`{"vt":{"status":"success","malice":"Malicious","duration_ms":42,"extracted":{"country":"NL","score":97}},"abuse":{"status":"failed","error_message":"timeout <x>"}}`).Exec(ctx)
	require.NoError(t, err)
	doc := store.ContextDocument{Title: "Runbook " + uuid.NewString(), DocumentType: "runbook", IsGlobal: true,
		Content: "## Contain\n\n| step | who |\n|---|---|\n| isolate | SOC |\n\n<script>alert(1)</script>\n\n[bad](javascript:alert(2)) <img src=x onerror=alert(3)>\n\n**bold**"}
	require.NoError(t, h.st.CreateContextDocument(ctx, &doc))
	t.Cleanup(func() { _ = h.st.DeleteContextDocument(context.Background(), doc.UUID) })
	wf := h.workflow(t, "console block ip", store.ApprovalModeAlways, "high")

	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsExecute)
	b := h.browser(t)
	b.signIn(key)
	resp, page := b.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInline(t, page)
	// Step records per provider.
	require.Contains(t, page, "vt: Malicious")
	require.Contains(t, page, "42 ms")
	require.Contains(t, page, "country: NL")
	require.Contains(t, page, "abuse: failed")
	require.Contains(t, page, "timeout &lt;x&gt;")
	// Context: rendered markdown, sanitised.
	require.Contains(t, page, doc.Title)
	require.Contains(t, page, "<h2>Contain</h2>")
	require.Contains(t, page, "<td>isolate</td>")
	require.Contains(t, page, "<strong>bold</strong>")
	require.NotContains(t, page, "alert(1)")
	require.NotContains(t, page, "javascript:")
	require.NotContains(t, page, "onerror")
	// The graph links the alert sharing the indicator; titles escaped inside the SVG.
	require.Contains(t, page, `<svg id="graph"`)
	require.Contains(t, page, `href="/console/alerts/`+sibling.String()+`"`)
	require.Contains(t, page, "sibling &lt;b&gt;alert&lt;/b&gt;")
	require.NotContains(t, page, "NaN")
	// The pipeline's Temporal run.
	require.Contains(t, page, `http://temporal-ui.test:8233/namespaces/default/workflows?query=WorkflowId%3D%22alert-`+id.String()+`%22`)
	csrf := csrfOf(t, page)
	base := "/console/alerts/" + id.String()

	// Malice override, then reset; a level outside the vocabulary is refused by the rules.
	resp, _ = b.do(http.MethodPost, base+"/malice", url.Values{"csrf": {csrf}, "malice": {"Benign"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	a, err := h.st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Benign", *a.MaliceOverride)
	require.Equal(t, "analyst", *a.MaliceOverrideSource)
	_, page = b.do(http.MethodGet, base, nil)
	require.Contains(t, page, `id="malice">Benign`)
	resp, page = b.do(http.MethodPost, base+"/malice", url.Values{"csrf": {csrf}, "malice": {"Evil<script>"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, "Input should be one of")
	resp, _ = b.do(http.MethodPost, base+"/malice", url.Values{"csrf": {csrf}, "malice": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	a, err = h.st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.Nil(t, a.MaliceOverride)

	// Findings: the rules' bounds; the key's name signs it.
	resp, _ = b.do(http.MethodPost, base+"/findings", url.Values{"csrf": {csrf}, "summary": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "blank")
	resp, _ = b.do(http.MethodPost, base+"/findings", url.Values{"csrf": {csrf}, "summary": {strings.Repeat("s", 50001)}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "oversized")
	resp, _ = b.do(http.MethodPost, base+"/findings", url.Values{"csrf": {csrf}, "summary": {"a\x00b"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "NUL")
	resp, _ = b.do(http.MethodPost, base+"/findings", url.Values{"csrf": {csrf}, "summary": {"x"}, "confidence": {"certain"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "confidence outside the vocabulary")
	resp, _ = b.do(http.MethodPost, base+"/findings", url.Values{"csrf": {csrf}, "summary": {"Seen <i>beaconing</i>"}, "confidence": {"high"}, "recommended_action": {"isolate"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	fs, err := h.st.ListFindings(ctx, id)
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, "console human", fs[0].AgentName)
	_, page = b.do(http.MethodGet, base, nil)
	require.Contains(t, page, "Seen &lt;i&gt;beaconing&lt;/i&gt;")

	// Run an applicable workflow: the execute rules, the run recorded against the alert.
	inds, err := h.st.AlertIndicators(ctx, id)
	require.NoError(t, err)
	require.Contains(t, page, `/console/alerts/`+id.String()+`/launch?indicator=`+inds[0].UUID.String())
	_, launch := b.do(http.MethodGet, base+"/launch?indicator="+inds[0].UUID.String(), nil)
	require.Contains(t, launch, wf.Name)
	resp, _ = b.do(http.MethodPost, base+"/run", url.Values{"csrf": {csrf}, "run": {"nope|nope"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp, _ = b.do(http.MethodPost, base+"/run", url.Values{"csrf": {csrf}, "run": {wf.UUID.String() + "|" + uuid.NewString()}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "an indicator not on the alert")
	resp, page = b.do(http.MethodPost, base+"/run", url.Values{"csrf": {csrf}, "run": {uuid.NewString() + "|" + inds[0].UUID.String()}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an unknown workflow")
	require.Contains(t, page, "No such workflow")
	resp, _ = b.do(http.MethodPost, base+"/run", url.Values{"csrf": {csrf}, "run": {wf.UUID.String() + "|" + inds[0].UUID.String()}, "reason": {"contain"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/console/runs/"), loc)
	run, err := h.st.GetWorkflowRun(ctx, uuid.MustParse(strings.TrimPrefix(loc, "/console/runs/")))
	require.NoError(t, err)
	require.Equal(t, id, *run.AlertUUID)
	require.Equal(t, store.RunPendingApproval, run.Status)
	require.Equal(t, "human", run.TriggerSource)
	approver, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead)
	ab := h.browser(t)
	ab.signIn(approver)
	_, page = ab.do(http.MethodGet, "/console/approvals", nil)
	require.Contains(t, page, `<a href="/console/alerts/`+id.String()+`" class="alert-title">actions `, "the inbox links the run's alert by its title")
	require.Contains(t, page, `<a href="/console/runs/`+run.UUID.String()+`">the run</a>`)

	// A key without alerts:write or workflows:execute sees no action and is refused if it posts one.
	ro, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	rb := h.browser(t)
	rb.signIn(ro)
	_, page = rb.do(http.MethodGet, base, nil)
	require.NotContains(t, page, "/malice\"")
	require.NotContains(t, page, "/run\"")
	require.NotContains(t, page, "/findings\"")
	rcsrf := csrfOf(t, page)
	for _, p := range []string{"/malice", "/findings", "/run"} {
		resp, _ = rb.do(http.MethodPost, base+p, url.Values{"csrf": {rcsrf}, "malice": {"Benign"}, "summary": {"x"}, "run": {wf.UUID.String() + "|" + inds[0].UUID.String()}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
	}
	fs, err = h.st.ListFindings(ctx, id)
	require.NoError(t, err)
	require.Len(t, fs, 1)
}
