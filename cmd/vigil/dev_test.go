package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
