package temporal

import (
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
)

// DialLazy returns a client that connects on first use, for processes that must start and serve
// while Temporal is unreachable (the API: ingestion never waits on Temporal, and /health reports it).
func DialLazy(cfg Config, log *slog.Logger) (client.Client, error) {
	if cfg.HostPort == "" {
		return nil, errors.New("dial temporal: no host:port configured")
	}
	opts, err := clientOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	c, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", cfg.HostPort, err)
	}
	return c, nil
}
