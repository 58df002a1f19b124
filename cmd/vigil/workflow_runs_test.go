package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/kit/webhooks"
)

func TestApprovalConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, approvals.NotifierNone, cfg.Approvals.Type)
	require.Equal(t, "https://slack.com/api", cfg.Approvals.SlackAPIBaseURL)

	cfg, err = loadConfig(envOf(map[string]string{"APPROVAL_NOTIFIER": "slack", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APPROVAL_CHANNEL": "C1",
		"SLACK_SIGNING_SECRET": "sig", "SLACK_API_BASE_URL": "http://127.0.0.1:9/api/", "TEAMS_WEBHOOK_URL": "https://teams/x",
		"APPROVAL_WEBHOOK_URL": "https://hook/x", "APPROVAL_WEBHOOK_SECRET": "whsec"}))
	require.NoError(t, err)
	require.Equal(t, approvals.Config{Type: "slack", SlackBotToken: "xoxb-1", SlackChannel: "C1", SlackAPIBaseURL: "http://127.0.0.1:9/api",
		TeamsWebhookURL: "https://teams/x", WebhookURL: "https://hook/x", WebhookSecret: "whsec"}, cfg.Approvals)
	require.Equal(t, "sig", cfg.SlackSigningSecret)

	_, err = loadConfig(envOf(map[string]string{"APPROVAL_NOTIFIER": "pager"}))
	require.ErrorContains(t, err, "APPROVAL_NOTIFIER")
}

// TestWorkflowApprovalEndToEnd runs `vigil api` and `vigil worker` through run(): an agent executes a
// workflow, the signed approval webhook carries the decide link, a person approves on the decide page,
// and the step reaches the loopback target once.
func TestWorkflowApprovalEndToEnd(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	var decideURL string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		hits[r.URL.Path]++
		if r.URL.Path == "/approvals" {
			if webhooks.Sign("e2e-webhook-secret", r.Header.Get("X-Vigil-Timestamp"), body) != r.Header.Get("X-Vigil-Signature") {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			var p struct {
				Data struct {
					DecideURL string `json:"decide_url"`
				} `json:"data"`
			}
			_ = json.Unmarshal(body, &p)
			decideURL = p.Data.DecideURL
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(target.Close)

	addr := freeAddr(t)
	base := "http://" + addr
	env := envOf(map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t) + "-wfr",
		"API_ADDR":                   addr,
		"PUBLIC_BASE_URL":            base,
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"SSRF_ALLOWED_HOSTS":         strings.TrimPrefix(target.URL, "http://"),
		"APPROVAL_NOTIFIER":          "webhook",
		"APPROVAL_WEBHOOK_URL":       target.URL + "/approvals",
		"APPROVAL_WEBHOOK_SECRET":    "e2e-webhook-secret",
		"LOG_LEVEL":                  "error",
	})
	newKey := func(args ...string) string {
		key, _ := createKey(t, env, args...)
		return key
	}
	admin := newKey("--name", "wf-admin", "--scopes", "admin")
	agent := newKey("--name", "wf-agent", "--scopes", "workflows:execute,workflows:read", "--key-type", "agent")

	serve(t, env, "api", "worker")
	waitHealthy(t, base)

	call := func(method, path, key string, body any) (int, map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, m := call(http.MethodPost, "/v1/workflows", admin, map[string]any{"name": "e2e isolate", "state": "active",
		"approval_mode": "agent_only", "steps": []any{map[string]any{"name": "isolate", "method": "POST", "url": target.URL + "/isolate/{{indicator.value}}"}}})
	require.Equal(t, http.StatusCreated, code, m)
	wf := m["data"].(map[string]any)["uuid"].(string)

	// The builtin workflows were seeded, inactive without credentials.
	code, m = call(http.MethodGet, "/v1/workflows?q=okta", admin, nil)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 5, m["meta"].(map[string]any)["total"])

	code, m = call(http.MethodPost, "/v1/workflows/"+wf+"/execute", agent, map[string]any{"indicator_type": "ip", "indicator_value": "198.51.100.23",
		"reason": "lateral movement", "confidence": 0.7})
	require.Equal(t, http.StatusAccepted, code, m)
	ex := m["data"].(map[string]any)
	require.Equal(t, "pending_approval", ex["status"])
	run := ex["run_uuid"].(string)

	var link string
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); link = decideURL; return link != "" }, 30*time.Second, 50*time.Millisecond)
	require.True(t, strings.HasPrefix(link, base+"/v1/approvals/"), link)
	resp, err := http.PostForm(link, url.Values{"decision": {"approve"}, "responder_name": {"oncall"}})
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))

	require.Eventually(t, func() bool {
		_, m := call(http.MethodGet, "/v1/workflow-runs/"+run, agent, nil)
		return m["data"].(map[string]any)["status"] == "succeeded"
	}, 30*time.Second, 100*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, hits["/isolate/198.51.100.23"])
}
