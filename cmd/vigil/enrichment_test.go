package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
)

func TestOpenSecretBox(t *testing.T) {
	_, err := openSecretBox(config{})
	require.ErrorContains(t, err, "ENCRYPTION_KEY is required")
	for _, bad := range []string{"short", strings.Repeat("zz", 32), "MDEy", strings.Repeat("a", 63)} {
		_, err := openSecretBox(config{EncryptionKey: bad})
		require.ErrorContains(t, err, "ENCRYPTION_KEY is malformed", bad)
	}
	box, err := openSecretBox(config{EncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="})
	require.NoError(t, err)
	sealed, err := box.Seal([]byte("x"))
	require.NoError(t, err)
	plain, err := box.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "x", string(plain))
	_, err = openSecretBox(config{EncryptionKey: strings.Repeat("ab", 32)})
	require.NoError(t, err, "64 hex characters")
}

func TestProviderEnv_HidesVigilSettings(t *testing.T) {
	vars := map[string]string{"VIRUSTOTAL_API_KEY": "vt", "DATABASE_URL": "postgres://secret", "ENCRYPTION_KEY": "k", "SSRF_ALLOWED_HOSTS": "x"}
	env, err := providerEnv(func(n string) string { return vars[n] }, []string{"DATABASE_URL"})
	require.NoError(t, err)
	require.Equal(t, "vt", env("VIRUSTOTAL_API_KEY"))
	require.Empty(t, env("DATABASE_URL"))
	require.Empty(t, env("ENCRYPTION_KEY"))
	require.Empty(t, env("SSRF_ALLOWED_HOSTS"))
	require.Empty(t, env("UNSET"))
	empty, err := providerEnv(nil, nil)
	require.NoError(t, err)
	require.Empty(t, empty("VIRUSTOTAL_API_KEY"))

	cfg, err := loadConfig(func(n string) string { return vars[n] })
	require.NoError(t, err)
	require.Equal(t, "vt", cfg.ProviderEnv("VIRUSTOTAL_API_KEY"))
	require.Empty(t, cfg.ProviderEnv("DATABASE_URL"))
}

func TestAPIRefusesToStartWithoutEncryptionKey(t *testing.T) {
	for _, key := range []string{"", "not-a-key"} {
		env := envOf(map[string]string{"DATABASE_URL": testenv.DatabaseURL(t), "TEMPORAL_ADDRESS": testenv.TemporalAddress(t),
			"API_ADDR": "127.0.0.1:0", "ENCRYPTION_KEY": key, "LOG_LEVEL": "error"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, []string{"api"}, env, io.Discard, io.Discard)
		cancel()
		require.ErrorContains(t, err, "ENCRYPTION_KEY")
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		err = run(ctx, []string{"worker"}, env, io.Discard, io.Discard)
		cancel()
		require.ErrorContains(t, err, "ENCRYPTION_KEY")
	}
}

// TestEnrichmentEndToEnd runs `vigil api` and `vigil worker` through run() with a loopback provider
// allowed by SSRF_ALLOWED_HOSTS: create a provider over HTTP, test it (success and failure step
// records), enrich on demand (then from the cache), and see it in /health.
func TestEnrichmentEndToEnd(t *testing.T) {
	var hits atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("X-Key") != "e2e-secret-key-123456":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"bad key"}`))
		case strings.HasPrefix(r.URL.Path, "/token"):
			_, _ = w.Write([]byte(`{"token":"tok-e2e-0123456789"}`))
		case strings.HasPrefix(r.URL.Path, "/info/") && r.URL.Query().Get("t") == "tok-e2e-0123456789":
			_, _ = w.Write([]byte(`{"score": 95, "owner": "Example AS"}`))
		default:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"forbidden"}`))
		}
	}))
	t.Cleanup(provider.Close)

	addr := freeAddr(t)
	env := envOf(map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t) + "-enr",
		"API_ADDR":                   addr,
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"SSRF_ALLOWED_HOSTS":         strings.TrimPrefix(provider.URL, "http://"),
		"LOG_LEVEL":                  "error",
	})
	key, _ := createKey(t, env, "--name", "enr", "--scopes", "admin,enrichments:read")

	serve(t, env, "api", "worker")
	base := "http://" + addr
	waitHealthy(t, base)

	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(raw)
		}
		req, err := http.NewRequest(method, base+path, rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}

	hdr := map[string]any{"X-Key": "{{auth.key}}"}
	status, m := call(http.MethodPost, "/v1/enrichment-providers", map[string]any{
		"provider_name": "e2e_local", "display_name": "E2E", "supported_indicator_types": []string{"ip"}, "auth_type": "api_key",
		"auth_config": map[string]any{"key": "e2e-secret-key-123456"},
		"http_config": map[string]any{"steps": []any{
			map[string]any{"name": "token", "url": provider.URL + "/token", "headers": hdr},
			map[string]any{"name": "info", "url": provider.URL + "/info/{{indicator.value}}", "headers": hdr,
				"query_params": map[string]any{"t": "{{steps.token.response.token}}"}},
		}},
		"malice_rules": map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 90, "verdict": "Malicious"}}},
	})
	require.Equal(t, http.StatusCreated, status, m)
	id := m["data"].(map[string]any)["uuid"].(string)
	status, m = call(http.MethodPost, "/v1/enrichment-field-extractions", map[string]any{"provider_name": "e2e_local", "indicator_type": "ip",
		"source_path": "score", "target_key": "score", "value_type": "int"})
	require.Equal(t, http.StatusCreated, status, m)

	// Test endpoint, success: both step records, the key masked everywhere.
	status, m = call(http.MethodPost, "/v1/enrichment-providers/"+id+"/test", map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	require.Equal(t, http.StatusOK, status, m)
	d := m["data"].(map[string]any)
	require.Equal(t, true, d["success"], d)
	require.EqualValues(t, 95, d["extracted"].(map[string]any)["score"])
	steps := d["steps"].([]any)
	require.Len(t, steps, 2)
	second := steps[1].(map[string]any)
	require.Equal(t, "info", second["step_name"])
	require.EqualValues(t, 200, second["response_status_code"])
	require.Equal(t, "****3456", second["request_headers"].(map[string]any)["X-Key"])
	raw, _ := json.Marshal(d)
	require.NotContains(t, string(raw), "e2e-secret-key-123456")

	// Test endpoint, failure: still 200, success false, the failing step's error.
	status, m = call(http.MethodPatch, "/v1/enrichment-providers/"+id, map[string]any{"auth_config": map[string]any{"key": "wrong-key-000000"}})
	require.Equal(t, http.StatusOK, status, m)
	status, m = call(http.MethodPost, "/v1/enrichment-providers/"+id+"/test", map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	require.Equal(t, http.StatusOK, status, m)
	d = m["data"].(map[string]any)
	require.Equal(t, false, d["success"])
	require.Contains(t, d["error_message"], "401")
	steps = d["steps"].([]any)
	require.Len(t, steps, 1)
	require.Contains(t, steps[0].(map[string]any)["error"], "401")
	status, _ = call(http.MethodPatch, "/v1/enrichment-providers/"+id, map[string]any{"auth_config": map[string]any{"key": "e2e-secret-key-123456"}})
	require.Equal(t, http.StatusOK, status)

	// On-demand enrichment, then the cache.
	status, m = call(http.MethodPost, "/v1/enrichments", map[string]any{"type": "ip", "value": "9.9.9.9"})
	require.Equal(t, http.StatusOK, status, m)
	d = m["data"].(map[string]any)
	r := d["results"].(map[string]any)["e2e_local"].(map[string]any)
	require.Equal(t, "success", r["status"], r)
	require.Equal(t, false, r["cache_hit"])
	require.Equal(t, "Malicious", d["malice"])
	before := hits.Load()
	status, m = call(http.MethodPost, "/v1/enrichments", map[string]any{"indicator_type": "ip", "indicator_value": "9.9.9.9"})
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, true, m["data"].(map[string]any)["results"].(map[string]any)["e2e_local"].(map[string]any)["cache_hit"])
	require.Equal(t, before, hits.Load())
	// A private address is not sent anywhere.
	status, m = call(http.MethodPost, "/v1/enrichments", map[string]any{"type": "ip", "value": "192.168.1.10"})
	require.Equal(t, http.StatusOK, status, m)
	r = m["data"].(map[string]any)["results"].(map[string]any)["e2e_local"].(map[string]any)
	require.Equal(t, "skipped", r["status"])
	require.Contains(t, r["error_message"], "private")
	require.Equal(t, before, hits.Load())

	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	var health map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	resp.Body.Close()
	providers := health["enrichment_providers"].(map[string]any)
	require.Equal(t, "configured", providers["e2e_local"])
	require.Equal(t, "unconfigured", providers["virustotal"])
}
