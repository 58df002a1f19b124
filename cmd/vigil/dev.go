package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vigil-soc/vigil/devstack"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// runDev brings up everything on this machine, keeping its data under .vigil/ between runs.
//
// The API runs in this process; the worker runs as a child process (`vigil worker`, this binary) and
// the Temporal dev server as another, both at a lower CPU priority (devstack.BackgroundNice), and on
// its own Postgres cluster the worker's database sessions too (devstack.ReniceBackends), so draining
// pipelines never takes the CPU an ingest's 202 needs and need not be held back (devAdmissionEnv;
// docs/INGEST.md "Protecting the 202"). Their output is copied to stderr with a "worker | " or
// "temporal | " prefix. Ctrl-C stops the API, then the worker, then the dev server and Postgres.
func runDev(ctx context.Context, cfg config, getenv func(string) string, log *slog.Logger, stdout, stderr io.Writer) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	dataDir := devDataDir(cwd)
	root := filepath.Dir(dataDir)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dataDir, err)
	}
	// 0700, except that as root the embedded Postgres runs as the postgres OS user, which must traverse
	// .vigil/ to reach its cluster: then 0711 (no listing); the files stay 0600 either way.
	topMode := os.FileMode(0o700)
	if os.Geteuid() == 0 && getenv("DATABASE_URL") == "" {
		topMode = 0o711
	}
	if err := tightenDevDir(dataDir, topMode); err != nil {
		return err
	}

	pgNote := ""
	if getenv("DATABASE_URL") == "" {
		fmt.Fprintln(stdout, "Starting Postgres (data in .vigil/postgres)…")
		pg, err := devstack.StartPostgres(ctx, filepath.Join(dataDir, "postgres"), log)
		if err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
		defer stopWithin(log, "postgres", func(ctx context.Context) error { return pg.Stop(ctx) })
		cfg.DatabaseURL = pg.DSN()
		pgNote = " (password in " + pg.PasswordFile() + ")"
	}
	if getenv("ENCRYPTION_KEY") == "" {
		if cfg.EncryptionKey, err = devEncryptionKey(filepath.Join(dataDir, "encryption.key")); err != nil {
			return err
		}
	}
	if getenv("API_ADDR") == "" {
		cfg.APIAddr = "127.0.0.1:8000"
	}
	if getenv("MCP_ADDR") == "" {
		port := 8001
		if cfg.MCPPort != 0 {
			port = cfg.MCPPort
		}
		cfg.MCPAddr = "127.0.0.1:" + strconv.Itoa(port)
	}
	dm, err := decideDevMetrics(&cfg, getenv)
	if err != nil {
		return err
	}

	uiURL := "(external Temporal server: see its own UI)"
	if getenv("TEMPORAL_ADDRESS") == "" {
		fmt.Fprintln(stdout, "Starting the Temporal dev server (data in .vigil/temporal.db)…")
		bin, err := devstack.EnsureTemporalCLI(ctx, root, log)
		if err != nil {
			return fmt.Errorf("temporal CLI: %w", err)
		}
		port, uiPort := 7233, 8233
		if !portFree(port) {
			port = 0
		}
		if !portFree(uiPort) { // another vigil dev (or Temporal) on this machine: a free port instead
			uiPort = 0
		}
		ts, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{Binary: bin, DBFile: filepath.Join(dataDir, "temporal.db"),
			UIPort: uiPort, Port: port, Log: devstack.NewPrefixWriter(stderr, "temporal | "), Nice: devstack.BackgroundNice,
			MetricsPort: dm.temporalPort,
			// The UI decodes payloads through Vigil's codec endpoint (API.md §16) on the API listener.
			UICodecEndpoint: devCodecEndpoint(cfg.APIAddr)})
		if err != nil {
			return fmt.Errorf("start temporal: %w", err)
		}
		defer stopWithin(log, "temporal", func(context.Context) error { return ts.Stop() })
		cfg.TemporalAddress = ts.Address()
		uiURL = ts.UIURL()
		if cfg.TemporalUIURL == "" {
			cfg.TemporalUIURL = ts.UIURL()
		}
	}

	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer st.Close()
	box, err := prepareStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	adminKey, err := ensureAdminKey(ctx, st)
	if err != nil {
		return err
	}
	adminKeyFile := ""
	if adminKey != "" {
		if adminKeyFile, err = writeAdminKeyFile(dataDir, adminKey); err != nil {
			return err
		}
	}
	// Files the services created (temporal.db and its journal) become private too.
	if err := tightenDevDir(dataDir, topMode); err != nil {
		return err
	}
	pm, err := newProcessMetrics(cfg, log) // the api's; the worker child and the dev server serve their own (dm)
	if err != nil {
		return err
	}
	defer pm.Close()
	tcfg, err := temporalConfig(cfg, pm)
	if err != nil {
		return err
	}
	tc, err := temporal.Dial(ctx, tcfg, log)
	if err != nil {
		return err
	}
	defer tc.Close()
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.APIAddr, err)
	}
	mcpLn, err := net.Listen("tcp", cfg.MCPAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s: %w", cfg.MCPAddr, err)
	}

	// The API and the MCP server share one key cache, rate-limit budget and health checks.
	fd := newFrontDoor(cfg, st, box, tc, log)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return pm.run(gctx, log, func(ctx context.Context) error { return serveAPI(ctx, cfg, log, st, box, tc, fd, ln, pm.reg) })
	})
	g.Go(func() error { return serveMCP(gctx, cfg, log, st, fd, mcpLn) })
	ownCluster := getenv("DATABASE_URL") == ""
	g.Go(func() error {
		return runWorkerProcess(gctx, cfg, devAdmissionEnv(cfg, getenv, ownCluster), dm.worker, log, stderr)
	})
	if ownCluster {
		// The cluster is this process's own: the worker's sessions run at the worker's priority.
		g.Go(func() error {
			devstack.ReniceBackends(gctx, st.DB().DB, devstack.WorkerApplicationName, devstack.BackgroundNice, time.Second, log)
			return nil
		})
	}
	g.Go(func() error {
		probeCtx, cancel := context.WithTimeout(gctx, time.Minute)
		defer cancel()
		id, err := temporal.StartProbe(probeCtx, tc, temporal.NewQueues(cfg.TaskQueuePrefix))
		if err != nil {
			log.Warn("worker probe failed", "err", err)
			return nil
		}
		base := "http://" + ln.Addr().String()
		var b strings.Builder
		fmt.Fprintf(&b, "\nVigil is running. Ctrl-C stops it; data stays in %s.\n\n", dataDir)
		fmt.Fprintf(&b, "  API          %s/v1/\n  API docs     %s/docs\n  Health       %s/health\n", base, base, base)
		fmt.Fprintf(&b, "  MCP          http://%s/mcp (SSE: /sse; same API keys, docs/MCP.md)\n", mcpLn.Addr().String())
		if pm.ln != nil {
			fmt.Fprintf(&b, "  Metrics      http://%s%s (api), http://%s%s (worker)", pm.ln.Addr().String(), metrics.Path, dm.worker, metrics.Path)
			if getenv("TEMPORAL_ADDRESS") == "" {
				fmt.Fprintf(&b, ", http://127.0.0.1:%d%s (temporal)", dm.temporalPort, metrics.Path)
			}
			fmt.Fprintln(&b)
		}
		fmt.Fprintf(&b, "  Temporal UI  %s (workflow %s shows the worker is live)\n  Postgres     %s%s\n", uiURL, id, redactDSN(cfg.DatabaseURL), pgNote)
		if adminKey != "" {
			fmt.Fprintf(&b, "\nFirst admin API key (shown once here; also written to %s, mode 0600):\n  %s\n\nTry: curl -H 'Authorization: Bearer %s' %s/v1/api-keys\n", adminKeyFile, adminKey, adminKey, base)
		} else {
			fmt.Fprintf(&b, "\nAn admin key exists already; make another with: vigil create-api-key --name ops --scopes admin\n")
		}
		fmt.Fprintln(stdout, b.String())
		return nil
	})
	err = g.Wait()
	fmt.Fprintln(stdout, "Vigil stopped.")
	return ignoreCanceled(err)
}

// devMetricsPort is the default METRICS_ADDR port of `vigil dev` (the api's); the worker child's is
// the next one and the Temporal dev server's the one after.
const devMetricsPort = 9464

// devMetrics are the /metrics listeners of vigil dev's other processes.
type devMetrics struct {
	worker       string // the worker child's METRICS_ADDR
	temporalPort int    // the Temporal dev server's --metrics-port (on 127.0.0.1)
}

// decideDevMetrics gives each process of `vigil dev` its own /metrics listener (issue 26, item 3: the
// freshness histograms are the worker's): METRICS_ADDR is the api's (default 127.0.0.1:9464 under
// vigil dev), the worker child serves on its port + 1 and the Temporal dev server on port + 2, on the
// same host. A port already taken, or METRICS_ADDR with port 0, takes a free port instead (the banner
// prints the addresses used).
func decideDevMetrics(cfg *config, getenv func(string) string) (devMetrics, error) {
	if getenv("METRICS_ADDR") == "" {
		cfg.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", devMetricsPort)
		if !portFree(devMetricsPort) {
			cfg.MetricsAddr = "127.0.0.1:0"
		}
	}
	host, p, err := net.SplitHostPort(cfg.MetricsAddr)
	if err != nil {
		return devMetrics{}, fmt.Errorf("METRICS_ADDR %q: %w", cfg.MetricsAddr, err)
	}
	base, err := strconv.Atoi(p)
	if err != nil || base < 0 || base > 65533 {
		return devMetrics{}, fmt.Errorf("METRICS_ADDR %q: port must be 0..65533 under vigil dev (the worker takes the next one, Temporal the one after)", cfg.MetricsAddr)
	}
	next := func(host string, off int) (int, error) {
		if base > 0 {
			if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+off))); err == nil {
				ln.Close()
				return base + off, nil
			}
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free metrics port on %q: %w", host, err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port, nil
	}
	wp, err := next(host, 1)
	if err != nil {
		return devMetrics{}, err
	}
	tp, err := next("127.0.0.1", 2)
	if err != nil {
		return devMetrics{}, err
	}
	return devMetrics{worker: net.JoinHostPort(host, strconv.Itoa(wp)), temporalPort: tp}, nil
}

// workerStopLimit bounds a worker child's graceful stop before it is killed.
const workerStopLimit = 20 * time.Second

// runWorkerProcess runs `vigil worker` (this same binary) as a background process with this
// process's environment plus the settings `vigil dev` decided (database, Temporal, encryption key;
// migrations are done already) until ctx ends, then stops it (SIGTERM, SIGKILL after 20 s). A worker
// that exits by itself is an error: `vigil dev` stops.
func runWorkerProcess(ctx context.Context, cfg config, env []string, metricsAddr string, log *slog.Logger, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run the worker: %w", err)
	}
	cmd := devstack.BackgroundCommand(devstack.BackgroundNice, self, "worker")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+withApplicationName(cfg.DatabaseURL, devstack.WorkerApplicationName), "TEMPORAL_ADDRESS="+cfg.TemporalAddress,
		"ENCRYPTION_KEY="+cfg.EncryptionKey, "VIGIL_AUTO_MIGRATE=false",
		"METRICS_ADDR="+metricsAddr) // its own listener: the dev process serves METRICS_ADDR itself
	cmd.Env = append(cmd.Env, env...)
	out := devstack.NewPrefixWriter(stderr, "worker | ")
	cmd.Stdout, cmd.Stderr = out, out
	if err := devstack.StartBackground(cmd); err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	log.Info("worker process started", "pid", cmd.Process.Pid, "nice", devstack.BackgroundNice)
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		out.Flush()
		done <- err
	}()
	select {
	case err := <-done:
		return fmt.Errorf("the worker process exited: %v", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(workerStopLimit):
		log.Warn("worker did not stop in time; killing it", "pid", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// devAdmissionEnv is the worker's admission under `vigil dev` (docs/INGEST.md "Protecting the 202"):
// on its own cluster, unless PIPELINE_INGEST_LATENCY_TARGET_MS or PIPELINE_BUSY_IN_FLIGHT is set,
// none (pacing off): the worker, its database sessions (devstack.ReniceBackends) and the Temporal
// dev server all run at a lower CPU priority than the API and the ingest's sessions, so the kernel
// gives the 202 the CPU first and the pipelines use the rest, with nothing held back. On another
// database (DATABASE_URL) its sessions cannot be ranked, and the configured admission (AIMD by
// default) stays.
func devAdmissionEnv(cfg config, getenv func(string) string, ownCluster bool) []string {
	if !ownCluster || getenv("PIPELINE_INGEST_LATENCY_TARGET_MS") != "" || getenv("PIPELINE_BUSY_IN_FLIGHT") != "" {
		return nil
	}
	return []string{"PIPELINE_INGEST_LATENCY_TARGET_MS=0", "PIPELINE_BUSY_IN_FLIGHT=" + strconv.Itoa(cfg.PipelineMaxFlight)}
}

// withApplicationName returns the Postgres URL dsn with application_name name unless it names one
// already (or is not a URL): the worker's sessions are then told apart in pg_stat_activity.
func withApplicationName(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn
	}
	q := u.Query()
	if q.Get("application_name") != "" {
		return dsn
	}
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// ensureAdminKey creates and returns a first admin key when no active admin key exists.
func ensureAdminKey(ctx context.Context, st *store.Store) (string, error) {
	n, err := st.CountActiveAdminKeys(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	_, plain, err := apikeys.New(st, st, nil).Create(ctx, store.Actor{Type: store.ActorSystem},
		apikeys.Fields{Name: "dev-admin", Scopes: []string{auth.ScopeAdmin}, KeyType: auth.KeyTypeHuman})
	if err != nil {
		return "", err
	}
	return plain, nil
}

// adminKeyFileName is the file under .vigil/ holding the first admin key vigil dev created.
const adminKeyFileName = "admin.key"

// writeAdminKeyFile writes key to dataDir/admin.key, readable by the owner only (also when the file
// existed with wider permissions), and returns its path.
func writeAdminKeyFile(dataDir, key string) (string, error) {
	path := filepath.Join(dataDir, adminKeyFileName)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("chmod %s: %w", path, err)
	}
	return path, nil
}

// tightenDevDir makes dir (mode top) and its direct entries private: directories 0700, regular files
// 0600 (.vigil/ holds the encryption key, the admin key, the databases). Postgres keeps its own data
// directory 0700 and its files 0600 itself.
func tightenDevDir(dir string, top os.FileMode) error {
	if err := os.Chmod(dir, top); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		mode := os.FileMode(0o600)
		switch {
		case e.IsDir():
			mode = 0o700
		case !e.Type().IsRegular():
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), mode); err != nil {
			return fmt.Errorf("chmod %s: %w", e.Name(), err)
		}
	}
	return nil
}

// devEncryptionKey reads the dev encryption key, creating it on first use.
func devEncryptionKey(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generate encryption key: %w", err)
	}
	key := base64.StdEncoding.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return key, nil
}

func portFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func stopWithin(log *slog.Logger, what string, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("stop "+what, "err", err)
	}
}

func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "@"); i > 0 {
		if j := strings.Index(dsn, "://"); j >= 0 && strings.Contains(dsn[j+3:i], ":") {
			user := dsn[j+3 : j+3+strings.Index(dsn[j+3:i], ":")]
			return dsn[:j+3] + user + ":****" + dsn[i:]
		}
	}
	return dsn
}

// devCodecEndpoint is the codec endpoint the dev server's UI calls: the API listener's /codec, on
// 127.0.0.1 when the API listens on every address.
func devCodecEndpoint(apiAddr string) string {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/codec"
}
