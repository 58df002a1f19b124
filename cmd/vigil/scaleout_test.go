package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/vigil-soc/vigil/devstack"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// The scale-out harness (issue 17): the real `vigil` binary, built once, runs as two `vigil api` and
// two `vigil worker` processes (and, in TestScaleOut, two `vigil mcp`) on one Postgres and one
// Temporal dev server with RATE_LIMIT_STORE=postgres; the client spreads its requests over both apis.

// scaleBacklog is the default backlog of TestScaleOut (the figure is 2 000; on the shared
// 2-core runner that alone takes minutes, so CI runs a smaller one). VIGIL_SCALEOUT_BACKLOG=2000 runs
// the number.
const scaleBacklog = 400

// proc is one child `vigil` process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	base    string // http://API_ADDR for an api, http://MCP_ADDR for an MCP server, "" for a worker
	metrics string // http://METRICS_ADDR/metrics
	out     *devstack.TailBuffer
	done    chan struct{}
	err     error
}

// cluster is the harness: the processes, the environment they share, and the client's view.
type cluster struct {
	t       testing.TB
	bin     string
	env     map[string]string
	apis    []*proc
	workers []*proc
	mcps    []*proc
	st      *store.Store
	admin   string
	next    atomic.Uint64 // round-robin over the apis
}

// buildVigil builds this package's binary into dir.
func buildVigil(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "vigil")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// newCluster starts apis `vigil api` and workers `vigil worker` processes and waits until the apis
// are healthy.
func newCluster(t testing.TB, apis, workers int, extraEnv map[string]string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: buildVigil(t, t.TempDir()), env: map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t) + "-scale",
		"RATE_LIMIT_STORE":           "postgres",
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"LOG_LEVEL":                  "warn",
		// Four processes at the default 20 connections each would take 80 of a shared server's
		// default 100 (other test binaries use it at the same time).
		"DATABASE_MAX_CONNS": "8",
	}}
	for k, v := range extraEnv {
		c.env[k] = v
	}
	st, err := store.Open(context.Background(), c.env["DATABASE_URL"], store.Options{MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c.st = st
	c.admin, _ = createKey(t, envOf(c.env), "--name", "scale-admin", "--scopes", "admin", "--rate-limit-per-minute", "1000000")
	for i := range apis {
		c.apis = append(c.apis, c.launch(fmt.Sprintf("api-%d", i+1), "api"))
	}
	for i := range workers {
		c.workers = append(c.workers, c.launch(fmt.Sprintf("worker-%d", i+1), "worker"))
	}
	return c
}

// launch starts `vigil sub` on fresh ports and waits until it answers (an api or an MCP server:
// /health; a worker: its /metrics). A port freeAddr picked can be taken by someone else before the child binds it;
// then the child exits with "address already in use" and launch tries other ports.
func (c *cluster) launch(name, sub string) *proc {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		apiAddr := ""
		if sub != "worker" {
			apiAddr = freeAddr(c.t)
		}
		p := c.start(name, sub, apiAddr)
		probe := p.metrics
		if sub != "worker" {
			probe = p.base + "/health"
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-p.done:
				if attempt < 5 && strings.Contains(p.out.String(), "address already in use") {
					deadline = time.Time{} // try other ports
					continue
				}
				c.t.Fatalf("%s exited at start: %v\n%s", name, p.err, p.out.String())
			default:
			}
			if resp, err := http.Get(probe); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return p
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !deadline.IsZero() {
			c.t.Fatalf("%s did not answer %s within 60 s:\n%s", name, probe, p.out.String())
		}
	}
}

// start runs `vigil sub` as a child process, stopped (SIGTERM, then SIGKILL) when the test ends
// and killed with the test binary (Pdeathsig). addr is the listener of an api (API_ADDR) or an MCP
// server (MCP_ADDR).
func (c *cluster) start(name, sub, addr string) *proc {
	c.t.Helper()
	metricsAddr := freeAddr(c.t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "METRICS_ADDR=" + metricsAddr}
	for k, v := range c.env {
		env = append(env, k+"="+v)
	}
	p := &proc{name: name, metrics: "http://" + metricsAddr + "/metrics", out: devstack.NewTailBuffer(64 << 10), done: make(chan struct{})}
	if addr != "" {
		listen := "API_ADDR="
		if sub == "mcp" {
			listen = "MCP_ADDR="
		}
		env = append(env, listen+addr)
		p.base = "http://" + addr
	}
	p.cmd = exec.Command(c.bin, sub)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(c.t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	c.t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			c.t.Errorf("%s did not stop on SIGTERM", name)
		}
		if c.t.Failed() {
			c.t.Logf("%s output (last 64 KiB):\n%s", name, p.out.String())
		}
	})
	return p
}

// kill SIGKILLs p and waits for it to exit.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

// stop SIGTERMs p and waits for it to exit.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop on SIGTERM", p.name)
	}
}

// api returns the next api in round-robin order.
func (c *cluster) api() *proc { return c.apis[int(c.next.Add(1))%len(c.apis)] }

// do sends one request to base and decodes the JSON answer.
func do(ctx context.Context, base, method, path, key string, body any) (int, map[string]any, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}

// must is do that fails the test on a transport error.
func (c *cluster) must(base, method, path, key string, body any) (int, map[string]any) {
	c.t.Helper()
	code, m, err := do(context.Background(), base, method, path, key, body)
	require.NoError(c.t, err)
	return code, m
}

// ingest posts one generic alert to base and returns its alert uuid; an error when base does not
// answer 202.
func ingest(ctx context.Context, base, key string, payload map[string]any) (string, error) {
	code, m, err := do(ctx, base, http.MethodPost, "/v1/alerts", key, map[string]any{"source_name": "generic", "payload": payload})
	if err != nil {
		return "", err
	}
	if code != http.StatusAccepted {
		return "", fmt.Errorf("ingest: %d %v", code, m)
	}
	return m["data"].(map[string]any)["alert_uuid"].(string), nil
}

func TestScaleOut(t *testing.T) {
	target := newCountingTarget(t)
	c := newCluster(t, 2, 2, map[string]string{
		"SSRF_ALLOWED_HOSTS": strings.TrimPrefix(target.URL, "http://"),
	})
	c.mcps = append(c.mcps, c.launch("mcp-1", "mcp"), c.launch("mcp-2", "mcp"))
	c.mcpSubtests(t)

	t.Run("identical ingests over both apis make one alert", func(t *testing.T) {
		payload := map[string]any{"title": "scale dedup " + uuid.NewString(), "severity": "High", "src_ip": "198.51.100.10"}
		var wg sync.WaitGroup
		ids := make([]string, 20)
		errs := make([]error, len(ids))
		for i := range ids {
			wg.Go(func() { ids[i], errs[i] = ingest(context.Background(), c.apis[i%2].base, c.admin, payload) })
		}
		wg.Wait()
		for i := range ids {
			require.NoError(t, errs[i])
			require.Equal(t, ids[0], ids[i], "every ack names the one alert")
		}
		var n int
		require.NoError(t, c.st.DB().NewRaw(`SELECT count(*) FROM alerts WHERE title = ?`, payload["title"]).Scan(context.Background(), &n))
		require.Equal(t, 1, n)
	})

	t.Run("a key limited to 60 per minute gets 60 over both apis together", func(t *testing.T) {
		key, _ := createKey(t, envOf(c.env), "--name", "scale-60", "--scopes", "alerts:read", "--rate-limit-per-minute", "60")
		// The windows are whole minutes: start early in one so all 90 requests fall in it.
		if s := time.Now().Second(); s > 40 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
		var ok, limited atomic.Int32
		var wg sync.WaitGroup
		for i := range 90 {
			wg.Go(func() {
				code, _, err := do(context.Background(), c.apis[i%2].base, http.MethodGet, "/v1/alerts?page_size=1", key, nil)
				if err != nil {
					t.Error(err)
					return
				}
				switch code {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					t.Errorf("unexpected status %d", code)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 60, ok.Load())
		require.EqualValues(t, 30, limited.Load())
		// Both apis counted the refusals, by route template.
		var counted, requests float64
		for _, a := range c.apis {
			text := scrape(t, a.metrics)
			counted += metricValue(text, "vigil_http_rate_limited_total", `bucket="key"`)
			requests += metricValue(text, "vigil_http_requests_total", `method="GET",route="/v1/alerts",status="429"`)
		}
		require.EqualValues(t, 30, counted)
		require.EqualValues(t, 30, requests)
	})

	t.Run("a key revoked on api-1 is refused by api-2 within 2 s", func(t *testing.T) {
		key, _ := createKey(t, envOf(c.env), "--name", "scale-revoke", "--scopes", "alerts:read")
		keyUUID := c.keyUUID(t, key)
		code, _ := c.must(c.apis[1].base, http.MethodGet, "/v1/alerts?page_size=1", key, nil)
		require.Equal(t, http.StatusOK, code, "api-2 knows (and caches) the key")
		code, m := c.must(c.apis[0].base, http.MethodDelete, "/v1/api-keys/"+keyUUID, c.admin, nil)
		require.Less(t, code, 300, m)
		revoked := time.Now()
		var refusedAfter time.Duration
		require.Eventually(t, func() bool {
			code, _, err := do(context.Background(), c.apis[1].base, http.MethodGet, "/v1/alerts?page_size=1", key, nil)
			refusedAfter = time.Since(revoked)
			return err == nil && code == http.StatusUnauthorized
		}, 10*time.Second, 20*time.Millisecond)
		t.Logf("api-2 refused the revoked key %s after the revocation was acknowledged", refusedAfter)
		// The authenticator caches a key for 2 s; 20 ms of polling and a loaded machine on top.
		require.Less(t, refusedAfter, 2*time.Second+500*time.Millisecond)
	})

	t.Run("a run started through api-1 and approved through api-2 runs once", func(t *testing.T) {
		agent, _ := createKey(t, envOf(c.env), "--name", "scale-agent", "--scopes", "workflows:execute,workflows:read", "--key-type", "agent")
		code, m := c.must(c.apis[0].base, http.MethodPost, "/v1/workflows", c.admin, map[string]any{"name": "scale isolate " + uuid.NewString()[:8],
			"state": "active", "approval_mode": "agent_only",
			"steps": []any{map[string]any{"name": "isolate", "method": "POST", "url": target.URL + "/isolate/{{indicator.value}}"}}})
		require.Equal(t, http.StatusCreated, code, m)
		wf := m["data"].(map[string]any)["uuid"].(string)
		code, m = c.must(c.apis[0].base, http.MethodPost, "/v1/workflows/"+wf+"/execute", agent,
			map[string]any{"indicator_type": "ip", "indicator_value": "198.51.100.77", "reason": "scale-out", "confidence": 0.9})
		require.Equal(t, http.StatusAccepted, code, m)
		run := m["data"].(map[string]any)["run_uuid"].(string)
		require.Equal(t, "pending_approval", m["data"].(map[string]any)["status"])

		var approval string
		require.Eventually(t, func() bool {
			_, m := c.must(c.apis[1].base, http.MethodGet, "/v1/workflow-approvals?status=pending&workflow_uuid="+wf, c.admin, nil)
			for _, a := range m["data"].([]any) {
				if a := a.(map[string]any); a["run_uuid"] == run {
					approval = a["uuid"].(string)
				}
			}
			return approval != ""
		}, 30*time.Second, 100*time.Millisecond)
		code, m = c.must(c.apis[1].base, http.MethodPost, "/v1/workflow-approvals/"+approval+"/approve", c.admin, map[string]any{"comment": "go"})
		require.Equal(t, http.StatusOK, code, m)
		require.Eventually(t, func() bool {
			_, m := c.must(c.api().base, http.MethodGet, "/v1/workflow-runs/"+run, agent, nil)
			return m["data"].(map[string]any)["status"] == "succeeded"
		}, 60*time.Second, 100*time.Millisecond)
		// A second approval through api-1 is refused, and the step ran exactly once.
		code, _ = c.must(c.apis[0].base, http.MethodPost, "/v1/workflow-approvals/"+approval+"/approve", c.admin, map[string]any{})
		require.Equal(t, http.StatusConflict, code)
		time.Sleep(time.Second)
		require.Equal(t, 1, target.hits("/isolate/198.51.100.77"))
	})

	t.Run("with an agent registered, every delivery id arrives once", func(t *testing.T) {
		tag := "scale-agent-" + uuid.NewString()[:8]
		code, m := c.must(c.apis[0].base, http.MethodPost, "/v1/agents", c.admin, map[string]any{"name": "scale agent " + tag,
			"endpoint_url": target.URL + "/agent", "events": []string{"alert.enriched"}, "timeout_seconds": 5,
			"trigger_filter": map[string]any{"match_all": []any{map[string]any{"field": "tags", "op": "contains", "value": tag}}}})
		require.Equal(t, http.StatusCreated, code, m)
		agent := m["data"].(map[string]any)["uuid"].(string)
		t.Cleanup(func() { c.must(c.apis[1].base, http.MethodDelete, "/v1/agents/"+agent, c.admin, nil) })
		const n = 60
		c.ingestMany(t, n, tag, nil)
		require.Eventually(t, func() bool { return c.enriched(t, tag) == n }, 3*time.Minute, 200*time.Millisecond)
		require.Eventually(t, func() bool { ids, _ := target.deliveryCounts(); return ids >= n }, time.Minute, 100*time.Millisecond)
		time.Sleep(time.Second)
		ids, most := target.deliveryCounts()
		require.Equal(t, n, ids, "one delivery per alert.enriched, whichever worker delivered it")
		require.Equal(t, 1, most, "every delivery id received once")
		require.Equal(t, n, target.hits("/agent"))
	})

	t.Run("a backlog is Enriched once each while a worker is SIGKILLed halfway", func(t *testing.T) {
		n := scaleBacklog
		if v, err := strconv.Atoi(os.Getenv("VIGIL_SCALEOUT_BACKLOG")); err == nil && v > 0 {
			n = v
		}
		tag := "scale-backlog-" + uuid.NewString()[:8]
		ids := c.ingestMany(t, n, tag, nil)
		start := time.Now()
		// SIGKILL worker-1 once half the backlog is Enriched; worker-2 finishes it.
		require.Eventually(t, func() bool { return c.enriched(t, tag) >= n/2 }, 15*time.Minute, 100*time.Millisecond)
		c.workers[0].kill(t)
		killedAt := c.enriched(t, tag)
		require.Eventually(t, func() bool { return c.enriched(t, tag) == n }, 15*time.Minute, 250*time.Millisecond)
		t.Logf("backlog of %d Enriched in %s (%.1f alerts/s); worker-1 SIGKILLed at %d Enriched", n, time.Since(start).Round(time.Millisecond),
			float64(n)/time.Since(start).Seconds(), killedAt)

		// Exactly once: one alert_enriched event per alert, no outbox entry left, and one
		// AlertPipeline execution per workflow id in Temporal.
		var events, alerts, outbox int
		require.NoError(t, c.st.DB().NewRaw(`SELECT count(*), count(DISTINCT a.uuid) FROM alerts a
			JOIN activity_events e ON e.alert_uuid = a.uuid AND e.event_type = 'alert_enriched' WHERE ? = ANY(a.tags)`, tag).
			Scan(context.Background(), &events, &alerts))
		require.Equal(t, n, alerts)
		require.Equal(t, n, events, "one alert_enriched event per alert")
		require.NoError(t, c.st.DB().NewRaw(`SELECT count(*) FROM alert_outbox o JOIN alerts a ON a.uuid = o.alert_uuid WHERE ? = ANY(a.tags)`, tag).
			Scan(context.Background(), &outbox))
		require.Zero(t, outbox)
		// Visibility is eventually consistent: wait until every run is listed, then count.
		runs := c.pipelineRuns(t)
		listed := func() bool {
			for _, id := range ids {
				if runs["alert-"+id] == 0 {
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(30 * time.Second); !listed() && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			runs = c.pipelineRuns(t)
		}
		for _, id := range ids {
			require.Equal(t, 1, runs["alert-"+id], "pipeline runs of alert %s", id)
		}
	})

	t.Run("an api SIGKILLed mid-load: retries to the other api lose nothing", func(t *testing.T) {
		const n = 200
		tag := "scale-apikill-" + uuid.NewString()[:8]
		var sent atomic.Int32
		killed := make(chan struct{})
		go func() {
			for sent.Load() < n/2 {
				time.Sleep(5 * time.Millisecond)
			}
			c.apis[0].kill(t)
			close(killed)
		}()
		ids := c.ingestMany(t, n, tag, &sent)
		<-killed
		var count int
		require.NoError(t, c.st.DB().NewRaw(`SELECT count(*) FROM alerts WHERE ? = ANY(tags)`, tag).Scan(context.Background(), &count))
		require.Equal(t, n, count, "every alert committed once")
		seen := map[string]bool{}
		for _, id := range ids {
			require.False(t, seen[id], "two alerts acked with one uuid")
			seen[id] = true
		}
		require.Eventually(t, func() bool { return c.enriched(t, tag) == n }, 10*time.Minute, 250*time.Millisecond)

		// The survivors' /metrics agree: the outbox is empty, nothing is in flight, and api-2 acked at
		// least the half sent after api-1 died.
		require.Eventually(t, func() bool {
			a, w := tryScrape(c.apis[1].metrics), tryScrape(c.workers[1].metrics)
			return strings.Contains(a, "\nvigil_outbox_depth 0\n") && strings.Contains(w, "\nvigil_pipelines_in_flight 0\n")
		}, time.Minute, 250*time.Millisecond)
		require.GreaterOrEqual(t, metricValue(scrape(t, c.apis[1].metrics), "vigil_ingest_acks_total", `source="generic"`), float64(n/2))
	})
}

// ingestMany posts n unique alerts tagged tag over the apis (8 at a time), retrying a request on
// the other api when one does not answer; it returns the acked alert uuids in order.
func (c *cluster) ingestMany(t testing.TB, n int, tag string, sent *atomic.Int32) []string {
	t.Helper()
	return c.ingestEach(t, n, sent, func(i int) map[string]any {
		return map[string]any{"title": fmt.Sprintf("%s %d", tag, i), "severity": "Medium", "tags": []string{tag},
			"src_ip": fmt.Sprintf("203.0.113.%d", 1+i%250)}
	})
}

// ingestEach is ingestMany with the payload of alert i from payload.
func (c *cluster) ingestEach(t testing.TB, n int, sent *atomic.Int32, payload func(i int) map[string]any) []string {
	t.Helper()
	ids := make([]string, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			payload := payload(i)
			var err error
			for attempt := range 10 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				ids[i], err = ingest(ctx, c.apis[(i+attempt)%len(c.apis)].base, c.admin, payload)
				cancel()
				if err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("alert %d never acked: %v", i, err)
			}
			if sent != nil {
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	return ids
}

// enriched counts the alerts tagged tag whose enrichment finished Enriched.
func (c *cluster) enriched(t testing.TB, tag string) int {
	var n int
	require.NoError(t, c.st.DB().NewRaw(`SELECT count(*) FROM alerts WHERE ? = ANY(tags) AND enrichment_status = 'Enriched'`, tag).
		Scan(context.Background(), &n))
	return n
}

// pipelineRuns counts the AlertPipeline executions per workflow id on the harness's pipeline queue.
func (c *cluster) pipelineRuns(t testing.TB) map[string]int {
	t.Helper()
	cfg, err := loadConfig(envOf(c.env))
	require.NoError(t, err)
	tc, err := temporalDial(t, cfg)
	require.NoError(t, err)
	defer tc.Close()
	query := fmt.Sprintf("WorkflowType = 'AlertPipeline' AND TaskQueue = '%s-pipeline'", cfg.TaskQueuePrefix)
	runs := map[string]int{}
	var token []byte
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
		require.NoError(t, err)
		for _, e := range resp.Executions {
			runs[e.Execution.WorkflowId]++
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return runs
		}
	}
}

// keyUUID finds the uuid of key by its prefix in GET /v1/api-keys.
func (c *cluster) keyUUID(t testing.TB, key string) string {
	t.Helper()
	code, m := c.must(c.api().base, http.MethodGet, "/v1/api-keys?page_size=100", c.admin, nil)
	require.Equal(t, http.StatusOK, code, m)
	for _, k := range m["data"].([]any) {
		if k := k.(map[string]any); k["key_prefix"] == key[:8] {
			return k["uuid"].(string)
		}
	}
	t.Fatalf("key %s… not listed", key[:8])
	return ""
}

// countingTarget is a loopback HTTP server counting requests per path.
type countingTarget struct {
	URL        string
	mu         sync.Mutex
	count      map[string]int
	deliveries map[string]int // X-Vigil-Delivery → requests carrying it
}

func newCountingTarget(t testing.TB) *countingTarget {
	t.Helper()
	ct := &countingTarget{count: map[string]int{}, deliveries: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct.mu.Lock()
		ct.count[r.URL.Path]++
		if id := r.Header.Get("X-Vigil-Delivery"); id != "" {
			ct.deliveries[id]++
		}
		ct.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	ct.URL = "http://" + ln.Addr().String()
	return ct
}

func (ct *countingTarget) hits(path string) int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.count[path]
}

// deliveryCounts returns how many delivery ids arrived and the most requests any one of them got.
func (ct *countingTarget) deliveryCounts() (ids, most int) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, n := range ct.deliveries {
		most = max(most, n)
	}
	return len(ct.deliveries), most
}
