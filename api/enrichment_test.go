package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

type fakeEnricher struct {
	mu      sync.Mutex
	calls   []string
	results []enrichment.Answer
	test    enrichment.Answer
	steps   []httpsteps.StepRecord
	err     error
}

func (f *fakeEnricher) Enrich(_ context.Context, typ, value string) ([]enrichment.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "enrich:"+typ+":"+value)
	return f.results, f.err
}

func (f *fakeEnricher) TestProvider(_ context.Context, provider, typ, value string) (enrichment.Answer, []httpsteps.StepRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "test:"+provider+":"+typ+":"+value)
	return f.test, f.steps, f.err
}

type enrichTS struct {
	*testServer
	box      *secretbox.Box
	enricher *fakeEnricher
	admin    string
	reader   string
}

func newEnrichServer(t *testing.T, env map[string]string) *enrichTS {
	t.Helper()
	key, err := secretbox.ParseKey("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	require.NoError(t, err)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	fe := &fakeEnricher{}
	ts := newTestServer(t, func(_ *Config, d *Deps) {
		d.Enrichment, d.Secrets = EnrichmentDeps{Store: testStore(t), Enricher: fe, Env: store.MapEnv(env)}, box
		d.Health.Providers = func(ctx context.Context) (map[string]string, error) {
			return testStore(t).ProviderHealth(ctx, store.MapEnv(env))
		}
	})
	require.NoError(t, builtins.SeedProviders(context.Background(), ts.Store))
	return &enrichTS{testServer: ts, box: box, enricher: fe,
		admin: mustKey(t, ts.Store, auth.ScopeAdmin), reader: mustKey(t, ts.Store, auth.ScopeEnrichmentsRead)}
}

func uniqueName(prefix string) string {
	return prefix + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
}

func validProviderBody(name string) map[string]any {
	return map[string]any{
		"provider_name": name, "display_name": "Custom " + name, "description": "test provider",
		"supported_indicator_types": []string{"ip", "domain"},
		"http_config": map[string]any{"steps": []any{
			map[string]any{"name": "token", "method": "POST", "url": "https://auth.example.com/token", "form_body": map[string]any{"secret": "{{auth.secret}}"}},
			map[string]any{"name": "lookup", "url": "https://api.example.com/v1/{{indicator.value}}",
				"headers": map[string]any{"Authorization": "Bearer {{steps.token.response.access_token}}"}, "not_found_status": []any{404}},
		}},
		"auth_type":   "oauth2_client_credentials",
		"auth_config": map[string]any{"secret": "s3cr3t-value-that-must-never-leak"},
		"malice_rules": map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 80, "verdict": "Malicious"}},
			"default_verdict": "Benign"},
		"rate_limit":        map[string]any{"requests": 2, "per_seconds": 1, "daily_quota": 1000},
		"cache_ttl_by_type": map[string]any{"ip": 600},
	}
}

func (e *enrichTS) createProvider(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, http.MethodPost, "/v1/enrichment-providers", e.admin, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

func TestProviders_CreateGetListNeverReturnAuthConfig(t *testing.T) {
	e := newEnrichServer(t, nil)
	name := uniqueName("custom")
	p := e.createProvider(t, validProviderBody(name))
	require.Equal(t, name, p["provider_name"])
	require.Equal(t, true, p["has_credentials"])
	require.Equal(t, true, p["is_configured"])
	require.Equal(t, false, p["is_builtin"])
	require.NotContains(t, p, "auth_config")
	require.NotContains(t, p, "auth_config_sealed")
	require.Equal(t, map[string]any{"requests": float64(2), "per_seconds": float64(1), "daily_quota": float64(1000)}, p["rate_limit"])
	id := p["uuid"].(string)

	for _, path := range []string{"/v1/enrichment-providers/" + id, "/v1/enrichment-providers?page_size=500", "/v1/enrichments/providers"} {
		r := e.do(t, http.MethodGet, path, e.reader, nil)
		require.Equal(t, http.StatusOK, r.Status, path)
		require.NotContains(t, string(r.Body), "s3cr3t-value", path)
		require.NotContains(t, string(r.Body), "auth_config\"", path)
	}
	// The column holds ciphertext that opens to the credentials.
	var sealed []byte
	require.NoError(t, e.Store.DB().NewSelect().Table("enrichment_providers").Column("auth_config_sealed").Where("uuid = ?", id).Scan(context.Background(), &sealed))
	require.NotContains(t, string(sealed), "s3cr3t")
	var opened map[string]string
	require.NoError(t, e.box.OpenJSON(sealed, &opened))
	require.Equal(t, "s3cr3t-value-that-must-never-leak", opened["secret"])

	// PATCH with auth_config null removes the credentials; the response still never shows them.
	r := e.do(t, http.MethodPatch, "/v1/enrichment-providers/"+id, e.admin, map[string]any{"auth_config": nil})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, data["has_credentials"])
	require.Equal(t, false, data["is_configured"])

	// Duplicate name.
	r = e.do(t, http.MethodPost, "/v1/enrichment-providers", e.admin, validProviderBody(name))
	requireError(t, r, http.StatusConflict, "DUPLICATE_PROVIDER")

	// Filters.
	r = e.do(t, http.MethodGet, "/v1/enrichment-providers?is_builtin=true&page_size=2", e.reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	m := r.JSON(t)
	require.Len(t, m["data"], 2)
	meta := m["meta"].(map[string]any)
	require.EqualValues(t, len(builtinProviders(t)), meta["total"])
	require.EqualValues(t, 2, meta["page_size"])
	for _, q := range []string{"is_builtin=maybe", "page=0", "page_size=501", "is_active=2"} {
		requireValidation(t, e.do(t, http.MethodGet, "/v1/enrichment-providers?"+q, e.reader, nil))
	}
}

func TestProviders_Validation(t *testing.T) {
	e := newEnrichServer(t, nil)
	mutate := func(f func(b map[string]any)) map[string]any {
		b := validProviderBody(uniqueName("v"))
		f(b)
		return b
	}
	cases := []struct {
		name string
		body any
		locs []string
	}{
		{"bad name", mutate(func(b map[string]any) { b["provider_name"] = "Bad-Name" }), []string{"body.provider_name"}},
		{"reserved name", mutate(func(b map[string]any) { b["provider_name"] = "indicator" }), []string{"body.provider_name"}},
		{"missing fields", map[string]any{}, []string{"body.provider_name", "body.display_name", "body.supported_indicator_types", "body.http_config", "body.auth_type"}},
		{"bad type", mutate(func(b map[string]any) { b["supported_indicator_types"] = []string{"ip", "phone"} }), []string{"body.supported_indicator_types.1"}},
		{"bad step url", mutate(func(b map[string]any) {
			b["http_config"] = map[string]any{"steps": []any{
				map[string]any{"name": "a", "url": "https://x.example.com/"},
				map[string]any{"name": "b", "url": "ftp://x"},
			}}
		}), []string{"body.http_config.steps.1.url"}},
		{"unknown step reference", mutate(func(b map[string]any) {
			b["http_config"] = map[string]any{"steps": []any{map[string]any{"name": "a", "url": "https://x.example.com/{{steps.later.response.id}}"}}}
		}), []string{"body.http_config.steps.0.url"}},
		{"no steps", mutate(func(b map[string]any) { b["http_config"] = map[string]any{"steps": []any{}} }), []string{"body.http_config.steps"}},
		{"http_config not object", mutate(func(b map[string]any) { b["http_config"] = "GET /" }), []string{"body.http_config"}},
		{"bad malice operator", mutate(func(b map[string]any) {
			b["malice_rules"] = map[string]any{"rules": []any{map[string]any{"field": "x", "operator": "~", "value": 1, "verdict": "Evil"}}}
		}), []string{"body.malice_rules.rules.0.operator", "body.malice_rules.rules.0.verdict"}},
		{"ttl out of range", mutate(func(b map[string]any) { b["default_cache_ttl_seconds"] = 86401 }), []string{"body.default_cache_ttl_seconds"}},
		{"ttl by type", mutate(func(b map[string]any) { b["cache_ttl_by_type"] = map[string]any{"ip": -1, "phone": 5} }),
			[]string{"body.cache_ttl_by_type.ip", "body.cache_ttl_by_type.phone"}},
		{"domain errors together", mutate(func(b map[string]any) {
			b["http_config"] = map[string]any{"steps": []any{map[string]any{"url": "https://x.example.com"}}}
			b["malice_rules"] = map[string]any{"rules": "all"}
		}), []string{"body.http_config.steps.0.name", "body.malice_rules.rules"}},
		{"bad rate limit", mutate(func(b map[string]any) { b["rate_limit"] = map[string]any{"requests": 0} }), []string{"body.rate_limit.requests", "body.rate_limit.per_seconds"}},
		{"bad env var", mutate(func(b map[string]any) { b["env_var_mapping"] = map[string]any{"api_key": "BAD-NAME=1"} }), []string{"body.env_var_mapping.api_key"}},
		{"too many steps", mutate(func(b map[string]any) {
			steps := []any{}
			for i := range 21 {
				steps = append(steps, map[string]any{"name": "s" + strings.Repeat("x", i), "url": "https://x.example.com/"})
			}
			b["http_config"] = map[string]any{"steps": steps}
		}), []string{"body.http_config.steps"}},
		{"hostile header", mutate(func(b map[string]any) {
			b["http_config"] = map[string]any{"steps": []any{map[string]any{"name": "a", "url": "https://x.example.com/", "headers": map[string]any{"Bad Header\r\n": "x"}}}}
		}), []string{"body.http_config.steps.0.headers.Bad Header\r\n"}},
		{"auth_config list", mutate(func(b map[string]any) { b["auth_config"] = []any{"a"} }), []string{"body.auth_config"}},
		{"auth_config wrong type", mutate(func(b map[string]any) { b["auth_config"] = map[string]any{"k": 5} }), []string{"body.auth_config"}},
		{"unknown field", mutate(func(b map[string]any) { b["auth_config_sealed"] = "x" }), []string{"body.auth_config_sealed"}},
		{"wrong types", mutate(func(b map[string]any) {
			b["display_name"] = 5
			b["supported_indicator_types"] = "ip"
		}), []string{"body.display_name", "body.supported_indicator_types"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-providers", e.admin, tc.body)))
			for _, want := range tc.locs {
				require.Contains(t, got, want)
			}
		})
	}
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-providers", e.admin, "{not json"), http.StatusBadRequest, "INVALID_JSON")
	huge := validProviderBody(uniqueName("huge"))
	huge["display_name"] = strings.Repeat("x", 201)
	require.Contains(t, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-providers", e.admin, huge))), "body.display_name")
}

func TestProviders_PatchValidation(t *testing.T) {
	e := newEnrichServer(t, nil)
	p := e.createProvider(t, validProviderBody(uniqueName("pv")))
	path := "/v1/enrichment-providers/" + p["uuid"].(string)
	d := requireValidation(t, e.do(t, http.MethodPatch, path, e.admin, map[string]any{"http_config": map[string]any{"steps": []any{
		map[string]any{"name": "ok", "url": "https://x.example.com/"}, map[string]any{"name": "bad", "url": "https://x.example.com/{{nope.x}}"}}}}))
	require.Equal(t, []string{"body.http_config.steps.1.url"}, locs(d))
	require.Equal(t, []string{"body.http_config"}, locs(requireValidation(t, e.do(t, http.MethodPatch, path, e.admin, map[string]any{"http_config": nil}))))
	require.Equal(t, []string{"body.rate_limit.per_seconds"}, locs(requireValidation(t, e.do(t, http.MethodPatch, path, e.admin,
		map[string]any{"rate_limit": map[string]any{"requests": 1, "per_seconds": 0}}))))
	require.Equal(t, []string{"body.bogus"}, locs(requireValidation(t, e.do(t, http.MethodPatch, path, e.admin, map[string]any{"bogus": 1}))))
	// rate_limit null removes it; malice_rules null resets it.
	r := e.do(t, http.MethodPatch, path, e.admin, map[string]any{"rate_limit": nil, "malice_rules": nil, "display_name": "Renamed"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	require.Nil(t, data["rate_limit"])
	require.Equal(t, map[string]any{}, data["malice_rules"])
	require.Equal(t, "Renamed", data["display_name"])
	r = e.do(t, http.MethodGet, path, e.reader, nil)
	require.Equal(t, "Renamed", r.JSON(t)["data"].(map[string]any)["display_name"])
}

func TestProviders_ScopesAndNotFound(t *testing.T) {
	e := newEnrichServer(t, nil)
	alerts := mustKey(t, e.Store, auth.ScopeAlertsRead)
	requireError(t, e.do(t, http.MethodGet, "/v1/enrichment-providers", alerts, nil), http.StatusForbidden, "FORBIDDEN")
	requireError(t, e.do(t, http.MethodGet, "/v1/enrichment-providers", "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-providers", e.reader, validProviderBody(uniqueName("s"))), http.StatusForbidden, "FORBIDDEN")
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.reader, map[string]any{}), http.StatusForbidden, "FORBIDDEN")
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichments", alerts, map[string]any{"type": "ip", "value": "8.8.8.8"}), http.StatusForbidden, "FORBIDDEN")
	missing := uuid.NewString()
	for _, rq := range []struct{ method, path, key string }{
		{http.MethodGet, "/v1/enrichment-providers/" + missing, e.reader},
		{http.MethodPatch, "/v1/enrichment-providers/" + missing, e.admin},
		{http.MethodDelete, "/v1/enrichment-providers/" + missing, e.admin},
		{http.MethodPost, "/v1/enrichment-providers/" + missing + "/activate", e.admin},
		{http.MethodGet, "/v1/enrichment-field-extractions/" + missing, e.reader},
		{http.MethodDelete, "/v1/enrichment-field-extractions/" + missing, e.admin},
	} {
		var body any
		if rq.method == http.MethodPatch {
			body = map[string]any{"is_active": true}
		}
		requireError(t, e.do(t, rq.method, rq.path, rq.key, body), http.StatusNotFound, "NOT_FOUND")
	}
	d := requireValidation(t, e.do(t, http.MethodGet, "/v1/enrichment-providers/not-a-uuid", e.reader, nil))
	require.Equal(t, []string{"path.uuid"}, locs(d))
}

func builtinUUID(t *testing.T, e *enrichTS, name string) string {
	t.Helper()
	p, err := e.Store.GetProviderByName(context.Background(), name)
	require.NoError(t, err)
	return p.UUID.String()
}

func TestProviders_BuiltinRestrictions(t *testing.T) {
	e := newEnrichServer(t, map[string]string{"ABUSEIPDB_API_KEY": "env-key-123456"})
	id := builtinUUID(t, e, "abuseipdb")
	r := e.do(t, http.MethodGet, "/v1/enrichment-providers/"+id, e.reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	p := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, true, p["is_builtin"])
	require.Equal(t, true, p["has_credentials"], "env_var_mapping satisfied by the environment")
	require.Equal(t, true, p["is_configured"])
	require.Equal(t, map[string]any{"api_key": "ABUSEIPDB_API_KEY"}, p["env_var_mapping"])

	for _, body := range []map[string]any{
		{"display_name": "Mine"},
		{"http_config": map[string]any{"steps": []any{map[string]any{"name": "a", "url": "https://evil.example.com"}}}},
		{"supported_indicator_types": []string{"domain"}},
		{"auth_type": "none"},
		{"env_var_mapping": map[string]any{"api_key": "OTHER"}},
	} {
		m := requireError(t, e.do(t, http.MethodPatch, "/v1/enrichment-providers/"+id, e.admin, body), http.StatusBadRequest, "BUILTIN_RESTRICTED")
		require.NotEmpty(t, m["error"].(map[string]any)["details"].(map[string]any)["fields"])
	}
	allowed := map[string]any{"description": "changed", "default_cache_ttl_seconds": 60, "cache_ttl_by_type": map[string]any{"ip": 120},
		"rate_limit": map[string]any{"requests": 1, "per_seconds": 2}, "auth_config": map[string]any{"api_key": "sealed-key-abcdef"},
		"malice_rules": map[string]any{"default_verdict": "Suspicious"}, "is_active": true}
	r = e.do(t, http.MethodPatch, "/v1/enrichment-providers/"+id, e.admin, allowed)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	p = r.JSON(t)["data"].(map[string]any)
	require.Equal(t, "changed", p["description"])
	require.EqualValues(t, 60, p["default_cache_ttl_seconds"])
	require.NotContains(t, string(r.Body), "sealed-key-abcdef")

	requireError(t, e.do(t, http.MethodDelete, "/v1/enrichment-providers/"+id, e.admin, nil), http.StatusBadRequest, "BUILTIN_RESTRICTED")

	// Deactivate / activate.
	r = e.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/deactivate", e.admin, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, false, r.JSON(t)["data"].(map[string]any)["is_active"])
	require.Equal(t, false, r.JSON(t)["data"].(map[string]any)["is_configured"])
	r = e.do(t, http.MethodGet, "/v1/enrichments/providers", e.reader, nil)
	require.NotContains(t, string(r.Body), `"abuseipdb"`)
	r = e.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/activate", e.admin, nil)
	require.Equal(t, true, r.JSON(t)["data"].(map[string]any)["is_active"])

	// Health lists every provider as configured or unconfigured.
	r = e.do(t, http.MethodGet, "/health", "", nil)
	health := r.JSON(t)["enrichment_providers"].(map[string]any)
	require.Equal(t, "configured", health["abuseipdb"])
	require.Equal(t, "unconfigured", health["okta"])
}

func TestProviders_DeleteCustom(t *testing.T) {
	e := newEnrichServer(t, nil)
	name := uniqueName("del")
	p := e.createProvider(t, validProviderBody(name))
	id := p["uuid"].(string)
	r := e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, map[string]any{"provider_name": name, "indicator_type": "ip",
		"source_path": "data.score", "target_key": "score", "value_type": "int"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r = e.do(t, http.MethodDelete, "/v1/enrichment-providers/"+id, e.admin, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	requireError(t, e.do(t, http.MethodGet, "/v1/enrichment-providers/"+id, e.reader, nil), http.StatusNotFound, "NOT_FOUND")
	r = e.do(t, http.MethodGet, "/v1/enrichment-field-extractions?provider_name="+name, e.reader, nil)
	require.EqualValues(t, 0, r.JSON(t)["meta"].(map[string]any)["total"])
}

func TestFieldExtractions_CRUDBulkAndSystemRows(t *testing.T) {
	e := newEnrichServer(t, nil)
	name := uniqueName("fx")
	e.createProvider(t, validProviderBody(name))
	body := map[string]any{"provider_name": name, "indicator_type": "ip", "source_path": "data.items.*.name", "target_key": "names",
		"value_type": "list", "description": "names"}
	r := e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	x := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, x["is_system"])
	require.Equal(t, true, x["is_active"])
	id := x["uuid"].(string)
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, body), http.StatusConflict, "DUPLICATE_EXTRACTION")

	// Validation: bad path, enum, unknown provider, wrong type.
	bad := map[string]any{"provider_name": "no_such_provider_x", "indicator_type": "phone", "source_path": "a..b", "target_key": "", "value_type": "date"}
	got := locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, bad)))
	require.Subset(t, got, []string{"body.indicator_type", "body.target_key", "body.value_type"})
	bad = map[string]any{"provider_name": "no_such_provider_x", "indicator_type": "ip", "source_path": "a", "target_key": "k", "value_type": "int"}
	require.Equal(t, []string{"body.provider_name"}, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, bad))))
	bad = map[string]any{"provider_name": name, "indicator_type": "ip", "source_path": "a..b", "target_key": "k", "value_type": "int"}
	require.Equal(t, []string{"body.source_path"}, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions", e.admin, bad))))

	// Bulk is all or nothing: one duplicate rejects the batch.
	bulk := map[string]any{"extractions": []any{
		map[string]any{"provider_name": name, "indicator_type": "domain", "source_path": "a", "target_key": "a", "value_type": "string"},
		map[string]any{"provider_name": name, "indicator_type": "ip", "source_path": "x", "target_key": "names", "value_type": "list"},
	}}
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions/bulk", e.admin, bulk), http.StatusConflict, "DUPLICATE_EXTRACTION")
	r = e.do(t, http.MethodGet, "/v1/enrichment-field-extractions?provider_name="+name+"&indicator_type=domain", e.reader, nil)
	require.EqualValues(t, 0, r.JSON(t)["meta"].(map[string]any)["total"], "nothing of the failed batch was stored")
	bulk["extractions"].([]any)[1].(map[string]any)["target_key"] = "other"
	r = e.do(t, http.MethodPost, "/v1/enrichment-field-extractions/bulk", e.admin, bulk)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.Len(t, r.JSON(t)["data"], 2)
	bad = map[string]any{"extractions": []any{map[string]any{"provider_name": name, "indicator_type": "ip", "source_path": "..", "target_key": "z", "value_type": "int"}}}
	require.Equal(t, []string{"body.extractions.0.source_path"}, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions/bulk", e.admin, bad))))
	require.Equal(t, []string{"body.extractions"}, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-field-extractions/bulk", e.admin, map[string]any{"extractions": []any{}}))))

	// Update and delete a custom row.
	r = e.do(t, http.MethodPatch, "/v1/enrichment-field-extractions/"+id, e.admin, map[string]any{"source_path": "data.other", "is_active": false})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "data.other", r.JSON(t)["data"].(map[string]any)["source_path"])
	requireError(t, e.do(t, http.MethodPatch, "/v1/enrichment-field-extractions/"+id, e.admin, map[string]any{"target_key": "other"}), http.StatusConflict, "DUPLICATE_EXTRACTION")
	require.Equal(t, http.StatusNoContent, e.do(t, http.MethodDelete, "/v1/enrichment-field-extractions/"+id, e.admin, nil).Status)

	// System rows only toggle is_active.
	sys := true
	rows, _, err := e.Store.ListFieldExtractions(context.Background(), store.FieldExtractionFilter{ProviderName: "virustotal", IsSystem: &sys})
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	sid := rows[0].UUID.String()
	requireError(t, e.do(t, http.MethodPatch, "/v1/enrichment-field-extractions/"+sid, e.admin, map[string]any{"source_path": "x"}), http.StatusForbidden, "SYSTEM_EXTRACTION_RESTRICTED")
	requireError(t, e.do(t, http.MethodDelete, "/v1/enrichment-field-extractions/"+sid, e.admin, nil), http.StatusForbidden, "SYSTEM_EXTRACTION_RESTRICTED")
	r = e.do(t, http.MethodPatch, "/v1/enrichment-field-extractions/"+sid, e.admin, map[string]any{"is_active": false})
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, false, r.JSON(t)["data"].(map[string]any)["is_active"])
	r = e.do(t, http.MethodPatch, "/v1/enrichment-field-extractions/"+sid, e.admin, map[string]any{"is_active": true})
	require.Equal(t, http.StatusOK, r.Status)

	// List filters validate.
	requireValidation(t, e.do(t, http.MethodGet, "/v1/enrichment-field-extractions?indicator_type=phone", e.reader, nil))
	r = e.do(t, http.MethodGet, "/v1/enrichment-field-extractions?is_system=true&provider_name=virustotal&page_size=1", e.reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Len(t, r.JSON(t)["data"], 1)
}

func TestEnrichments_OnDemand(t *testing.T) {
	e := newEnrichServer(t, nil)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	e.enricher.results = []enrichment.Answer{
		{Provider: "a", Status: store.EnrichSuccess, Success: true, Malice: "Suspicious", Extracted: map[string]any{"x": 1}, EnrichedAt: &now, CacheHit: true},
		{Provider: "b", Status: store.EnrichSuccess, Success: true, Malice: "Benign", Extracted: map[string]any{}, EnrichedAt: &now},
		{Provider: "c", Status: store.EnrichFailed, Malice: "Pending", ErrorMessage: "HTTP 500"},
	}
	r := e.do(t, http.MethodPost, "/v1/enrichments", e.reader, map[string]any{"indicator_type": "domain", "indicator_value": " Example.COM "})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, "domain", d["type"])
	require.Equal(t, "example.com", d["value"], "values are normalized")
	require.Equal(t, "Suspicious", d["malice"])
	res := d["results"].(map[string]any)
	require.Len(t, res, 3)
	require.Equal(t, true, res["a"].(map[string]any)["cache_hit"])
	require.Equal(t, "failed", res["c"].(map[string]any)["status"])
	require.Equal(t, "HTTP 500", res["c"].(map[string]any)["error_message"])
	require.Equal(t, []string{"enrich:domain:example.com"}, e.enricher.calls)

	for _, tc := range []struct {
		body any
		locs []string
	}{
		{map[string]any{}, []string{"body.type", "body.value"}},
		{map[string]any{"type": "phone", "value": "1"}, []string{"body.type"}},
		{map[string]any{"type": "ip", "value": "not-an-ip"}, []string{"body.value"}},
		{map[string]any{"type": "ip", "indicator_type": "domain", "value": "1.1.1.1"}, []string{"body.indicator_type"}},
		{map[string]any{"type": "ip", "value": strings.Repeat("1", 3000)}, []string{"body.value"}},
		{map[string]any{"type": 4, "value": []int{1}}, []string{"body.type", "body.value"}},
		{map[string]any{"type": "ip", "value": "1.1.1.1", "extra": true}, []string{"body.extra"}},
	} {
		got := locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichments", e.reader, tc.body)))
		require.Subset(t, got, tc.locs, "%v", tc.body)
	}
	e.enricher.err = errors.New("temporal down")
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichments", e.reader, map[string]any{"type": "ip", "value": "8.8.8.8"}), http.StatusServiceUnavailable, "UNAVAILABLE")
}

func TestProviders_TestEndpoint(t *testing.T) {
	e := newEnrichServer(t, nil)
	id := builtinUUID(t, e, "virustotal")
	e.enricher.test = enrichment.Answer{Provider: "virustotal", Status: store.EnrichFailed, Malice: "Pending", ErrorMessage: "step 0 (lookup): HTTP 401: client error"}
	e.enricher.steps = []httpsteps.StepRecord{{StepName: "lookup", StepIndex: 0, RequestMethod: "GET", RequestURL: "https://www.virustotal.com/api/v3/ip_addresses/8.8.8.8",
		RequestHeaders: map[string]string{"x-apikey": "abcd****wxyz"}, IndicatorValue: "8.8.8.8", RequestQueryParams: map[string]string{},
		ResponseStatusCode: 401, ResponseHeaders: map[string]string{}, Error: "step 0 (lookup): HTTP 401: client error"}}
	r := e.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/test", e.reader, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	require.Equal(t, http.StatusOK, r.Status, "failures are reported inside the result: %s", r.Body)
	d := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, false, d["success"])
	require.Equal(t, "virustotal", d["provider_name"])
	require.Equal(t, "ip", d["indicator_type"])
	require.Equal(t, "8.8.8.8", d["indicator_value"])
	require.Contains(t, d["error_message"], "401")
	for _, k := range []string{"extracted", "raw_response", "duration_ms", "steps"} {
		require.Contains(t, d, k)
	}
	step := d["steps"].([]any)[0].(map[string]any)
	for _, k := range []string{"step_name", "step_index", "request_method", "request_url", "request_headers", "indicator_value", "request_query_params",
		"request_body", "response_status_code", "response_headers", "response_body", "duration_ms", "error", "skipped"} {
		require.Contains(t, step, k)
	}
	require.Equal(t, []string{"test:virustotal:ip:8.8.8.8"}, e.enricher.calls)

	// Type the provider does not support; bad body; unknown provider.
	require.Equal(t, []string{"body.indicator_type"}, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/test", e.reader,
		map[string]any{"indicator_type": "email", "indicator_value": "a@b.co"}))))
	require.Subset(t, locs(requireValidation(t, e.do(t, http.MethodPost, "/v1/enrichment-providers/"+id+"/test", e.reader, map[string]any{}))),
		[]string{"body.indicator_type", "body.indicator_value"})
	requireError(t, e.do(t, http.MethodPost, "/v1/enrichment-providers/"+uuid.NewString()+"/test", e.reader,
		map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"}), http.StatusNotFound, "NOT_FOUND")
}

func builtinProviders(t testing.TB) []store.BuiltinProvider {
	t.Helper()
	defs, err := builtins.Providers()
	require.NoError(t, err)
	return defs
}
