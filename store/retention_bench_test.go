package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// clearRawPayloadsBeforeFix is the payload batch as it was before the agent events' index
// (docs/PERFORMANCE.md "Retention"): the agent events found by a join that read the whole table.
// Kept here only as the "before" of the A/B below.
const clearRawPayloadsBeforeFix = `WITH cleared AS (
		UPDATE alerts SET raw_payload = NULL, original_body = NULL WHERE uuid IN (
			SELECT uuid FROM alerts WHERE ingested_at < ? AND (raw_payload IS NOT NULL OR original_body IS NOT NULL)
			ORDER BY ingested_at LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING uuid
	), events AS (
		UPDATE agent_events SET payload = jsonb_set(payload, '{alert,raw_payload}', 'null'::jsonb)
		WHERE alert_uuid IN (SELECT uuid FROM cleared)
			AND jsonb_typeof(payload #> '{alert,raw_payload}') IS DISTINCT FROM 'null'
			AND payload #> '{alert,raw_payload}' IS NOT NULL
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM cleared), (SELECT count(*) FROM events)`

// BenchmarkRetentionPayloadBatches_IngestLatency measures the ingest's own statement (store.Ingest,
// one alert, one durable commit: the database's part of the 202) at 20 a second, open loop, over
// 100 000 seeded alerts, in windows of 20 s: with no retention batch running, with the payload
// batches as they were before (clearRawPayloadsBeforeFix), and with Store.ClearRawPayloadsBefore
// ("after"), each batch of 200 followed by a rest as long as it took (retention.DefaultRest), in the
// order none, before, after, none, after, before, none so that a drift of the machine's load weighs
// on each alike. It logs each window's p50 / p99 / max, the payloads cleared a second and the WAL
// written (cluster-wide). A measurement, not a gate:
//
//	go test ./store -run '^$' -bench BenchmarkRetentionPayloadBatches_IngestLatency -benchtime 1x -v
func BenchmarkRetentionPayloadBatches_IngestLatency(b *testing.B) {
	ctx := context.Background()
	st := testenv.Store(b)
	seed := testenv.RetentionSeed{Tag: "pb" + uuid.NewString()[:8], PerGroup: 25_000, Now: time.Now().UTC()}
	require.NoError(b, testenv.SeedRetention(b, ctx, testenv.DatabaseURL(b), seed))
	pass, err := st.BeginRetentionPass(ctx, store.RetentionPass{PassID: "bench-" + seed.Tag})
	require.NoError(b, err)
	cutoff := seed.Now.Add(-30 * 24 * time.Hour)

	batches := map[string]func() (int64, error){
		"before": func() (int64, error) {
			var alerts, events int64
			err := st.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return tx.NewRaw(clearRawPayloadsBeforeFix, cutoff, 200).Scan(ctx, &alerts, &events)
			})
			return alerts, err
		},
		"after": func() (int64, error) {
			c, err := st.ClearRawPayloadsBefore(ctx, pass.PassID, cutoff, 200)
			return c[store.RetentionRawPayloads], err
		},
	}
	walBytes := func() (n float64) { // the WAL's insert position: every database's WAL, exactly
		require.NoError(b, st.DB().NewRaw(`SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn`).Scan(ctx, &n))
		return n
	}
	n := 0
	window := func(variant string) {
		const d = 20 * time.Second
		stop := make(chan struct{})
		var cleared int64
		var purgeDone sync.WaitGroup
		if batch := batches[variant]; batch != nil {
			purgeDone.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					began := time.Now()
					k, err := batch()
					if err != nil {
						b.Errorf("%s batch: %v", variant, err)
						return
					}
					cleared += k
					time.Sleep(time.Since(began)) // retention.DefaultRest
				}
			})
		}
		wal0, began := walBytes(), time.Now()
		var mu sync.Mutex
		var took []time.Duration
		var ingests sync.WaitGroup
		tick := time.NewTicker(50 * time.Millisecond)
		for end := time.Now().Add(d); time.Now().Before(end); {
			<-tick.C
			n++
			i := n
			ingests.Go(func() {
				t0 := time.Now()
				_, err := st.Ingest(ctx, store.IngestAlert{Title: "bench ingest", Severity: "Low", SourceName: "generic",
					Fingerprint: fmt.Sprintf("%s-ingest-%d", seed.Tag, i), RawPayload: []byte(`{"user":"u@example.com"}`),
					ActorType: "system"}, 0)
				if err != nil {
					b.Errorf("ingest: %v", err)
				}
				mu.Lock()
				took = append(took, time.Since(t0))
				mu.Unlock()
			})
		}
		tick.Stop()
		ingests.Wait()
		close(stop)
		purgeDone.Wait()
		secs := time.Since(began).Seconds()
		slices.Sort(took)
		q := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
		b.Logf("%-6s ingest p50 %6.1f ms, p99 %6.1f ms, max %6.1f ms (%d); payloads cleared %5.0f/s; WAL %6.2f MB/s",
			variant, q(0.5), q(0.99), q(1), len(took), float64(cleared)/secs, (walBytes()-wal0)/secs/1e6)
	}
	for range b.N {
		for _, v := range []string{"none", "before", "after", "none", "after", "before", "none"} {
			window(v)
		}
	}
}
