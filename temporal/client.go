package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// dialLimit bounds Dial when the caller's context has no deadline of its own.
const dialLimit = 10 * time.Second

// Dial connects to Temporal (checking the server answers) with the process logger adapted for the
// SDK. Create one client per process and Close it on shutdown.
func Dial(ctx context.Context, cfg Config, log *slog.Logger) (client.Client, error) {
	if cfg.HostPort == "" {
		return nil, errors.New("dial temporal: no host:port configured")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialLimit)
		defer cancel()
	}
	c, err := client.DialContext(ctx, clientOptions(cfg, log))
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s (namespace %s): %w", cfg.HostPort, cfg.namespace(), err)
	}
	return c, nil
}

// clientOptions is what Dial and DialLazy share: address, namespace and the slog adapter.
func clientOptions(cfg Config, log *slog.Logger) client.Options {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return client.Options{
		HostPort:  cfg.HostPort,
		Namespace: cfg.namespace(),
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	}
}
