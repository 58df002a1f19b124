package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
)

// migrationTimeout bounds one statement of a migration (the pool's requests get 5 s).
const migrationTimeout = 30 * time.Minute

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrate applies every embedded migration not yet applied, under bun's migration lock so that
// replicas starting together migrate once.
func (s *Store) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("open embedded migrations: %w", err)
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return fmt.Errorf("discover migrations: %w", err)
	}
	// Migrations get a connection of their own without the pool's 5 s read timeout: building an index
	// or backfilling a column over a large table takes longer than any request may.
	db := s.pool
	if s.dsn != "" {
		db = bun.NewDB(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(s.dsn), pgdriver.WithDialTimeout(5*time.Second),
			pgdriver.WithReadTimeout(migrationTimeout), pgdriver.WithWriteTimeout(migrationTimeout))), NewDialect())
		defer db.Close()
		db.SetMaxOpenConns(2)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))
	// A session-level advisory lock serialises concurrent starts, including the creation of bun's own
	// bookkeeping tables.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migration connection: %w", err)
	}
	defer conn.Close()
	const lockID = 7_361_204_919 // "vigil" migrations
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", lockID); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", lockID) //nolint:errcheck // released with the session anyway
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("init migrations: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}
