package store

import (
	"context"
	"fmt"
	"time"
)

// IncrementRateWindow adds one request to bucket's window starting at windowStart and returns the
// window's count after the increment. Old windows are swept opportunistically.
func (s *Store) IncrementRateWindow(ctx context.Context, bucket string, windowStart time.Time) (int, error) {
	var count int
	err := s.db.QueryRowContext(ctx, `
		INSERT INTO rate_limit_windows (bucket, window_start, count) VALUES (?, ?, 1)
		ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
		RETURNING count`, bucket, windowStart).Scan(&count)
	if err != nil {
		return 0, fmt.Errorf("increment rate window %s: %w", bucket, mapErr(err))
	}
	return count, nil
}

// SweepRateWindows deletes windows that started before cutoff.
func (s *Store) SweepRateWindows(ctx context.Context, cutoff time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM rate_limit_windows WHERE window_start < ?`, cutoff); err != nil {
		return fmt.Errorf("sweep rate windows: %w", mapErr(err))
	}
	return nil
}
