package testenv

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

func TestMain(m *testing.M) { Main(m) }

func TestDatabaseURL(t *testing.T) {
	dsn := DatabaseURL(t)
	require.Equal(t, dsn, DatabaseURL(t), "one database per test binary")

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	require.Regexp(t, `^/vigil_t_testenv_[0-9a-f]{8}$`, u.Path)

	db := openDB(t, dsn)
	var name string
	require.NoError(t, db.QueryRow("SELECT current_database()").Scan(&name))
	require.Equal(t, strings.TrimPrefix(u.Path, "/"), name)
	// The database is empty and writable.
	var tables int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables))
	require.Zero(t, tables)
	_, err = db.Exec("CREATE TABLE t (id int PRIMARY KEY)")
	require.NoError(t, err)
	_, err = db.Exec("DROP TABLE t")
	require.NoError(t, err)
}

// TestDatabaseURL_Credentials: with DATABASE_URL the binary's database is reached with its
// credentials; without it, the throw-away cluster asks every TCP connection for the password that the
// URL carries and refuses one without it or with a wrong one (issue 27 item 5).
func TestDatabaseURL_Credentials(t *testing.T) {
	u, err := url.Parse(DatabaseURL(t))
	require.NoError(t, err)
	if admin := os.Getenv("DATABASE_URL"); admin != "" {
		a, err := url.Parse(admin)
		require.NoError(t, err)
		require.Equal(t, a.User.String(), u.User.String())
		return
	}
	pw, ok := u.User.Password()
	require.True(t, ok, "the throw-away cluster's URL carries a password")
	require.Len(t, pw, 48)
	for _, user := range []*url.Userinfo{url.User(u.User.Username()), url.UserPassword(u.User.Username(), "wrong")} {
		bad := *u
		bad.User = user
		db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(bad.String())))
		err := db.Ping()
		db.Close()
		require.Error(t, err, "the throw-away cluster let %s in", user.String())
		require.Contains(t, err.Error(), "28P01")
	}
}

func TestTemporalAddress(t *testing.T) {
	addr := TemporalAddress(t)
	require.Equal(t, addr, TemporalAddress(t), "one server per test binary")
	requireTemporal(t, addr)
}

func TestTaskQueuePrefix(t *testing.T) {
	p := TaskQueuePrefix(t)
	require.Regexp(t, `^vigil-t-testenv-[0-9a-f]{8}$`, p)
	require.Equal(t, p, TaskQueuePrefix(t))
}

func TestBinaryID(t *testing.T) {
	tests := []struct {
		arg0, wantPrefix string
	}{
		{"/tmp/go-build123/b001/store.test", "store_"},
		{"store.test", "store_"},
		{"/x/My-Pkg.v2.test", "my_pkg_v2_"},
		{"/x/___.test", "pkg_"},
		{"/x/" + strings.Repeat("long", 20) + ".test", strings.Repeat("long", 20)[:30] + "_"},
		{`/x/a"; DROP DATABASE x; --.test`, "a_drop_database_x_"},
	}
	ident := regexp.MustCompile(`^[a-z0-9_]{1,39}$`)
	for _, tt := range tests {
		t.Run(tt.arg0, func(t *testing.T) {
			saved := os.Args[0]
			os.Args[0] = tt.arg0
			defer func() { os.Args[0] = saved }()
			id := binaryID()
			require.True(t, strings.HasPrefix(id, tt.wantPrefix), id)
			require.Regexp(t, ident, id)
			require.NotEqual(t, id, binaryID(), "ids are random per call")
		})
	}
}

// TestMainTearsDown runs this test binary again as a child that asks for a database and a Temporal
// server, then checks that after the child exits the database is gone and the server is stopped.
func TestMainTearsDown(t *testing.T) {
	admin := adminURL(t, DatabaseURL(t))
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildUsesServices$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "DATABASE_URL="+admin, "TEMPORAL_ADDRESS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), out.String())

	var dbName, temporalAddr string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "child-db="); ok {
			dbName = v
		}
		if v, ok := strings.CutPrefix(line, "child-temporal="); ok {
			temporalAddr = v
		}
	}
	require.NotEmpty(t, dbName, out.String())
	require.NotEmpty(t, temporalAddr, out.String())

	db := openDB(t, admin)
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", dbName).Scan(&n))
	require.Zero(t, n, "the child's database %s was dropped", dbName)

	conn, err := net.DialTimeout("tcp", temporalAddr, time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "the child's temporal server at %s was stopped", temporalAddr)
}

// TestChildUsesServices is the child half of TestMainTearsDown; on its own it only checks that the
// services answer.
func TestChildUsesServices(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "1" {
		return // runs as the child of TestMainTearsDown only
	}
	dsn := DatabaseURL(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	addr := TemporalAddress(t)
	requireTemporal(t, addr)
	// Printed for the parent; t.Log output would be indented and prefixed.
	os.Stdout.WriteString("child-db=" + strings.TrimPrefix(u.Path, "/") + "\nchild-temporal=" + addr + "\n")
}

func adminURL(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Path = "/postgres"
	return u.String()
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Ping())
	return db
}

func requireTemporal(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
}
