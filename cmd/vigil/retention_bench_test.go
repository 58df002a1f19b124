package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"
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
// VIGIL_RETENTION_BENCH_RATE sets the ingest rate (default 50 a second). It prints, for each
// window, what the database's backends waited on and the WAL rates (waitSampler), the load average,
// and how fast the pass cleared payloads during its window. VIGIL_RETENTION_BENCH_CUT=1 ends the
// pass after the measurement instead of waiting for it to finish (A/B pairs: only the windows count).
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

	codec, err := payloadCodec(config{EncryptionKey: vars["ENCRYPTION_KEY"]}) // the stack's, derived as it derives it
	require.NoError(t, err)
	tc, err := temporal.Dial(ctx, temporal.Config{HostPort: vars["TEMPORAL_ADDRESS"], Codec: codec}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer tc.Close()
	st, err := store.Open(ctx, vars["DATABASE_URL"], store.Options{})
	require.NoError(t, err)
	defer st.Close()
	// The Schedule would start a pass at the top of the hour, maybe during the seed or inside the
	// measurement without a pass: paused before the seed, and the pass started by hand on the same
	// queue.
	schedule := tc.ScheduleClient().GetHandle(ctx, ids.RetentionSchedule(prefix))
	require.Eventually(t, func() bool { return schedule.Pause(ctx, client.SchedulePauseOptions{Note: "bench"}) == nil },
		time.Minute, 100*time.Millisecond)
	t.Cleanup(func() { _ = schedule.Delete(context.Background()) })

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

	// The seed's agent (subscribed to alert.enriched, endpoint outside the machine) would get a
	// delivery for every alert the windows ingest, planned and retried beside the measurement: off.
	_, err = st.DB().NewRaw(`UPDATE agents SET is_active = false WHERE name = ? || ' agent'`, seed.Tag).Exec(ctx)
	require.NoError(t, err)
	// Each window starts with no pipeline running or waiting: the alerts a window ingests are
	// enriched after it (the admission holds their pipelines while ingest is busy, and opens once it
	// pauses for a second), and that drain must not fall into the next window.
	drained := func() {
		require.Eventually(t, func() bool {
			var n int
			err := st.DB().NewRaw(`SELECT (SELECT count(*) FROM alert_outbox WHERE not_before < now() + interval '1 day')
				+ (SELECT count(*) FROM start_outbox WHERE not_before < now() + interval '1 day')`).Scan(ctx, &n)
			return err == nil && n == 0
		}, 10*time.Minute, 200*time.Millisecond)
		time.Sleep(2 * time.Second) // longer than the admission's quiet spell: not busy any more
	}
	drained()
	t.Logf("load average before: %s", loadAvg())
	sampler := newWaitSampler(t, vars["DATABASE_URL"])
	before := sampler.during(func() map[string]any { return load(30 * time.Second) })
	t.Logf("ingest 202 without a pass: p50 %v ms, p99 %v ms, max %v ms, errors %v", before["p50_ms"], before["p99_ms"], before["max_ms"], before["errors"])
	sampler.report("without a pass")

	drained()
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
	atStart, err := st.GetRetentionPass(ctx, passID)
	require.NoError(t, err)
	during := sampler.during(func() map[string]any { return load(30 * time.Second) })
	loadEnd := time.Now()
	atEnd, err := st.GetRetentionPass(ctx, passID)
	require.NoError(t, err)
	sampler.report("during the pass")
	t.Logf("load average after: %s", loadAvg())
	t.Logf("the pass during the measurement: %d raw payloads cleared (%.0f a second), %d alerts deleted",
		atEnd.Counts[store.RetentionRawPayloads]-atStart.Counts[store.RetentionRawPayloads],
		float64(atEnd.Counts[store.RetentionRawPayloads]-atStart.Counts[store.RetentionRawPayloads])/loadEnd.Sub(loadStart).Seconds(),
		atEnd.Counts[store.RetentionAlerts]-atStart.Counts[store.RetentionAlerts])
	t.Logf("ingest 202 during the pass: p50 %v ms, p99 %v ms, max %v ms, errors %v", during["p50_ms"], during["p99_ms"], during["max_ms"], during["errors"])
	require.Zero(t, during["errors"], "no ingest failed during the pass")
	if os.Getenv("VIGIL_RETENTION_BENCH_CUT") == "1" {
		// A/B pairs compare the two windows only: the rest of the pass is not waited for.
		require.NoError(t, tc.TerminateWorkflow(ctx, passID, "", "bench: measured"))
		return
	}
	var p store.RetentionPass
	require.Eventually(t, func() bool {
		var err error
		p, err = st.GetRetentionPass(ctx, passID)
		return err == nil && p.FinishedAt != nil
	}, 20*time.Minute, time.Second)
	t.Logf("pass %s: %v from trigger to finish; load ran %v..%v after the trigger; counts %v", passID,
		p.FinishedAt.Sub(triggered).Round(time.Second), loadStart.Sub(triggered).Round(time.Second),
		loadEnd.Sub(triggered).Round(time.Second), p.Counts)
	if !p.FinishedAt.After(loadEnd) {
		t.Logf("the pass finished %v before the load ended: part of the window ran without it", loadEnd.Sub(*p.FinishedAt).Round(time.Second))
	}
	require.EqualValues(t, seed.PerGroup, p.Counts[store.RetentionAlerts])
}

// loadAvg is /proc/loadavg's first three figures (the machine may be shared: they say how much).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown: " + err.Error()
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// waitSampler samples, every 5 ms while a measurement runs, what the bench database's active
// backends wait on (pg_stat_activity: wait_event_type:wait_event, "CPU" when none), by what they
// run: the ingest statement, a retention batch (payload clear, alert purge), a COMMIT, or other (by
// the first 40 characters of its statement). It also
// diffs pg_stat_wal around the measurement: WAL records, full-page images and bytes, and the WAL
// writes and syncs (cluster-wide: on a shared server they include other databases' work).
type waitSampler struct {
	t       *testing.T
	db      *sql.DB
	samples int
	counts  map[string]int
	wal     [6]float64
}

func newWaitSampler(t *testing.T, dsn string) *waitSampler {
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(time.Minute)))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return &waitSampler{t: t, db: db}
}

const waitSampleSQL = `SELECT CASE
		WHEN query LIKE 'WITH fp AS%' THEN 'ingest'
		WHEN query LIKE 'WITH cleared AS%' THEN 'payload batch'
		WHEN query ~ '^(DELETE FROM|SELECT uuid FROM (alerts|indicators)|SELECT DISTINCT indicator_uuid|UPDATE retention_passes)' THEN 'alert batch'
		WHEN query = 'COMMIT' THEN 'commit'
		ELSE 'other: ' || left(regexp_replace(query, '\s+', ' ', 'g'), 40) END,
	coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)
	FROM pg_stat_activity
	WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
	GROUP BY 1, 2`

const walStatSQL = `SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync FROM pg_stat_wal`

func (w *waitSampler) walStat() (out [6]float64) {
	require.NoError(w.t, w.db.QueryRow(walStatSQL).Scan(&out[0], &out[1], &out[2], &out[3], &out[4], &out[5]))
	return out
}

// during runs measure while sampling.
func (w *waitSampler) during(measure func() map[string]any) map[string]any {
	w.samples, w.counts = 0, map[string]int{}
	startWAL := w.walStat()
	started := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			rows, err := w.db.Query(waitSampleSQL)
			if err != nil {
				continue
			}
			w.samples++
			for rows.Next() {
				var class, wait string
				var n int
				if rows.Scan(&class, &wait, &n) == nil {
					w.counts[class+" "+wait] += n
				}
			}
			rows.Close()
		}
	}()
	res := measure()
	close(stop)
	<-done
	endWAL := w.walStat()
	secs := time.Since(started).Seconds()
	for i := range w.wal {
		w.wal[i] = (endWAL[i] - startWAL[i]) / secs
	}
	return res
}

// report logs the last measurement's samples, most frequent first, as the mean number of backends
// in that state (samples seen / samples taken; those under 0.005 left out), and its WAL rates.
func (w *waitSampler) report(label string) {
	keys := make([]string, 0, len(w.counts))
	for k := range w.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(w.counts[b], w.counts[a]) })
	var b strings.Builder
	for _, k := range keys {
		if float64(w.counts[k])/float64(max(1, w.samples)) < 0.005 {
			break
		}
		fmt.Fprintf(&b, "\n  %-45s %6.3f", k, float64(w.counts[k])/float64(max(1, w.samples)))
	}
	w.t.Logf("%s: backends by activity and wait (mean number active, %d samples):%s", label, w.samples, b.String())
	w.t.Logf("%s: WAL (cluster-wide) per second: %.0f records, %.0f full-page images, %.2f MB, buffers full %.1f, writes %.1f, syncs %.1f",
		label, w.wal[0], w.wal[1], w.wal[2]/1e6, w.wal[3], w.wal[4], w.wal[5])
}
