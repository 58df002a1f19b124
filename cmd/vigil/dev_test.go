package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/vigil-soc/vigil/devstack"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// devProc is a `vigil dev` process started by a test.
type devProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

func (p *devProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *devProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startDev runs bin dev in dir with env and waits until it says it is running.
func startDev(t *testing.T, bin, dir string, env []string) *devProc {
	t.Helper()
	p := &devProc{exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "dev")
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = dir, env, p, p
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.output(), "Vigil is running") {
		select {
		case <-p.exited:
			t.Fatalf("vigil dev exited early:\n%s", p.output())
		default:
		}
		require.True(t, time.Now().Before(deadline), "vigil dev not running after 2 min:\n%s", p.output())
		time.Sleep(200 * time.Millisecond)
	}
	return p
}

// childWorkers returns the pids of the `vigil worker` children of pid.
func childWorkers(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || err2 != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && strings.HasSuffix(string(cmdline), "\x00worker\x00") {
			out = append(out, child)
		}
	}
	return out
}

// niceOf reads the nice value of pid (field 19 of /proc/<pid>/stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	n, err := strconv.Atoi(fields[16]) // field 19 counted from 1, after pid and comm
	require.NoError(t, err)
	return n
}

// TestDev_WorkerProcess_CtrlC_AndSIGKILLMidIngest runs the real `vigil dev` binary (against the
// test database and Temporal server): the worker runs as a child process at nice
// devstack.BackgroundNice with its output prefixed; Ctrl-C stops it all; and `vigil dev` killed
// with SIGKILL during a 50 req/s ingest and started again leaves every alert that got a 202
// Enriched exactly once, without duplicate indicator links.
func TestDev_WorkerProcess_CtrlC_AndSIGKILLMidIngest(t *testing.T) {
	dsn := testenv.DatabaseURL(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "vigil")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	work := filepath.Join(dir, "checkout")
	require.NoError(t, os.MkdirAll(work, 0o755))
	addr := freeAddr(t)
	env := append(os.Environ(), "DATABASE_URL="+dsn, "TEMPORAL_ADDRESS="+testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX="+testenv.TaskQueuePrefix(t)+"-dev", "API_ADDR="+addr, "MCP_ADDR="+freeAddr(t),
		"ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "DATABASE_MAX_CONNS=4", "RATE_LIMIT_DEFAULT_PER_MINUTE=1000000", "LOG_LEVEL=info")
	key, _ := createKey(t, envOf(map[string]string{"DATABASE_URL": dsn}), "--name", "dev-test", "--scopes", "admin")
	base := "http://" + addr

	// 1. The topology, and a clean Ctrl-C.
	p := startDev(t, bin, work, env)
	workers := childWorkers(t, p.cmd.Process.Pid)
	require.Len(t, workers, 1, "one vigil worker child")
	require.Equal(t, devstack.BackgroundNice, niceOf(t, workers[0]))
	require.Equal(t, 0, niceOf(t, p.cmd.Process.Pid))
	require.Eventually(t, func() bool { return strings.Contains(p.output(), "worker | ") }, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("vigil dev did not stop on Ctrl-C:\n%s", p.output())
	}
	require.True(t, p.cmd.ProcessState.Success(), p.output())
	require.Contains(t, p.output(), "Vigil stopped.")
	require.Error(t, syscall.Kill(workers[0], 0), "the worker child outlived vigil dev")

	// 2. SIGKILL during a 50 req/s ingest, then start again.
	p = startDev(t, bin, work, env)
	workers = append(workers, childWorkers(t, p.cmd.Process.Pid)...)
	tag := uuid.NewString()[:8]
	var accepted []uuid.UUID
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	tick := time.NewTicker(20 * time.Millisecond)
	killAt := time.Now().Add(2 * time.Second)
	killed := false
	for i := 0; ctx.Err() == nil; i++ {
		<-tick.C
		if !killed && time.Now().After(killAt) {
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
			killed = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"title":"sigkill %s %d","src_ip":"185.200.%d.%d","dest_ip":"185.201.%d.%d"}`, tag, i, i/250, i%250, i/250, i%250)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/ingest/generic", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return // refused while vigil dev is down: no 202, no promise
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				var id struct {
					Data struct {
						AlertUUID uuid.UUID `json:"alert_uuid"`
					} `json:"data"`
				}
				if json.NewDecoder(resp.Body).Decode(&id) == nil {
					mu.Lock()
					accepted = append(accepted, id.Data.AlertUUID)
					mu.Unlock()
				}
			}
		}()
	}
	tick.Stop()
	wg.Wait()
	<-p.exited
	require.NotEmpty(t, accepted)
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	defer st.Close()
	p = startDev(t, bin, work, env)
	deadline := time.Now().Add(3 * time.Minute)
	for _, id := range accepted {
		for {
			a, err := st.GetAlert(context.Background(), id)
			require.NoError(t, err, "an alert that got a 202 is missing")
			if a.EnrichmentStatus == store.EnrichmentEnriched {
				break
			}
			require.True(t, time.Now().Before(deadline), "alert %s still %s after the restart:\n%s", id, a.EnrichmentStatus, p.output())
			time.Sleep(200 * time.Millisecond)
		}
	}
	var events, links, dupLinks int
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) FROM activity_events WHERE alert_uuid = ANY (?) AND event_type = 'alert_enriched'`,
		pgdialect.Array(accepted)).Scan(context.Background(), &events))
	require.NoError(t, st.DB().NewRaw(`SELECT count(*), count(*) - count(DISTINCT (alert_uuid, indicator_uuid)) FROM alert_indicators WHERE alert_uuid = ANY (?)`,
		pgdialect.Array(accepted)).Scan(context.Background(), &links, &dupLinks))
	t.Logf("%d alerts got a 202 around the SIGKILL; all Enriched after the restart; %d alert_enriched events, %d links", len(accepted), events, links)
	require.Equal(t, len(accepted), events, "each alert Enriched exactly once")
	require.Equal(t, 2*len(accepted), links)
	require.Zero(t, dupLinks)
	for _, w := range workers {
		require.Error(t, syscall.Kill(w, 0))
	}
}

// TestDev_OwnClusterNeedsPassword runs the real `vigil dev` binary without DATABASE_URL, so it makes
// its own cluster in .vigil/postgres (issue 27 item 5): the cluster refuses TCP connections without
// the password kept in .vigil/postgres/password (0600), which vigil dev, its worker child and the API
// use, and which its output never shows.
func TestDev_OwnClusterNeedsPassword(t *testing.T) {
	temporalAddr := testenv.TemporalAddress(t)
	dir := t.TempDir()
	bin := buildVigil(t, dir)
	work := filepath.Join(dir, "checkout") // no go.mod above it: .vigil/ is made here
	require.NoError(t, os.MkdirAll(work, 0o755))
	if os.Geteuid() == 0 { // the cluster belongs to the postgres OS user, which must traverse to it
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chmod(dir, 0o711))
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	addr := freeAddr(t)
	env = append(env, "TEMPORAL_ADDRESS="+temporalAddr, "TEMPORAL_TASK_QUEUE_PREFIX="+testenv.TaskQueuePrefix(t)+"-devpg",
		"API_ADDR="+addr, "MCP_ADDR="+freeAddr(t), "METRICS_ADDR=", "DATABASE_MAX_CONNS=4", "LOG_LEVEL=info")
	p := startDev(t, bin, work, env)
	stopped := false
	pgDir := filepath.Join(work, devPostgresDir)
	t.Cleanup(func() {
		if !stopped { // the Postgres of a killed vigil dev keeps running
			if pg, err := devstack.StartPostgres(context.Background(), pgDir, nil); err == nil {
				_ = pg.Stop(context.Background())
			}
		}
	})

	raw, err := os.ReadFile(filepath.Join(pgDir, "password"))
	require.NoError(t, err)
	password := strings.TrimSpace(string(raw))
	require.Len(t, password, 48)
	fi, err := os.Stat(filepath.Join(pgDir, "password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NotContains(t, p.output(), password, "vigil dev prints the cluster's password")
	port, err := os.ReadFile(filepath.Join(pgDir, "port"))
	require.NoError(t, err)
	dsn := "postgres://postgres:" + password + "@127.0.0.1:" + strings.TrimSpace(string(port)) + "/postgres?sslmode=disable"
	require.Contains(t, p.output(), "Postgres     "+redactDSN(dsn)+" (password in "+filepath.Join(pgDir, "password")+")")

	requireNoPasswordRefused(t, dsn)
	require.Contains(t, keyNames(t, dsn), "dev-admin", "vigil dev migrated its cluster and made the first key there")

	// The API (this process's pool) and the worker child both reach the cluster.
	key := regexp.MustCompile(`cai_[A-Za-z0-9_-]+`).FindString(p.output())
	require.NotEmpty(t, key, p.output())
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/ingest/generic",
		strings.NewReader(`{"title":"own cluster","src_ip":"185.202.0.1"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var accepted struct {
		Data struct {
			AlertUUID uuid.UUID `json:"alert_uuid"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	defer st.Close()
	require.Eventually(t, func() bool {
		a, err := st.GetAlert(context.Background(), accepted.Data.AlertUUID)
		return err == nil && a.EnrichmentStatus == store.EnrichmentEnriched
	}, 2*time.Minute, 200*time.Millisecond, "the worker child enriched the alert:\n%s", p.output())

	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("vigil dev did not stop on Ctrl-C:\n%s", p.output())
	}
	require.True(t, p.cmd.ProcessState.Success(), p.output())
	stopped = true
	require.NotContains(t, p.output(), password)
}

// agentReceiver is a loopback webhook endpoint recording, per X-Vigil-Delivery id, the alert its
// alert.enriched event names and how many requests carried the id.
type agentReceiver struct {
	URL      string
	mu       sync.Mutex
	alertOf  map[string]string // delivery id → data.alert.uuid
	requests map[string]int    // delivery id → requests
}

func newAgentReceiver(t *testing.T) *agentReceiver {
	t.Helper()
	ar := &agentReceiver{alertOf: map[string]string{}, requests: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Data struct {
				Alert struct {
					UUID string `json:"uuid"`
				} `json:"alert"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		ar.mu.Lock()
		id := r.Header.Get("X-Vigil-Delivery")
		ar.requests[id]++
		ar.alertOf[id] = ev.Data.Alert.UUID
		ar.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	ar.URL = srv.URL
	return ar
}

// perAlert returns, per alert, the distinct delivery ids received for it, and the most requests any
// one delivery id got.
func (ar *agentReceiver) perAlert() (ids map[string]int, most int) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ids = map[string]int{}
	for id, a := range ar.alertOf {
		ids[a]++
		most = max(most, ar.requests[id])
	}
	return ids, most
}

// TestDev_SIGKILLWhileABacklogDrains_WithAnAgent (issue 26): `vigil dev` killed outright while a
// backlog drains, with an agent subscribed to alert.enriched, then started again: every accepted
// alert is Enriched exactly once and the agent receives exactly one delivery id per alert (an id
// may arrive more than once — deliveries are at least once and the receiver de-duplicates on it).
// It also checks that the worker child serves its own /metrics (issue 26 item 3), with the freshness
// histograms, on the address the banner prints.
func TestDev_SIGKILLWhileABacklogDrains_WithAnAgent(t *testing.T) {
	dsn := testenv.DatabaseURL(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "vigil")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	work := filepath.Join(dir, "checkout")
	require.NoError(t, os.MkdirAll(work, 0o755))
	recv := newAgentReceiver(t)
	addr := freeAddr(t)
	env := append(os.Environ(), "DATABASE_URL="+dsn, "TEMPORAL_ADDRESS="+testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX="+testenv.TaskQueuePrefix(t)+"-devagent", "API_ADDR="+addr, "MCP_ADDR="+freeAddr(t),
		"METRICS_ADDR=127.0.0.1:0", "SSRF_ALLOWED_HOSTS="+strings.TrimPrefix(recv.URL, "http://"),
		"ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "DATABASE_MAX_CONNS=6", "RATE_LIMIT_DEFAULT_PER_MINUTE=1000000", "LOG_LEVEL=warn")
	key, _ := createKey(t, envOf(map[string]string{"DATABASE_URL": dsn}), "--name", "dev-agent-test", "--scopes", "admin")
	base := "http://" + addr
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()

	p := startDev(t, bin, work, env)
	// The worker child's own /metrics, printed in the banner.
	m := regexp.MustCompile(`Metrics +http://(\S+)/metrics \(api\), http://(\S+)/metrics \(worker\)`).FindStringSubmatch(p.output())
	require.NotNil(t, m, "banner names the api's and the worker's metrics:\n%s", p.output())
	require.NotEqual(t, m[1], m[2])
	for _, c := range []struct{ addr, want string }{{m[1], "vigil_outbox_depth"}, {m[2], "vigil_alert_enrichment_lag_seconds"}} {
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + c.addr + "/metrics")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			return resp.StatusCode == http.StatusOK && strings.Contains(b.String(), c.want)
		}, 30*time.Second, 200*time.Millisecond, "%s serves %s", c.addr, c.want)
	}

	tag := "devagent-" + uuid.NewString()[:8]
	code, resp, err := do(ctx, base, http.MethodPost, "/v1/agents", key, map[string]any{"name": "dev sigkill agent " + tag,
		"endpoint_url": recv.URL + "/agent", "events": []string{"alert.enriched"}, "timeout_seconds": 5,
		"trigger_filter": map[string]any{"match_all": []any{map[string]any{"field": "tags", "op": "contains", "value": tag}}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, resp)
	agent := resp["data"].(map[string]any)["uuid"].(string)
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw(`DELETE FROM agents WHERE uuid = ?`, agent).Exec(context.Background())
	})

	// A backlog: 300 alerts as fast as 8 clients go (the pipeline is paused while they arrive).
	const n = 300
	accepted := make([]string, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			payload := map[string]any{"title": fmt.Sprintf("%s %d", tag, i), "severity": "Medium", "tags": []string{tag},
				"src_ip": fmt.Sprintf("198.18.%d.%d", i/250, 1+i%250)}
			id, err := ingest(ctx, base, key, payload)
			if err != nil {
				t.Errorf("alert %d: %v", i, err)
			}
			accepted[i] = id
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	enriched := func() int {
		var c int
		require.NoError(t, st.DB().NewRaw(`SELECT count(*) FROM alerts WHERE ? = ANY(tags) AND enrichment_status = 'Enriched'`, tag).Scan(ctx, &c))
		return c
	}
	// Kill it outright once the drain is under way and not over.
	require.Eventually(t, func() bool { return enriched() >= 20 }, 3*time.Minute, 20*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
	killedAt := enriched()
	require.Less(t, killedAt, n, "the backlog drained before the kill; nothing was tested")

	p = startDev(t, bin, work, env)
	require.Len(t, childWorkers(t, p.cmd.Process.Pid), 1, "the restarted vigil dev runs its worker child")
	require.Eventually(t, func() bool { return enriched() == n }, 5*time.Minute, 250*time.Millisecond, "alerts Enriched after the restart")
	require.Eventually(t, func() bool { ids, _ := recv.perAlert(); return len(ids) >= n }, 3*time.Minute, 200*time.Millisecond,
		"a delivery for every alert")
	time.Sleep(2 * time.Second) // a second delivery id would come now
	var events, dupLinks int
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) FROM activity_events WHERE alert_uuid = ANY (?::uuid[]) AND event_type = 'alert_enriched'`,
		pgdialect.Array(accepted)).Scan(ctx, &events))
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) - count(DISTINCT (alert_uuid, indicator_uuid)) FROM alert_indicators WHERE alert_uuid = ANY (?::uuid[])`,
		pgdialect.Array(accepted)).Scan(ctx, &dupLinks))
	ids, most := recv.perAlert()
	t.Logf("%d alerts, SIGKILLed at %d Enriched; %d alert_enriched events; %d alerts delivered, at most %d requests per delivery id",
		n, killedAt, events, len(ids), most)
	require.Equal(t, n, events, "each alert Enriched exactly once")
	require.Zero(t, dupLinks)
	require.Len(t, ids, n, "a delivery for every accepted alert, none for another")
	for _, a := range accepted {
		require.Equal(t, 1, ids[a], "delivery ids received for alert %s", a)
	}
	code, resp, err = do(ctx, base, http.MethodDelete, "/v1/agents/"+agent, key, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code, resp)
}

// TestDecideDevMetrics: under vigil dev each process gets its own /metrics listener (issue 26 item 3).
func TestDecideDevMetrics(t *testing.T) {
	port := func(t *testing.T, addr string) int {
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		return n
	}
	t.Run("port 0: three free ports, all different", func(t *testing.T) {
		cfg := config{MetricsAddr: "127.0.0.1:0"}
		dm, err := decideDevMetrics(&cfg, envOf(map[string]string{"METRICS_ADDR": "127.0.0.1:0"}))
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:0", cfg.MetricsAddr)
		require.NotZero(t, port(t, dm.worker))
		require.NotZero(t, dm.temporalPort)
		require.NotEqual(t, port(t, dm.worker), dm.temporalPort)
	})
	t.Run("a free base port: the next two", func(t *testing.T) {
		// A random free port with room for the two after it.
		base := 65535
		for base > 65000 {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			base = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		addr := fmt.Sprintf("127.0.0.1:%d", base)
		cfg := config{MetricsAddr: addr}
		dm, err := decideDevMetrics(&cfg, envOf(map[string]string{"METRICS_ADDR": addr}))
		require.NoError(t, err)
		// The next ports may be taken by someone else on a shared machine: then a free one instead.
		if w := port(t, dm.worker); w != base+1 {
			require.NotZero(t, w)
		}
		require.NotEqual(t, port(t, dm.worker), dm.temporalPort)
	})
	t.Run("the worker's port taken: a free one instead", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer taken.Close()
		base := taken.Addr().(*net.TCPAddr).Port - 1
		addr := fmt.Sprintf("127.0.0.1:%d", base)
		cfg := config{MetricsAddr: addr}
		dm, err := decideDevMetrics(&cfg, envOf(map[string]string{"METRICS_ADDR": addr}))
		require.NoError(t, err)
		require.NotEqual(t, base+1, port(t, dm.worker))
		require.NotZero(t, port(t, dm.worker))
	})
	t.Run("default: 9464 when free, else a free port", func(t *testing.T) {
		var cfg config
		dm, err := decideDevMetrics(&cfg, envOf(nil))
		require.NoError(t, err)
		require.Contains(t, []string{"127.0.0.1:9464", "127.0.0.1:0"}, cfg.MetricsAddr)
		require.NotZero(t, port(t, dm.worker))
	})
	for _, bad := range []string{"nonsense", "127.0.0.1:http", "127.0.0.1:65535", "127.0.0.1:-1", "[::1"} {
		t.Run("bad "+bad, func(t *testing.T) {
			cfg := config{MetricsAddr: bad}
			_, err := decideDevMetrics(&cfg, envOf(map[string]string{"METRICS_ADDR": bad}))
			require.Error(t, err)
		})
	}
}

// The worker's sessions are named, so that vigil dev finds their backends; a name the URL gives
// already, and a DSN that is not a URL, are kept as they are.
func TestWithApplicationName(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p@127.0.0.1:5432/vigil?sslmode=disable":                "postgres://u:p@127.0.0.1:5432/vigil?application_name=vigil-worker&sslmode=disable",
		"postgres://u@127.0.0.1/vigil":                                       "postgres://u@127.0.0.1/vigil?application_name=vigil-worker",
		"postgres://u@127.0.0.1/vigil?application_name=mine&sslmode=disable": "postgres://u@127.0.0.1/vigil?application_name=mine&sslmode=disable",
		"host=/tmp dbname=vigil":                                             "host=/tmp dbname=vigil",
	} {
		require.Equal(t, want, withApplicationName(in, devstack.WorkerApplicationName), in)
	}
}

// On its own cluster vigil dev turns the admission off for its worker (priority protects the 202),
// unless the admission is configured; on another database the configured one (AIMD by default) stays.
func TestDevAdmissionEnv(t *testing.T) {
	cfg := config{PipelineMaxFlight: 256}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	require.Equal(t, []string{"PIPELINE_INGEST_LATENCY_TARGET_MS=0", "PIPELINE_BUSY_IN_FLIGHT=256"}, devAdmissionEnv(cfg, env(), true))
	require.Nil(t, devAdmissionEnv(cfg, env(), false), "another database: its sessions cannot be ranked")
	require.Nil(t, devAdmissionEnv(cfg, env("PIPELINE_INGEST_LATENCY_TARGET_MS", "25"), true))
	require.Nil(t, devAdmissionEnv(cfg, env("PIPELINE_BUSY_IN_FLIGHT", "0"), true))
}
