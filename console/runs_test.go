package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func TestRunsPages(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.workflow(t, "console <i>disable</i>", store.ApprovalModeNever, "low")
	alert := h.alert(t, "runs "+uuid.NewString())
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: 1, Status: store.RunQueued, TriggerSource: "human",
		IndicatorType: "ip", IndicatorValue: "192.0.2.55", AlertUUID: &alert}
	_, err := h.st.CreateWorkflowRun(ctx, &run, nil)
	require.NoError(t, err)
	dur := int64(1234)
	errText := "step b: 503 <from upstream>"
	_, err = h.st.DB().NewRaw(`UPDATE workflow_runs SET status = 'failed', duration_ms = ?, error = ?, started_at = now(), completed_at = now(),
		steps = ? WHERE uuid = ?`, dur, errText,
		`[{"step_name":"a","step_index":0,"request_method":"POST","request_url":"https://edr.example.com/isolate","response_status_code":200,"duration_ms":40},
		  {"step_name":"b","step_index":1,"request_method":"GET","request_url":"https://edr.example.com/x","response_status_code":503,"duration_ms":9,"error":"503 <from upstream>"}]`,
		run.UUID).Exec(ctx)
	require.NoError(t, err)

	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead)
	b := h.browser(t)
	b.signIn(key)
	resp, page := b.do(http.MethodGet, "/console/runs?status=failed&workflow_uuid="+w.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInline(t, page)
	require.Contains(t, page, "1 run(s)")
	require.Contains(t, page, "console &lt;i&gt;disable&lt;/i&gt;", "names are escaped")
	require.Contains(t, page, "/console/runs/"+run.UUID.String())
	require.Contains(t, page, "/console/alerts/"+alert.String())
	_, page = b.do(http.MethodGet, "/console/runs?status=succeeded&workflow_uuid="+w.UUID.String(), nil)
	require.Contains(t, page, "0 run(s)")
	_, page = b.do(http.MethodGet, "/console/runs?status=failed,queued&trigger_source=human&workflow_uuid="+w.UUID.String(), nil)
	require.Contains(t, page, "1 run(s)")
	resp, page = b.do(http.MethodGet, "/console/runs?status=%3Cscript%3E&trigger_source=robot&workflow_uuid=nope&page=99999999999", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Ignored (not valid): status, trigger source, workflow.")
	require.NotContains(t, page, "<script>")

	resp, page = b.do(http.MethodGet, "/console/runs/"+run.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInline(t, page)
	require.Contains(t, page, `id="run-status">failed`)
	require.Contains(t, page, "POST https://edr.example.com/isolate")
	require.Contains(t, page, "<td>503</td>")
	require.Contains(t, page, "503 &lt;from upstream&gt;")
	require.Contains(t, page, "1.234s")
	require.Contains(t, page, `href="http://temporal-ui.test:8233/namespaces/default/workflows?query=WorkflowId%3D%22workflow-run-`+run.UUID.String()+`%22"`)
	for _, bad := range []string{"nope", uuid.NewString(), "%00"} {
		resp, _ = b.do(http.MethodGet, "/console/runs/"+bad, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, bad)
	}

	// Without workflows:read: no link, and refused.
	ro, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	rb := h.browser(t)
	rb.signIn(ro)
	_, page = rb.do(http.MethodGet, "/console/", nil)
	require.NotContains(t, page, `href="/console/runs"`)
	for _, p := range []string{"/console/runs", "/console/runs/" + run.UUID.String()} {
		resp, _ = rb.do(http.MethodGet, p, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
	}
}

// The run page shows decisions step by step: a step skipped with the value of its when, a code
// step's result, a for_each step's items in order.
func TestRunPageShowsDecisions(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.workflow(t, "console decides", store.ApprovalModeNever, "low")
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: 1, Status: store.RunQueued, TriggerSource: "human",
		IndicatorType: "ip", IndicatorValue: "192.0.2.56"}
	_, err := h.st.CreateWorkflowRun(ctx, &run, nil)
	require.NoError(t, err)
	_, err = h.st.DB().NewRaw(`UPDATE workflow_runs SET status = 'succeeded', started_at = now(), completed_at = now(), result = ?, steps = ? WHERE uuid = ?`,
		`{"isolated": false}`,
		`[{"step_name":"isolate","step_index":0,"request_method":"POST","request_url":"https://edr.example.com/isolate","skipped":true,
		   "when":"steps.vt.response.malicious > 5","when_value":false,"skip_reason":"when is not true"},
		  {"step_name":"disable","step_index":1,"request_method":"POST","request_url":"https://idp.example.com/u/{{item}}","for_each":"alert.accounts",
		   "items":[{"step_name":"disable","step_index":1,"item_index":0,"item":"ann","request_method":"POST","request_url":"https://idp.example.com/u/ann","response_status_code":204,"duration_ms":7},
		            {"step_name":"disable","step_index":1,"item_index":1,"item":"svc-<b>","skipped":true,"when":"!item.startsWith('svc-')","when_value":false}]},
		  {"step_name":"output","step_index":2,"kind":"code","result":{"isolated":false,"note":"<script>x</script>"},"duration_ms":1}]`,
		run.UUID).Exec(ctx)
	require.NoError(t, err)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead)
	b := h.browser(t)
	b.signIn(key)
	resp, page := b.do(http.MethodGet, "/console/runs/"+run.UUID.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInline(t, page)
	require.Contains(t, page, "when <code>steps.vt.response.malicious &gt; 5</code> → <code>false</code>")
	require.Contains(t, page, "skipped <small>(when is not true)</small>")
	require.Contains(t, page, "for_each <code>alert.accounts</code>: 2 item(s), in order")
	require.Contains(t, page, "<td>0</td><td><code>&#34;ann&#34;</code></td>")
	require.Contains(t, page, "<td>1</td><td><code>&#34;svc-\\u003cb\\u003e&#34;</code></td>")
	require.Contains(t, page, `output <span class="badge">code</span>`)
	require.Contains(t, page, `&#34;note&#34;: &#34;\u003cscript\u003ex`)
	require.NotContains(t, page, "<script>x")
}
