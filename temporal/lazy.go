package temporal

import (
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// DialLazy returns a client that connects on first use, for processes that must start and serve
// while Temporal is unreachable (the API: ingestion never waits on Temporal, and /health reports it).
func DialLazy(cfg Config, log *slog.Logger) (client.Client, error) {
	if cfg.HostPort == "" {
		return nil, errors.New("dial temporal: no host:port configured")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := client.NewLazyClient(client.Options{
		HostPort:  cfg.HostPort,
		Namespace: cfg.namespace(),
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", cfg.HostPort, err)
	}
	return c, nil
}
