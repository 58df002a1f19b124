package api

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

// A list that Postgres cancels for running past the store's list timeout answers the §0 error body
// (503 UNAVAILABLE with Retry-After), promptly, and leaves no statement behind.
func TestListAlerts_QueryTimeoutIs503(t *testing.T) {
	ts := newAlertServer(t, func(_ *Config, d *Deps) {
		d.Alerts = testStore(t).WithListTimeout(300 * time.Millisecond)
	})
	key := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	// Hold detection_rules so a list filtered by rule waits: a statement that never ends by itself.
	tx, err := ts.Store.DB().BeginTx(context.Background(), &sql.TxOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	_, err = tx.ExecContext(context.Background(), "LOCK TABLE detection_rules IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	marker := uuid.New()
	started := time.Now()
	r := ts.do(t, http.MethodGet, "/v1/alerts?detection_rule_uuid="+marker.String(), key, nil)
	require.Less(t, time.Since(started), 3*time.Second)
	m := requireError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
	require.Contains(t, m["error"].(map[string]any)["message"], "did not finish in time")
	require.Equal(t, "1", r.Header.Get("Retry-After"))

	var waiting int
	require.NoError(t, ts.Store.DB().NewRaw(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?`,
		"%"+marker.String()+"%").Scan(context.Background(), &waiting))
	require.Zero(t, waiting, "the cancelled list does not run on in Postgres")
}
