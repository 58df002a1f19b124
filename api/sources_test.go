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
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/store"
)

func TestSourcesAPI(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	r := ts.do(t, http.MethodGet, "/v1/sources", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.JSON(t)
	require.Equal(t, map[string]any{"total": float64(5), "page": float64(1), "page_size": float64(50), "total_pages": float64(1)}, m["meta"])
	var names []string
	for _, x := range m["data"].([]any) {
		s := x.(map[string]any)
		names = append(names, s["source_name"].(string))
		for _, k := range []string{"uuid", "source_name", "display_name", "is_active", "auth_type", "documentation", "created_at", "updated_at"} {
			require.Contains(t, s, k)
		}
	}
	require.Equal(t, []string{"elastic", "generic", "ocsf", "sentinel", "splunk"}, names)
	first := m["data"].([]any)[0].(map[string]any)
	one := alertData(t, ts.do(t, http.MethodGet, "/v1/sources/"+first["uuid"].(string), key, nil))
	require.Equal(t, first, one)
	// Re-seeding keeps uuids.
	require.NoError(t, builtins.SeedSources(context.Background(), ts.Store, ts.Server.deps.SourceRegistry))
	again := alertData(t, ts.do(t, http.MethodGet, "/v1/sources/"+first["uuid"].(string), key, nil))
	require.Equal(t, first["updated_at"], again["updated_at"], "an unchanged plugin is not rewritten")

	r = ts.do(t, http.MethodGet, "/v1/sources?page=2&page_size=3", key, nil)
	require.Len(t, r.JSON(t)["data"], 2)
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/sources?page_size=501", key, nil))
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/sources/nope", key, nil))
	requireError(t, ts.do(t, http.MethodGet, "/v1/sources/"+uuid.NewString(), key, nil), 404, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodGet, "/v1/sources", "", nil), 401, "UNAUTHORIZED")
}

func TestSourceIntegrationsAPI(t *testing.T) {
	ts := newAlertServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ctx := context.Background()
	r := ts.do(t, http.MethodPost, "/v1/source-integrations", admin, map[string]any{"source_name": "sentinel", "auth_config": map[string]any{"secret": "top-secret-value"},
		"severity_mapping": map[string]any{"Critical": "Critical"}, "documentation": "SOC tenant A"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.NotContains(t, string(r.Body), "top-secret-value")
	si := r.JSON(t)["data"].(map[string]any)
	id := si["uuid"].(string)
	t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/source-integrations/"+id, admin, nil) })
	require.Equal(t, "hmac_sha256", si["auth_type"], "the plugin's default")
	require.Equal(t, "Microsoft Sentinel", si["display_name"])
	require.Equal(t, true, si["auth_configured"])
	require.Equal(t, true, si["is_active"])
	require.NotContains(t, si, "auth_config")

	stored, err := ts.Store.GetSourceIntegration(ctx, uuid.MustParse(id))
	require.NoError(t, err)
	require.NotContains(t, string(stored.AuthConfig), "top-secret-value", "sealed at rest")
	var sec ingest.Secret
	require.NoError(t, ts.Server.deps.Secrets.OpenJSON(stored.AuthConfig, &sec))
	require.Equal(t, "top-secret-value", sec.Secret)

	requireError(t, ts.do(t, http.MethodPost, "/v1/source-integrations", admin, map[string]any{"source_name": "sentinel", "auth_config": map[string]any{"secret": "x"}}), 409, "INTEGRATION_EXISTS")
	bad := []struct {
		body any
		loc  string
	}{
		{map[string]any{"source_name": "nope"}, "body.source_name"},
		{map[string]any{}, "body.source_name"},
		{map[string]any{"source_name": "splunk", "auth_type": "basic"}, "body.auth_type"},
		{map[string]any{"source_name": "splunk", "auth_config": map[string]any{}}, "body.auth_config.secret"},
		{map[string]any{"source_name": "splunk", "auth_config": map[string]any{"secret": ""}}, "body.auth_config.secret"},
		{map[string]any{"source_name": "splunk", "auth_config": "secret"}, "body.auth_config"},
		{map[string]any{"source_name": "splunk", "severity_mapping": map[string]any{"P1": "Urgent"}}, "body.severity_mapping.P1"},
		{map[string]any{"source_name": "splunk", "severity_mapping": []string{"x"}}, "body.severity_mapping"},
		{map[string]any{"source_name": "splunk", "display_name": ""}, "body.display_name"},
		{map[string]any{"source_name": "splunk", "is_active": "yes"}, "body.is_active"},
	}
	for _, b := range bad {
		require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/source-integrations", admin, b.body))), b.loc)
	}

	d := alertData(t, ts.do(t, http.MethodPatch, "/v1/source-integrations/"+id, admin, `{"auth_config":null,"auth_type":"none","is_active":false,"documentation":null}`))
	require.Equal(t, false, d["auth_configured"])
	require.Equal(t, false, d["is_active"])
	require.Nil(t, d["documentation"])
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/source-integrations/"+id, admin, map[string]any{"auth_config": map[string]any{"secret": "new"}, "auth_type": "shared_token"}))
	require.Equal(t, true, d["auth_configured"])
	require.Equal(t, "shared_token", d["auth_type"])
	require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPatch, "/v1/source-integrations/"+id, admin, map[string]any{"source_name": "elastic"}))), "body.source_name")
	require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPatch, "/v1/source-integrations/"+id, admin, map[string]any{"severity_mapping": map[string]any{"": "High"}}))), "body.severity_mapping.")

	r = ts.do(t, http.MethodGet, "/v1/source-integrations?source_name=sentinel", admin, nil)
	require.Equal(t, float64(1), r.JSON(t)["meta"].(map[string]any)["total"])
	r = ts.do(t, http.MethodGet, "/v1/source-integrations?is_active=true&source_name=sentinel", admin, nil)
	require.Equal(t, float64(0), r.JSON(t)["meta"].(map[string]any)["total"])
	require.Equal(t, id, alertData(t, ts.do(t, http.MethodGet, "/v1/source-integrations/"+id, admin, nil))["uuid"])
	requireError(t, ts.do(t, http.MethodGet, "/v1/source-integrations", mustKey(t, ts.Store, auth.ScopeAlertsWrite), nil), 403, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodGet, "/v1/source-integrations/"+uuid.NewString(), admin, nil), 404, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/source-integrations/"+uuid.NewString(), admin, map[string]any{}), 404, "NOT_FOUND")
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/source-integrations/"+id, admin, nil).Status)
	requireError(t, ts.do(t, http.MethodDelete, "/v1/source-integrations/"+id, admin, nil), 404, "NOT_FOUND")

	t.Run("no encryption key: secrets refused, not stored in clear", func(t *testing.T) {
		ts2 := newAlertServer(t, func(_ *Config, d *Deps) { d.Secrets = nil })
		r := ts2.do(t, http.MethodPost, "/v1/source-integrations", admin, map[string]any{"source_name": "generic", "auth_type": "hmac_sha256", "auth_config": map[string]any{"secret": "x"}})
		requireError(t, r, 500, "INTERNAL_ERROR")
		_, err := ts2.Store.SourceIntegrationByName(ctx, "generic")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.False(t, strings.Contains(string(r.Body), "secret"))
	})
}
