package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/store"
)

// hostile holds text that breaks naive quoting: SQL and array-literal quotes, backslashes, bun's and
// Postgres' placeholders, and characters outside ASCII.
const hostile = `it's "quoted" \ back\\slash $1 $$ ? ?? {a,b} NULL 日本語 é 🚨`

func ingestAlert(fp string) store.IngestAlert {
	return store.IngestAlert{UUID: uuid.New(), Title: "t " + fp, Severity: "High", SourceName: "generic", Fingerprint: fp,
		RawPayload: []byte(`{"k":"v"}`), ActorType: "api", ActorKeyPrefix: "cai_test"}
}

func countRows(t *testing.T, st *store.Store, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().NewRaw(query, args...).Scan(context.Background(), &n))
	return n
}

func TestIngest_StoresValuesExactly(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	desc := hostile + "\nsecond line\ttab"
	occurred := time.Date(2026, 11, 23, 6, 7, 8, 123456000, time.FixedZone("x", 3600))
	raw := map[string]any{"q": hostile, hostile: []any{hostile, 1.5, nil, true}, "ü": map[string]any{"$1": "?"}}
	rawJSON, err := json.Marshal(raw)
	require.NoError(t, err)
	normalized := store.NormalizedRecord{Fields: map[string]any{"src_ip": hostile, "tags": []any{"a", hostile}},
		RuleRef:    &store.RuleReference{SourceRuleID: hostile, Name: hostile},
		Indicators: []store.IndicatorPair{{Type: "domain", Value: "bücher.example"}}, SourceSeverity: hostile}
	normJSON, err := json.Marshal(normalized)
	require.NoError(t, err)
	tags := []string{hostile, `a,b`, `c"d`, `e\f`, `NULL`, ``, ` spaced `, `{}`, `ü`}
	in := store.IngestAlert{UUID: uuid.New(), Title: hostile, Severity: "Critical", SourceName: "src-" + hostile,
		OccurredAt: occurred, Description: &desc, Tags: tags, Fingerprint: "fp-" + uuid.NewString() + hostile,
		RawPayload: rawJSON, Normalized: normJSON, ActorType: "api", ActorKeyPrefix: "cai_" + hostile}

	res, err := st.Ingest(ctx, in, time.Hour)
	require.NoError(t, err)
	require.Equal(t, store.IngestResult{AlertUUID: in.UUID}, res)

	a, err := st.GetAlert(ctx, in.UUID)
	require.NoError(t, err)
	require.Equal(t, hostile, a.Title)
	require.Equal(t, "Critical", a.Severity)
	require.Equal(t, in.SourceName, a.SourceName)
	require.True(t, occurred.Equal(a.OccurredAt), "occurred_at %s, want %s", a.OccurredAt, occurred)
	require.NotNil(t, a.Description)
	require.Equal(t, desc, *a.Description)
	require.Equal(t, tags, a.Tags)
	require.NotNil(t, a.Fingerprint)
	require.Equal(t, in.Fingerprint, *a.Fingerprint)
	require.Equal(t, raw, a.RawPayload)
	require.Equal(t, normalized, a.Normalized)
	require.Zero(t, a.DuplicateCount)

	var ev struct {
		ActorType      string         `bun:"actor_type"`
		ActorKeyPrefix string         `bun:"actor_key_prefix"`
		References     map[string]any `bun:"references,type:jsonb"`
	}
	require.NoError(t, st.DB().NewRaw(`SELECT actor_type, actor_key_prefix, "references" FROM activity_events
		WHERE alert_uuid = ? AND event_type = 'alert_created'`, in.UUID).Scan(ctx, &ev))
	require.Equal(t, "api", ev.ActorType)
	require.Equal(t, in.ActorKeyPrefix, ev.ActorKeyPrefix)
	require.Equal(t, map[string]any{"source_name": in.SourceName}, ev.References)

	// Absent optional values are NULL / defaults, not empty strings.
	bare := ingestAlert("fp-" + uuid.NewString())
	bare.ActorKeyPrefix = ""
	_, err = st.Ingest(ctx, bare, time.Hour)
	require.NoError(t, err)
	b, err := st.GetAlert(ctx, bare.UUID)
	require.NoError(t, err)
	require.Nil(t, b.Description)
	require.Equal(t, []string{}, b.Tags)
	require.WithinDuration(t, b.IngestedAt, b.OccurredAt, time.Second, "no occurred_at: the ingestion time")
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND actor_key_prefix IS NULL`, bare.UUID))
}

func TestIngest_DedupWindow(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	fp := "fp-" + uuid.NewString()
	first := ingestAlert(fp)
	res, err := st.Ingest(ctx, first, time.Hour)
	require.NoError(t, err)
	require.False(t, res.Duplicate)

	for i := 1; i <= 2; i++ {
		again := ingestAlert(fp)
		res, err := st.Ingest(ctx, again, time.Hour)
		require.NoError(t, err)
		require.Equal(t, store.IngestResult{AlertUUID: first.UUID, Duplicate: true, DuplicateCount: i}, res)
		_, err = st.GetAlert(ctx, again.UUID)
		require.ErrorIs(t, err, store.ErrNotFound, "a repeat creates no alert")
	}
	a, err := st.GetAlert(ctx, first.UUID)
	require.NoError(t, err)
	require.Equal(t, 2, a.DuplicateCount)
	require.NotNil(t, a.LastSeenAt)
	require.Equal(t, 2, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_deduplicated'`, first.UUID))
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?`, first.UUID), "a repeat queues no pipeline")

	// Once the window has passed, the fingerprint belongs to a new alert.
	_, err = st.DB().NewRaw(`UPDATE alert_fingerprints SET created_at = now() - interval '2 hours' WHERE fingerprint = ?`, fp).Exec(ctx)
	require.NoError(t, err)
	later := ingestAlert(fp)
	res, err = st.Ingest(ctx, later, time.Hour)
	require.NoError(t, err)
	require.Equal(t, store.IngestResult{AlertUUID: later.UUID}, res)
	res, err = st.Ingest(ctx, ingestAlert(fp), time.Hour)
	require.NoError(t, err)
	require.Equal(t, store.IngestResult{AlertUUID: later.UUID, Duplicate: true, DuplicateCount: 1}, res, "repeats now count on the new owner")

	// Window 0 disables dedup.
	fp0 := "fp-" + uuid.NewString()
	for range 2 {
		in := ingestAlert(fp0)
		res, err := st.Ingest(ctx, in, 0)
		require.NoError(t, err)
		require.Equal(t, store.IngestResult{AlertUUID: in.UUID}, res)
	}
	require.Equal(t, 2, countRows(t, st, `SELECT count(*) FROM alerts WHERE fingerprint = ?`, fp0))
}

func TestIngest_ConcurrentIdenticalMakesOneAlert(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	const n = 8
	fp := "fp-" + uuid.NewString()
	results := make([]store.IngestResult, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			in := ingestAlert(fp)
			ready.Done()
			<-start
			results[i], errs[i] = st.Ingest(ctx, in, time.Hour)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()

	var owner uuid.UUID
	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		if !results[i].Duplicate {
			created++
			owner = results[i].AlertUUID
		}
	}
	require.Equal(t, 1, created, "exactly one ingest creates the alert")
	counts := map[int]bool{}
	for _, r := range results {
		require.Equal(t, owner, r.AlertUUID)
		if r.Duplicate {
			counts[r.DuplicateCount] = true
		}
	}
	require.Len(t, counts, n-1, "each repeat saw its own count")
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM alerts WHERE fingerprint = ?`, fp))
	a, err := st.GetAlert(ctx, owner)
	require.NoError(t, err)
	require.Equal(t, n-1, a.DuplicateCount)
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?`, owner))
	require.Equal(t, n-1, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_deduplicated'`, owner))
}

func TestIngest_OutboxRowInTheSameTransaction(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	in := ingestAlert("fp-" + uuid.NewString())
	_, err := st.Ingest(ctx, in, time.Hour)
	require.NoError(t, err)

	// Every row the statement wrote carries the id of the transaction that wrote it (xmin).
	var xids []string
	require.NoError(t, st.DB().NewRaw(`SELECT xmin::text FROM alerts WHERE uuid = ?0
		UNION ALL SELECT xmin::text FROM alert_fingerprints WHERE alert_uuid = ?0
		UNION ALL SELECT xmin::text FROM alert_outbox WHERE alert_uuid = ?0 AND kind = 'pipeline'
		UNION ALL SELECT xmin::text FROM activity_events WHERE alert_uuid = ?0 AND event_type = 'alert_created'`, in.UUID).Scan(ctx, &xids))
	require.Len(t, xids, 4, "alert, fingerprint, outbox row and event")
	for _, x := range xids[1:] {
		require.Equal(t, xids[0], x, "all written by one transaction")
	}

	// A failing ingest (the payload is not JSON) leaves nothing behind: no fingerprint, no outbox row.
	bad := ingestAlert("fp-" + uuid.NewString())
	bad.RawPayload = []byte(`{"unterminated`)
	_, err = st.Ingest(ctx, bad, time.Hour)
	require.Error(t, err)
	require.Zero(t, countRows(t, st, `SELECT count(*) FROM alert_fingerprints WHERE fingerprint = ?`, bad.Fingerprint))
	require.Zero(t, countRows(t, st, `SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?`, bad.UUID))
	require.Zero(t, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ?`, bad.UUID))
	// The fingerprint is still free.
	good := ingestAlert(bad.Fingerprint)
	res, err := st.Ingest(ctx, good, time.Hour)
	require.NoError(t, err)
	require.Equal(t, store.IngestResult{AlertUUID: good.UUID}, res)
}

// An ingest's wake-up carries how long its statement took (the dispatcher's admission follows it);
// other wake-ups carry nothing.
func TestIngest_WakeUpCarriesItsLatency(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	ln := pgdriver.NewListener(st.DB())
	defer ln.Close()
	require.NoError(t, ln.Listen(ctx, store.OutboxChannel))
	ch := ln.Channel()
	// A wake-up of an earlier test's ingest may still be on its way (a loaded machine delays the
	// waker's goroutine): wait for the channel to be quiet, so the next one is this ingest's.
	for quiet := false; !quiet; {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			quiet = true
		}
	}
	began := time.Now()
	res, err := st.Ingest(ctx, ingestAlert("wake-latency-"+uuid.NewString()), 0)
	require.NoError(t, err)
	took := time.Since(began)
	t.Cleanup(func() {
		_, _ = st.DB().NewRaw("DELETE FROM alerts WHERE uuid = ?", res.AlertUUID).Exec(context.Background())
	})
	select {
	case n := <-ch:
		d, ok := store.IngestLatency(n.Payload)
		require.True(t, ok, "payload %q", n.Payload)
		require.Greater(t, d, time.Duration(0))
		require.LessOrEqual(t, d, took)
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up")
	}
	for _, p := range []string{"", "x", "-5", "0"} {
		_, ok := store.IngestLatency(p)
		require.False(t, ok, p)
	}
}
