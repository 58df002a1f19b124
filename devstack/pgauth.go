package devstack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pgAuthMethod is how every connection to a cluster made here authenticates: the postgres role's
// password, over TCP and over the unix socket alike (no trust, no peer).
const pgAuthMethod = "scram-sha-256"

// pgHBA is the pg_hba.conf a cluster made by an older version (trust on every line) is given when
// it is secured: the file initdb writes for --auth=scram-sha-256.
const pgHBA = `# written by vigil devstack: every connection must give the role's password
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     ` + pgAuthMethod + `
host    all             all             127.0.0.1/32            ` + pgAuthMethod + `
host    all             all             ::1/128                 ` + pgAuthMethod + `
local   replication     all                                     ` + pgAuthMethod + `
host    replication     all             127.0.0.1/32            ` + pgAuthMethod + `
host    replication     all             ::1/128                 ` + pgAuthMethod + `
`

// securePollLimit bounds the wait for the postmaster to apply a rewritten pg_hba.conf.
const securePollLimit = 10 * time.Second

// ensurePassword returns the password kept in dir/password, creating the file (0600, 24 random
// bytes in hex, handed to the postgres OS user when we are root so initdb can read it) when it does
// not exist.
func ensurePassword(dir string, bins pgBinaries) (string, error) {
	pw, err := readPassword(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return pw, err
	}
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	pw = hex.EncodeToString(b[:])
	path := filepath.Join(dir, pgPassword)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create the postgres password file: %w", err)
	}
	if _, err := f.WriteString(pw + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write the postgres password file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write the postgres password file: %w", err)
	}
	if err := bins.handOver(path); err != nil {
		return "", err
	}
	return pw, nil
}

// readPassword reads dir/password; a missing file is an error wrapping os.ErrNotExist.
func readPassword(dir string) (string, error) {
	path := filepath.Join(dir, pgPassword)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the postgres cluster in %s requires a password but %s is missing "+
			"(remove %s to start over with an empty cluster): %w", dir, path, dir, err)
	}
	if err != nil {
		return "", fmt.Errorf("read the postgres password: %w", err)
	}
	pw := strings.TrimSpace(string(raw))
	if pw == "" {
		return "", fmt.Errorf("the postgres password file %s is empty", path)
	}
	return pw, nil
}

// trustsConnections reports whether the pg_hba.conf of the cluster in data lets any connection in
// without a password (a line whose method is trust), as clusters made before passwords did.
func trustsConnections(data string) (bool, error) {
	raw, err := os.ReadFile(filepath.Join(data, "pg_hba.conf"))
	if err != nil {
		return false, fmt.Errorf("read pg_hba.conf: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for _, field := range strings.Fields(line) {
			if field == "trust" {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// requirePassword secures a running cluster that still trusts every connection: it sets the
// postgres role's password (while trust still lets us in), replaces pg_hba.conf by pgHBA, reloads
// the configuration, and waits until a connection without the password is refused. Each step may
// be repeated: a run cut short is finished by the next start.
func (s *PostgresServer) requirePassword(ctx context.Context) error {
	connector, err := newConnector(s.DSN())
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to secure the postgres cluster in %s: %w", s.Dir, err)
	}
	defer conn.Close()
	// The password is hex, so it needs no quoting; ALTER ROLE takes no bind parameters.
	for _, q := range []string{
		"SET password_encryption = '" + pgAuthMethod + "'",
		"ALTER ROLE postgres PASSWORD '" + s.password + "'",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("set the postgres password in %s: %w", s.Dir, err)
		}
	}
	hba := filepath.Join(s.Dir, pgDataDir, "pg_hba.conf")
	tmp := hba + ".vigil-new"
	if err := os.WriteFile(tmp, []byte(pgHBA), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	if err := s.bins.handOver(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, hba); err != nil {
		return fmt.Errorf("replace pg_hba.conf: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_reload_conf()").Scan(&ok); err != nil || !ok {
		return fmt.Errorf("reload the postgres configuration in %s: ok=%v: %w", s.Dir, ok, err)
	}
	// pg_reload_conf only signals the postmaster; wait until the new rules are in force.
	noPassword := s.dsnAs(url.User("postgres"))
	deadline := time.Now().Add(securePollLimit)
	for {
		if err := pingOnce(ctx, noPassword); err != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the postgres cluster in %s still accepts connections without a password %v after reloading pg_hba.conf", s.Dir, securePollLimit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.log.Warn("postgres cluster secured: it used to let any local user connect without a password; "+
		"connections now need the password in "+s.PasswordFile(), "dir", s.Dir)
	return nil
}

// pingOnce opens one connection to dsn and closes it.
func pingOnce(ctx context.Context, dsn string) error {
	connector, err := newConnector(dsn)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	return db.PingContext(ctx)
}

// handOver gives path to the postgres OS user when we run as root (initdb and the server read it
// as that user); otherwise it does nothing.
func (b pgBinaries) handOver(path string) error {
	if b.asUser == nil {
		return nil
	}
	uid, gid, err := b.osUserIDs()
	if err != nil {
		return err
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("hand %s to the %s user: %w", path, pgOSUser, err)
	}
	return nil
}

// osUserIDs is the postgres OS user's numeric uid and gid (only when running as root: asUser set).
func (b pgBinaries) osUserIDs() (uid, gid int, err error) {
	uid, err1 := strconv.Atoi(b.asUser.Uid)
	gid, err2 := strconv.Atoi(b.asUser.Gid)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("postgres OS user has a non-numeric uid/gid %q/%q", b.asUser.Uid, b.asUser.Gid)
	}
	return uid, gid, nil
}
