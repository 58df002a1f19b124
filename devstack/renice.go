package devstack

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"syscall"
	"time"
)

// WorkerApplicationName is the application_name `vigil dev` gives the worker's database sessions, so
// that ReniceBackends finds the Postgres processes serving them.
const WorkerApplicationName = "vigil-worker"

// ReniceBackends gives the Postgres backends serving the sessions named appName the CPU priority
// nice, now and then every interval (a session opened meanwhile runs at the cluster's priority until
// then) until ctx ends. `vigil dev` runs it on the cluster it started itself, whose processes are
// local and its own (or, as root, the postgres OS user's): the worker already runs at
// BackgroundNice, but the statements it sends ran at the cluster's priority, beside the ingest's, so
// the pipeline's database work still took the CPU the 202 needs (docs/INGEST.md "Protecting the
// 202"). A backend whose priority cannot be set (it ended, or is not ours to change) is skipped.
func ReniceBackends(ctx context.Context, db *sql.DB, appName string, nice int, interval time.Duration, log *slog.Logger) {
	done := map[backend]bool{} // backends set already
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sessions, err := backendsOf(ctx, db, appName)
		if err != nil && ctx.Err() == nil {
			log.Warn("list the worker's database sessions", "err", err)
		}
		live := make(map[backend]bool, len(sessions))
		for _, b := range sessions {
			live[b] = true
			if done[b] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, b.pid, nice); err != nil {
				log.Debug("renice a worker's database session", "pid", b.pid, "err", err)
				continue
			}
			done[b] = true
		}
		for b := range done {
			if !live[b] {
				delete(done, b) // ended
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// backend is one Postgres backend process: its pid and start (a pid is reused by later backends).
type backend struct {
	pid   int
	start time.Time
}

func backendsOf(ctx context.Context, db *sql.DB, appName string) ([]backend, error) {
	rows, err := db.QueryContext(ctx, `SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = $1`, appName)
	if err != nil {
		return nil, fmt.Errorf("sessions of %s: %w", appName, err)
	}
	defer rows.Close()
	var out []backend
	for rows.Next() {
		var b backend
		if err := rows.Scan(&b.pid, &b.start); err != nil {
			return nil, fmt.Errorf("sessions of %s: %w", appName, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
