package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigErrors(t *testing.T) {
	_, err := loadConfig(envOf(map[string]string{"RATE_LIMIT_DEFAULT_PER_MINUTE": "lots", "LOG_FORMAT": "xml", "TRUSTED_PROXY_COUNT": "-1"}))
	require.Error(t, err)
	for _, name := range []string{"RATE_LIMIT_DEFAULT_PER_MINUTE", "LOG_FORMAT", "TRUSTED_PROXY_COUNT"} {
		require.Contains(t, err.Error(), name)
	}
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, 60, cfg.RateLimitPerMinute)
	require.Equal(t, 10, cfg.MaxBodyMB)
	require.Equal(t, "vigil", cfg.TaskQueuePrefix)
	require.True(t, cfg.AutoMigrate)
}

func TestRunCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Error(t, run(context.Background(), nil, envOf(nil), &out, &errOut))
	require.Error(t, run(context.Background(), []string{"frobnicate"}, envOf(nil), &out, &errOut))
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"help"}, envOf(nil), &out, &errOut))
	require.Contains(t, out.String(), "RATE_LIMIT_DEFAULT_PER_MINUTE")
}

func TestCreateAPIKeyValidation(t *testing.T) {
	env := envOf(map[string]string{"DATABASE_URL": testenv.DatabaseURL(t)})
	cases := map[string][]string{
		"no name":        {"--scopes", "admin"},
		"no scopes":      {"--name", "x"},
		"unknown scope":  {"--name", "x", "--scopes", "root"},
		"bad key type":   {"--name", "x", "--scopes", "admin", "--key-type", "robot"},
		"bad expiry":     {"--name", "x", "--scopes", "admin", "--expires-at", "tomorrow"},
		"past expiry":    {"--name", "x", "--scopes", "admin", "--expires-at", "2001-01-01T00:00:00Z"},
		"unknown flag":   {"--name", "x", "--scopes", "admin", "--root"},
		"negative limit": {"--name", "x", "--scopes", "admin", "--rate-limit-per-minute", "-5"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"create-api-key"}, args...), env, &out, io.Discard)
			require.Error(t, err)
			require.Empty(t, out.String(), "no key printed on failure")
		})
	}
}

// TestAPIEndToEnd runs `vigil create-api-key` on the package's fresh (empty) database, then `vigil api`
// through run(), and reads GET /v1/api-keys with the printed key.
func TestAPIEndToEnd(t *testing.T) {
	addr := freeAddr(t)
	env := envOf(map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t),
		"API_ADDR":                   addr,
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"LOG_LEVEL":                  "warn",
	})
	key, out := createKey(t, env, "--name", "ops", "--scopes", "admin")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"api"}, env, io.Discard, io.Discard) }()
	base := "http://" + addr
	waitHealthy(t, base)

	req, _ := http.NewRequest(http.MethodGet, base+"/v1/api-keys", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var body struct {
		Data []map[string]any `json:"data"`
		Meta map[string]any   `json:"meta"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEmpty(t, body.Data)
	require.Equal(t, key[:8], body.Data[0]["key_prefix"])
	require.NotContains(t, fmt.Sprint(body.Data), key)

	// The command line's key is on the audit trail, created by "system", its hash redacted; the route
	// is wired.
	req, _ = http.NewRequest(http.MethodGet, base+"/v1/audit-events?resource_type=api_key&action=created", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body.Data = nil
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var created map[string]any
	for _, e := range body.Data {
		if e["resource_name"] == "ops" {
			created = e
		}
	}
	require.NotNil(t, created, "the CLI's key creation is audited: %v", body.Data)
	require.Equal(t, "system", created["actor"].(map[string]any)["type"])
	require.Equal(t, "[redacted]", created["changes"].(map[string]any)["key_hash"].(map[string]any)["to"])
	require.NotContains(t, fmt.Sprint(body.Data), key)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not stop")
	}
	_, err = http.Get(base + "/health")
	require.Error(t, err, "listener closed after shutdown")
	require.False(t, strings.Contains(out, "hash"))
}

// TestWorkerRunsProbe runs `vigil worker` through run() against the real dev server; the probe
// workflow completes on it.
func TestWorkerRunsProbe(t *testing.T) {
	env := envOf(map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t),
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"LOG_LEVEL":                  "warn",
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"worker"}, env, io.Discard, io.Discard) }()
	id := runProbe(t, env)
	require.True(t, strings.HasPrefix(id, "probe-"))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop")
	}
}
