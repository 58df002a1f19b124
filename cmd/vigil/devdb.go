package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/vigil-soc/vigil/devstack"
)

// devPostgresDir is where `vigil dev` keeps its cluster, relative to the repository root (or the
// working directory outside a repository).
const devPostgresDir = ".vigil/postgres"

// devDataDir is the .vigil directory `vigil dev` uses from the working directory cwd: at the root
// of the enclosing repository (the first parent with a go.mod), else in cwd itself.
func devDataDir(cwd string) string {
	root, err := devstack.FindRepoRoot(cwd)
	if err != nil {
		root = cwd
	}
	return filepath.Join(root, ".vigil")
}

// resolveDatabase decides which database the one-shot commands (migrate, create-api-key) use, says
// which on w, and returns a function releasing what it started:
//
//  1. DATABASE_URL, when set, always;
//  2. else the cluster `vigil dev` keeps in .vigil/postgres (found as devDataDir does), when one was
//     ever created there: attached to on the port its running postmaster records, or started for the
//     command and stopped again afterwards when `vigil dev` is not running;
//  3. else the default DATABASE_URL (a server on 127.0.0.1:5432).
func resolveDatabase(ctx context.Context, cfg *config, getenv func(string) string, cwd string, log *slog.Logger, w io.Writer) (func(), error) {
	if getenv("DATABASE_URL") != "" {
		fmt.Fprintf(w, "Database: %s (DATABASE_URL)\n", redactDSN(cfg.DatabaseURL))
		return func() {}, nil
	}
	dir := filepath.Join(devDataDir(cwd), "postgres")
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("look for the vigil dev cluster in %s: %w", dir, err)
		}
		fmt.Fprintf(w, "Database: %s (default; no DATABASE_URL and no vigil dev cluster in %s)\n", redactDSN(cfg.DatabaseURL), dir)
		return func() {}, nil
	}
	pg, err := devstack.StartPostgres(ctx, dir, log)
	if err != nil {
		return nil, fmt.Errorf("vigil dev cluster in %s: %w", dir, err)
	}
	cfg.DatabaseURL = pg.DSN()
	if pg.Reused {
		fmt.Fprintf(w, "Database: %s (the running vigil dev cluster in %s)\n", redactDSN(cfg.DatabaseURL), dir)
		return func() {}, nil
	}
	fmt.Fprintf(w, "Database: %s (the vigil dev cluster in %s, started for this command and stopped after it)\n", redactDSN(cfg.DatabaseURL), dir)
	return func() { stopWithin(log, "postgres", pg.Stop) }, nil
}
