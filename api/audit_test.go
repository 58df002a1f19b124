package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// auditEvents lists the audit events of the key with prefix, newest first, through the route.
func auditEvents(t *testing.T, ts *testServer, admin, prefix string) []map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodGet, "/v1/audit-events?page_size=500&actor_key_prefix="+prefix, admin, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var out []map[string]any
	for _, e := range r.JSON(t)["data"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// Secret values the configuration routes below are given: none may appear in any audit event.
const (
	auditKeySecret      = "SI-SECRET-must-not-leak-1"
	auditSecretValue    = "WS-SECRET-must-not-leak-2"
	auditSecretValue2   = "WS-SECRET-must-not-leak-3"
	auditHeaderValue    = "AGENT-HEADER-must-not-leak-4"
	auditIntegSecret2   = "SI-SECRET-must-not-leak-5"
	auditProviderSecret = "s3cr3t-value-that-must-never-leak"
)

// TestEveryConfigurationRouteIsAudited walks every configuration route (API.md §15): each success
// writes exactly one audit event, in its transaction, naming the action, the resource, the actor
// (type, key prefix and name), the request id and the client address, and the changed fields with
// secrets and credentials as "[redacted]"; the same route failing (a refused body, an unknown
// resource) writes none.
func TestEveryConfigurationRouteIsAudited(t *testing.T) {
	ts := newSweepServer(t)
	ctx := context.Background()
	admin := mustKeyWith(t, ts.Store, func(k *store.APIKey) { k.Name = "auditor key" }, auth.ScopeAdmin)
	prefix := auth.Prefix(admin)
	suffix := uuid.NewString()[:8]
	provider := "audit" + suffix
	secretName := "AUDIT_" + strings.ToUpper(suffix)
	var plainKeys []string
	// A leftover splunk integration from an earlier run would make the create a 409.
	_, _ = ts.Store.DB().NewDelete().TableExpr("source_integrations").Where("source_name = 'splunk'").Exec(ctx)

	ids := map[string]string{}
	at := func(coll string) func() string { return func() string { return coll + "/" + ids[coll] } }
	fixed := func(p string) func() string { return func() string { return p } }
	missing := func(coll string) func() string { return func() string { return coll + "/" + uuid.NewString() } }
	bogus := map[string]any{"bogus_field": 1}

	type step struct {
		method      string
		path        func() string
		body        any
		status      int
		action, typ string
		changed     []string       // fields the event must list
		redacted    []string       // of them, those shown as "[redacted]"
		absent      []string       // fields the event must not list
		exact       map[string]any // fields whose {from, to} must be exactly this
		failPath    func() string
		failBody    any
		failStatus  int
		save        string // the collection whose id the answer's data.uuid is
	}
	steps := []step{
		{method: "POST", path: fixed("/v1/api-keys"), body: map[string]any{"name": "audited " + suffix, "scopes": []string{"alerts:read"}},
			status: 201, action: "created", typ: audit.APIKey, changed: []string{"name", "scopes", "key_hash", "key_prefix", "is_active"},
			redacted: []string{"key_hash"}, save: "/v1/api-keys",
			failPath: fixed("/v1/api-keys"), failBody: map[string]any{"name": "x", "scopes": []string{"bogus"}}, failStatus: 422},
		{method: "PATCH", path: at("/v1/api-keys"), body: map[string]any{"name": "renamed " + suffix, "rate_limit_per_minute": 500},
			status: 200, action: "updated", typ: audit.APIKey, changed: []string{"name", "rate_limit_per_minute"}, absent: []string{"scopes", "key_hash"},
			exact: map[string]any{"name": map[string]any{"from": "audited " + suffix, "to": "renamed " + suffix},
				"rate_limit_per_minute": map[string]any{"from": nil, "to": float64(500)}},
			failPath: missing("/v1/api-keys"), failBody: map[string]any{"name": "x"}, failStatus: 404},
		{method: "DELETE", path: at("/v1/api-keys"), status: 204, action: "revoked", typ: audit.APIKey, changed: []string{"is_active"},
			exact:    map[string]any{"is_active": map[string]any{"from": true, "to": false}},
			failPath: missing("/v1/api-keys"), failStatus: 404},

		{method: "POST", path: fixed("/v1/detection-rules"), body: map[string]any{"name": "audit rule " + suffix, "source_rule_id": "AUD-" + suffix, "source_name": "generic"},
			status: 201, action: "created", typ: audit.DetectionRule, changed: []string{"name", "source_rule_id", "source_name", "is_active"}, save: "/v1/detection-rules",
			failPath: fixed("/v1/detection-rules"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/detection-rules"), body: map[string]any{"severity": "High", "mitre_tactics": []string{"TA0001"}},
			status: 200, action: "updated", typ: audit.DetectionRule, changed: []string{"severity", "mitre_tactics"}, absent: []string{"name"},
			failPath: at("/v1/detection-rules"), failBody: bogus, failStatus: 422},
		{method: "DELETE", path: at("/v1/detection-rules"), status: 204, action: "deleted", typ: audit.DetectionRule, changed: []string{"name"},
			failPath: missing("/v1/detection-rules"), failStatus: 404},

		{method: "POST", path: fixed("/v1/context-documents"), body: map[string]any{"title": "audit doc " + suffix, "document_type": "sop", "content": "step one"},
			status: 201, action: "created", typ: audit.ContextDocument, changed: []string{"title", "document_type", "content"}, save: "/v1/context-documents",
			failPath: fixed("/v1/context-documents"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/context-documents"), body: map[string]any{"content": "step two"},
			status: 200, action: "updated", typ: audit.ContextDocument, changed: []string{"content"}, absent: []string{"title"},
			failPath: missing("/v1/context-documents"), failBody: map[string]any{"content": "x"}, failStatus: 404},
		{method: "DELETE", path: at("/v1/context-documents"), status: 204, action: "deleted", typ: audit.ContextDocument, changed: []string{"title"},
			failPath: missing("/v1/context-documents"), failStatus: 404},

		{method: "POST", path: fixed("/v1/source-integrations"), body: map[string]any{"source_name": "splunk", "auth_type": "shared_token",
			"auth_config": map[string]any{"secret": auditKeySecret}},
			status: 201, action: "created", typ: audit.SourceIntegration, changed: []string{"source_name", "auth_type", "auth_config"},
			redacted: []string{"auth_config"}, save: "/v1/source-integrations",
			failPath: fixed("/v1/source-integrations"), failBody: map[string]any{"source_name": "splunk", "auth_type": "bogus"}, failStatus: 422},
		{method: "PATCH", path: at("/v1/source-integrations"), body: map[string]any{"auth_config": map[string]any{"secret": auditIntegSecret2}, "display_name": "Splunk audited"},
			status: 200, action: "updated", typ: audit.SourceIntegration, changed: []string{"auth_config", "display_name"}, redacted: []string{"auth_config"},
			failPath: at("/v1/source-integrations"), failBody: bogus, failStatus: 422},
		{method: "DELETE", path: at("/v1/source-integrations"), status: 204, action: "deleted", typ: audit.SourceIntegration,
			changed: []string{"source_name", "auth_config"}, redacted: []string{"auth_config"},
			failPath: missing("/v1/source-integrations"), failStatus: 404},

		{method: "POST", path: fixed("/v1/indicator-mappings"), body: map[string]any{"source_name": "generic", "field_path": "audit_" + suffix,
			"indicator_type": "ip", "extraction_target": "raw_payload"},
			status: 201, action: "created", typ: audit.IndicatorMapping, changed: []string{"field_path", "indicator_type"}, save: "/v1/indicator-mappings",
			failPath: fixed("/v1/indicator-mappings"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/indicator-mappings"), body: map[string]any{"description": "audited"},
			status: 200, action: "updated", typ: audit.IndicatorMapping, changed: []string{"description"}, absent: []string{"field_path"},
			failPath: missing("/v1/indicator-mappings"), failBody: map[string]any{"description": "x"}, failStatus: 404},
		{method: "DELETE", path: at("/v1/indicator-mappings"), status: 204, action: "deleted", typ: audit.IndicatorMapping, changed: []string{"field_path"},
			failPath: missing("/v1/indicator-mappings"), failStatus: 404},

		{method: "POST", path: fixed("/v1/enrichment-providers"), body: validProviderBody(provider),
			status: 201, action: "created", typ: audit.EnrichmentProvider, changed: []string{"provider_name", "http_config", "auth_config_sealed"},
			redacted: []string{"auth_config_sealed"}, save: "/v1/enrichment-providers",
			failPath: fixed("/v1/enrichment-providers"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/enrichment-providers"), body: map[string]any{"display_name": "Audited " + suffix},
			status: 200, action: "updated", typ: audit.EnrichmentProvider, changed: []string{"display_name"}, absent: []string{"auth_config_sealed"},
			failPath: at("/v1/enrichment-providers"), failBody: bogus, failStatus: 422},
		{method: "POST", path: func() string { return at("/v1/enrichment-providers")() + "/deactivate" },
			status: 200, action: "updated", typ: audit.EnrichmentProvider, changed: []string{"is_active"},
			failPath: func() string { return missing("/v1/enrichment-providers")() + "/deactivate" }, failStatus: 404},
		{method: "POST", path: func() string { return at("/v1/enrichment-providers")() + "/activate" },
			status: 200, action: "updated", typ: audit.EnrichmentProvider, changed: []string{"is_active"},
			failPath: func() string { return missing("/v1/enrichment-providers")() + "/activate" }, failStatus: 404},

		{method: "POST", path: fixed("/v1/enrichment-field-extractions"), body: map[string]any{"provider_name": provider, "indicator_type": "ip",
			"source_path": "data.score", "target_key": "score", "value_type": "int"},
			status: 201, action: "created", typ: audit.FieldExtraction, changed: []string{"provider_name", "source_path", "target_key"},
			save:     "/v1/enrichment-field-extractions",
			failPath: fixed("/v1/enrichment-field-extractions"), failBody: map[string]any{"provider_name": "no-such-" + suffix, "indicator_type": "ip",
				"source_path": "a", "target_key": "b", "value_type": "int"}, failStatus: 422},
		{method: "POST", path: fixed("/v1/enrichment-field-extractions/bulk"), body: map[string]any{"extractions": []any{map[string]any{
			"provider_name": provider, "indicator_type": "ip", "source_path": "data.country", "target_key": "country", "value_type": "string"}}},
			status: 201, action: "created", typ: audit.FieldExtraction, changed: []string{"target_key"},
			failPath: fixed("/v1/enrichment-field-extractions/bulk"), failBody: map[string]any{"extractions": []any{bogus}}, failStatus: 422},
		{method: "PATCH", path: at("/v1/enrichment-field-extractions"), body: map[string]any{"description": "audited"},
			status: 200, action: "updated", typ: audit.FieldExtraction, changed: []string{"description"},
			failPath: at("/v1/enrichment-field-extractions"), failBody: bogus, failStatus: 422},
		{method: "DELETE", path: at("/v1/enrichment-field-extractions"), status: 204, action: "deleted", typ: audit.FieldExtraction, changed: []string{"target_key"},
			failPath: missing("/v1/enrichment-field-extractions"), failStatus: 404},
		{method: "DELETE", path: at("/v1/enrichment-providers"), status: 204, action: "deleted", typ: audit.EnrichmentProvider,
			changed: []string{"provider_name", "auth_config_sealed"}, redacted: []string{"auth_config_sealed"},
			failPath: missing("/v1/enrichment-providers"), failStatus: 404},

		{method: "PUT", path: fixed("/v1/workflow-secrets/" + secretName), body: map[string]any{"value": auditSecretValue, "allowed_hosts": []string{"hooks.example.com"},
			"description": "the token for hooks"},
			status: 200, action: "created", typ: audit.WorkflowSecret, changed: []string{"name", "allowed_hosts", "value_sealed"},
			redacted: []string{"value_sealed"}, absent: []string{"description"},
			failPath: fixed("/v1/workflow-secrets/" + secretName), failBody: map[string]any{"allowed_hosts": []string{"hooks.example.com"}}, failStatus: 422},
		{method: "PUT", path: fixed("/v1/workflow-secrets/" + secretName), body: map[string]any{"value": auditSecretValue2, "allowed_hosts": []string{"hooks2.example.com"}},
			status: 200, action: "updated", typ: audit.WorkflowSecret, changed: []string{"allowed_hosts", "value_sealed"},
			exact: map[string]any{"value_sealed": map[string]any{"from": store.AuditRedacted, "to": store.AuditRedacted},
				"allowed_hosts": map[string]any{"from": []any{"hooks.example.com"}, "to": []any{"hooks2.example.com"}}},
			redacted: []string{"value_sealed"}, absent: []string{"description", "name"},
			failPath: fixed("/v1/workflow-secrets/" + secretName), failBody: bogus, failStatus: 422},
		{method: "DELETE", path: fixed("/v1/workflow-secrets/" + secretName), status: 204, action: "deleted", typ: audit.WorkflowSecret,
			changed: []string{"name", "value_sealed"}, redacted: []string{"value_sealed"},
			failPath: fixed("/v1/workflow-secrets/NO_SUCH_" + strings.ToUpper(suffix)), failStatus: 404},

		{method: "POST", path: fixed("/v1/workflows"), body: map[string]any{"name": "audit wf " + suffix, "indicator_types": []string{"ip"},
			"approval_mode": "always", "risk_level": "low",
			"steps": []any{map[string]any{"name": "act", "method": "POST", "url": "http://127.0.0.1:9/x", "json_body": map[string]any{"ip": "{{indicator.value}}"}}}},
			status: 201, action: "created", typ: audit.Workflow, changed: []string{"name", "steps", "risk_level"}, save: "/v1/workflows",
			failPath: fixed("/v1/workflows"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/workflows"), body: map[string]any{"description": "audited", "state": "active"},
			status: 200, action: "updated", typ: audit.Workflow, changed: []string{"description", "state", "version"}, absent: []string{"steps"},
			failPath: at("/v1/workflows"), failBody: bogus, failStatus: 422},
		{method: "DELETE", path: at("/v1/workflows"), status: 204, action: "deleted", typ: audit.Workflow, changed: []string{"name"},
			failPath: missing("/v1/workflows"), failStatus: 404},

		{method: "POST", path: fixed("/v1/agents"), body: map[string]any{"name": "audit agent " + suffix, "endpoint_url": "http://127.0.0.1:9/hook",
			"auth_header_name": "X-Token", "auth_header_value": auditHeaderValue},
			status: 201, action: "created", typ: audit.Agent, changed: []string{"name", "endpoint_url", "auth_header_name", "auth_header_value", "signing_secret"},
			redacted: []string{"auth_header_value", "signing_secret"}, save: "/v1/agents",
			failPath: fixed("/v1/agents"), failBody: bogus, failStatus: 422},
		{method: "PATCH", path: at("/v1/agents"), body: map[string]any{"description": "audited", "retry_count": 5},
			status: 200, action: "updated", typ: audit.Agent, changed: []string{"description", "retry_count"}, absent: []string{"signing_secret"},
			failPath: at("/v1/agents"), failBody: bogus, failStatus: 422},
		{method: "POST", path: func() string { return at("/v1/agents")() + "/rotate-secret" }, status: 200, action: "rotated", typ: audit.Agent,
			changed: []string{"signing_secret"}, redacted: []string{"signing_secret"},
			failPath: func() string { return missing("/v1/agents")() + "/rotate-secret" }, failStatus: 404},
		{method: "DELETE", path: at("/v1/agents"), status: 204, action: "deleted", typ: audit.Agent, changed: []string{"name"},
			failPath: missing("/v1/agents"), failStatus: 404},
	}

	for i, s := range steps {
		name := fmt.Sprintf("%02d %s %s", i, s.method, s.path())
		before := len(auditEvents(t, ts, admin, prefix))

		// The route failing writes nothing.
		r := ts.do(t, s.method, s.failPath(), admin, s.failBody)
		require.Equal(t, s.failStatus, r.Status, "%s (failing): %s", name, r.Body)
		require.Len(t, auditEvents(t, ts, admin, prefix), before, "%s: a failed request writes no audit event", name)

		reqID := "audit-" + suffix + "-" + fmt.Sprint(i)
		r = ts.do(t, s.method, s.path(), admin, s.body, "X-Request-ID", reqID)
		require.Equal(t, s.status, r.Status, "%s: %s", name, r.Body)
		if s.save != "" {
			ids[s.save] = r.JSON(t)["data"].(map[string]any)["uuid"].(string)
		}
		if s.path() == "/v1/api-keys" && s.method == "POST" {
			plainKeys = append(plainKeys, r.JSON(t)["data"].(map[string]any)["key"].(string))
		}
		events := auditEvents(t, ts, admin, prefix)
		require.Len(t, events, before+1, "%s: exactly one audit event", name)
		e := events[0]
		require.Equal(t, s.action, e["action"], name)
		require.Equal(t, s.typ, e["resource_type"], name)
		require.NotEmpty(t, e["resource_name"], name)
		require.Equal(t, map[string]any{"type": "api", "key_prefix": prefix, "key_name": "auditor key"}, e["actor"], name)
		require.Regexp(t, `^[0-9a-f-]{36}$`, e["request_id"], "%s: the server's own id (R4-10)", name)
		require.NotEqual(t, reqID, e["request_id"], name)
		require.Equal(t, reqID, e["client_request_id"], "%s: the client's id, beside it", name)
		require.Equal(t, "127.0.0.1", e["client_ip"], name)
		changes := e["changes"].(map[string]any)
		for _, f := range s.changed {
			require.Contains(t, changes, f, "%s: changes %v", name, changes)
		}
		for _, f := range s.redacted {
			ch := changes[f].(map[string]any)
			for _, v := range []any{ch["from"], ch["to"]} {
				require.True(t, v == nil || v == store.AuditRedacted, "%s: %s shown as %v", name, f, v)
			}
		}
		for _, f := range s.absent {
			require.NotContains(t, changes, f, name)
		}
		for f, want := range s.exact {
			require.Equal(t, want, changes[f], "%s: %s", name, f)
		}
		for _, id := range ids {
			if strings.Contains(name, id) || (s.save != "" && id == ids[s.save]) {
				require.Equal(t, id, e["resource_uuid"], name)
			}
		}
	}

	// An update that changes nothing records nothing.
	r := ts.do(t, http.MethodPost, "/v1/agents", admin, map[string]any{"name": "noop " + suffix, "endpoint_url": "http://127.0.0.1:9/hook"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	agentID := r.JSON(t)["data"].(map[string]any)["uuid"].(string)
	n := len(auditEvents(t, ts, admin, prefix))
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPatch, "/v1/agents/"+agentID, admin, map[string]any{"name": "noop " + suffix}).Status)
	require.Len(t, auditEvents(t, ts, admin, prefix), n, "a PATCH that changes nothing is no change")
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/agents/"+agentID, admin, nil).Status)

	// No secret value, nor the created key, appears anywhere in the trail.
	var raw []string
	require.NoError(t, ts.Store.DB().NewRaw("SELECT changes::text FROM audit_events WHERE actor_key_prefix = ?", prefix).Scan(ctx, &raw))
	all := strings.Join(raw, "\n")
	for _, secret := range append(plainKeys, auditKeySecret, auditIntegSecret2, auditSecretValue, auditSecretValue2, auditHeaderValue, auditProviderSecret) {
		require.NotContains(t, all, secret)
	}
	require.NotContains(t, all, "the token for hooks", "a workflow secret's event keeps names and hosts only")
}

// TestAuditTrailIsAppendOnlyThroughTheAPI: no route writes, changes or deletes an audit event (only
// GET is routed under /v1/audit-events), and the trail reads the same after every other verb was tried.
func TestAuditTrailIsAppendOnlyThroughTheAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	prefix := auth.Prefix(admin)
	r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, map[string]any{"name": "append-only", "scopes": []string{"alerts:read"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	listed := ts.do(t, http.MethodGet, "/v1/audit-events?actor_key_prefix="+prefix, admin, nil)
	require.Equal(t, http.StatusOK, listed.Status)
	events := listed.JSON(t)["data"].([]any)
	require.Len(t, events, 1)
	id := events[0].(map[string]any)["uuid"].(string)

	for _, rt := range ts.Server.routes {
		if strings.HasPrefix(rt.Path, "/v1/audit-events") {
			require.Equal(t, http.MethodGet, rt.Method, "only reads are routed: %s %s", rt.Method, rt.Path)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, p := range []string{"/v1/audit-events", "/v1/audit-events/" + id} {
			r := ts.do(t, m, p, admin, map[string]any{"action": "deleted", "resource_name": "forged"})
			require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, r.Status, "%s %s", m, p)
		}
	}
	again := ts.do(t, http.MethodGet, "/v1/audit-events?actor_key_prefix="+prefix, admin, nil)
	require.JSONEq(t, string(listed.Body), string(again.Body))
}

// TestAuditEventFilters: the filters of GET /v1/audit-events narrow as documented, only admins read
// the trail, and malformed or hostile filter values are a 422, never a 5xx.
func TestAuditEventFilters(t *testing.T) {
	ts := newTestServer(t, nil)
	ctx := context.Background()
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	prefix := auth.Prefix(admin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead, auth.ScopeAgentsRead)

	actor := store.Actor{Type: store.ActorAPI, KeyPrefix: prefix}
	old := time.Now().Add(-72 * time.Hour).UTC()
	for i, e := range []*store.AuditEvent{
		actor.AuditEvent(store.AuditCreated, audit.Agent, nil, "a1", nil),
		actor.AuditEvent(store.AuditDeleted, audit.Agent, nil, "a2", nil),
		actor.AuditEvent(store.AuditCreated, audit.Workflow, nil, "w1", nil),
		actor.AuditEvent(store.AuditUpdated, audit.DetectionRule, nil, "r1", nil),
	} {
		if i == 0 {
			e.CreatedAt = old
		}
		require.NoError(t, ts.Store.AppendAuditEvent(ctx, nil, e))
	}
	names := func(q string) []string {
		t.Helper()
		r := ts.do(t, http.MethodGet, "/v1/audit-events?actor_key_prefix="+prefix+"&"+q, admin, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var out []string
		for _, e := range r.JSON(t)["data"].([]any) {
			out = append(out, e.(map[string]any)["resource_name"].(string))
		}
		return out
	}
	require.Equal(t, []string{"r1", "w1", "a2", "a1"}, names(""), "newest first")
	require.Equal(t, []string{"w1", "a2", "a1"}, names("resource_type=agent,workflow"))
	require.Equal(t, []string{"w1", "a1"}, names("action=created"))
	require.Equal(t, []string{"w1", "a1"}, names("resource_type=agent&resource_type=workflow&action=created"))
	require.Equal(t, []string{"a1"}, names("to_time="+url.QueryEscape(old.Add(time.Minute).Format(time.RFC3339))))
	require.Equal(t, []string{"r1", "w1", "a2"}, names("from_time="+url.QueryEscape(old.Add(time.Hour).Format(time.RFC3339))))
	require.Empty(t, names("resource_type=api_key"))
	r := ts.do(t, http.MethodGet, "/v1/audit-events?actor_key_prefix="+prefix+"&page_size=1&page=2", admin, nil)
	require.Equal(t, http.StatusOK, r.Status)
	meta := r.JSON(t)["meta"].(map[string]any)
	require.EqualValues(t, 4, meta["total"])
	require.EqualValues(t, 4, meta["total_pages"])

	requireError(t, ts.do(t, http.MethodGet, "/v1/audit-events", reader, nil), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodGet, "/v1/audit-events", "", nil), http.StatusUnauthorized, "UNAUTHORIZED")

	for _, q := range []string{
		"resource_type=bogus",
		"resource_type=agent,bogus",
		"action=exploded",
		"action=" + url.QueryEscape("created' OR '1'='1"),
		"from_time=yesterday",
		"from_time=2026-11-26T10:00:00", // no offset
		"to_time=" + url.QueryEscape("2026-11-26T10:00:00Z") + "&from_time=" + url.QueryEscape("2026-11-27T10:00:00Z"),
		"actor_key_prefix=" + url.QueryEscape("vgl_'; DROP TABLE audit_events; --"),
		"actor_key_prefix=" + strings.Repeat("a", 65),
		"actor_key_prefix=" + url.QueryEscape("a\x00b"),
		"resource_type=" + url.QueryEscape("<script>alert(1)</script>"),
		"page_size=0",
		"page_size=501",
		"page=-1",
		"page=abc",
		"resource_type=" + strings.Repeat("agent,", 300) + "x",
	} {
		r := ts.do(t, http.MethodGet, "/v1/audit-events?"+q, admin, nil)
		shown := q[:min(len(q), 80)]
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", shown, r.Body)
		require.Equal(t, "VALIDATION_ERROR", r.JSON(t)["error"].(map[string]any)["code"], shown)
	}
	var n int
	require.NoError(t, ts.Store.DB().NewRaw("SELECT count(*) FROM audit_events").Scan(ctx, &n))
	require.Positive(t, n, "the table is still there")
}
