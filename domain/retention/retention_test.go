package retention_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/retention"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type counter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *counter) RetentionPurged(kind string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[kind] += n
}

func count(t *testing.T, st *store.Store, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().NewRaw(q, args...).Scan(context.Background(), &n), q)
	return n
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, retention.Policy{}.Validate())
	require.NoError(t, retention.Policy{RawPayloadDays: 30, AlertDays: 365, AuditDays: 400}.Validate())
	for _, p := range []retention.Policy{{RawPayloadDays: -1}, {AlertDays: -30}, {AuditDays: -400}} {
		require.Error(t, p.Validate(), "%+v", p)
		_, err := retention.New(nil, p, retention.Options{})
		require.Error(t, err, "New refuses %+v", p)
	}
}

// Retention over 100 000 alerts (issue 28 item 3): closed-and-old alerts go with every row of
// theirs; open-but-old and closed-but-recent stay; raw payloads go only past their days; indicators
// stay while another alert links them; audit events past their days go; the metrics roll-up still
// adds up; and the pass writes exactly one `purged` audit event with the counts. Each batch (one
// transaction, the longest any lock is held) is timed.
func TestRetention_100kAlerts(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
	now := time.Now().UTC()
	seed := testenv.RetentionSeed{Tag: "r" + uuid.NewString()[:8], PerGroup: 25_000, Now: now}
	start := time.Now()
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))
	t.Logf("seeded %d alerts with their rows in %v", 4*seed.PerGroup, time.Since(start))
	// Audit events: 10 past 400 days, 10 recent.
	for i := range 20 {
		at := now.Add(-time.Duration(i%2*500+1) * 24 * time.Hour)
		require.NoError(t, st.AppendAuditEvent(ctx, nil, &store.AuditEvent{Action: store.AuditCreated, ResourceType: "api_key",
			ResourceName: seed.Tag, ActorType: store.ActorAPI, CreatedAt: at}))
	}
	require.Equal(t, 4*seed.PerGroup, count(t, st, "SELECT count(*) FROM alerts"))

	tables := []string{"activity_events", "alert_findings", "alert_fingerprints", "alert_indicators", "agent_events",
		"agent_deliveries", "enrichment_parked", "alert_outbox", "start_outbox", "workflow_runs", "indicators"}
	before := map[string]int{}
	for _, tb := range tables {
		before[tb] = count(t, st, "SELECT count(*) FROM "+tb)
	}

	var c counter
	svc, err := retention.New(st, retention.Policy{RawPayloadDays: 30, AlertDays: 30, AuditDays: 400},
		retention.Options{Counter: &c, Now: func() time.Time { return now }})
	require.NoError(t, err)
	pass, err := svc.Begin(ctx, "test-pass-"+seed.Tag)
	require.NoError(t, err)
	again, err := svc.Begin(ctx, pass.PassID)
	require.NoError(t, err)
	require.Equal(t, pass.AlertCutoff.UnixMicro(), again.AlertCutoff.UnixMicro(), "a resumed pass keeps its cutoffs")

	start = time.Now()
	var batchTimes []time.Duration
	for _, kind := range retention.Kinds() {
		for {
			t0 := time.Now()
			got, err := svc.Batch(ctx, pass, kind)
			require.NoError(t, err)
			if len(got) == 0 {
				break
			}
			batchTimes = append(batchTimes, time.Since(t0))
		}
	}
	elapsed := time.Since(start)
	p, err := svc.Finish(ctx, pass.PassID)
	require.NoError(t, err)
	slices.Sort(batchTimes)
	t.Logf("pass: %v for %d batches; batch (one transaction) p50 %v p99 %v max %v; counts %v", elapsed, len(batchTimes),
		batchTimes[len(batchTimes)/2], batchTimes[len(batchTimes)*99/100], batchTimes[len(batchTimes)-1], p.Counts)

	n := seed.PerGroup
	// The right alerts went, and only they.
	integrity, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{}, integrity, "every closed-and-old alert gone whole")
	require.Equal(t, 3*n, count(t, st, "SELECT count(*) FROM alerts"))
	require.Equal(t, n, count(t, st, "SELECT count(*) FROM alerts WHERE status = 'Open' AND ingested_at < ?", now.Add(-50*24*time.Hour)), "open but old: kept")
	require.Equal(t, n, count(t, st, "SELECT count(*) FROM alerts WHERE status = 'Closed'"), "closed but recent: kept")
	// Raw payloads: cleared past 30 days (B, C), kept on D.
	require.Equal(t, 2*n, count(t, st, "SELECT count(*) FROM alerts WHERE raw_payload IS NULL AND ingested_at < ?", now.Add(-30*24*time.Hour)))
	require.Equal(t, n, count(t, st, "SELECT count(*) FROM alerts WHERE raw_payload IS NOT NULL"))
	require.Equal(t, n, count(t, st, "SELECT count(*) FROM alerts WHERE raw_payload->>'host' IS NOT NULL AND ingested_at > ?", now.Add(-2*24*time.Hour)))
	// The raw payload's copies in agent event payloads went with it; the rest of the payload stayed.
	require.Equal(t, 0, count(t, st, "SELECT count(*) FROM agent_events WHERE payload #>> '{alert,raw_payload,user}' IS NOT NULL"))
	require.Equal(t, n, count(t, st, "SELECT count(*) FROM agent_events WHERE payload #>> '{alert,uuid}' IS NOT NULL"))
	// Rows of the kept alerts all there; those of A gone.
	after := map[string]int{}
	for _, tb := range tables {
		after[tb] = count(t, st, "SELECT count(*) FROM "+tb)
	}
	want := map[string]int{
		"activity_events": 2 * n, "alert_findings": n, "alert_fingerprints": n, "agent_events": n, "agent_deliveries": n,
		"enrichment_parked": n / 5, "alert_outbox": n / 7, "start_outbox": n / 10,
		// exclusive link + shared link of A; B's shared links stay.
		"alert_indicators": 2 * n,
		"workflow_runs":    0, // kept
		// A's own indicators, and the shared ones only A linked (50..99).
		"indicators": n + 50,
	}
	for tb, w := range want {
		require.Equal(t, w, before[tb]-after[tb], "rows gone from %s", tb)
	}
	require.Equal(t, 50, count(t, st, "SELECT count(*) FROM indicators WHERE value LIKE ?", seed.Tag+"-shared-%"), "shared indicators another alert links: kept")
	// The daily roll-up follows the deletions.
	require.Equal(t, 3*n, count(t, st, "SELECT coalesce(sum(alerts), 0)::int FROM alert_metrics_daily"))
	// Audit: the 10 old events went; one purged event with the counts.
	require.Equal(t, 10, count(t, st, "SELECT count(*) FROM audit_events WHERE resource_name = ?", seed.Tag))
	events, total, err := st.ListAuditEvents(ctx, store.AuditFilter{Actions: []string{store.AuditPurged}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	ev := events[0]
	require.Equal(t, retention.AuditResourceType, ev.ResourceType)
	require.Equal(t, pass.PassID, ev.ResourceName)
	require.Equal(t, store.ActorSystem, ev.ActorType)
	require.EqualValues(t, n, ev.Changes["alerts"].To)
	require.EqualValues(t, 3*n, ev.Changes["raw_payloads"].To, "A's payloads were cleared before A went")
	require.EqualValues(t, n+50, ev.Changes["indicators"].To)
	require.EqualValues(t, 10, ev.Changes["audit_events"].To)
	require.EqualValues(t, 2*n, ev.Changes["agent_event_payloads"].To, "A's and B's events: payloads are cleared before A goes")
	require.EqualValues(t, 2*n, ev.Changes["activity_events"].To)
	require.NotNil(t, ev.Changes["alert_cutoff"].To)
	// The counter saw the same rows.
	require.Equal(t, int64(n), c.n["alerts"])
	require.Equal(t, int64(3*n), c.n["raw_payloads"])
	require.Equal(t, int64(n+50), c.n["indicators"])

	// Finishing again (a retried activity) writes no second event.
	_, err = svc.Finish(ctx, pass.PassID)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, st, "SELECT count(*) FROM audit_events WHERE action = 'purged'"))

	// A second pass finds nothing and says so in its own event.
	pass2, err := svc.Begin(ctx, "test-pass-2-"+seed.Tag)
	require.NoError(t, err)
	for _, kind := range retention.Kinds() {
		done, err := svc.Purge(ctx, pass2, kind, time.Minute, nil)
		require.NoError(t, err)
		require.True(t, done)
	}
	p2, err := svc.Finish(ctx, pass2.PassID)
	require.NoError(t, err)
	require.Empty(t, p2.Counts)
	require.Equal(t, 2, count(t, st, "SELECT count(*) FROM audit_events WHERE action = 'purged'"))
	require.Equal(t, 3*n, count(t, st, "SELECT count(*) FROM alerts"))
}

// Settings of 0 keep everything: a pass touches nothing but writes its event.
func TestRetention_ZeroKeeps(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
	now := time.Now().UTC()
	seed := testenv.RetentionSeed{Tag: "z" + uuid.NewString()[:8], PerGroup: 100, Now: now}
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))
	svc, err := retention.New(st, retention.Policy{}, retention.Options{})
	require.NoError(t, err)
	pass, err := svc.Begin(ctx, "zero-"+seed.Tag)
	require.NoError(t, err)
	require.Nil(t, pass.AlertCutoff)
	require.Nil(t, pass.RawPayloadCutoff)
	require.Nil(t, pass.AuditCutoff)
	for _, kind := range retention.Kinds() {
		got, err := svc.Batch(ctx, pass, kind)
		require.NoError(t, err)
		require.Empty(t, got)
	}
	integrity, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{Present: seed.PerGroup}, integrity)
	require.Equal(t, 0, count(t, st, "SELECT count(*) FROM alerts WHERE title LIKE ? AND raw_payload IS NULL", seed.Tag+"%"))
	p, err := svc.Finish(ctx, pass.PassID)
	require.NoError(t, err)
	require.NotNil(t, p.FinishedAt)
	_, err = svc.Batch(ctx, pass, "bogus")
	require.Error(t, err)
	_, err = svc.Begin(ctx, "")
	require.Error(t, err)
}

// An alert reopened (or linked) while a batch runs is not deleted under it: the batch locks its
// alerts first, and skips those another transaction holds.
func TestRetention_SkipsLockedAlert(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
	now := time.Now().UTC()
	seed := testenv.RetentionSeed{Tag: "l" + uuid.NewString()[:8], PerGroup: 100, Now: now}
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))
	svc, err := retention.New(st, retention.Policy{AlertDays: 30}, retention.Options{AlertBatch: 1000})
	require.NoError(t, err)
	pass, err := svc.Begin(ctx, "locked-"+seed.Tag)
	require.NoError(t, err)

	// Another transaction holds one A alert (as a reopening PATCH would) and reopens it.
	var held uuid.UUID
	require.NoError(t, st.DB().NewRaw("SELECT md5(? || '-alert-1')::uuid", seed.Tag).Scan(ctx, &held))
	tx, err := st.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.NewRaw("SELECT 1 FROM alerts WHERE uuid = ? FOR UPDATE", held).Exec(ctx)
	require.NoError(t, err)

	done, err := svc.Purge(ctx, pass, retention.KindAlerts, time.Minute, nil)
	require.NoError(t, err)
	require.True(t, done)
	_, err = tx.NewRaw("UPDATE alerts SET status = 'Open', closed_at = NULL WHERE uuid = ?", held).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	integrity, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{Present: 1}, integrity, "the reopened alert stays whole")
	// It is Open now: later passes keep it.
	got, err := svc.Batch(ctx, pass, retention.KindAlerts)
	require.NoError(t, err)
	require.Empty(t, got)
}

// failingStore is the real store with the first fail alert batches refused (as a statement timeout
// on a loaded database would), recording each batch's limit.
type failingStore struct {
	*store.Store
	fail   int
	limits []int
}

func (f *failingStore) PurgeClosedAlertsBefore(ctx context.Context, passID string, cutoff time.Time, limit int) (map[string]int64, error) {
	f.limits = append(f.limits, limit)
	if f.fail > 0 {
		f.fail--
		return nil, context.DeadlineExceeded
	}
	return f.Store.PurgeClosedAlertsBefore(ctx, passID, cutoff, limit)
}

// A batch that fails rolls back and is retried at half the size; too many failures in a row end the
// call with the error (the activity is then retried by Temporal).
func TestRetention_FailedBatchRetriedSmaller(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
	seed := testenv.RetentionSeed{Tag: "f" + uuid.NewString()[:8], PerGroup: 100, Now: time.Now().UTC()}
	require.NoError(t, testenv.SeedRetention(t, ctx, testenv.DatabaseURL(t), seed))
	fs := &failingStore{Store: st, fail: 2}
	svc, err := retention.New(fs, retention.Policy{AlertDays: 30}, retention.Options{AlertBatch: 40})
	require.NoError(t, err)
	pass, err := svc.Begin(ctx, "fail-"+seed.Tag)
	require.NoError(t, err)
	done, err := svc.Purge(ctx, pass, retention.KindAlerts, time.Minute, nil)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, []int{40, 20, 10}, fs.limits[:3])
	integrity, err := testenv.CheckRetentionIntegrity(ctx, testenv.DatabaseURL(t), seed)
	require.NoError(t, err)
	require.Equal(t, testenv.RetentionIntegrity{}, integrity)

	fs.fail = 100
	_, err = svc.Purge(ctx, pass, retention.KindAlerts, time.Minute, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
