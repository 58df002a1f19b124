package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/vigil-soc/vigil/store"
)

// reruns asks for n re-runs (POST /v1/alerts/{uuid}/enrich) of the alerts of an earlier ingest run
// (titles "load <run> …", already finished) at rate per second, waits until each has finished once
// more (an alert_enriched or alert_enrichment_failed event recorded after its ask), then samples the
// outbox's started count until it is 0 (issue 26: "every re-run finishes, the outbox's started count
// returns to 0 within seconds of the last").
func reruns(ctx context.Context, enc *json.Encoder, url, key, dsn, run string, n int, rate float64, wait time.Duration) error {
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	var ids []string
	if err := st.DB().NewRaw(`SELECT uuid::text FROM alerts WHERE title LIKE ? || '%' AND enriched_at IS NOT NULL ORDER BY ingested_at LIMIT ?`,
		"load "+run+" ", n).Scan(ctx, &ids); err != nil {
		return fmt.Errorf("alerts of run %s: %w", run, err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("run %s has no finished alerts to re-run", run)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	var accepted, failed atomic.Int64
	var wg sync.WaitGroup
	started := time.Now()
	gap := time.Duration(float64(time.Second) / rate)
	for i, id := range ids {
		if d := time.Until(started.Add(time.Duration(i) * gap)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/alerts/"+id+"/enrich", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := hc.Do(req)
			if err != nil {
				failed.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				accepted.Add(1)
			} else {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	asked := time.Since(started)
	askedAt := time.Now()
	// Finished: a finish event recorded after the first ask, per alert.
	finished := func() (int, time.Time, error) {
		var row struct {
			N    int       `bun:"n"`
			Last time.Time `bun:"last"`
		}
		err := st.DB().NewRaw(`SELECT count(DISTINCT alert_uuid) AS n, coalesce(max(created_at), now()) AS last FROM activity_events
			WHERE alert_uuid = ANY (?::uuid[]) AND event_type IN ('alert_enriched', 'alert_enrichment_failed') AND created_at >= ?`,
			pgdialect.Array(ids), started).Scan(ctx, &row)
		return row.N, row.Last, err
	}
	deadline := time.Now().Add(wait)
	var done int
	var last time.Time
	for {
		if done, last, err = finished(); err != nil {
			return fmt.Errorf("count finished re-runs: %w", err)
		}
		if done >= int(accepted.Load()) || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The started count, until it is 0 (or the deadline).
	var zeroAfter float64 = -1
	var startedNow int
	for time.Now().Before(deadline.Add(time.Minute)) {
		if err := st.DB().NewRaw(`SELECT count(*) FROM alert_outbox WHERE started_at IS NOT NULL`).Scan(ctx, &startedNow); err != nil {
			return fmt.Errorf("count started outbox entries: %w", err)
		}
		if startedNow == 0 {
			zeroAfter = time.Since(last).Seconds()
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return enc.Encode(map[string]any{"run": run, "asked": len(ids), "accepted": accepted.Load(), "refused": failed.Load(),
		"ask_seconds": asked.Seconds(), "finished": done, "last_finish_after_last_ask_s": last.Sub(askedAt).Seconds(),
		"started_zero_after_last_finish_s": zeroAfter, "started_at_end": startedNow})
}
