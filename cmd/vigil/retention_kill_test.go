package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// The real `vigil worker` process SIGKILLed in the middle of a retention pass (issue 28 item 3): the
// batch it was running rolls back whole (no alert is left with some of its rows gone, none gone
// with rows left behind); a second worker started afterwards takes the purge over once the
// heartbeat times out, and the pass purges every eligible alert, counts each once, and writes one
// `purged` audit event. The pass is started by triggering the Schedule the worker ensured at start.
func TestRetentionPass_WorkerProcessSIGKILL(t *testing.T) {
	prefix := testenv.TaskQueuePrefix(t) + "-retkill"
	c := newCluster(t, 0, 1, map[string]string{
		"TEMPORAL_TASK_QUEUE_PREFIX": prefix,
		"RAW_PAYLOAD_RETENTION_DAYS": "30",
		"ALERT_RETENTION_DAYS":       "30",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := testenv.RetentionSeed{Tag: "s" + uuid.NewString()[:8], PerGroup: 5000, Now: time.Now().UTC()}
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))

	tc, err := temporal.Dial(ctx, temporal.Config{HostPort: testenv.TemporalAddress(t), Codec: testenv.PayloadCodec(t)}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer tc.Close()
	schedule := tc.ScheduleClient().GetHandle(ctx, ids.RetentionSchedule(prefix))
	t.Cleanup(func() { _ = schedule.Delete(context.Background()) })
	triggered := time.Now().Add(-time.Second)
	require.Eventually(t, func() bool { // the worker ensures the schedule just after it starts serving /metrics
		return schedule.Trigger(ctx, client.ScheduleTriggerOptions{}) == nil
	}, time.Minute, 100*time.Millisecond)

	var passID string
	require.Eventually(t, func() bool {
		var p store.RetentionPass
		err := c.st.DB().NewSelect().Model(&p).Where("started_at >= ?", triggered).Order("started_at DESC").Limit(1).Scan(ctx)
		passID = p.PassID
		return err == nil && p.Counts[store.RetentionAlerts] >= 200
	}, 3*time.Minute, 10*time.Millisecond, "the pass deletes alerts")
	require.True(t, strings.HasPrefix(passID, ids.RetentionSchedule(prefix)+"-"), passID)
	c.workers[0].kill(t)
	killedAt := time.Now()

	mid, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	t.Logf("after SIGKILL: %+v", mid)
	require.Zero(t, mid.Partial, "no alert is left with some of its rows gone")
	require.Zero(t, mid.Orphaned, "no purged alert left rows behind")
	require.Greater(t, mid.Present, 0, "killed mid-pass")

	w2 := c.launch("worker-2", "worker")
	var p store.RetentionPass
	require.Eventually(t, func() bool {
		p, err = c.st.GetRetentionPass(ctx, passID)
		return err == nil && p.FinishedAt != nil
	}, 4*time.Minute, 250*time.Millisecond, "the pass finishes on the second worker")
	t.Logf("pass %s finished %v after the kill: %v", passID, p.FinishedAt.Sub(killedAt).Round(time.Second), p.Counts)

	end, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{}, end)
	require.EqualValues(t, seed.PerGroup, p.Counts[store.RetentionAlerts], "each alert counted once across the kill")
	require.EqualValues(t, 3*seed.PerGroup, p.Counts[store.RetentionRawPayloads])
	var purged int
	require.NoError(t, c.st.DB().NewRaw("SELECT count(*) FROM audit_events WHERE action = 'purged' AND resource_name = ?", passID).Scan(ctx, &purged))
	require.Equal(t, 1, purged)

	// The second worker's /metrics counts what it purged.
	resp, err := http.Get(w2.metrics)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `vigil_retention_purged_rows_total{kind="alerts"}`)
}
