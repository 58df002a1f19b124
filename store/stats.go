package store

import (
	"context"
	"fmt"
	"time"
)

// OutboxStats is the outbox at one moment, for /metrics.
type OutboxStats struct {
	Depth   int       // entries whose work has not finished, started or not
	Started int       // entries started and not yet finished: pipelines in flight
	Oldest  time.Time // created_at of the oldest entry; zero when the outbox is empty
}

// OutboxStats counts the outbox in one statement (a count and a min over the table, so it reads
// the same whatever kinds the outbox carries).
func (s *Store) OutboxStats(ctx context.Context) (OutboxStats, error) {
	var st OutboxStats
	var oldest *time.Time
	err := s.db.NewRaw(`SELECT count(*), count(started_at), min(created_at) FROM alert_outbox`).
		Scan(ctx, &st.Depth, &st.Started, &oldest)
	if err != nil {
		return OutboxStats{}, fmt.Errorf("outbox stats: %w", mapErr(err))
	}
	if oldest != nil {
		st.Oldest = *oldest
	}
	return st, nil
}

// PendingApprovals counts workflow approval requests waiting for a decision and not yet expired.
func (s *Store) PendingApprovals(ctx context.Context) (int, error) {
	var n int
	err := s.db.NewRaw(`SELECT count(*) FROM workflow_approval_requests WHERE status = 'pending' AND expires_at > now()`).
		Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("count pending approvals: %w", mapErr(err))
	}
	return n, nil
}
