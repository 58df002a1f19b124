package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

const testWebhookSecret = "approval-webhook-secret"

// stepServer is the httptest server workflow steps call. It counts hits per path; paths ending
// in /status/<code> answer that code, paths ending in /sleep/<ms> answer after that long.
type stepServer struct {
	*httptest.Server
	mu      sync.Mutex
	hits    map[string]int
	headers map[string]http.Header
	started map[string]time.Time
}

func newStepServer(t testing.TB) *stepServer {
	s := &stepServer{hits: map[string]int{}, headers: map[string]http.Header{}, started: map[string]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.headers[r.URL.Path] = r.Header.Clone()
		if _, ok := s.started[r.URL.Path]; !ok {
			s.started[r.URL.Path] = time.Now()
		}
		s.mu.Unlock()
		if i := strings.LastIndex(r.URL.Path, "/sleep/"); i >= 0 {
			ms, _ := strconv.Atoi(r.URL.Path[i+len("/sleep/"):])
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-r.Context().Done():
			}
		}
		code := http.StatusOK
		if i := strings.LastIndex(r.URL.Path, "/status/"); i >= 0 {
			code, _ = strconv.Atoi(r.URL.Path[i+len("/status/"):])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"ok": true, "token": "tok-`+strconv.Itoa(code)+`", "path": "`+r.URL.Path+`"}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stepServer) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *stepServer) Header(path string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[path]
}

func (s *stepServer) FirstHit(path string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[path]
}

// noticeServer receives the signed approval webhooks and keeps the decide URL of each request.
type noticeServer struct {
	*httptest.Server
	mu     sync.Mutex
	decide map[uuid.UUID]string
	bad    int
}

func newNoticeServer(t testing.TB) *noticeServer {
	n := &noticeServer{decide: map[uuid.UUID]string{}}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n.mu.Lock()
		defer n.mu.Unlock()
		if webhooks.Sign(testWebhookSecret, r.Header.Get("X-Vigil-Timestamp"), body) != r.Header.Get("X-Vigil-Signature") ||
			r.Header.Get("X-Vigil-Event") != "approval.requested" {
			n.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p struct {
			Data struct {
				ApprovalRequest approvals.Request `json:"approval_request"`
				DecideURL       string            `json:"decide_url"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			n.bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		n.decide[p.Data.ApprovalRequest.UUID] = p.Data.DecideURL
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(n.Close)
	return n
}

// DecideURL waits for the notification of approval id and returns its decide-page link.
func (n *noticeServer) DecideURL(t testing.TB, id uuid.UUID) string {
	t.Helper()
	var u string
	require.Eventually(t, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		u = n.decide[id]
		return u != ""
	}, 20*time.Second, 20*time.Millisecond, "no approval notification for %s", id)
	return u
}

// runHarness is a Temporal client, workers on their own task queues, the step and notice
// servers, and an API server wired to them.
type runHarness struct {
	ts      *testServer
	client  client.Client
	queues  temporal.Queues
	box     *secretbox.Box
	steps   *stepServer
	notices *noticeServer
	acts    *activities.Activities
	agents  *agents.Service
	stop    func()
}

const slackTestSecret = "slack-signing-secret"

func newRunHarness(t testing.TB, queueSuffix string) *runHarness {
	t.Helper()
	st := testStore(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	c, err := temporal.Dial(context.Background(), temporal.Config{HostPort: testenv.TemporalAddress(t), Namespace: "default", Codec: testenv.PayloadCodec(t),
		TaskQueuePrefix: testenv.TaskQueuePrefix(t) + queueSuffix}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, temporal.RegisterSearchAttributes(context.Background(), c, "default"))
	h := &runHarness{client: c, queues: temporal.NewQueues(testenv.TaskQueuePrefix(t) + queueSuffix), box: box,
		steps: newStepServer(t), notices: newNoticeServer(t)}
	guard := netguard.NewGuard([]string{"127.0.0.1"})
	h.acts = &activities.Activities{Log: slog.New(slog.DiscardHandler), WorkflowRuns: st, RunSecrets: box,
		StepClient: guard.HTTPClient(30 * time.Second),
		Approvals: approvals.NewNotifier(approvals.Config{Type: approvals.NotifierWebhook, PublicBaseURL: "http://vigil.invalid",
			WebhookURL: h.notices.URL, WebhookSecret: testWebhookSecret}, guard.HTTPClient(10*time.Second))}
	h.agents = agents.New(st, box, guard, agents.NewHTTPClient(guard))
	h.acts.AgentEvents = &activities.AgentEventDeps{Store: st, Payloads: agents.NewPayloads(st, "http://vigil.invalid"), Deliverer: h.agents}
	h.startWorkers(t)
	t.Cleanup(func() { h.stop() })
	startDispatcher(t, st, c, h.queues)
	h.ts = newTestServer(t, func(cfg *Config, d *Deps) {
		d.Workflows = st
		d.Secrets = box
		cfg.SlackSigningSecret = slackTestSecret
		rs := responses.New(responses.Deps{Store: st, Signaler: temporal.NewRunSignaler(c), StepClient: guard.HTTPClient(30 * time.Second), Secrets: box, Log: d.Log})
		d.Responses = rs // one service for REST and the console, as cmd/vigil wires it
		al := alerts.New(st, d.Log)
		d.Console = console.New(console.Deps{Auth: d.Auth, Box: box, Store: st, Alerts: al,
			Approvals: rs, Runs: rs, Log: d.Log, LiveRefresh: 300 * time.Millisecond,
			Comments: comments.New(st), Timeline: timeline.New(st), Cases: cases.New(st, al, d.Log), CaseTimeline: timeline.New(st)})
	})
	return h
}

// startDispatcher runs the outbox dispatcher (it starts the runs execute commits) until the test
// ends.
func startDispatcher(t testing.TB, st *store.Store, c client.Client, queues temporal.Queues) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	d := temporal.NewDispatcher(st, c, queues, slog.New(slog.DiscardHandler), temporal.DispatcherOptions{Poll: 100 * time.Millisecond})
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// startWorkers runs the workers until stop is called (which waits for them to end).
func (h *runHarness) startWorkers(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- temporal.RunWorkers(ctx, h.client, h.queues, h.acts, slog.New(slog.DiscardHandler)) }()
	h.stop = func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("workers did not stop")
		}
		h.stop = func() {}
	}
}

func (h *runHarness) keys(t testing.TB) (human, agent, approver, approver2 string) {
	st := h.ts.Store
	human = mustKey(t, st, auth.ScopeWorkflowsRead, auth.ScopeWorkflowsWrite, auth.ScopeWorkflowsExecute, auth.ScopeApprovalsWrite)
	agent = mustKeyWith(t, st, func(k *store.APIKey) { k.KeyType = auth.KeyTypeAgent }, auth.ScopeWorkflowsRead, auth.ScopeWorkflowsExecute)
	approver = mustKey(t, st, auth.ScopeApprovalsWrite, auth.ScopeWorkflowsRead)
	approver2 = mustKey(t, st, auth.ScopeApprovalsWrite)
	return
}

// workflowBody is an active one-step workflow calling the step server at path.
func (h *runHarness) workflowBody(path string, edit func(map[string]any)) map[string]any {
	body := map[string]any{
		"name": "wf " + path, "state": "active", "indicator_types": []string{"ip", "account"},
		"approval_mode": "agent_only", "risk_level": "high",
		"retry_policy": map[string]any{"max_attempts": 2, "initial_interval_seconds": 1},
		"steps": []any{map[string]any{"name": "act", "method": "POST", "url": h.steps.URL + path,
			"json_body": map[string]any{"ip": "{{indicator.value}}"}}},
	}
	if edit != nil {
		edit(body)
	}
	return body
}

func (h *runHarness) createWorkflow(t testing.TB, key string, body map[string]any) string {
	t.Helper()
	r := h.ts.do(t, http.MethodPost, "/v1/workflows", key, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)["uuid"].(string)
}

type executed struct {
	RunUUID             uuid.UUID  `json:"run_uuid"`
	Status              string     `json:"status"`
	TriggerSource       string     `json:"trigger_source"`
	ApprovalRequestUUID *uuid.UUID `json:"approval_request_uuid"`
	ExpiresAt           *time.Time `json:"expires_at"`
	WorkflowID          string     `json:"workflow_id"`
}

func (h *runHarness) execute(t testing.TB, key, wf string, body map[string]any, headers ...string) executed {
	t.Helper()
	if body == nil {
		body = map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7", "reason": "c2 beacon", "confidence": 0.9}
	}
	r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/execute", key, body, headers...)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	var env struct {
		Data executed       `json:"data"`
		Meta map[string]any `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &env))
	require.NotNil(t, env.Meta)
	require.Equal(t, "workflow-run-"+env.Data.RunUUID.String(), env.Data.WorkflowID)
	return env.Data
}

// waitRun waits until the run has status and returns it.
func (h *runHarness) waitRun(t testing.TB, id uuid.UUID, status string) store.WorkflowRun {
	t.Helper()
	var run store.WorkflowRun
	require.Eventually(t, func() bool {
		var err error
		run, err = h.ts.Store.GetWorkflowRun(context.Background(), id)
		require.NoError(t, err)
		return run.Status == status
	}, 30*time.Second, 20*time.Millisecond, "run %s never reached %s (last %s)", id, status, func() string { return run.Status }())
	return run
}

func (h *runHarness) decide(t testing.TB, key string, approval uuid.UUID, verb string, body any) response {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return h.ts.do(t, http.MethodPost, "/v1/workflow-approvals/"+approval.String()+"/"+verb, key, body)
}

// workflowResult waits for the Temporal workflow of a run to close and returns its result.
func (h *runHarness) workflowResult(t testing.TB, run uuid.UUID) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res struct {
		Status string `json:"status"`
	}
	// The dispatcher starts the workflow shortly after execute committed it (start outbox).
	for {
		_, err := h.client.DescribeWorkflowExecution(ctx, ids.WorkflowRun(run), "")
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			require.NoError(t, err)
			break
		}
		require.NoError(t, ctx.Err(), "workflow of run %s never started", run)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, h.client.GetWorkflow(ctx, ids.WorkflowRun(run), "").Get(ctx, &res))
	return res.Status
}
