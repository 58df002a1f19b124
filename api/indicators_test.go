package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
)

func TestIndicatorsAPI(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead, auth.ScopeEnrichmentsRead)
	ctx := context.Background()
	a1, a2 := newAlert(t, ts, key, ""), newAlert(t, ts, key, "")
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	dom := "ind-" + suffix + ".com"
	for _, a := range []string{a1, a2} {
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+a+"/indicators?enrich=false", key, map[string]any{"indicators": []map[string]any{{"value": strings.ToUpper(dom)}, {"value": "sub." + dom}}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	}
	_, err := ts.Store.DB().NewRaw(`UPDATE indicators SET enrichment_results = '{"p1":{"status":"success","success":true,"malice":"Suspicious","raw_response":{"big":1}},"p2":{"status":"failed","success":false,"malice":"Malicious"}}', malice = 'Suspicious' WHERE value = ?`, dom).Exec(ctx)
	require.NoError(t, err)

	list := func(q string) []map[string]any {
		r := ts.do(t, http.MethodGet, "/v1/indicators?"+q, key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var out []map[string]any
		for _, x := range r.JSON(t)["data"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	got := list("type=domain&value=" + strings.ToUpper(dom))
	require.Len(t, got, 1, "value is normalized for its type")
	id := got[0]["uuid"].(string)
	require.NotContains(t, got[0]["enrichment_results"].(map[string]any)["p1"], "raw_response", "lists strip raw responses")
	require.Len(t, list("q=sub."+dom), 1)
	require.Len(t, list("q=ind-"+suffix), 1, "prefix search")
	require.Len(t, list("q=ind-"+suffix[:4]+"%25"), 0, "LIKE wildcards are literal")
	require.Len(t, list("type=domain&malice=Suspicious&q=ind-"+suffix), 1)
	require.Len(t, list("type=ip,email&q=ind-"+suffix), 0)

	r := ts.do(t, http.MethodGet, "/v1/indicators/"+id, key, nil)
	d := alertData(t, r)
	require.Equal(t, float64(2), d["alert_count"])
	require.Contains(t, d["enrichment_results"].(map[string]any)["p1"], "raw_response", "detail keeps raw responses")

	// Override is sticky; null recomputes from the successful results only.
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+id, key, map[string]any{"malice": "Benign"}))
	require.Equal(t, "Benign", d["malice"])
	require.Equal(t, "analyst", d["malice_source"])
	require.NotNil(t, d["malice_overridden_at"])
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+id, key, `{"malice":null}`))
	require.Equal(t, "Suspicious", d["malice"])
	require.Equal(t, "enrichment", d["malice_source"])
	require.Nil(t, d["malice_overridden_at"])

	for _, body := range []any{map[string]any{}, map[string]any{"malice": "Evil"}, map[string]any{"malice": 1}, map[string]any{"malice": "Benign", "x": 1}} {
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+id, key, body))
	}
	requireError(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+uuid.NewString(), key, map[string]any{"malice": "Benign"}), 404, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodGet, "/v1/indicators/"+uuid.NewString(), key, nil), 404, "NOT_FOUND")
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/indicators/xyz", key, nil))
	for _, q := range []string{"type=ipv6", "malice=Evil", "page_size=0", "value=" + strings.Repeat("v", 2049), "q=a%00"} {
		requireValidation(t, ts.do(t, http.MethodGet, "/v1/indicators?"+q, key, nil))
	}
	requireError(t, ts.do(t, http.MethodGet, "/v1/indicators", mustKey(t, ts.Store, auth.ScopeAlertsRead), nil), 403, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+id, mustKey(t, ts.Store, auth.ScopeEnrichmentsRead), map[string]any{"malice": "Benign"}), 403, "FORBIDDEN")
}

func TestIndicatorMappingsAPI(t *testing.T) {
	ts := newAlertServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)

	r := ts.do(t, http.MethodGet, "/v1/indicator-mappings?is_system=true&extraction_target=normalized&page_size=100", admin, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	sys := r.JSON(t)["data"].([]any)
	require.Len(t, sys, 14, "the pass-2 system mappings are seeded once")
	systemRows, err := builtins.SystemMappings()
	require.NoError(t, err)
	first := sys[0].(map[string]any)
	require.Equal(t, "src_ip", first["field_path"])
	require.Equal(t, "normalized", first["extraction_target"])
	sysID := first["uuid"].(string)

	m := requireError(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+sysID, admin, map[string]any{"field_path": "dst_ip"}), 422, "SYSTEM_MAPPING_READONLY")
	require.Equal(t, []any{"field_path"}, m["error"].(map[string]any)["details"].(map[string]any)["fields"])
	requireError(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+sysID, admin, map[string]any{"indicator_type": "domain"}), 422, "SYSTEM_MAPPING_READONLY")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/indicator-mappings/"+sysID, admin, nil), 422, "SYSTEM_MAPPING_READONLY")
	d := alertData(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+sysID, admin, map[string]any{"is_active": false, "description": "off for a test"}))
	require.Equal(t, false, d["is_active"])
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+sysID, admin, map[string]any{"is_active": true}))
	require.Equal(t, true, d["is_active"])

	path := "Custom.*.Address" // Entities.*.Address is a system mapping of sentinel
	r = ts.do(t, http.MethodPost, "/v1/indicator-mappings", admin, map[string]any{"source_name": "sentinel", "field_path": path, "indicator_type": "ip", "extraction_target": "raw_payload"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	custom := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, custom["is_system"])
	cid := custom["uuid"].(string)
	requireError(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings", admin, map[string]any{"source_name": "sentinel", "field_path": path, "indicator_type": "ip", "extraction_target": "raw_payload"}), 409, "MAPPING_EXISTS")

	// test-extraction uses it (pass 3) with fan-out; nothing stored.
	r = ts.do(t, http.MethodPost, "/v1/indicator-mappings/test-extraction", admin, map[string]any{"source_name": "sentinel",
		"raw_payload": map[string]any{"properties": map[string]any{"title": "t", "severity": "High"}, "Custom": []any{map[string]any{"Address": "45.33.32.1"}, map[string]any{"Address": "45.33.32.2"}, map[string]any{"Address": "nope"}}}})
	res := alertData(t, r)
	require.Len(t, res["pass3"], 2)
	require.NotEmpty(t, res["skipped"])
	require.NotEmpty(t, res["fingerprint"])
	require.Equal(t, "High", res["normalized"].(map[string]any)["severity"])
	require.Equal(t, []any{map[string]any{"field": "occurred_at", "note": "no timestamp in the payload; ingested_at used"}},
		res["normalized"].(map[string]any)["normalization_notes"])
	// An empty object is previewed as the alert it would be (issue 43: no shape refused), notes listed.
	empty := alertData(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings/test-extraction", admin, map[string]any{"source_name": "sentinel", "raw_payload": map[string]any{}}))
	prev := empty["normalized"].(map[string]any)
	require.Equal(t, "Untitled sentinel alert", prev["title"])
	require.Len(t, prev["normalization_notes"], 3)
	require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings/test-extraction", admin, map[string]any{"source_name": "nope", "raw_payload": map[string]any{}}))), "body.source_name")
	require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings/test-extraction", admin, map[string]any{"source_name": "generic", "raw_payload": []int{1}}))), "body.raw_payload")

	bad := []struct {
		body any
		loc  string
	}{
		{map[string]any{"field_path": "a..b", "indicator_type": "ip", "extraction_target": "normalized"}, "body.field_path"},
		{map[string]any{"field_path": "a", "indicator_type": "ipv6", "extraction_target": "normalized"}, "body.indicator_type"},
		{map[string]any{"field_path": "a", "indicator_type": "ip", "extraction_target": "body"}, "body.extraction_target"},
		{map[string]any{"field_path": "a", "indicator_type": "ip"}, "body.extraction_target"},
		{map[string]any{"source_name": "nope", "field_path": "a", "indicator_type": "ip", "extraction_target": "normalized"}, "body.source_name"},
		{map[string]any{"field_path": strings.Repeat("a", 501), "indicator_type": "ip", "extraction_target": "normalized"}, "body.field_path"},
	}
	for _, b := range bad {
		require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings", admin, b.body))), b.loc)
	}
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+cid, admin, `{"source_name":null,"field_path":"Entities.*.IP"}`))
	require.Nil(t, d["source_name"])
	require.Equal(t, "Entities.*.IP", d["field_path"])
	require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPatch, "/v1/indicator-mappings/"+cid, admin, map[string]any{"field_path": "x."}))), "body.field_path")
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/indicator-mappings/"+cid, admin, nil).Status)
	requireError(t, ts.do(t, http.MethodGet, "/v1/indicator-mappings/"+cid, admin, nil), 404, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodGet, "/v1/indicator-mappings", mustKey(t, ts.Store, auth.ScopeAlertsWrite), nil), 403, "FORBIDDEN")
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/indicator-mappings?extraction_target=x", admin, nil))

	// Seeding again changes nothing.
	require.NoError(t, builtins.SeedSources(context.Background(), ts.Store, ts.Server.deps.SourceRegistry))
	r = ts.do(t, http.MethodGet, "/v1/indicator-mappings?is_system=true", admin, nil)
	require.Equal(t, float64(len(systemRows)), r.JSON(t)["meta"].(map[string]any)["total"])
}
