package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/temporal"
)

func temporalDial(t testing.TB, cfg config) (client.Client, error) {
	t.Helper()
	tcfg, err := temporalConfig(cfg, nil)
	if err != nil {
		return nil, err
	}
	return temporal.Dial(context.Background(), tcfg, slog.New(slog.DiscardHandler))
}

func startProbe(ctx context.Context, tc client.Client, cfg config) (string, error) {
	return temporal.StartProbe(ctx, tc, temporal.NewQueues(cfg.TaskQueuePrefix))
}

// runProbe runs the probe workflow to completion on the Temporal server and queues of env (a
// worker must be running) and returns its workflow id.
func runProbe(t testing.TB, env func(string) string) string {
	t.Helper()
	cfg, err := loadConfig(env)
	require.NoError(t, err)
	tc, err := temporalDial(t, cfg)
	require.NoError(t, err)
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := startProbe(ctx, tc, cfg)
	require.NoError(t, err)
	return id
}
