package temporal_test

import (
	"context"
	"flag"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/retention"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/workflows"
)

// recordRetentionHistory, when set, makes TestRetentionPass_WorkerStoppedMidPass write the pass's
// history there (workflows/testdata/retention_pass_history.json feeds the replay test):
//
//	go test ./temporal -run TestRetentionPass_WorkerStoppedMidPass -record-retention-history=$PWD/workflows/testdata/retention_pass_history.json
var recordRetentionHistory = flag.String("record-retention-history", "", "write the retention pass's Temporal history to this file")

// Replicas starting together all ensure the schedule: one creates it, the others find it; an
// existing schedule with an older shape is brought back to the hourly, SKIP-overlap one.
func TestEnsureRetentionSchedule_IdempotentUnderReplicas(t *testing.T) {
	c, _ := dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := testenv.TaskQueuePrefix(t) + "-sched-" + uuid.NewString()[:6]
	id := ids.RetentionSchedule(prefix)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = temporal.EnsureRetentionSchedule(ctx, c, prefix)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, id)
	check := func() {
		t.Helper()
		d, err := h.Describe(ctx)
		require.NoError(t, err)
		require.Len(t, d.Schedule.Spec.Intervals, 1)
		require.Equal(t, time.Hour, d.Schedule.Spec.Intervals[0].Every)
		require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, d.Schedule.Policy.Overlap)
		act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok, "%T", d.Schedule.Action)
		require.Equal(t, "RetentionPass", act.Workflow)
		require.Equal(t, temporal.NewQueues(prefix).Actions, act.TaskQueue)
		require.Equal(t, id, act.ID)
	}
	check()

	// An operator's pause stays; an older shape (every 2 h, overlap allowed) is corrected. The schedule
	// takes an update and a pause asynchronously, and an update replaces the schedule's state with the
	// one it read: each step waits until the schedule shows it (else the pause, sent right after the
	// update, could be applied first and then undone by it; or the worker's update below could read
	// the schedule before the pause).
	describes := func(ok func(d *client.ScheduleDescription) bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			d, err := h.Describe(ctx)
			return err == nil && ok(d)
		}, 10*time.Second, 50*time.Millisecond)
	}
	require.NoError(t, h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec.Intervals = []client.ScheduleIntervalSpec{{Every: 2 * time.Hour}}
		s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}}))
	describes(func(d *client.ScheduleDescription) bool {
		return len(d.Schedule.Spec.Intervals) == 1 && d.Schedule.Spec.Intervals[0].Every == 2*time.Hour
	})
	require.NoError(t, h.Pause(ctx, client.SchedulePauseOptions{Note: "maintenance"}))
	describes(func(d *client.ScheduleDescription) bool { return d.Schedule.State.Paused })
	require.NoError(t, temporal.EnsureRetentionSchedule(ctx, c, prefix))
	check()
	d, err := h.Describe(ctx)
	require.NoError(t, err)
	require.True(t, d.Schedule.State.Paused, "an operator's pause is kept")
}

// A worker stopped mid-pass (its RetentionPurge attempt cancelled in the middle of a batch) leaves no
// half-deleted alert; the pass moves to the next worker when the heartbeat times out, resumes where
// the last committed batch left off, purges every eligible alert, counts each row once (the counts
// live in the batches' transactions) and writes exactly one `purged` audit event.
func TestRetentionPass_WorkerStoppedMidPass(t *testing.T) {
	c, _ := dial(t)
	st := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := testenv.RetentionSeed{Tag: "k" + uuid.NewString()[:8], PerGroup: 2000, Now: time.Now().UTC()}
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))

	queues := temporal.NewQueues(testenv.TaskQueuePrefix(t) + "-ret")
	reg := prometheus.NewRegistry()
	wm := metrics.NewWorker(reg)
	startWorker := func() (stop func()) {
		svc, err := retention.New(st, retention.Policy{RawPayloadDays: 30, AlertDays: 30, AuditDays: 400},
			retention.Options{AlertBatch: 20, Counter: wm})
		require.NoError(t, err)
		wctx, wcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- temporal.RunWorkers(wctx, c, queues, &activities.Activities{Log: testLogger(), Retention: svc}, testLogger())
		}()
		return func() {
			wcancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(time.Minute):
				t.Error("workers did not stop")
			}
		}
	}

	stop := startWorker()
	wfID := "retention-kill-" + seed.Tag
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: queues.Actions},
		workflows.RetentionPass, workflows.RetentionPassInput{Reason: "test"})
	require.NoError(t, err)
	// Stop the worker once some alert batches have committed.
	require.Eventually(t, func() bool {
		p, err := st.GetRetentionPass(ctx, wfID)
		return err == nil && p.Counts[store.RetentionAlerts] >= 200
	}, 3*time.Minute, 20*time.Millisecond)
	stop()
	stoppedAt := time.Now()

	mid, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	t.Logf("after the stop: %+v", mid)
	require.Zero(t, mid.Partial, "no alert is left with some of its rows gone")
	require.Zero(t, mid.Orphaned, "no purged alert left rows behind")
	require.Greater(t, mid.Present, 0, "stopped mid-pass")
	require.Less(t, mid.Present, seed.PerGroup)

	stop = startWorker()
	defer stop()
	var res activities.RetentionResult
	require.NoError(t, run.Get(ctx, &res))
	t.Logf("pass resumed and finished %v after the stop: %v", time.Since(stoppedAt), res.Counts)

	end, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{}, end, "every closed-and-old alert gone, whole")
	require.EqualValues(t, seed.PerGroup, res.Counts[store.RetentionAlerts], "each alert counted once across the stop")
	require.EqualValues(t, 2*seed.PerGroup, res.Counts["activity_events"])
	require.EqualValues(t, seed.PerGroup+50, res.Counts[store.RetentionIndicators])
	var open, recent int
	require.NoError(t, st.DB().NewRaw(`SELECT count(*) FILTER (WHERE status = 'Open'), count(*) FILTER (WHERE status = 'Closed')
		FROM alerts WHERE title LIKE ?`, seed.Tag+" alert %").Scan(ctx, &open, &recent))
	require.Equal(t, 2*seed.PerGroup, open, "open alerts kept")
	require.Equal(t, seed.PerGroup, recent, "recently closed alerts kept")

	events, total, err := st.ListAuditEvents(ctx, store.AuditFilter{Actions: []string{store.AuditPurged}})
	require.NoError(t, err)
	n := 0
	for _, e := range events[:min(len(events), total)] {
		if e.ResourceName == wfID {
			n++
			require.EqualValues(t, seed.PerGroup, e.Changes[store.RetentionAlerts].To)
		}
	}
	require.Equal(t, 1, n, "one purged audit event for the pass")
	require.InDelta(t, float64(seed.PerGroup), purgedRows(t, reg, "alerts"), 20, "vigil_retention_purged_rows_total{kind=alerts}")

	if *recordRetentionHistory != "" {
		testenv.WriteHistory(t, c, wfID, *recordRetentionHistory)
	}
}

// purgedRows reads vigil_retention_purged_rows_total{kind} from reg.
func purgedRows(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "vigil_retention_purged_rows_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no vigil_retention_purged_rows_total{kind=%q}", kind)
	return 0
}
