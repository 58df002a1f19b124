package store_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// holdRulesLock takes an ACCESS EXCLUSIVE lock on detection_rules until the test ends, so any
// statement that reads the table (a list filtered by detection rule) waits: a statement that never
// finishes on its own, without seeding a large table.
func holdRulesLock(t *testing.T, st *store.Store) {
	t.Helper()
	tx, err := st.DB().BeginTx(context.Background(), &sql.TxOptions{})
	require.NoError(t, err)
	_, err = tx.ExecContext(context.Background(), "LOCK TABLE detection_rules IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
}

// waitingLists counts the backends of this database waiting on a lock while running a list
// filtered by the marker rule uuid.
func waitingLists(t *testing.T, st *store.Store, marker uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?`,
		"%"+marker.String()+"%").Scan(context.Background(), &n))
	return n
}

// The driver (pgdriver) does not cancel a statement when ctx ends: it stops reading the socket and
// the backend runs on. This is why list reads carry their own statement_timeout; if a future driver
// cancels on ctx, this check fails and boundedRead's comment should be revisited.
func TestDriverLeavesAbandonedStatementRunning(t *testing.T) {
	st := testStore(t)
	holdRulesLock(t, st)
	marker := uuid.New()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var n int
	err := st.DB().NewRaw("SELECT count(*) FROM detection_rules WHERE uuid = ?", marker).Scan(ctx, &n)
	require.Error(t, err)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 1, waitingLists(t, st, marker), "the abandoned statement is still waiting in Postgres")
}

// A list that does not finish within the store's list timeout is cancelled by Postgres itself:
// ErrQueryTimeout comes back after about the timeout, nothing of it keeps running, and the pool's
// connections stay usable.
func TestListAlertsStatementTimeout(t *testing.T) {
	base := testStore(t)
	st := base.WithListTimeout(300 * time.Millisecond)
	holdRulesLock(t, base)
	marker := uuid.New()
	started := time.Now()
	_, _, err := st.ListAlerts(context.Background(), store.AlertFilter{DetectionRuleUUID: &marker})
	elapsed := time.Since(started)
	require.ErrorIs(t, err, store.ErrQueryTimeout)
	require.GreaterOrEqual(t, elapsed, 250*time.Millisecond)
	require.Less(t, elapsed, 3*time.Second)
	require.Zero(t, waitingLists(t, st, marker), "the cancelled list is not waiting on in Postgres")
	_, _, err = st.ListAlerts(context.Background(), store.AlertFilter{Statuses: []string{"Open"}, Page: store.Page{Number: 1, Size: 5}})
	require.NoError(t, err, "the connections are usable after the cancel")
}

// A request deadline shorter than the list timeout bounds the statement too: the client (the API's
// request context) gives up and the statement is gone from Postgres with it.
func TestListAlertsHonoursContextDeadline(t *testing.T) {
	st := testStore(t) // the default list timeout (4 s) is longer than the deadline below
	holdRulesLock(t, st)
	marker := uuid.New()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, _, err := st.ListAlerts(ctx, store.AlertFilter{DetectionRuleUUID: &marker})
	require.Error(t, err)
	require.True(t, errors.Is(err, store.ErrQueryTimeout) || errors.Is(err, context.DeadlineExceeded), "err: %v", err)
	require.Less(t, time.Since(started), 3*time.Second)
	require.Eventually(t, func() bool { return waitingLists(t, st, marker) == 0 }, 2*time.Second, 50*time.Millisecond,
		"the list's statements do not outlive the request")

	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	_, _, err = st.ListAlerts(expired, store.AlertFilter{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
