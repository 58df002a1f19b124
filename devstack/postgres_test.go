package devstack

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clusterDir returns a fresh directory for a cluster. t.TempDir's parent is 0700 and root-owned;
// when we run as root the cluster belongs to the postgres OS user, which must traverse it.
func clusterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	}
	return filepath.Join(dir, "pg")
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestStartPostgres_CreateReuseRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)
	log := testLogger(t)

	start := time.Now()
	srv, err := StartPostgres(ctx, dir, log)
	require.NoError(t, err)
	t.Logf("cold cluster (initdb + start): %v", time.Since(start))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop(context.Background())
		}
	})
	require.False(t, srv.Reused)
	pw, err := os.ReadFile(filepath.Join(dir, pgPassword))
	require.NoError(t, err)
	require.Equal(t, "postgres://postgres:"+strings.TrimSpace(string(pw))+"@127.0.0.1:"+itoaPort(srv.Port)+"/postgres?sslmode=disable", srv.DSN())
	requireQuery(t, srv.DSN())
	require.FileExists(t, filepath.Join(dir, pgDataDir, "PG_VERSION"))
	require.FileExists(t, filepath.Join(dir, pgPortFile))

	// A second start on a running cluster attaches to it.
	again, err := StartPostgres(ctx, dir, log)
	require.NoError(t, err)
	require.True(t, again.Reused)
	require.Equal(t, srv.Port, again.Port)
	requireQuery(t, again.DSN())

	// Databases can be created, used and dropped.
	dbDSN, err := CreateDatabase(ctx, srv.DSN(), "vigil_devstack_test")
	require.NoError(t, err)
	requireQuery(t, dbDSN)
	_, err = CreateDatabase(ctx, srv.DSN(), "vigil_devstack_test")
	require.Error(t, err, "creating an existing database must fail")
	require.NoError(t, DropDatabase(ctx, srv.DSN(), "vigil_devstack_test"))
	require.NoError(t, DropDatabase(ctx, srv.DSN(), "vigil_devstack_test"), "drop is idempotent")
	_, err = CreateDatabase(ctx, srv.DSN(), `bad"name`)
	require.ErrorContains(t, err, "invalid database name")

	require.NoError(t, srv.Stop(ctx))
	stopped = true
	require.NoFileExists(t, filepath.Join(dir, pgDataDir, "postmaster.pid"))

	// Restarting the stopped cluster keeps its recorded port (it is still free) and needs no initdb.
	start = time.Now()
	warm, err := StartPostgres(ctx, dir, log)
	require.NoError(t, err)
	t.Logf("warm start of an existing cluster: %v", time.Since(start))
	stopped = false
	srv = warm
	require.False(t, warm.Reused)
	require.Equal(t, again.Port, warm.Port)
	requireQuery(t, warm.DSN())
	require.NoError(t, warm.Stop(ctx))
	stopped = true
}

// Issue 27 item 5: the cluster asks every TCP connection for the postgres role's password, a random
// one kept in a 0600 file beside the data directory; without it, or with a wrong one, it refuses.
func TestStartPostgres_TCPRequiresPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)
	srv, err := StartPostgres(ctx, dir, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	requireRefused(t, srv.dsnAs(url.User("postgres")))
	requireRefused(t, srv.dsnAs(url.UserPassword("postgres", "wrong")))
	requireQuery(t, srv.DSN())
	requirePasswordFile(t, srv)
	trusting, err := trustsConnections(filepath.Join(dir, pgDataDir))
	require.NoError(t, err)
	require.False(t, trusting, "pg_hba.conf has no trust line")

	// Another process attaching to the running cluster gets the same password.
	again, err := StartPostgres(ctx, dir, testLogger(t))
	require.NoError(t, err)
	require.True(t, again.Reused)
	require.Equal(t, srv.DSN(), again.DSN())

	// Without its password file the cluster cannot be used: a clear error, not a silent trust.
	require.NoError(t, os.Rename(srv.PasswordFile(), srv.PasswordFile()+".moved"))
	_, err = StartPostgres(ctx, dir, testLogger(t))
	require.ErrorContains(t, err, "requires a password but "+srv.PasswordFile()+" is missing")
	require.NoError(t, os.Rename(srv.PasswordFile()+".moved", srv.PasswordFile()))
}

// A cluster made before passwords (initdb --auth=trust, as StartPostgres used to) keeps working:
// attached to while it runs (with a warning; its trust left alone so whoever runs it keeps working),
// then secured, with its data, the next time StartPostgres starts it.
func TestStartPostgres_SecuresTrustCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)
	bins, err := findPgBinaries(ctx, testLogger(t))
	require.NoError(t, err)
	require.NoError(t, prepareClusterDir(dir, bins))
	data := filepath.Join(dir, pgDataDir)
	_, err = bins.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	require.NoError(t, err)
	require.NoError(t, bins.configure(dir))
	port, err := freePort()
	require.NoError(t, err)
	require.NoError(t, bins.start(ctx, dir, port))
	legacy := &PostgresServer{Dir: dir, Port: port, bins: bins, log: testLogger(t)}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = legacy.Stop(context.Background())
		}
	})
	trustDSN := legacy.dsnAs(url.User("postgres"))
	requireQuery(t, trustDSN)
	execSQL(t, trustDSN, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')")

	// Running: attached to as is, with a warning.
	logs := &syncBuffer{}
	srv, err := StartPostgres(ctx, dir, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	require.True(t, srv.Reused)
	require.Contains(t, logs.String(), "still lets any local user connect over TCP without a password")
	requireQuery(t, srv.DSN())
	requirePasswordFile(t, srv)
	require.NoError(t, srv.Stop(ctx))
	stopped = true

	// Started: secured.
	logs = &syncBuffer{}
	srv, err = StartPostgres(ctx, dir, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	stopped = false
	legacy = srv
	require.False(t, srv.Reused)
	require.Contains(t, logs.String(), "postgres cluster secured")
	requireRefused(t, srv.dsnAs(url.User("postgres")))
	requireRefused(t, srv.dsnAs(url.UserPassword("postgres", "wrong")))
	requirePasswordFile(t, srv)
	var v string
	connector, err := newConnector(srv.DSN())
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	defer db.Close()
	require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, "before", v, "the data survived")
	trusting, err := trustsConnections(data)
	require.NoError(t, err)
	require.False(t, trusting)
	fi, err := os.Stat(filepath.Join(data, "pg_hba.conf"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Later starts find nothing to secure.
	require.NoError(t, srv.Stop(ctx))
	stopped = true
	logs = &syncBuffer{}
	srv, err = StartPostgres(ctx, dir, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	stopped = false
	legacy = srv
	require.NotContains(t, logs.String(), "secured")
	requireRefused(t, srv.dsnAs(url.User("postgres")))
	requireQuery(t, srv.DSN())
}

func TestTrustsConnections(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{
		pgHBA: false,
		"local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n":   true,
		"host all all 127.0.0.1/32   trust   # old\n":                      true,
		"# host all all 127.0.0.1/32 trust\nlocal all all scram-sha-256\n": false,
		"host all all 127.0.0.1/32 md5 # trust me\n":                       false,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "pg_hba.conf"), []byte(content), 0o600))
		got, err := trustsConnections(dir)
		require.NoError(t, err)
		require.Equal(t, want, got, content)
	}
	_, err := trustsConnections(filepath.Join(dir, "missing"))
	require.Error(t, err)
}

// requireRefused checks that the server refuses dsn for its credentials (SQLSTATE 28P01).
func requireRefused(t *testing.T, dsn string) {
	t.Helper()
	err := pingOnce(context.Background(), dsn)
	require.Error(t, err, "connected without the right password")
	require.Contains(t, err.Error(), "28P01")
}

// requirePasswordFile checks that the server's password file is private and holds its DSN's password.
func requirePasswordFile(t *testing.T, srv *PostgresServer) {
	t.Helper()
	fi, err := os.Stat(srv.PasswordFile())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(srv.PasswordFile())
	require.NoError(t, err)
	u, err := url.Parse(srv.DSN())
	require.NoError(t, err)
	pw, ok := u.User.Password()
	require.True(t, ok)
	require.Len(t, pw, 48)
	require.Equal(t, strings.TrimSpace(string(raw)), pw)
}

func execSQL(t *testing.T, dsn, query string) {
	t.Helper()
	connector, err := newConnector(dsn)
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	defer db.Close()
	_, err = db.ExecContext(context.Background(), query)
	require.NoError(t, err)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStartPostgres_RecordedPortTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := clusterDir(t)

	srv, err := StartPostgres(ctx, dir, testLogger(t))
	require.NoError(t, err)
	first := srv.Port
	require.NoError(t, srv.Stop(ctx))

	// Someone else holds the old port now: the cluster moves to another one instead of failing.
	holder, err := listenOn(first)
	require.NoError(t, err)
	defer holder.Close()

	srv, err = StartPostgres(ctx, dir, testLogger(t))
	require.NoError(t, err)
	defer srv.Stop(context.Background())
	require.NotEqual(t, first, srv.Port)
	requireQuery(t, srv.DSN())
}

func TestStartPostgres_UnreachableDirFailsClearly(t *testing.T) {
	ctx := context.Background()
	locked := t.TempDir()
	want := "cannot reach" // root: a 0700 root-owned parent keeps the postgres OS user out
	require.NoError(t, os.Chmod(locked, 0o700))
	if os.Geteuid() != 0 {
		// Not root: initdb runs as us, so make the parent read-only instead.
		require.NoError(t, os.Chmod(locked, 0o500))
		t.Cleanup(func() { _ = os.Chmod(locked, 0o700) })
		want = "create postgres dir"
	}
	_, err := StartPostgres(ctx, filepath.Join(locked, "pg"), slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, want)
}

func requireQuery(t *testing.T, dsn string) {
	t.Helper()
	connector, err := newConnector(dsn)
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	defer db.Close()
	var one int
	require.NoError(t, db.QueryRowContext(context.Background(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

// TestStopWhenProcessExits starts a cluster in a child process that arms the watchdog and is then
// SIGKILLed: the cluster must go down anyway.
func TestStopWhenProcessExits(t *testing.T) {
	dir := clusterDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "DEVSTACK_WATCHDOG_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	port := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "watchdog-port="); ok {
			port, err = strconv.Atoi(v)
			require.NoError(t, err)
			break
		}
	}
	require.Positive(t, port, "child reported its cluster")
	require.False(t, portFree(port), "cluster is up")

	require.NoError(t, cmd.Process.Kill()) // no Stop, no deferred cleanup
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return portFree(port) }, 30*time.Second, 100*time.Millisecond,
		"the watchdog stopped the orphaned cluster")

	// The killed cluster restarts cleanly, and a normal Stop disarms (ends) the watchdog.
	srv, err := StartPostgres(context.Background(), dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	requireQuery(t, srv.DSN())
	require.NoError(t, srv.StopWhenProcessExits())
	watchdog := srv.watchdog
	require.NoError(t, srv.StopWhenProcessExits(), "arming twice is harmless")
	require.Same(t, watchdog, srv.watchdog, "arming twice starts one watchdog")
	require.NoError(t, srv.Stop(context.Background()))
	require.Nil(t, srv.watchdog)
	pid := watchdog.Process.Pid
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 50*time.Millisecond,
		"the disarmed watchdog has exited")
}

// TestWatchdogChild is the child half of TestStopWhenProcessExits.
func TestWatchdogChild(t *testing.T) {
	dir := os.Getenv("DEVSTACK_WATCHDOG_DIR")
	if dir == "" {
		return // runs as the child of TestStopWhenProcessExits only
	}
	srv, err := StartPostgres(context.Background(), dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, srv.StopWhenProcessExits())
	os.Stdout.WriteString("watchdog-port=" + strconv.Itoa(srv.Port) + "\n")
	time.Sleep(time.Minute) // the parent kills us
}
