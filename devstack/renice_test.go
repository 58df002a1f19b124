package devstack

import (
	"context"
	"database/sql"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ReniceBackends sets the priority of the backends serving the named sessions, and of those opened
// later, and leaves every other session at the cluster's.
func TestReniceBackends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := StartPostgres(ctx, clusterDir(t), testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	open := func(dsn string) (*sql.DB, int) {
		t.Helper()
		c, err := newConnector(dsn)
		require.NoError(t, err)
		db := sql.OpenDB(c)
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		var pid int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
		return db, pid
	}
	nice := func(pid int) int {
		t.Helper()
		p, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
		require.NoError(t, err)
		return 20 - p // Linux's getpriority answers 20 - nice
	}
	admin, other := open(srv.DSN())
	_, worker := open(srv.DSN() + "&application_name=" + WorkerApplicationName)
	require.Equal(t, 0, nice(worker))

	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ReniceBackends(rctx, admin, WorkerApplicationName, BackgroundNice, 50*time.Millisecond, testLogger(t))
	}()
	require.Eventually(t, func() bool { return nice(worker) == BackgroundNice }, 10*time.Second, 20*time.Millisecond)
	_, later := open(srv.DSN() + "&application_name=" + WorkerApplicationName)
	require.Eventually(t, func() bool { return nice(later) == BackgroundNice }, 10*time.Second, 20*time.Millisecond,
		"a session opened later is found at the next look")
	require.Equal(t, 0, nice(other), "the other sessions keep the cluster's priority")
	stop()
	<-done
}
