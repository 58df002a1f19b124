// Package store is Vigil's system of record: bun models (the domain types), queries, and the embedded
// SQL migrations. It imports no other project package.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrQueryTimeout: Postgres cancelled the statement (its statement_timeout passed).
	ErrQueryTimeout = errors.New("query did not finish in time")
)

// Options tune the connection pool.
type Options struct {
	MaxOpenConns int // 0 → 20
	// ListTimeout bounds a list read (ListAlerts) inside Postgres: 0 → DefaultListTimeout.
	ListTimeout time.Duration
}

// DefaultListTimeout is how long Postgres may run one list read (the page or its count) before it
// cancels the statement itself. It is under the driver's 5 s network read timeout so Postgres's own
// cancel (a clean error on a connection that stays usable) comes first, and a read whose client gave
// up does not run on in the database.
const DefaultListTimeout = 4 * time.Second

// Store wraps the bun database handle. A Store bound to a transaction (InTx) shares everything but
// db with the Store it came from.
type Store struct {
	pool *bun.DB // the connection pool
	db   bun.IDB // pool, or the transaction of a Store that InTx bound to one
	now  func() time.Time
	wake *outboxWaker // alert_outbox: OutboxChannel
	// startWake: start_outbox, on a channel of its own so the pipeline's dispatch is not woken for
	// workflow runs and enrichments, nor those for each ingest.
	startWake    *outboxWaker
	freedWake    *outboxWaker  // a pipeline finished: FreedChannel
	ingest       *prepared     // ingestSQL
	timeline     *prepared     // timelineSQL
	caseTimeline *prepared     // caseTimelineSQL
	dsn          string        // for Migrate's own connection
	listTimeout  time.Duration // boundedRead's statement_timeout
	searchCap    int64         // ListAlerts with `q`: searchMatchCap, smaller in tests
}

// Open connects to Postgres at dsn and checks the connection.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	connector := pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(5*time.Second))
	sqldb := sql.OpenDB(connector)
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
	}
	sqldb.SetMaxOpenConns(maxOpen)
	sqldb.SetMaxIdleConns(maxOpen)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, NewDialect())
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return &Store{pool: db, db: db, now: func() time.Time { return time.Now().UTC() }, wake: newOutboxWaker(db, OutboxChannel), startWake: newOutboxWaker(db, StartChannel),
		freedWake: newOutboxWaker(db, FreedChannel), ingest: &prepared{query: ingestSQL},
		timeline: &prepared{query: timelineSQL}, caseTimeline: &prepared{query: caseTimelineSQL}, dsn: dsn, listTimeout: listTimeout(opts.ListTimeout),
		searchCap: searchMatchCap}, nil
}

// DB exposes the bun handle for packages that compose queries in transactions with the store.
func (s *Store) DB() *bun.DB { return s.pool }

// Close stops the outbox wake-ups and closes the pool.
func (s *Store) Close() error {
	s.wake.close()
	s.startWake.close()
	s.freedWake.close()
	s.ingest.close()
	s.timeline.close()
	s.caseTimeline.close()
	return s.pool.Close()
}

// Ping checks the database within ctx.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Now returns the store's clock reading (UTC, microsecond precision as Postgres keeps it).
func (s *Store) Now() time.Time { return s.now().Truncate(time.Microsecond) }

// mapErr turns driver errors into the package's sentinels, keeping the original in the chain.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		switch pgErr.Field('C') {
		case "23505", "23P01":
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case "57014": // query_canceled: a statement_timeout (boundedRead) or an operator's cancel
			return fmt.Errorf("%w: %w", ErrQueryTimeout, err)
		}
	}
	return err
}

// IsUniqueViolation reports whether err is a unique-constraint violation on the named constraint
// ("" matches any).
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) || pgErr.Field('C') != "23505" {
		return false
	}
	return constraint == "" || pgErr.Field('n') == constraint
}

// RunInTx runs fn in one transaction.
func (s *Store) RunInTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.db.RunInTx(ctx, nil, fn)
}
