package devstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Layout of a cluster directory made by StartPostgres.
const (
	pgDataDir    = "data"         // PGDATA
	pgSocketDir  = "socket"       // unix_socket_directories
	pgPortFile   = "port"         // the TCP port of the last start, reused while free
	pgLogFile    = "postgres.log" // server log (pg_ctl -l)
	pgPassword   = "password"     // the postgres role's password (0600), made with the cluster
	pgOSUser     = "postgres"     // OS user that owns the cluster when we run as root
	pgStartLimit = 60 * time.Second
	// maxSocketPath is the longest unix socket path Linux accepts (sun_path is 108 bytes).
	maxSocketPath = 107
)

// PostgresServer is a local PostgreSQL cluster started (or found running) by StartPostgres.
type PostgresServer struct {
	// Dir is the cluster directory given to StartPostgres.
	Dir string
	// Port is the TCP port the server listens on at 127.0.0.1.
	Port int
	// Reused is true when the cluster was already running and StartPostgres only attached to it.
	Reused bool

	bins     pgBinaries
	log      *slog.Logger
	password string // of the postgres role, from dir/password

	mu       sync.Mutex
	watchdog *exec.Cmd // see StopWhenProcessExits
	lifeline *os.File  // write end of the watchdog's stdin; closing it (or dying) wakes the watchdog
}

// DSN is the superuser URL of the server's postgres database, with the password kept in
// dir/password (SCRAM authentication, no TLS).
func (s *PostgresServer) DSN() string {
	return s.dsnAs(url.UserPassword("postgres", s.password))
}

// PasswordFile is the file holding the postgres role's password (mode 0600, beside the cluster's
// data directory).
func (s *PostgresServer) PasswordFile() string { return filepath.Join(s.Dir, pgPassword) }

func (s *PostgresServer) dsnAs(user *url.Userinfo) string {
	u := url.URL{Scheme: "postgres", User: user, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)),
		Path: "/postgres", RawQuery: "sslmode=disable"}
	return u.String()
}

// Stop shuts the cluster down (fast mode: open sessions are disconnected). It stops a reused
// cluster too: whoever holds the server owns its shutdown.
func (s *PostgresServer) Stop(ctx context.Context) error {
	s.disarmWatchdog()
	data := filepath.Join(s.Dir, pgDataDir)
	if _, err := s.bins.run(ctx, "pg_ctl", "stop", "-D", data, "-m", "fast", "-w", "-t", "60"); err != nil {
		return fmt.Errorf("stop postgres in %s: %w", s.Dir, err)
	}
	s.log.Info("postgres stopped", "dir", s.Dir)
	return nil
}

// StopWhenProcessExits starts a small watchdog that stops the cluster (immediate mode) when this
// process ends in a way that skips Stop: a panic, os.Exit, SIGKILL. The watchdog (a shell blocked
// reading a pipe only this process holds open) wakes when the kernel closes that pipe. Stop disarms
// it. Test harnesses use it for throw-away clusters.
func (s *PostgresServer) StopWhenProcessExits() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchdog != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("postgres watchdog pipe: %w", err)
	}
	defer r.Close()
	argv := s.bins.argv("pg_ctl", "stop", "-D", filepath.Join(s.Dir, pgDataDir), "-m", "immediate")
	cmd := exec.Command("/bin/sh", append([]string{"-c", `read -r _; exec "$@" >/dev/null 2>&1`, "sh"}, argv...)...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not in the terminal's Ctrl-C group
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start postgres watchdog: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it whenever it ends
	s.watchdog, s.lifeline = cmd, w
	return nil
}

// disarmWatchdog ends the watchdog without letting it stop the cluster.
func (s *PostgresServer) disarmWatchdog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchdog == nil {
		return
	}
	_ = s.watchdog.Process.Kill()
	_ = s.lifeline.Close()
	s.watchdog, s.lifeline = nil, nil
}

// StartPostgres makes sure a PostgreSQL cluster lives in dir and is running, and returns it.
//
// An empty or missing dir gets a new cluster (initdb, user postgres, UTF8, C locale) whose every
// connection, TCP or unix socket, must give the postgres role's password (SCRAM-SHA-256): a random
// one made at creation and kept in dir/password, mode 0600, which DSN carries. A cluster made by an
// older version with trust authentication is secured when StartPostgres starts it: the password is
// set, pg_hba.conf rewritten and reloaded; while it is running already it is only attached to, with a
// warning, so a process still using it keeps its connections.
// The `postgresql` Debian package is installed with apt-get when no initdb can be found. The server
// listens on 127.0.0.1 only, on the port recorded in dir when that port is still free (so URLs stay
// the same between runs), else on a new free port; its unix socket lives in dir. A cluster that is
// already running in dir is reused as is. When this process runs as root, initdb and pg_ctl run as
// the postgres OS user, which must be able to reach dir.
func StartPostgres(ctx context.Context, dir string, log *slog.Logger) (*PostgresServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	bins, err := findPgBinaries(ctx, log)
	if err != nil {
		return nil, err
	}
	if err := prepareClusterDir(dir, bins); err != nil {
		return nil, err
	}
	srv := &PostgresServer{Dir: dir, bins: bins, log: log}
	data := filepath.Join(dir, pgDataDir)

	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		start := time.Now()
		if srv.password, err = ensurePassword(dir, bins); err != nil {
			return nil, err
		}
		if err := bins.initdb(ctx, dir); err != nil {
			return nil, err
		}
		log.Info("postgres cluster created", "dir", dir, "took", time.Since(start).Round(time.Millisecond))
	} else if err != nil {
		return nil, fmt.Errorf("inspect postgres cluster %s: %w", data, err)
	}
	trusting, err := trustsConnections(data)
	if err != nil {
		return nil, err
	}
	if srv.password == "" {
		if trusting {
			// A cluster from before passwords (or one whose securing was cut short): keep or make
			// the password it is about to get.
			srv.password, err = ensurePassword(dir, bins)
		} else {
			srv.password, err = readPassword(dir)
		}
		if err != nil {
			return nil, err
		}
	}

	if port, running := runningPort(ctx, bins, data); running {
		srv.Port, srv.Reused = port, true
		log.Info("postgres already running", "dir", dir, "port", port)
		if trusting {
			log.Warn("this postgres cluster still lets any local user connect over TCP without a password; "+
				"it gets one the next time it is started (stop what runs it, e.g. vigil dev, and start it again)", "dir", dir)
		}
		return srv, nil
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := choosePort(dir)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		lastErr = bins.start(ctx, dir, port)
		if lastErr == nil {
			srv.Port = port
			if err := os.WriteFile(filepath.Join(dir, pgPortFile), []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
				return nil, errors.Join(fmt.Errorf("record postgres port: %w", err), srv.Stop(ctx))
			}
			log.Info("postgres started", "dir", dir, "port", port, "took", time.Since(start).Round(time.Millisecond))
			if trusting {
				if err := srv.requirePassword(ctx); err != nil {
					return nil, errors.Join(err, srv.Stop(ctx))
				}
			}
			return srv, nil
		}
		if ctx.Err() != nil || portFree(port) {
			break // not a lost race for the port: retrying would fail the same way
		}
		log.Warn("postgres port taken while starting, retrying", "port", port)
		os.Remove(filepath.Join(dir, pgPortFile))
	}
	return nil, lastErr
}

// choosePort returns the port recorded in dir when it is free, else a new free port.
func choosePort(dir string) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dir, pgPortFile)); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 && portFree(p) {
			return p, nil
		}
	}
	return freePort()
}

// runningPort reports whether the cluster in data is running, and on which port.
func runningPort(ctx context.Context, bins pgBinaries, data string) (int, bool) {
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err != nil {
		return 0, false
	}
	if _, err := bins.run(ctx, "pg_ctl", "status", "-D", data); err != nil {
		return 0, false // stale postmaster.pid: pg_ctl start cleans it up
	}
	// postmaster.pid: line 4 is the port (PostgreSQL's LOCK_FILE_LINE_PORT).
	f, err := os.Open(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 4 {
			p, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			return p, err == nil && p > 0
		}
	}
	return 0, false
}

// pgBinaries locates initdb and pg_ctl and knows whether to run them as the postgres OS user.
type pgBinaries struct {
	initdbPath string
	pgCtlPath  string
	asUser     *user.User // non-nil when we are root and must switch to the postgres user
}

func findPgBinaries(ctx context.Context, log *slog.Logger) (pgBinaries, error) {
	b, err := lookupPgBinaries()
	if err != nil {
		log.Warn("initdb not found; installing the postgresql package with apt-get")
		if ierr := aptInstallPostgres(ctx); ierr != nil {
			return pgBinaries{}, fmt.Errorf("%w; installing it failed: %w", err, ierr)
		}
		if b, err = lookupPgBinaries(); err != nil {
			return pgBinaries{}, fmt.Errorf("after installing postgresql: %w", err)
		}
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(pgOSUser)
		if err != nil {
			return pgBinaries{}, fmt.Errorf("running as root, initdb needs the %q OS user: %w", pgOSUser, err)
		}
		b.asUser = u
	}
	return b, nil
}

// lookupPgBinaries finds initdb and pg_ctl on PATH, else in the newest /usr/lib/postgresql/*/bin.
func lookupPgBinaries() (pgBinaries, error) {
	initdb, err1 := exec.LookPath("initdb")
	pgctl, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		return pgBinaries{initdbPath: initdb, pgCtlPath: pgctl}, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		initdb, pgctl := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(initdb) && isExecutable(pgctl) {
			return pgBinaries{initdbPath: initdb, pgCtlPath: pgctl}, nil
		}
	}
	return pgBinaries{}, errors.New("initdb and pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin")
}

// pgMajor extracts N from /usr/lib/postgresql/N/bin (0 when it is not a number).
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func aptInstallPostgres(ctx context.Context) error {
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return errors.New("apt-get not found: install PostgreSQL (initdb, pg_ctl) yourself or set DATABASE_URL")
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	install := exec.CommandContext(ctx, apt, "install", "-y", "--no-install-recommends", "postgresql")
	install.Env = env
	if err := install.Run(); err == nil {
		return nil
	}
	// A fresh machine may have no package lists yet.
	update := exec.CommandContext(ctx, apt, "update")
	update.Env = env
	if uout, uerr := update.CombinedOutput(); uerr != nil {
		return fmt.Errorf("apt-get update: %w: %s", uerr, tail(string(uout), 2000))
	}
	install = exec.CommandContext(ctx, apt, "install", "-y", "--no-install-recommends", "postgresql")
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install postgresql: %w: %s", err, tail(string(out), 2000))
	}
	return nil
}

// prepareClusterDir creates dir and, when running as root, hands it to the postgres user after
// checking that this user can reach it at all (a root-only 0700 parent is the usual trap).
func prepareClusterDir(dir string, bins pgBinaries) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create postgres dir: %w", err)
	}
	if bins.asUser == nil {
		return nil
	}
	uid, gid, err := bins.osUserIDs()
	if err != nil {
		return err
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", p, err)
		}
		if !traversable(fi, uid, gid) {
			return fmt.Errorf("the %s OS user cannot reach %s: %s is mode %v; put the cluster in a directory it can traverse", pgOSUser, dir, p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return fmt.Errorf("hand %s to the %s user: %w", path, pgOSUser, err)
		}
		return nil
	})
}

// traversable reports whether uid/gid may search directory fi (the x bit for its class).
func traversable(fi fs.FileInfo, uid, gid int) bool {
	perm := fi.Mode().Perm()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		switch {
		case int(st.Uid) == uid:
			return perm&0o100 != 0
		case int(st.Gid) == gid:
			return perm&0o010 != 0
		}
	}
	return perm&0o001 != 0
}

// run executes one of the PostgreSQL binaries (as the postgres user when we are root) and returns
// its combined output; a failure carries the output's tail.
func (b pgBinaries) run(ctx context.Context, name string, args ...string) (string, error) {
	argv := b.argv(name, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// pg_ctl start leaves the postmaster running; it writes to the log file, but bound the wait
	// for our output pipe in case anything inherited it.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return string(out), nil
}

// argv is the command line that runs binary name ("initdb" or "pg_ctl") with args, through
// runuser when we must switch to the postgres user.
func (b pgBinaries) argv(name string, args ...string) []string {
	path := b.pgCtlPath
	if name == "initdb" {
		path = b.initdbPath
	}
	argv := append([]string{path}, args...)
	if b.asUser != nil {
		argv = append([]string{"runuser", "-u", b.asUser.Username, "--"}, argv...)
	}
	return argv
}

func (b pgBinaries) initdb(ctx context.Context, dir string) error {
	data := filepath.Join(dir, pgDataDir)
	if _, err := b.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth="+pgAuthMethod,
		"--pwfile="+filepath.Join(dir, pgPassword), "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	return b.configure(dir)
}

// configure creates the socket directory of the cluster in dir and appends vigil's settings to its
// postgresql.conf.
func (b pgBinaries) configure(dir string) error {
	data := filepath.Join(dir, pgDataDir)
	socketDir := filepath.Join(dir, pgSocketDir)
	if err := os.MkdirAll(socketDir, 0o700); err != nil {
		return fmt.Errorf("create socket dir: %w", err)
	}
	if b.asUser != nil {
		uid, _ := strconv.Atoi(b.asUser.Uid)
		gid, _ := strconv.Atoi(b.asUser.Gid)
		if err := os.Chown(socketDir, uid, gid); err != nil {
			return fmt.Errorf("hand socket dir to the %s user: %w", pgOSUser, err)
		}
	}
	// The socket path must fit in sun_path; a deep dir gets TCP only rather than a failed start.
	sockets := socketDir
	if len(filepath.Join(socketDir, ".s.PGSQL.65535")) > maxSocketPath {
		sockets = ""
	}
	conf := fmt.Sprintf("\n# added by vigil devstack\nlisten_addresses = '127.0.0.1'\n"+
		"unix_socket_directories = '%s'\nmax_connections = 200\n",
		strings.ReplaceAll(sockets, "'", "''"))
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	return nil
}

func (b pgBinaries) start(ctx context.Context, dir string, port int) error {
	data := filepath.Join(dir, pgDataDir)
	logFile := filepath.Join(dir, pgLogFile)
	_, err := b.run(ctx, "pg_ctl", "start", "-D", data, "-l", logFile, "-w",
		"-t", strconv.Itoa(int(pgStartLimit/time.Second)), "-o", "-p "+strconv.Itoa(port))
	if err != nil {
		logTail := ""
		if lb, rerr := os.ReadFile(logFile); rerr == nil {
			logTail = tail(string(lb), 2000)
		}
		return fmt.Errorf("start postgres in %s on port %d: %w\nserver log:\n%s", dir, port, err, logTail)
	}
	return nil
}

// tail returns at most the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
