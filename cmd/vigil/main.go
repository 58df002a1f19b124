// Command vigil runs every Vigil process from one binary: api, worker, mcp, migrate, create-api-key, dev.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/vigil-soc/vigil/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

const usage = `Usage: vigil <command> [flags]

Commands:
  api              run the REST API (API_ADDR, default :8000)
  mcp              run the MCP server for AI agents (MCP_ADDR, default :8001)
  worker           run the Temporal workers (pipelines, enrichment, actions)
  migrate          apply database migrations and exit
  create-api-key   create an API key and print it once
                   --name NAME --scopes admin[,alerts:read,...] [--key-type human|agent]
                   [--allowed-sources a,b] [--expires-at RFC3339] [--rate-limit-per-minute N]
  dev              run everything on this machine: Postgres, Temporal dev server with its UI,
                   api, mcp, and the worker as a child process; data kept under .vigil/
  help             show this text and the configuration variables

migrate and create-api-key without DATABASE_URL use the cluster of 'vigil dev' (.vigil/postgres)
when there is one, and print the database they used.

Configuration is read from environment variables only; see README.md or 'vigil help'.
`

// run is the whole program; main only wires the process to it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	log := newLogger(cfg, stderr)
	switch args[0] {
	case "api":
		return runAPI(ctx, cfg, log)
	case "worker":
		return runWorker(ctx, cfg, log)
	case "mcp":
		return runMCP(ctx, cfg, log)
	case "migrate", "create-api-key":
		cwd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
		release, err := resolveDatabase(ctx, &cfg, getenv, cwd, log, stderr)
		if err != nil {
			return err
		}
		defer release()
		if args[0] == "create-api-key" {
			return runCreateAPIKey(ctx, cfg, args[1:], stdout)
		}
		st, err := openStore(ctx, cfg, true)
		if err != nil {
			return err
		}
		defer st.Close()
		fmt.Fprintln(stdout, "migrations applied")
		return nil
	case "dev":
		return runDev(ctx, cfg, getenv, log, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage, "\nEnvironment:\n")
		for _, s := range settings() {
			fmt.Fprintf(stdout, "  %-30s %s (default %q)\n", s.name, s.doc, s.def)
		}
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// openStore connects to Postgres and, when migrate is set, applies the migrations.
func openStore(ctx context.Context, cfg config, migrate bool) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxOpenConns: cfg.DatabaseMaxConns})
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}
