package main

import (
	"context"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/temporal"
)

func temporalDial(t testing.TB, cfg config) (client.Client, error) {
	t.Helper()
	return temporal.Dial(context.Background(), temporalConfig(cfg, nil), slog.New(slog.DiscardHandler))
}

func startProbe(ctx context.Context, tc client.Client, cfg config) (string, error) {
	return temporal.StartProbe(ctx, tc, temporal.NewQueues(cfg.TaskQueuePrefix))
}
