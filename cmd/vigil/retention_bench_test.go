package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/workflows"
)

// TestRetentionPass_IngestAckP99 measures the ingest 202 with cmd/vigil-load (open loop) on `vigil
// api` + `vigil worker` (in this process), over 100 000 seeded alerts: first with no pass, then
// while a retention pass (started by hand on the Schedule's queue, the Schedule paused) clears 75 000 raw payloads and deletes
// 25 000 closed alerts with their rows. docs/PERFORMANCE.md "Retention" has the figures. A
// measurement, not a gate: it runs only with VIGIL_RETENTION_BENCH=1.
//
// VIGIL_RETENTION_BENCH_RATE sets the ingest rate (default 50 a second).
//
//	VIGIL_RETENTION_BENCH=1 go test ./cmd/vigil -run TestRetentionPass_IngestAckP99 -v -timeout 30m
func TestRetentionPass_IngestAckP99(t *testing.T) {
	if os.Getenv("VIGIL_RETENTION_BENCH") != "1" {
		t.Skip("a measurement: set VIGIL_RETENTION_BENCH=1")
	}
	ctx := context.Background()
	apiAddr := freeAddr(t)
	prefix := testenv.TaskQueuePrefix(t) + "-retbench"
	vars := map[string]string{
		"DATABASE_URL":                  testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":              testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX":    prefix,
		"API_ADDR":                      apiAddr,
		"ENCRYPTION_KEY":                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"LOG_LEVEL":                     "error",
		"RATE_LIMIT_DEFAULT_PER_MINUTE": "1000000",
		"MAX_CONNS_PER_IP":              "0", // the load generator's open loop may hold many connections on a slow machine
		"RAW_PAYLOAD_RETENTION_DAYS":    "30",
		"ALERT_RETENTION_DAYS":          "30",
	}
	env := envOf(vars)
	key, _ := createKey(t, env, "--name", "retention-load", "--scopes", "admin")
	serve(t, env, "api", "worker")
	base := "http://" + apiAddr
	waitHealthy(t, base)

	seed := testenv.RetentionSeed{Tag: "b" + uuid.NewString()[:8], PerGroup: 25_000, Now: time.Now().UTC()}
	start := time.Now()
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))
	t.Logf("seeded 100 000 alerts in %v", time.Since(start))

	loadBin := filepath.Join(t.TempDir(), "vigil-load")
	build := exec.Command("go", "build", "-o", loadBin, "../vigil-load")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	rate := cmp.Or(os.Getenv("VIGIL_RETENTION_BENCH_RATE"), "50")
	load := func(d time.Duration) map[string]any {
		cmd := exec.Command(loadBin, "ingest", "-url", base, "-key", key, "-rate", rate, "-duration", d.String(), "-warmup", "3s")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		require.NoError(t, cmd.Run())
		var res map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		return res["ack"].(map[string]any)
	}

	codec, err := payloadCodec(config{EncryptionKey: vars["ENCRYPTION_KEY"]}) // the stack's, derived as it derives it
	require.NoError(t, err)
	tc, err := temporal.Dial(ctx, temporal.Config{HostPort: vars["TEMPORAL_ADDRESS"], Codec: codec}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer tc.Close()
	st, err := store.Open(ctx, vars["DATABASE_URL"], store.Options{})
	require.NoError(t, err)
	defer st.Close()
	// The Schedule would start a pass at the top of the hour, maybe inside the measurement without a
	// pass: paused, and the pass started by hand on the same queue.
	schedule := tc.ScheduleClient().GetHandle(ctx, ids.RetentionSchedule(prefix))
	require.Eventually(t, func() bool { return schedule.Pause(ctx, client.SchedulePauseOptions{Note: "bench"}) == nil },
		time.Minute, 100*time.Millisecond)
	t.Cleanup(func() { _ = schedule.Delete(context.Background()) })

	before := load(30 * time.Second)
	t.Logf("ingest 202 without a pass: p50 %v ms, p99 %v ms, max %v ms, errors %v", before["p50_ms"], before["p99_ms"], before["max_ms"], before["errors"])

	triggered := time.Now()
	passID := ids.RetentionSchedule(prefix) + "-bench-" + seed.Tag
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: passID, TaskQueue: temporal.NewQueues(prefix).Actions},
		workflows.RetentionPass, workflows.RetentionPassInput{Reason: "bench"})
	require.NoError(t, err)
	// Wait for the pass to start purging, then measure while it runs.
	require.Eventually(t, func() bool {
		p, err := st.GetRetentionPass(ctx, passID)
		return err == nil && len(p.Counts) > 0
	}, 5*time.Minute, 100*time.Millisecond)
	loadStart := time.Now()
	during := load(30 * time.Second)
	loadEnd := time.Now()
	var p store.RetentionPass
	require.Eventually(t, func() bool {
		var err error
		p, err = st.GetRetentionPass(ctx, passID)
		return err == nil && p.FinishedAt != nil
	}, 20*time.Minute, time.Second)
	t.Logf("pass %s: %v from trigger to finish; load ran %v..%v after the trigger; counts %v", passID,
		p.FinishedAt.Sub(triggered).Round(time.Second), loadStart.Sub(triggered).Round(time.Second),
		loadEnd.Sub(triggered).Round(time.Second), p.Counts)
	t.Logf("ingest 202 during the pass: p50 %v ms, p99 %v ms, max %v ms, errors %v", during["p50_ms"], during["p99_ms"], during["max_ms"], during["errors"])
	require.Zero(t, during["errors"], "no ingest failed during the pass")
	if !p.FinishedAt.After(loadEnd) {
		t.Logf("the pass finished %v before the load ended: part of the window ran without it", loadEnd.Sub(*p.FinishedAt).Round(time.Second))
	}
	require.EqualValues(t, seed.PerGroup, p.Counts[store.RetentionAlerts])
}
