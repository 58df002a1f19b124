package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/uptrace/bun/migrate"
)

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
	m := migrate.NewMigrator(s.pool, ms, migrate.WithMarkAppliedOnSuccess(true))
	// A session-level advisory lock serialises concurrent starts, including the creation of bun's own
	// bookkeeping tables.
	conn, err := s.pool.Conn(ctx)
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
