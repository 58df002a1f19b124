package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

func TestPayloadCodecConfig(t *testing.T) {
	a, b := randomKeyB64(t), randomKeyB64(t)
	cfg, err := loadConfig(envOf(map[string]string{"TEMPORAL_PAYLOAD_KEYS": "b:" + b + ", a:" + a}))
	require.NoError(t, err)
	codec, err := payloadCodec(cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, codec.KeyIDs(), "the first encrypts, all decrypt")

	// Unset: one key derived from ENCRYPTION_KEY, the same in every process of the deployment.
	cfg, err = loadConfig(envOf(map[string]string{"ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}))
	require.NoError(t, err)
	derived, err := payloadCodec(cfg)
	require.NoError(t, err)
	again, err := payloadCodec(cfg)
	require.NoError(t, err)
	require.Regexp(t, `^derived-[0-9a-f]{8}$`, derived.EncryptingKeyID())
	require.Equal(t, derived.KeyIDs(), again.KeyIDs())

	cfg, err = loadConfig(envOf(nil))
	require.NoError(t, err)
	_, err = payloadCodec(cfg)
	require.ErrorContains(t, err, "TEMPORAL_PAYLOAD_KEYS or ENCRYPTION_KEY")

	// Bad rings fail at start, naming the setting and never repeating a key.
	for name, v := range map[string]string{
		"no id":       a,
		"short key":   "a:" + base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!")),
		"duplicate":   "a:" + a + ",a:" + b,
		"bad id":      "a key:" + a,
		"not base64":  "a:" + strings.Repeat("*", 44),
		"one of two":  "a:" + a + ",b:" + b[:20],
		"hostile":     "<img src=x>:" + a,
		"only commas": ",,,",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(envOf(map[string]string{"TEMPORAL_PAYLOAD_KEYS": v}))
			require.ErrorContains(t, err, "TEMPORAL_PAYLOAD_KEYS")
			require.NotContains(t, err.Error(), a)
			require.NotContains(t, err.Error(), b[:20])
		})
	}

	require.Equal(t, "http://127.0.0.1:8233", urlOrigin("http://127.0.0.1:8233"))
	require.Equal(t, "https://temporal.example.com", urlOrigin("https://Temporal.Example.com:443"))
	require.Equal(t, "http://[::1]", urlOrigin("http://[::1]:80"))
	require.Equal(t, "", urlOrigin(""))
	require.Equal(t, "http://127.0.0.1:8000/codec", devCodecEndpoint("127.0.0.1:8000"))
	require.Equal(t, "http://127.0.0.1:9000/codec", devCodecEndpoint(":9000"))
}

func randomKeyB64(t testing.TB) string {
	t.Helper()
	b := make([]byte, payloadcodec.KeySize)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// TestPayloadCodecEndToEnd runs `vigil api` and `vigil worker` through run() with key a: an alert's
// pipeline (whose extraction result names the indicator) and a gated workflow run leave no indicator
// value, title or reason in clear in Temporal's history, read straight from the server; the codec
// endpoint decodes that history for an admin key only. Then both
// processes restart with keys b,a: the run written under a is approved and completes (the new worker
// replays a's history), a's payloads still decode through the endpoint, and new payloads use b.
func TestPayloadCodecEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var decideURL string
	hits := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		hits[r.URL.Path]++
		if r.URL.Path == "/approvals" && webhooks.Sign("codec-webhook-secret", r.Header.Get("X-Vigil-Timestamp"), body) == r.Header.Get("X-Vigil-Signature") {
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

	tag := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	indicator := "c2-" + tag + ".example.net"
	title := "Beaconing codec-title-" + tag
	reason := "codec-reason-" + tag + " lateral movement"
	keyA, keyB := randomKeyB64(t), randomKeyB64(t)

	addr := freeAddr(t)
	base := "http://" + addr
	vars := map[string]string{
		"DATABASE_URL":                  testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":              testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX":    testenv.TaskQueuePrefix(t) + "-codec",
		"TEMPORAL_UI_URL":               "http://127.0.0.1:8233",
		"TEMPORAL_PAYLOAD_KEYS":         "a:" + keyA,
		"API_ADDR":                      addr,
		"PUBLIC_BASE_URL":               base,
		"ENCRYPTION_KEY":                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"SSRF_ALLOWED_HOSTS":            strings.TrimPrefix(target.URL, "http://"),
		"APPROVAL_NOTIFIER":             "webhook",
		"APPROVAL_WEBHOOK_URL":          target.URL + "/approvals",
		"APPROVAL_WEBHOOK_SECRET":       "codec-webhook-secret",
		"RATE_LIMIT_DEFAULT_PER_MINUTE": "100000",
		"LOG_LEVEL":                     "error",
	}
	env := func(k string) string { return vars[k] }
	admin, _ := createKey(t, env, "--name", "codec-admin", "--scopes", "admin")
	agent, _ := createKey(t, env, "--name", "codec-agent", "--scopes", "workflows:execute,workflows:read,alerts:read,alerts:write", "--key-type", "agent")

	stop := serveStoppable(t, env, "api", "worker")
	waitHealthy(t, base)

	call := func(method, path, key string, body any, headers ...string) (int, []byte) {
		t.Helper()
		var rd io.Reader
		switch b := body.(type) {
		case nil:
		case string:
			rd = strings.NewReader(b)
		default:
			raw, _ := json.Marshal(b)
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, raw
	}
	data := func(raw []byte) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
		d, _ := m["data"].(map[string]any)
		return d
	}

	// An alert through its pipeline.
	code, raw := call(http.MethodPost, "/v1/ingest/generic", agent, map[string]any{"title": title, "severity": "High",
		"indicators": []any{map[string]any{"type": "domain", "value": indicator}}})
	require.Equal(t, http.StatusAccepted, code, string(raw))
	alertUUID := uuid.MustParse(data(raw)["alert_uuid"].(string))
	require.Eventually(t, func() bool {
		_, raw := call(http.MethodGet, "/v1/alerts/"+alertUUID.String(), admin, nil)
		return data(raw)["enrichment_status"] == "Enriched"
	}, 3*time.Minute, 200*time.Millisecond)

	// A gated workflow run: its approval notification (an activity input) names the indicator and the reason.
	code, raw = call(http.MethodPost, "/v1/workflows", admin, map[string]any{"name": "codec isolate " + tag, "state": "active",
		"approval_mode": "agent_only", "steps": []any{map[string]any{"name": "isolate", "method": "POST", "url": target.URL + "/isolate/{{indicator.value}}"}}})
	require.Equal(t, http.StatusCreated, code, string(raw))
	wf := data(raw)["uuid"].(string)
	code, raw = call(http.MethodPost, "/v1/workflows/"+wf+"/execute", agent, map[string]any{"indicator_type": "domain",
		"indicator_value": indicator, "alert_uuid": alertUUID.String(), "reason": reason, "confidence": 0.8})
	require.Equal(t, http.StatusAccepted, code, string(raw))
	runUUID := uuid.MustParse(data(raw)["run_uuid"].(string))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return decideURL != "" }, 2*time.Minute, 50*time.Millisecond)

	// Straight from Temporal, with a client that has no codec.
	raw0, err := client.DialContext(context.Background(), client.Options{HostPort: vars["TEMPORAL_ADDRESS"],
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	t.Cleanup(raw0.Close)
	secrets := []string{indicator, title, "codec-title-" + tag, "codec-reason-" + tag}
	pipelineID, runID := ids.Alert(alertUUID), ids.WorkflowRun(runUUID)
	var pipelinePayloads, runPayloads []*commonpb.Payload
	for _, id := range []string{pipelineID, runID} {
		h := history(t, raw0, id)
		requireNoClearText(t, h, secrets)
		ps := payloadsOf(h)
		encrypted := 0
		for _, p := range ps {
			if string(p.Metadata["encoding"]) == payloadcodec.Encoding {
				encrypted++
				require.Equal(t, "a", string(p.Metadata[payloadcodec.MetadataKeyID]))
			}
		}
		require.Greater(t, encrypted, 1, "%s: its inputs and results are encrypted payloads", id)
		if id == pipelineID {
			pipelinePayloads = ps
		} else {
			runPayloads = ps
		}
		// Search attributes are indexed in clear: they carry uuids, source names, severities,
		// workflow names and statuses only.
		desc, err := raw0.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		sa, err := protojson.Marshal(desc.GetWorkflowExecutionInfo().GetSearchAttributes())
		require.NoError(t, err)
		require.NotEmpty(t, desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields())
		for _, s := range secrets {
			require.NotContains(t, string(sa), base64.StdEncoding.EncodeToString([]byte(s)))
		}
	}

	// The codec endpoint decodes that history for an admin key, and for nobody else.
	decode := func(key string, ps []*commonpb.Payload, headers ...string) (int, string) {
		t.Helper()
		body, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
		require.NoError(t, err)
		code, raw := call(http.MethodPost, "/codec/decode", key, string(body), headers...)
		if code != http.StatusOK {
			return code, string(raw)
		}
		var out commonpb.Payloads
		require.NoError(t, protojson.Unmarshal(raw, &out))
		var all strings.Builder
		for _, p := range out.Payloads {
			require.NotEqual(t, payloadcodec.Encoding, string(p.Metadata["encoding"]))
			all.Write(p.Data)
			all.WriteByte('\n')
		}
		return code, all.String()
	}
	code, text := decode(admin, pipelinePayloads, "Origin", vars["TEMPORAL_UI_URL"], "X-Namespace", "default")
	require.Equal(t, http.StatusOK, code, text)
	require.Contains(t, text, indicator, "the pipeline's extraction, decoded")
	code, text = decode(admin, runPayloads)
	require.Equal(t, http.StatusOK, code, text)
	require.Contains(t, text, `"run_uuid":"`+runUUID.String()+`"`, "the run's input, decoded")
	code, text = decode("", pipelinePayloads)
	require.Equal(t, http.StatusUnauthorized, code)
	require.NotContains(t, text, indicator)
	code, text = decode(agent, pipelinePayloads)
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, text, indicator)

	// Rotation: restart with b first and a kept.
	stop()
	vars["TEMPORAL_PAYLOAD_KEYS"] = "b:" + keyB + ",a:" + keyA
	serveStoppable(t, env, "api", "worker")
	waitHealthy(t, base)

	code, text = decode(admin, pipelinePayloads)
	require.Equal(t, http.StatusOK, code, text)
	require.Contains(t, text, indicator, "a run written under key a still reads")

	mu.Lock()
	link := decideURL
	mu.Unlock()
	resp, err := http.PostForm(link, url.Values{"decision": {"approve"}, "responder_name": {"oncall"}})
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	require.Eventually(t, func() bool {
		_, raw := call(http.MethodGet, "/v1/workflow-runs/"+runUUID.String(), admin, nil)
		return data(raw)["status"] == "succeeded"
	}, 3*time.Minute, 100*time.Millisecond, "the run started under key a completes under keys b,a")
	mu.Lock()
	require.Equal(t, 1, hits["/isolate/"+indicator])
	mu.Unlock()

	// Its history now holds payloads of both keys, and still nothing in clear.
	h := history(t, raw0, runID)
	requireNoClearText(t, h, secrets)
	keysUsed := map[string]int{}
	for _, p := range payloadsOf(h) {
		if string(p.Metadata["encoding"]) == payloadcodec.Encoding {
			keysUsed[string(p.Metadata[payloadcodec.MetadataKeyID])]++
		}
	}
	require.Positive(t, keysUsed["a"], fmt.Sprint(keysUsed))
	require.Positive(t, keysUsed["b"], fmt.Sprint(keysUsed))
	code, text = decode(admin, payloadsOf(h))
	require.Equal(t, http.StatusOK, code, text)
	require.Contains(t, text, `"step_name":"isolate"`, "the step's result, written under key b, decoded")
	require.Contains(t, text, "succeeded")
}

// requireNoClearText fails when any secret appears in the history: in its events' text (failure
// messages, names) or in the bytes of any payload (protobuf JSON shows those as base64, so they are
// searched raw).
func requireNoClearText(t testing.TB, h *historypb.History, secrets []string) {
	t.Helper()
	text, err := protojson.Marshal(h)
	require.NoError(t, err)
	for _, s := range secrets {
		require.NotContains(t, string(text), s, "the history holds %q in clear", s)
	}
	for _, p := range payloadsOf(h) {
		for _, s := range secrets {
			require.False(t, bytes.Contains(p.Data, []byte(s)), "a payload holds %q in clear", s)
			for k, v := range p.Metadata {
				require.False(t, bytes.Contains(v, []byte(s)), "payload metadata %s holds %q", k, s)
			}
		}
	}
}

// serveStoppable runs each subcommand through run() and returns a stop that ends them and requires
// each to return nil (also run at the end of the test when not called).
func serveStoppable(t testing.TB, env func(string) string, subcommands ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var dones []chan error
	for _, sub := range subcommands {
		done := make(chan error, 1)
		dones = append(dones, done)
		go func() { done <- run(ctx, []string{sub}, env, io.Discard, io.Discard) }()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			for i, done := range dones {
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(30 * time.Second):
					t.Errorf("vigil %s did not stop", subcommands[i])
				}
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// history reads workflowID's latest run's history from Temporal.
func history(t testing.TB, c client.Client, workflowID string) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	require.NotEmpty(t, h.Events)
	return &h
}

// payloadsOf returns every payload in the history's events, search attributes left out (they are
// indexed, never encoded).
func payloadsOf(h *historypb.History) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		switch v := m.Interface().(type) {
		case *commonpb.Payload:
			out = append(out, v)
			return
		case *commonpb.SearchAttributes:
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	walk(h.ProtoReflect())
	return out
}
