package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/indicators"
)

func TestExtractionExclusionsAPI(t *testing.T) {
	ts := newAlertServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	prefix := admin[:8]
	const path = "/v1/extraction-exclusions"

	// Seeded once with the vendors' consoles; restored after the test (the package shares its database).
	d := alertData(t, ts.do(t, http.MethodGet, path, admin, nil))
	seeded := d["entries"].([]any)
	require.Contains(t, seeded, "portal.azure.com")
	t.Cleanup(func() {
		_, err := ts.Store.PutExtractionExclusions(context.Background(), indicators.DefaultExclusions)
		require.NoError(t, err)
	})

	// Scope admin only.
	for _, scope := range []string{auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeEnrichmentsRead} {
		k := mustKey(t, ts.Store, scope)
		requireError(t, ts.do(t, http.MethodGet, path, k, nil), 403, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodPut, path, k, map[string]any{"entries": []string{"x.example.com"}}), 403, "FORBIDDEN")
	}
	requireError(t, ts.do(t, http.MethodGet, path, "", nil), 401, "UNAUTHORIZED")

	// Stored canonical, sorted, without repeats; audited with the change.
	d = alertData(t, ts.do(t, http.MethodPut, path, admin, map[string]any{"entries": []string{
		"Portal.Azure.com.", "*.SplunkCloud.com", "10.1.2.3/8", "192.0.2.1", "portal.azure.com"}}))
	want := []any{"*.splunkcloud.com", "10.0.0.0/8", "192.0.2.1", "portal.azure.com"}
	require.Equal(t, want, d["entries"])
	require.NotNil(t, d["updated_at"])
	require.Equal(t, want, alertData(t, ts.do(t, http.MethodGet, path, admin, nil))["entries"])
	events := auditEvents(t, ts, admin, prefix)
	require.NotEmpty(t, events)
	require.Equal(t, audit.ExtractionExcl, events[0]["resource_type"])
	require.Equal(t, "updated", events[0]["action"])
	ch := events[0]["changes"].(map[string]any)["entries"].(map[string]any)
	require.Equal(t, want, ch["to"])
	require.Contains(t, ch["from"], "portal.azure.com")

	// The same list again changes nothing and records nothing.
	alertData(t, ts.do(t, http.MethodPut, path, admin, map[string]any{"entries": want}))
	require.Len(t, auditEvents(t, ts, admin, prefix), len(events))

	// Hostile and malformed bodies: the contract's errors, nothing stored half-way.
	bad := []struct {
		body   any
		status int
		code   string
	}{
		{`{"entries": [`, 400, "INVALID_JSON"},
		{map[string]any{}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": nil}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": "portal.azure.com"}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []any{1}}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []string{"ok.example.com", "not a host"}}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []string{"a\x00b.com"}}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []string{"10.0.0.0/33"}}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []string{strings.Repeat("a", 300) + ".com"}}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": make([]string, 1001)}, 422, "VALIDATION_ERROR"},
		{map[string]any{"entries": []string{}, "extra": 1}, 422, "VALIDATION_ERROR"},
	}
	for _, b := range bad {
		requireError(t, ts.do(t, http.MethodPut, path, admin, b.body), b.status, b.code)
	}
	m := requireValidation(t, ts.do(t, http.MethodPut, path, admin, map[string]any{"entries": []string{"ok.example.com", "not a host", "10.0.0.0/33"}}))
	require.Equal(t, []string{"body.entries.1", "body.entries.2"}, locs(m))
	require.Equal(t, want, alertData(t, ts.do(t, http.MethodGet, path, admin, nil))["entries"])
	require.Len(t, auditEvents(t, ts, admin, prefix), len(events))

	// An empty list is a list.
	require.Equal(t, []any{}, alertData(t, ts.do(t, http.MethodPut, path, admin, map[string]any{"entries": []string{}}))["entries"])

	// test-extraction applies the list to passes 2-4 and reports pass 4 with extracted_by.
	alertData(t, ts.do(t, http.MethodPut, path, admin, map[string]any{"entries": []string{"portal.azure.com"}}))
	res := alertData(t, ts.do(t, http.MethodPost, "/v1/indicator-mappings/test-extraction", admin, map[string]any{"source_name": "generic",
		"raw_payload": map[string]any{"title": "t", "note": "beacon to hxxp://evil[.]example[.]com/x from 203.0.113.8 see https://portal.azure.com/#x"}}))
	require.Len(t, res["pass4"], 2)
	inds := res["indicators"].([]any)
	require.Len(t, inds, 2)
	first := inds[0].(map[string]any)
	require.Equal(t, "url", first["type"])
	require.Equal(t, "http://evil.example.com/x", first["value"])
	require.Equal(t, []any{map[string]any{"pass": float64(4), "field_path": "note"}}, first["extracted_by"])
	require.Equal(t, float64(1), res["scan"].(map[string]any)["excluded"])
}
