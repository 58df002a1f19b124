package devstack

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Pinned Temporal CLI. v1.5.1 bundles Temporal Server 1.29.1 and UI 2.42.1.
const (
	TemporalCLIModule  = "github.com/temporalio/cli"
	TemporalCLIVersion = "v1.5.1"
	temporalCLIPackage = TemporalCLIModule + "/cmd/temporal"

	temporalReadyLimit = 60 * time.Second
	temporalStopLimit  = 10 * time.Second
)

// EnsureTemporalCLI returns the path of a temporal CLI to run: repoRoot/bin/temporal when present,
// else a `temporal` on PATH that is the pinned version, else it runs
// `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into repoRoot/bin (several minutes
// on a cold module cache; needs the go tool and network access to the module proxy).
func EnsureTemporalCLI(ctx context.Context, repoRoot string, logger *slog.Logger) (string, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	binDir := filepath.Join(repoRoot, "bin")
	local := filepath.Join(binDir, "temporal")
	if isExecutable(local) {
		return local, nil
	}
	if onPath, err := exec.LookPath("temporal"); err == nil {
		if isPinnedTemporalCLI(ctx, onPath) {
			return onPath, nil
		}
		logger.Info("temporal on PATH is not the pinned version; installing the pinned one", "path", onPath, "want", TemporalCLIVersion)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no temporal CLI in %s or on PATH, and no go tool to install %s@%s: %w", binDir, temporalCLIPackage, TemporalCLIVersion, err)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", binDir, err)
	}
	logger.Info("installing the temporal CLI (takes a few minutes the first time)", "version", TemporalCLIVersion, "into", binDir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, gobin, "install", temporalCLIPackage+"@"+TemporalCLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+binDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w: %s", temporalCLIPackage, TemporalCLIVersion, err, tail(string(out), 2000))
	}
	if !isExecutable(local) {
		return "", fmt.Errorf("go install %s@%s succeeded but %s is missing", temporalCLIPackage, TemporalCLIVersion, local)
	}
	logger.Info("temporal CLI installed", "path", local, "took", time.Since(start).Round(time.Second))
	return local, nil
}

// isPinnedTemporalCLI reports whether the binary at path is temporal CLI v1.5.1: by its Go build
// info (a `go install`ed CLI calls itself 0.0.0-DEV) or, for release builds, by `--version`.
func isPinnedTemporalCLI(ctx context.Context, path string) bool {
	if bi, err := buildinfo.ReadFile(path); err == nil && bi.Main.Path == TemporalCLIModule && bi.Main.Version == TemporalCLIVersion {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	return err == nil && strings.Contains(string(out), "version "+strings.TrimPrefix(TemporalCLIVersion, "v")+" ")
}

// TemporalOptions configures StartTemporal.
type TemporalOptions struct {
	// Binary is the temporal CLI to run (see EnsureTemporalCLI).
	Binary string
	// DBFile is the SQLite file that keeps state between runs; "" keeps everything in memory.
	DBFile string
	// Headless disables the Web UI.
	Headless bool
	// Port is the frontend gRPC port on 127.0.0.1; 0 picks a free one.
	Port int
	// UIPort is the Web UI port; 0 picks a free one. Ignored when Headless.
	UIPort int
	// Log receives the server's stdout and stderr; nil discards them.
	Log io.Writer
	// UICodecEndpoint is the remote codec the Web UI decodes payloads with (the UI calls
	// <endpoint>/decode from the browser), e.g. Vigil's http://127.0.0.1:8000/codec; "" sets none.
	UICodecEndpoint string
	// Nice > 0 runs the server as a background process (BackgroundCommand) at that CPU priority: `vigil dev` keeps it from taking the CPU the API's requests need.
	Nice int
	// MetricsPort, above 0, is where the server serves its own Prometheus metrics (GET /metrics on
	// 127.0.0.1); 0 leaves the CLI's default (a random port nobody is told about).
	MetricsPort int
}

// TemporalServer is a running `temporal server start-dev` process.
type TemporalServer struct {
	// PID is the server's process id (also its process group id).
	PID int

	port   int
	uiPort int // 0 when headless
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, valid once exited is closed
	stderr *TailBuffer
}

// Address is the gRPC frontend address, host:port.
func (s *TemporalServer) Address() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// UIURL is the Web UI's URL, "" when the server runs headless.
func (s *TemporalServer) UIURL() string {
	if s.uiPort == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.uiPort))
}

// Stop terminates the server's process group (SIGTERM, then SIGKILL after 10 s) and waits for it.
// Calling it again after the server is gone returns nil.
func (s *TemporalServer) Stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-s.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal temporal server %d: %w", s.PID, err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(temporalStopLimit):
	}
	if err := syscall.Kill(-s.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill temporal server %d: %w", s.PID, err)
	}
	<-s.exited
	return nil
}

// StartTemporal runs `temporal server start-dev` on 127.0.0.1 with one task-queue partition (so a
// worker sees its tasks at once) and waits, at most 60 s, until the default namespace answers.
// When Port/UIPort are 0 and the chosen port is taken before the server binds it, it retries with
// new ports. On failure the error carries the tail of the server's output.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*TemporalServer, error) {
	if opts.Binary == "" {
		return nil, errors.New("start temporal: no CLI binary given")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(opts.DBFile), 0o700); err != nil {
			return nil, fmt.Errorf("create temporal db dir: %w", err)
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		srv, err := startTemporalOnce(ctx, opts)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		var exitErr *serverExitedError
		if ctx.Err() != nil || !errors.As(err, &exitErr) || (opts.Port != 0 && (opts.Headless || opts.UIPort != 0)) {
			break // only an early exit with some auto-picked port is worth another try
		}
	}
	return nil, lastErr
}

// serverExitedError means the dev server process ended before it became ready (a port taken
// between our pick and its bind is the usual cause).
type serverExitedError struct {
	err    error
	output string
}

func (e *serverExitedError) Error() string {
	return fmt.Sprintf("temporal server exited before it was ready: %v\nserver output:\n%s", e.err, e.output)
}

func startTemporalOnce(ctx context.Context, opts TemporalOptions) (*TemporalServer, error) {
	port, uiPort := opts.Port, 0
	var err error
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port),
		"--log-level", "warn",
		// Synced at each checkpoint (synchronous=normal), every 1 000 pages (4 MB) of log, SQLite's
		// default: the server writes about 1 MB of log per pipeline, and a checkpoint's fsync holds the
		// disk while it flushes, with every Postgres commit (each 202 among them) waiting behind it. At
		// 40 MB a checkpoint held it 100-150 ms; unsynced, the kernel's writeback of the same data held
		// it over a second every half minute (docs/INGEST.md "Protecting the 202", session 15).
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
		"--sqlite-pragma", "wal_autocheckpoint=1000",
		// The CLI reads the namespace's search attributes from SQLite on every start, upsert and
		// visibility record (8 reads per pipeline) so that new ones work at once; with the cache a
		// new one works after a refresh, which temporal.RegisterSearchAttributes waits for.
		"--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=false",
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
		// The dispatcher asks for eager start: the pipeline's first workflow task comes back with the
		// start call instead of through matching (off by default in this server version).
		"--dynamic-config-value", "system.enableEagerWorkflowStart=true",
	}
	if opts.Headless {
		args = append(args, "--headless")
	} else {
		if uiPort = opts.UIPort; uiPort == 0 {
			if uiPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		args = append(args, "--ui-port", strconv.Itoa(uiPort))
		if opts.UICodecEndpoint != "" {
			args = append(args, "--ui-codec-endpoint", opts.UICodecEndpoint)
		}
	}
	if opts.DBFile != "" {
		args = append(args, "--db-filename", opts.DBFile)
	}
	if opts.MetricsPort > 0 {
		args = append(args, "--metrics-port", strconv.Itoa(opts.MetricsPort))
	}

	stderr := NewTailBuffer(8 << 10)
	// Not CommandContext: the server outlives ctx (ctx bounds the start, Stop ends the server).
	cmd := exec.Command(opts.Binary, args...)
	cmd.SysProcAttr = childProcAttr()
	if opts.Nice > 0 {
		cmd = BackgroundCommand(opts.Nice, opts.Binary, args...)
	}
	cmd.Stdout = io.MultiWriter(opts.Log, stderr)
	cmd.Stderr = io.MultiWriter(opts.Log, stderr)
	if opts.Nice > 0 {
		err = StartBackground(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", opts.Binary, err)
	}
	srv := &TemporalServer{PID: cmd.Process.Pid, port: port, uiPort: uiPort, cmd: cmd, exited: make(chan struct{}), stderr: stderr}
	go func() {
		srv.err = cmd.Wait()
		close(srv.exited)
	}()

	if err := srv.waitReady(ctx); err != nil {
		return nil, errors.Join(err, srv.Stop())
	}
	return srv, nil
}

// waitReady polls the frontend until the default namespace can be described.
func (s *TemporalServer) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, temporalReadyLimit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-s.exited:
			return &serverExitedError{err: s.err, output: s.stderr.String()}
		case <-ctx.Done():
			return fmt.Errorf("temporal server at %s not ready: %w (last probe: %v)\nserver output:\n%s", s.Address(), ctx.Err(), lastErr, s.stderr.String())
		case <-tick.C:
			if lastErr = s.probe(ctx); lastErr == nil {
				return nil
			}
		}
	}
}

func (s *TemporalServer) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort: s.Address(),
		Logger:   log.NewStructuredLogger(slog.New(slog.DiscardHandler)), // failed probes are expected
	})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	return err
}
