package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/api"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// Issue 11 "What it must show": Temporal unreachable when a workflow is executed → 202 with the run
// queued (no Temporal call in the request, no compensating "failed" write), and the run starts once
// Temporal is back. A gated run approved while Temporal is down runs as soon as it starts, not at its
// expiry (the start delivers the update signal the decision could not).
func TestWorkflowRun_TemporalUnreachableAtExecute(t *testing.T) {
	// The pipeline harness's store; its dispatcher (on the first Temporal) must not take this test's
	// rows, so it is stopped (the next pipeline test starts it again).
	e := pipelineHarness(t)
	e.killDispatcher()
	ctx := context.Background()
	st, box := e.st, e.box
	var hits atomic.Int32
	steps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(steps.Close)

	// A Temporal server that is not running yet, on a port reserved now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	lazy, err := temporal.DialLazy(temporal.Config{HostPort: fmt.Sprintf("127.0.0.1:%d", port), Codec: testenv.PayloadCodec(t)}, nil)
	require.NoError(t, err)
	t.Cleanup(lazy.Close)
	queues := temporal.NewQueues(testenv.TaskQueuePrefix(t) + "-fault")
	dctx, stopDispatcher := context.WithCancel(ctx)
	dispatched := make(chan error, 1)
	go func() {
		dispatched <- temporal.NewDispatcher(st, lazy, queues, nil, temporal.DispatcherOptions{Poll: 200 * time.Millisecond, StartLimit: 2 * time.Second}).Run(dctx)
	}()
	t.Cleanup(func() { stopDispatcher(); require.NoError(t, <-dispatched) })

	srv := api.New(api.Config{RateLimitPerMinute: 1_000_000}, api.Deps{
		Log: slog.New(slog.DiscardHandler), Auth: auth.NewAuthenticator(st, slog.New(slog.DiscardHandler), 0),
		Limiter: ratelimit.NewMemory(), APIKeys: st, Audit: st, Secrets: box, Workflows: st,
		Responses: responses.New(responses.Deps{Store: st, Secrets: box, Signaler: temporal.NewRunSignaler(lazy), Log: slog.New(slog.DiscardHandler)})})
	newKey := func(scopes ...string) string {
		k, plain, err := apikeys.Build(apikeys.Fields{Name: "fault-" + uuid.NewString()[:8], Scopes: scopes})
		require.NoError(t, err)
		require.NoError(t, st.CreateAPIKey(ctx, &k))
		return plain
	}
	human := newKey(auth.ScopeWorkflowsWrite, auth.ScopeWorkflowsExecute)
	approver := newKey(auth.ScopeApprovalsWrite)
	do := func(method, path, key string, body any) (int, map[string]any) {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(method, path, bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.App().Test(req, 30_000)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}
	workflow := func(mode string) string {
		status, m := do(http.MethodPost, "/v1/workflows", human, map[string]any{"name": "fault " + uuid.NewString(), "state": "active",
			"indicator_types": []string{"ip"}, "approval_mode": mode, "risk_level": "low",
			"steps": []any{map[string]any{"name": "act", "method": "POST", "url": steps.URL + "/act", "json_body": map[string]any{"ip": "{{indicator.value}}"}}}})
		require.Equal(t, http.StatusCreated, status, "%v", m)
		return m["data"].(map[string]any)["uuid"].(string)
	}
	execute := func(wf string) map[string]any {
		status, m := do(http.MethodPost, "/v1/workflows/"+wf+"/execute", human, map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.7"})
		require.Equal(t, http.StatusAccepted, status, "%v", m)
		return m["data"].(map[string]any)
	}

	ungated := execute(workflow("never"))
	require.Equal(t, store.RunQueued, ungated["status"])
	gated := execute(workflow("always"))
	require.Equal(t, store.RunPendingApproval, gated["status"])
	runOf := func(d map[string]any) uuid.UUID { return uuid.MustParse(d["run_uuid"].(string)) }
	// The decision commits although the signal cannot be sent.
	status, m := do(http.MethodPost, "/v1/workflow-approvals/"+gated["approval_request_uuid"].(string)+"/approve", approver, map[string]any{})
	require.Equal(t, http.StatusOK, status, "%v", m)
	require.Equal(t, store.ApprovalApproved, m["data"].(map[string]any)["status"])

	// The dispatcher tries and fails; the runs wait queued, never failed.
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, st.DB().NewRaw(q, args...).Scan(ctx, &n))
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for count("SELECT count(*) FROM start_outbox WHERE kind = 'workflow_run' AND subject_uuid IN (?, ?) AND attempts >= 1 AND last_error IS NOT NULL",
		runOf(ungated), runOf(gated)) < 2 {
		require.True(t, time.Now().Before(deadline), "the dispatcher never tried")
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range []map[string]any{ungated, gated} {
		run, err := st.GetWorkflowRun(ctx, runOf(d))
		require.NoError(t, err)
		require.Equal(t, d["status"], run.Status, "still waiting, no compensating write")
		require.Nil(t, run.Error)
	}
	require.Zero(t, hits.Load())

	// Temporal comes up: both runs start there and succeed, each step sent once.
	second := startSecondTemporal(t, port)
	t.Cleanup(func() { _ = second.Stop() })
	c, err := temporal.Dial(ctx, temporal.Config{HostPort: second.Address(), Codec: testenv.PayloadCodec(t)}, nil)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, temporal.RegisterSearchAttributes(ctx, c, ""))
	acts := &activities.Activities{Log: slog.New(slog.DiscardHandler), WorkflowRuns: st, RunSecrets: box,
		StepClient: netguard.NewGuard([]string{"127.0.0.1"}).HTTPClient(30 * time.Second)}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		_ = temporal.RunWorkers(wctx, c, queues, acts, nil)
	}()
	t.Cleanup(func() { stopWorker(); <-workerDone })
	for _, d := range []map[string]any{ungated, gated} {
		deadline := time.Now().Add(120 * time.Second)
		for {
			run, err := st.GetWorkflowRun(ctx, runOf(d))
			require.NoError(t, err)
			if run.Status == store.RunSucceeded {
				break
			}
			require.True(t, time.Now().Before(deadline), "run %s is %s", run.UUID, run.Status)
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.EqualValues(t, 2, hits.Load())
	// The entries go in the claim's commit, which may land just after a fast run finished.
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM start_outbox WHERE subject_uuid IN (?, ?)", runOf(ungated), runOf(gated)) == 0
	}, 30*time.Second, 100*time.Millisecond, "the started entries are deleted")
}
