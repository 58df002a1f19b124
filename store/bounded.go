package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"
)

func listTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultListTimeout
	}
	return d
}

// WithListTimeout returns a Store sharing s's pool whose list reads Postgres cancels after d (tests
// and tools; the API uses Options.ListTimeout).
func (s *Store) WithListTimeout(d time.Duration) *Store {
	c := *s
	c.listTimeout = listTimeout(d)
	return &c
}

// boundedRead runs each of reads at the same time, each in its own read-only transaction whose
// statements Postgres cancels (SET LOCAL statement_timeout) when the smaller of the store's list
// timeout and what is left of ctx's deadline (less a margin) has passed. The driver does not send Postgres a cancel
// when ctx ends (it only stops reading the socket), so without this a list whose client gave up
// would run on in the database. A cancelled statement is ErrQueryTimeout; a deadline already past
// is context.DeadlineExceeded. On a Store bound to a transaction (InTx) the reads run in it, one
// after the other, with the transaction's own limits.
func (s *Store) boundedRead(ctx context.Context, reads ...func(ctx context.Context, db bun.IDB) error) error {
	pool, ok := s.db.(*bun.DB)
	if !ok {
		for _, read := range reads {
			if err := read(ctx, s.db); err != nil {
				return err
			}
		}
		return nil
	}
	budget := s.listTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return fmt.Errorf("bounded read: %w", context.DeadlineExceeded)
		}
		// Postgres's cancel should come back before the driver's read deadline (ctx's) closes the
		// connection: leave it a margin.
		budget = min(budget, left-min(100*time.Millisecond, left/4))
	}
	ms := strconv.FormatInt(max(budget.Milliseconds(), 1), 10)
	g, gctx := errgroup.WithContext(ctx)
	for _, read := range reads {
		g.Go(func() error {
			return pool.RunInTx(gctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = "+ms); err != nil {
					return fmt.Errorf("set statement_timeout: %w", mapErr(err))
				}
				return read(ctx, tx)
			})
		})
	}
	if err := g.Wait(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			// The driver reports ctx's deadline as a network timeout; name the cause.
			return fmt.Errorf("%w: %w", ctxErr, err)
		}
		return err
	}
	return nil
}
