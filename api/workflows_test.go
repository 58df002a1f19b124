package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

func newWorkflowServer(t *testing.T) (*testServer, *secretbox.Box) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	st := testStore(t)
	ts := newTestServer(t, func(_ *Config, d *Deps) {
		d.Workflows = st
		d.Secrets = box
	})
	return ts, box
}

func simpleWorkflow(name string) map[string]any {
	return map[string]any{"name": name, "indicator_types": []string{"ip"},
		"steps": []any{map[string]any{"name": "block", "method": "POST", "url": "https://fw.example.com/api/block",
			"headers":   map[string]any{"Authorization": "Bearer {{secrets.FW_TOKEN}}"},
			"json_body": map[string]any{"ip": "{{indicator.value}}"}}}}
}

func TestWorkflowCRUDAndVersions(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	w := mustKey(t, ts.Store, auth.ScopeWorkflowsWrite, auth.ScopeWorkflowsRead)
	r := mustKey(t, ts.Store, auth.ScopeWorkflowsRead)

	created := ts.do(t, http.MethodPost, "/v1/workflows", w, simpleWorkflow("Block IP "+uuid.NewString()))
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	d := created.JSON(t)["data"].(map[string]any)
	id := d["uuid"].(string)
	require.EqualValues(t, 1, d["version"])
	require.Equal(t, "draft", d["state"])
	require.Equal(t, "always", d["approval_mode"])
	require.EqualValues(t, 300, d["timeout_seconds"])
	require.EqualValues(t, 3600, d["approval_timeout_seconds"])
	require.EqualValues(t, 1, d["required_approvals"])
	require.Equal(t, map[string]any{"max_attempts": 3.0, "initial_interval_seconds": 1.0}, d["retry_policy"])
	require.Equal(t, []any{"FW_TOKEN"}, d["required_secrets"])
	require.Equal(t, false, d["is_system"])

	// Writes need workflows:write.
	requireError(t, ts.do(t, http.MethodPost, "/v1/workflows", r, simpleWorkflow("x")), http.StatusForbidden, "FORBIDDEN")

	// A state-only change keeps the version; a definition change bumps it and keeps the old one.
	p := ts.do(t, http.MethodPatch, "/v1/workflows/"+id, w, map[string]any{"state": "active"})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	require.EqualValues(t, 1, p.JSON(t)["data"].(map[string]any)["version"])
	p = ts.do(t, http.MethodPatch, "/v1/workflows/"+id, w, map[string]any{"risk_level": "critical", "description": "blocks at the edge"})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	require.EqualValues(t, 2, p.JSON(t)["data"].(map[string]any)["version"])
	p = ts.do(t, http.MethodPatch, "/v1/workflows/"+id, w, map[string]any{"risk_level": "critical"})
	require.EqualValues(t, 2, p.JSON(t)["data"].(map[string]any)["version"], "no change, no version")
	p = ts.do(t, http.MethodPatch, "/v1/workflows/"+id, w, map[string]any{"description": nil})
	require.EqualValues(t, 3, p.JSON(t)["data"].(map[string]any)["version"])
	require.Nil(t, p.JSON(t)["data"].(map[string]any)["description"])

	vs := ts.do(t, http.MethodGet, "/v1/workflows/"+id+"/versions", r, nil)
	require.Equal(t, http.StatusOK, vs.Status, string(vs.Body))
	list := vs.JSON(t)["data"].([]any)
	require.Len(t, list, 3)
	require.EqualValues(t, 3, list[0].(map[string]any)["version"], "newest first")
	require.Equal(t, "medium", list[2].(map[string]any)["definition"].(map[string]any)["risk_level"])
	require.Equal(t, "critical", list[1].(map[string]any)["definition"].(map[string]any)["risk_level"])

	// List with filters and sorting.
	l := ts.do(t, http.MethodGet, "/v1/workflows?state=active&risk_level=critical,high&q=block+ip&sort_by=name&sort_order=asc", r, nil)
	require.Equal(t, http.StatusOK, l.Status, string(l.Body))
	require.GreaterOrEqual(t, int(l.JSON(t)["meta"].(map[string]any)["total"].(float64)), 1)
	for _, q := range []string{"state=bogus", "risk_level=extreme", "sort_by=steps", "sort_order=up", "workflow_type=x", "page=0", "page_size=501"} {
		requireValidation(t, ts.do(t, http.MethodGet, "/v1/workflows?"+q, r, nil))
	}
	// q is matched literally: LIKE wildcards do not widen it.
	l = ts.do(t, http.MethodGet, "/v1/workflows?q=%25%25%25_", r, nil)
	require.Equal(t, http.StatusOK, l.Status)
	require.EqualValues(t, 0, l.JSON(t)["meta"].(map[string]any)["total"])

	// Delete: 204, then 404.
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/workflows/"+id, w, nil).Status)
	requireError(t, ts.do(t, http.MethodGet, "/v1/workflows/"+id, r, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/workflows/"+id, w, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/workflows/"+uuid.NewString(), w, map[string]any{"state": "active"}), http.StatusNotFound, "NOT_FOUND")
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/workflows/123", r, nil))
}

func TestWorkflowValidationNamesTheStep(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	w := mustKey(t, ts.Store, auth.ScopeWorkflowsWrite)
	step := func(edit func(map[string]any)) map[string]any {
		s := map[string]any{"name": "ok", "url": "https://api.example.com/x"}
		edit(s)
		return s
	}
	with := func(steps ...any) map[string]any {
		b := simpleWorkflow("v")
		b["steps"] = steps
		return b
	}
	good := step(func(map[string]any) {})
	cases := []struct {
		name string
		body any
		locs []string
	}{
		{"no steps", map[string]any{"name": "x"}, []string{"body.steps"}},
		{"steps not a list", with2(simpleWorkflow("x"), "steps", "GET http://x"), []string{"body.steps"}},
		{"empty steps", with(), []string{"body.steps"}},
		{"bad url in step 1", with(good, step(func(s map[string]any) { s["name"] = "two"; s["url"] = "ftp://x" })), []string{"body.steps.1.url"}},
		{"unknown variable namespace", with(step(func(s map[string]any) { s["url"] = "https://x/{{env.HOME}}" })), []string{"body.steps.0.url"}},
		{"auth namespace", with(step(func(s map[string]any) { s["headers"] = map[string]any{"A": "{{auth.key}}"} })), []string{"body.steps.0"}},
		{"lower-case secret", with(step(func(s map[string]any) { s["headers"] = map[string]any{"A": "{{secrets.token}}"} })), []string{"body.steps.0"}},
		{"later step reference", with(step(func(s map[string]any) { s["url"] = "https://x/{{steps.later.response.id}}" }), step(func(s map[string]any) { s["name"] = "later" })), []string{"body.steps.0.url"}},
		{"duplicate names", with(good, good), []string{"body.steps.1.name"}},
		{"unknown step field", with(step(func(s map[string]any) { s["shell"] = "rm -rf /" })), []string{"body.steps.0.shell"}},
		{"bad method", with(step(func(s map[string]any) { s["method"] = "TRACE" })), []string{"body.steps.0.method"}},
		{"timeout too long", with(step(func(s map[string]any) { s["timeout_seconds"] = 100000 })), []string{"body.steps.0.timeout_seconds"}},
		{"step is a string", with("GET /"), []string{"body.steps.0"}},
		{"too many steps", with(manySteps(21)...), []string{"body.steps"}},
		{"bad enums and bounds", func() map[string]any {
			b := simpleWorkflow("x")
			b["approval_mode"], b["risk_level"], b["required_approvals"], b["approval_timeout_seconds"] = "sometimes", "extreme", 0, 0
			b["retry_policy"] = map[string]any{"max_attempts": 0, "initial_interval_seconds": 1}
			b["indicator_types"] = []string{"ipv6"}
			return b
		}(), []string{"body.approval_mode", "body.risk_level", "body.required_approvals", "body.approval_timeout_seconds", "body.retry_policy.max_attempts", "body.indicator_types.0"}},
		{"unknown field", with2(simpleWorkflow("x"), "is_system", true), []string{"body.is_system"}},
		{"name wrong type", with2(simpleWorkflow("x"), "name", 42), []string{"body.name"}},
		{"name too long", with2(simpleWorkflow("x"), "name", strings.Repeat("n", 201)), []string{"body.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ElementsMatch(t, tc.locs, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/workflows", w, tc.body))))
		})
	}
	requireError(t, ts.do(t, http.MethodPost, "/v1/workflows", w, `{"name": "x", "steps": [`), http.StatusBadRequest, "INVALID_JSON")
	requireError(t, ts.do(t, http.MethodPost, "/v1/workflows", w, "name=x", "Content-Type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")

	// PATCH validates new steps the same way.
	created := ts.do(t, http.MethodPost, "/v1/workflows", w, simpleWorkflow("patch me"))
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	id := created.JSON(t)["data"].(map[string]any)["uuid"].(string)
	require.Equal(t, []string{"body.steps.0.url"}, locs(requireValidation(t, ts.do(t, http.MethodPatch, "/v1/workflows/"+id, w,
		map[string]any{"steps": []any{map[string]any{"name": "a", "url": "javascript:alert(1)"}}}))))
}

func with2(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func manySteps(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": "s" + strings.Repeat("x", i), "url": "https://x.example.com/"}
	}
	return out
}

func TestWorkflowSecretsWriteOnly(t *testing.T) {
	ts, box := newWorkflowServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	notAdmin := mustKey(t, ts.Store, auth.ScopeWorkflowsWrite, auth.ScopeWorkflowsRead)
	name := "SECRET_" + strings.ToUpper(strings.ReplaceAll(uuid.NewString()[:8], "-", ""))

	r := ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": "hunter2-hunter2", "description": "fw"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, true, r.JSON(t)["data"].(map[string]any)["created"])
	require.NotContains(t, string(r.Body), "hunter2")
	r = ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": "hunter3-hunter3"})
	require.Equal(t, http.StatusOK, r.Status)
	require.Nil(t, r.JSON(t)["data"].(map[string]any)["created"], "replaced, not created")

	l := ts.do(t, http.MethodGet, "/v1/workflow-secrets?page_size=500", admin, nil)
	require.Equal(t, http.StatusOK, l.Status)
	require.Contains(t, string(l.Body), name)
	require.NotContains(t, string(l.Body), "hunter")

	// Sealed at rest under the key.
	sec, err := ts.Store.GetWorkflowSecret(context.Background(), name)
	require.NoError(t, err)
	require.NotContains(t, string(sec.ValueSealed), "hunter3")
	plain, err := box.Open(sec.ValueSealed)
	require.NoError(t, err)
	require.Equal(t, "hunter3-hunter3", string(plain))

	requireError(t, ts.do(t, http.MethodGet, "/v1/workflow-secrets", notAdmin, nil), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, notAdmin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": "x"}), http.StatusForbidden, "FORBIDDEN")
	for _, bad := range []string{"lower", "1ABC", "A-B", strings.Repeat("A", 65), "%2e%2e"} {
		require.Equal(t, []string{"path.name"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+bad, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": "x"}))), bad)
	}
	require.Equal(t, []string{"body.value"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": ""}))))
	require.Equal(t, []string{"body.value"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": 12}))))
	require.Equal(t, []string{"body.value"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"allowed_hosts": []string{"127.0.0.1"}, "value": strings.Repeat("v", 10001)}))))

	// allowed_hosts: required, at least one valid pattern.
	require.Equal(t, []string{"body.allowed_hosts"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": "x"}))))
	require.Equal(t, []string{"body.allowed_hosts"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": "x", "allowed_hosts": []string{}}))))
	require.Equal(t, []string{"body.allowed_hosts.0", "body.allowed_hosts.2"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin,
		map[string]any{"value": "x", "allowed_hosts": []string{"https://evil.example.com/x", "*.example.com", "*"}}))))
	require.Equal(t, []string{"body.allowed_hosts"}, locs(requireValidation(t, ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": "x", "allowed_hosts": "a.example.com"}))))
	r = ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": "x", "allowed_hosts": []string{"*.example.com", "10.0.0.5:8443"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, []any{"*.example.com", "10.0.0.5:8443"}, r.JSON(t)["data"].(map[string]any)["allowed_hosts"])

	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/workflow-secrets/"+name, admin, nil).Status)
	requireError(t, ts.do(t, http.MethodDelete, "/v1/workflow-secrets/"+name, admin, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestWorkflowDryRun(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	x := mustKey(t, ts.Store, auth.ScopeWorkflowsExecute, auth.ScopeWorkflowsWrite)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPut, "/v1/workflow-secrets/FW_TOKEN", admin, map[string]any{"allowed_hosts": []string{"fw.example.com"}, "value": "fw-token-123456"}).Status)
	body := simpleWorkflow("dry")
	body["steps"] = []any{
		map[string]any{"name": "lookup", "url": "https://fw.example.com/api/objects?ip={{indicator.value}}",
			"headers": map[string]any{"Authorization": "Bearer {{secrets.FW_TOKEN}}"}},
		map[string]any{"name": "block", "method": "POST", "url": "https://fw.example.com/api/objects/{{steps.lookup.response.id}}/block",
			"json_body": map[string]any{"ip": "{{indicator.value}}"}, "expected_status": []int{201}},
	}
	// Step block sends what lookup received for FW_TOKEN: saving that needs admin (issue 27).
	requireError(t, ts.do(t, http.MethodPost, "/v1/workflows", x, body), http.StatusForbidden, "FORBIDDEN")
	created := ts.do(t, http.MethodPost, "/v1/workflows", admin, body)
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	id := created.JSON(t)["data"].(map[string]any)["uuid"].(string)

	r := ts.do(t, http.MethodPost, "/v1/workflows/"+id+"/test", x, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.9",
		"mock_http_responses": map[string]any{"lookup": map[string]any{"status_code": 200, "body": map[string]any{"id": "obj/42"}}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, d["success"], string(r.Body))
	steps := d["steps"].([]any)
	require.Len(t, steps, 2)
	first, second := steps[0].(map[string]any), steps[1].(map[string]any)
	require.Equal(t, "https://fw.example.com/api/objects?ip=192.0.2.9", first["request_url"])
	require.NotContains(t, string(r.Body), "fw-token-123456", "secrets masked in the dry run")
	require.Equal(t, "https://fw.example.com/api/objects/****/block", second["request_url"],
		"earlier step's response, path-escaped, masked like FW_TOKEN it was received for (issue 27)")
	require.NotContains(t, string(r.Body), "obj%2F42")
	require.NotContains(t, string(r.Body), "obj/42")
	require.EqualValues(t, 201, second["response_status_code"], "default mock answers the expected status")

	// A mocked failure is reported in the result, not as an HTTP error.
	r = ts.do(t, http.MethodPost, "/v1/workflows/"+id+"/test", x, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.9",
		"mock_http_responses": map[string]any{"lookup": map[string]any{"status_code": 500}}})
	require.Equal(t, http.StatusOK, r.Status)
	d = r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, d["success"])
	require.Len(t, d["steps"], 1)
	require.NotEmpty(t, d["error_message"])

	// No run row was created.
	runs, total, err := ts.Store.ListWorkflowRuns(context.Background(), store.WorkflowRunFilter{WorkflowUUID: ptrUUID(uuid.MustParse(id))})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, runs)

	requireValidation(t, ts.do(t, http.MethodPost, "/v1/workflows/"+id+"/test", x, map[string]any{"indicator_type": "ip", "indicator_value": "1.2.3.4",
		"mock_http_responses": map[string]any{"lookup": map[string]any{"status_code": 99}}}))
	requireValidation(t, ts.do(t, http.MethodPost, "/v1/workflows/"+id+"/test", x, map[string]any{"indicator_type": "ip"}))
	requireError(t, ts.do(t, http.MethodPost, "/v1/workflows/"+uuid.NewString()+"/test", x, map[string]any{"indicator_type": "ip", "indicator_value": "1.2.3.4"}), http.StatusNotFound, "NOT_FOUND")
}

func ptrUUID(u uuid.UUID) *uuid.UUID { return &u }

func TestSystemWorkflowsSeededAndGuarded(t *testing.T) {
	ts, _ := newWorkflowServer(t)
	ctx := context.Background()
	defs, err := builtins.SystemWorkflows()
	require.NoError(t, err)
	require.Len(t, defs, 11)
	for _, d := range defs {
		require.Empty(t, responses.ValidateSteps(d.Workflow.Steps), d.Key)
		require.Equal(t, d.RequiredSecrets, workflowSecretNames(d.Workflow.Steps), d.Key)
	}
	require.NoError(t, ts.Store.SeedSystemWorkflows(ctx, defs))
	require.NoError(t, ts.Store.SeedSystemWorkflows(ctx, defs), "idempotent")
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	l := ts.do(t, http.MethodGet, "/v1/workflows?q=okta&page_size=500", admin, nil)
	var env struct {
		Data []workflowResponse `json:"data"`
	}
	require.NoError(t, json.Unmarshal(l.Body, &env))
	require.Len(t, env.Data, 5)
	okta := env.Data[0]
	for _, w := range env.Data {
		require.True(t, w.IsSystem)
		require.Equal(t, "inactive", w.State, "no credentials yet")
	}
	// The worked examples of issue 32 too: inactive until their secrets exist.
	for _, q := range []string{"Falcon", "every+account"} {
		l := ts.do(t, http.MethodGet, "/v1/workflows?q="+q+"&page_size=500", admin, nil)
		var found struct {
			Data []workflowResponse `json:"data"`
		}
		require.NoError(t, json.Unmarshal(l.Body, &found))
		require.Len(t, found.Data, 1, q)
		require.True(t, found.Data[0].IsSystem)
		require.Equal(t, "inactive", found.Data[0].State, "%s: no credentials yet", q)
	}

	// Credentials configured → active; one removed → inactive again.
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPut, "/v1/workflow-secrets/OKTA_ORG_URL", admin, map[string]any{"allowed_hosts": []string{"*.okta.com"}, "value": "https://example.okta.com"}).Status)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPut, "/v1/workflow-secrets/OKTA_API_TOKEN", admin, map[string]any{"allowed_hosts": []string{"*.okta.com"}, "value": "00abcdefghijklmnop"}).Status)
	got := ts.do(t, http.MethodGet, "/v1/workflows/"+okta.UUID.String(), admin, nil)
	require.Equal(t, "active", got.JSON(t)["data"].(map[string]any)["state"])
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/workflow-secrets/OKTA_API_TOKEN", admin, nil).Status)
	got = ts.do(t, http.MethodGet, "/v1/workflows/"+okta.UUID.String(), admin, nil)
	require.Equal(t, "inactive", got.JSON(t)["data"].(map[string]any)["state"])

	// Switching a builtin on needs its secrets; off keeps it off whatever secrets change.
	r := ts.do(t, http.MethodPatch, "/v1/workflows/"+okta.UUID.String(), admin, map[string]any{"state": "active"})
	m := requireError(t, r, http.StatusConflict, "WORKFLOW_NOT_CONFIGURED")
	require.Equal(t, []any{"OKTA_API_TOKEN"}, m["error"].(map[string]any)["details"].(map[string]any)["missing_secrets"])
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPut, "/v1/workflow-secrets/OKTA_API_TOKEN", admin, map[string]any{"allowed_hosts": []string{"*.okta.com"}, "value": "00abcdefghijklmnop"}).Status)
	r = ts.do(t, http.MethodPatch, "/v1/workflows/"+okta.UUID.String(), admin, map[string]any{"state": "inactive"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "inactive", r.JSON(t)["data"].(map[string]any)["state"])
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPut, "/v1/workflow-secrets/OKTA_API_TOKEN", admin, map[string]any{"allowed_hosts": []string{"*.okta.com"}, "value": "00abcdefghijklmnoq"}).Status)
	got = ts.do(t, http.MethodGet, "/v1/workflows/"+okta.UUID.String(), admin, nil)
	require.Equal(t, "inactive", got.JSON(t)["data"].(map[string]any)["state"], "switched off stays off")
	r = ts.do(t, http.MethodPatch, "/v1/workflows/"+okta.UUID.String(), admin, map[string]any{"state": "active"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "active", r.JSON(t)["data"].(map[string]any)["state"])
	require.EqualValues(t, 1, r.JSON(t)["data"].(map[string]any)["version"])
	t.Cleanup(func() {
		_ = ts.Store.DeleteWorkflowSecret(ctx, "OKTA_ORG_URL")
		_ = ts.Store.DeleteWorkflowSecret(ctx, "OKTA_API_TOKEN")
	})

	// System workflows cannot be deleted or redefined.
	requireError(t, ts.do(t, http.MethodDelete, "/v1/workflows/"+okta.UUID.String(), admin, nil), http.StatusForbidden, "SYSTEM_WORKFLOW")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/workflows/"+okta.UUID.String(), admin, map[string]any{"name": "mine"}), http.StatusForbidden, "SYSTEM_WORKFLOW_READ_ONLY")
}

// FuzzValidateWorkflowSteps: any steps value is either accepted (and then parses for the engine and
// names its secrets) or rejected with locations under steps; it never panics.
func FuzzValidateWorkflowSteps(f *testing.F) {
	f.Add(`[{"name":"a","url":"https://x.example.com/{{indicator.value}}"}]`)
	f.Add(`[{"name":"a","url":"{{secrets.BASE}}/u","headers":{"A":"{{secrets.TOKEN}}"}},{"name":"b","url":"https://x/{{steps.a.response.id}}"}]`)
	f.Add(`[{"name":"a","url":"https://x/","json_body":{"k":["{{alert.title}}",1,null]}}]`)
	f.Add(`[{"name":"a","url":"{{auth.key}}"}]`)
	f.Add(`{"steps":[]}`)
	f.Add(`[[[[[[[[[[]]]]]]]]]]`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		errs := responses.ValidateSteps(json.RawMessage(raw))
		for _, e := range errs {
			if len(e.Loc) == 0 || e.Loc[0] != "steps" {
				t.Fatalf("location %v outside steps", e.Loc)
			}
		}
		if len(errs) == 0 {
			for _, name := range workflowSecretNames(json.RawMessage(raw)) {
				if !responses.ValidSecretName(name) {
					t.Fatalf("accepted secret name %q", name)
				}
			}
		}
	})
}
