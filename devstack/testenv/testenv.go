// Package testenv gives tests the real services they run against: a PostgreSQL database and a
// Temporal dev server, created once per test binary and torn down when it ends. Import it only
// from _test.go files, and call Main from the package's TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// Environment (read here because this package is test-only; see docs/TESTING.md):
//
//	DATABASE_URL      admin URL of a Postgres server; each test binary creates its own database on
//	                  it. Unset: a throw-away cluster is started with initdb/pg_ctl in a temp dir
//	                  (password-protected; the URL DatabaseURL returns carries the password).
//	TEMPORAL_ADDRESS  host:port of a Temporal frontend. Unset: a headless in-memory dev server is
//	                  started with the pinned temporal CLI (installed into bin/ when missing).
//
// A service that cannot be provided fails the test; nothing is skipped.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/devstack"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

// Limits for bringing services up; a cold `go install` of the temporal CLI dominates.
const (
	postgresStartLimit = 2 * time.Minute
	temporalStartLimit = 10 * time.Minute
	teardownLimit      = time.Minute
)

// harness is the per-binary state. It is package state on purpose: a test binary is one process
// and its services are created once for all its tests, then torn down by Main.
type harness struct {
	mu      sync.Mutex
	inMain  bool
	id      string // "<pkg>_<random>": unique per test binary
	logger  *slog.Logger
	cleanup []func(context.Context) error // run in reverse order by Main

	dbOnce sync.Once
	dbURL  string
	dbErr  error

	temporalOnce sync.Once
	temporalAddr string
	temporalErr  error

	storeOnce sync.Once
	st        *store.Store
	stErr     error

	codecOnce sync.Once
	codec     *payloadcodec.Codec
	codecErr  error
}

var env harness

// Main runs the tests, then tears down what the tests asked for (drops the database, stops the
// Temporal server and the Postgres cluster it started), and exits with the tests' code.
func Main(m *testing.M) {
	env.mu.Lock()
	env.inMain = true
	env.id = binaryID()
	env.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env.mu.Unlock()

	code := m.Run()

	ctx, cancel := context.WithTimeout(context.Background(), teardownLimit)
	defer cancel()
	env.mu.Lock()
	steps := env.cleanup
	env.cleanup = nil
	env.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		errs = append(errs, steps[i](ctx))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "testenv teardown:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// DatabaseURL returns the URL of an empty database that belongs to this test binary (the same
// one for every call; tests in a package share it). It is dropped when the binary ends.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	requireMain(tb)
	env.dbOnce.Do(func() { env.dbURL, env.dbErr = setupDatabase() })
	if env.dbErr != nil {
		tb.Fatalf("testenv: database: %v", env.dbErr)
	}
	return env.dbURL
}

// TemporalAddress returns the host:port of a Temporal frontend (namespace "default"): the
// TEMPORAL_ADDRESS server, or a headless in-memory dev server started once for this binary.
func TemporalAddress(tb testing.TB) string {
	tb.Helper()
	requireMain(tb)
	env.temporalOnce.Do(func() { env.temporalAddr, env.temporalErr = setupTemporal() })
	if env.temporalErr != nil {
		tb.Fatalf("testenv: temporal: %v", env.temporalErr)
	}
	return env.temporalAddr
}

// TaskQueuePrefix returns a task queue prefix unique to this test binary (e.g.
// "vigil-t-temporal-1a2b3c4d"), so packages sharing one Temporal server never take each other's
// tasks. Pass it as temporal.Config.TaskQueuePrefix / temporal.NewQueues.
func TaskQueuePrefix(tb testing.TB) string {
	tb.Helper()
	requireMain(tb)
	return "vigil-t-" + strings.ReplaceAll(env.id, "_", "-")
}

func requireMain(tb testing.TB) {
	tb.Helper()
	env.mu.Lock()
	defer env.mu.Unlock()
	if !env.inMain {
		tb.Fatal("testenv: add `func TestMain(m *testing.M) { testenv.Main(m) }` to this package so services are torn down")
	}
}

func addCleanup(f func(context.Context) error) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.cleanup = append(env.cleanup, f)
}

func setupDatabase() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), postgresStartLimit)
	defer cancel()
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		dir, err := os.MkdirTemp("", "vigil-testenv-pg-")
		if err != nil {
			return "", fmt.Errorf("temp dir for postgres: %w", err)
		}
		// MkdirTemp makes it 0700; when we run as root the cluster belongs to the postgres user,
		// which gets the directory itself (StartPostgres chowns it) and must be able to enter it.
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", fmt.Errorf("temp dir for postgres: %w", err)
		}
		addCleanup(func(context.Context) error { return os.RemoveAll(dir) })
		srv, err := devstack.StartPostgres(ctx, filepath.Join(dir, "pg"), env.logger)
		if err != nil {
			return "", err
		}
		addCleanup(srv.Stop)
		// A panicking test or an expired -timeout skips Main's teardown; don't leave a server behind.
		if err := srv.StopWhenProcessExits(); err != nil {
			return "", err
		}
		admin = srv.DSN()
	}
	name := "vigil_t_" + env.id
	dsn, err := devstack.CreateDatabase(ctx, admin, name)
	if err != nil {
		return "", err
	}
	addCleanup(func(ctx context.Context) error { return devstack.DropDatabase(ctx, admin, name) })
	return dsn, nil
}

func setupTemporal() (string, error) {
	if addr := os.Getenv("TEMPORAL_ADDRESS"); addr != "" {
		return addr, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), temporalStartLimit)
	defer cancel()
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	root, err := devstack.FindRepoRoot(wd)
	if err != nil {
		return "", err
	}
	bin, err := devstack.EnsureTemporalCLI(ctx, root, env.logger)
	if err != nil {
		return "", err
	}
	srv, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{Binary: bin, Headless: true})
	if err != nil {
		return "", err
	}
	addCleanup(func(context.Context) error { return srv.Stop() })
	return srv.Address(), nil
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// binaryID is "<pkg>_<8 hex>": the test binary's package name (go test names it <pkg>.test),
// made identifier-safe and short enough for a database name, plus randomness so concurrent runs
// of the same package never collide.
func binaryID() string {
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	pkg = strings.Trim(nonIdent.ReplaceAllString(strings.ToLower(pkg), "_"), "_")
	if pkg == "" {
		pkg = "pkg"
	}
	if len(pkg) > 30 {
		pkg = pkg[:30]
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return pkg + "_" + hex.EncodeToString(b[:])
}
