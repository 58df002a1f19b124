// Command vigil-load measures Vigil under load with real HTTP at a constant (open-loop) rate:
// latency is counted from each request's scheduled start, so a slow server cannot hide its queueing
// by slowing the client down (no coordinated omission).
//
//	vigil-load ingest   -url URL -key KEY -rate 50 -duration 30s [-dsn DSN -wait 2m]   ingest ack (+ ingest→Enriched)
//	vigil-load list     -url URL -key KEY -rate 20 -duration 30s [-query 'status=Open'] [-path /v1/metrics/summary]  GET /v1/alerts (or path)
//	vigil-load backlog  -url URL -key KEY -n 2000 -dsn DSN [-payload FILE]                 Enriched/s draining a backlog
//	vigil-load probe    -temporal HOST:PORT -prefix vigil -n 500 -encryption-key KEY        bare one-activity workflows/s
//	                    (the stack's ENCRYPTION_KEY, or -payload-keys: its TEMPORAL_PAYLOAD_KEYS; the worker must decode what it starts)
//	vigil-load seed     -dsn DSN -n 100000 [-runs 20000]                                    bulk alerts (and workflow runs) for list and metrics
//	vigil-load provider -addr 127.0.0.1:9900                                                a local enrichment provider
//	vigil-load pgbench-log -prefix-log pgb                                                   percentiles of pgbench --log files (floor.sql)
//	vigil-load seed-case -dsn DSN -alert UUID                                               an open case holding the alert (grouping.sh)
//	vigil-load realworld [-dir kit/sources/testdata/realworld] [-details]                  extraction's recall and precision on the
//	                    corpus of real payloads, per source and overall (a table; VIGIL_REALWORLD_DIR also sets the directory)
//	vigil-load diskstall -dev vda                                                           until interrupted, a line per span ≥ 100 ms in which the
//	                    device completed no I/O with some in flight (start Unix ms, length ms; issue26.sh)
//
// Every command but diskstall (a line per stall) and realworld (a table) prints one JSON object.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
	"github.com/vigil-soc/vigil/workflows"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vigil-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: vigil-load ingest|enriched|list|backlog|reruns|probe|seed|seed-analyst|seed-cases|bulk|provider|agent-latency|pgbench-log|realworld|diskstall [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8000", "API base URL")
	key := fs.String("key", "", "API key (alerts:write/alerts:read)")
	rate := fs.Float64("rate", 50, "requests per second")
	duration := fs.Duration("duration", 30*time.Second, "how long to send")
	warmup := fs.Duration("warmup", 3*time.Second, "sent at the same rate first, not counted")
	dsn := fs.String("dsn", "", "Postgres URL (ingest→Enriched, backlog, seed)")
	wait := fs.Duration("wait", 3*time.Minute, "how long to wait for enrichment to finish")
	query := fs.String("query", "", "query string for list")
	n := fs.Int("n", 1000, "count (backlog alerts, probe workflows, seeded alerts)")
	temporalAddr := fs.String("temporal", "127.0.0.1:7233", "Temporal frontend")
	prefix := fs.String("prefix", "vigil", "task queue prefix")
	addr := fs.String("addr", "127.0.0.1:9900", "provider listen address")
	logPrefix := fs.String("prefix-log", "pgb", "pgbench --log-prefix of the files to read")
	runID := fs.String("run", "", "run id of an earlier ingest (enriched)")
	indicators := fs.Int("indicators", 2, "routable indicators per ingested alert (enriched by providers)")
	runs := fs.Int("runs", 0, "workflow runs seeded beside the alerts (seed)")
	path := fs.String("path", "/v1/alerts", "path requested by list (e.g. /v1/metrics/summary)")
	encKey := fs.String("encryption-key", "", "probe: the stack's ENCRYPTION_KEY (its Temporal payload key is derived from it)")
	payloadKeys := fs.String("payload-keys", "", "probe: the stack's TEMPORAL_PAYLOAD_KEYS (id:base64key,...), instead of -encryption-key")
	links := fs.Int("links", 1_000_000, "indicator links in all (seed-analyst)")
	rounds := fs.Int("rounds", 10, "bulk requests of 500 alerts, each followed by its undo (bulk)")
	caseAlert := fs.String("alert", "", "seed-case: the uuid of the alert the new case holds")
	sharedIP := fs.String("shared-ip", "", "backlog: one more IP every alert carries (the grouping benchmark's case indicator)")
	payloadFile := fs.String("payload", "", "backlog: a JSON object file (a real alert) every alert carries, with the run's title, severity, tags and indicators on top")
	dev := fs.String("dev", "", "diskstall: the block device as /proc/diskstats names it (vda, nvme0n1)")
	corpusDir := fs.String("dir", "", "realworld: the corpus directory (default $VIGIL_REALWORLD_DIR, else kit/sources/testdata/realworld)")
	details := fs.Bool("details", false, "realworld: list what each payload missed and extracted beyond its labels")
	explicit := fs.String("explicit", "", "realworld: print this JSON object payload with what the pipeline's extraction finds in it (as generic) added as its indicators[], instead of the table")
	slowLog := fs.String("slow-log", "", "ingest: a file to write each answer slower than 50 ms to (its scheduled send time in Unix ms, its latency in ms)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	switch args[0] {
	case "ingest":
		run := uuid.NewString()[:8]
		i := atomic.Int64{}
		mk := func() (*http.Request, error) {
			body := alertBody(run, int(i.Add(1)), *indicators, "")
			req, err := http.NewRequest(http.MethodPost, *url+"/v1/ingest/generic", bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+*key)
			return req, nil
		}
		var slow io.Writer
		if *slowLog != "" {
			f, err := os.Create(*slowLog)
			if err != nil {
				return err
			}
			defer f.Close()
			slow = f
		}
		res, err := constantRate(ctx, mk, *rate, *warmup, *duration, http.StatusAccepted, slow)
		if err != nil {
			return err
		}
		report := map[string]any{"ack": res, "run": run}
		if *dsn != "" {
			e2e, err := enrichedLatency(ctx, *dsn, "load "+run+" ", *wait)
			if err != nil {
				return err
			}
			report["ingest_to_enriched"] = e2e
		}
		return enc.Encode(report)
	case "enriched":
		// Waits for the alerts of one ingest run (its "run" id) to leave Pending and reports
		// ingest→Enriched and the drain rate, like ingest -dsn does right after sending.
		if *runID == "" || *dsn == "" {
			return errors.New("enriched: -run and -dsn are required")
		}
		e2e, err := enrichedLatency(ctx, *dsn, "load "+*runID+" ", *wait)
		if err != nil {
			return err
		}
		return enc.Encode(map[string]any{"run": *runID, "ingest_to_enriched": e2e})
	case "list":
		mk := func() (*http.Request, error) {
			req, err := http.NewRequest(http.MethodGet, *url+*path+"?"+*query, nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Authorization", "Bearer "+*key)
			return req, nil
		}
		res, err := constantRate(ctx, mk, *rate, *warmup, *duration, http.StatusOK, nil)
		if err != nil {
			return err
		}
		return enc.Encode(map[string]any{"list": res, "path": *path, "query": *query})
	case "backlog":
		var base map[string]any
		if *payloadFile != "" {
			raw, err := os.ReadFile(*payloadFile)
			if err != nil {
				return fmt.Errorf("-payload: %w", err)
			}
			if err := json.Unmarshal(raw, &base); err != nil {
				return fmt.Errorf("-payload %s: not a JSON object: %w", *payloadFile, err)
			}
		}
		return backlog(ctx, enc, *url, *key, *dsn, *n, *indicators, *wait, *sharedIP, base)
	case "reruns":
		// POST /v1/alerts/{uuid}/enrich for n finished alerts of run -run at -rate per second.
		if *runID == "" || *dsn == "" {
			return errors.New("reruns: -run and -dsn are required")
		}
		return reruns(ctx, enc, *url, *key, *dsn, *runID, *n, *rate, *wait)
	case "probe":
		codec, err := loadCodec(*payloadKeys, *encKey)
		if err != nil {
			return err
		}
		return probeRate(ctx, enc, *temporalAddr, *prefix, *n, codec)
	case "seed":
		return seed(ctx, enc, *dsn, *n, *runs)
	case "seed-analyst":
		return seedAnalyst(ctx, enc, *dsn, *links)
	case "seed-cases":
		return seedCases(ctx, enc, *dsn, *n)
	case "bulk":
		return bulkBench(ctx, enc, *url, *key, *dsn, *rounds)
	case "provider":
		return provider(ctx, *addr)
	case "agent-latency":
		if *runID == "" || *dsn == "" {
			return errors.New("agent-latency: -run and -dsn are required")
		}
		return agentLatency(ctx, enc, *dsn, *runID, "http://"+*addr)
	case "seed-case":
		return seedCase(ctx, enc, *dsn, *caseAlert)
	case "pgbench-log":
		return pgbenchLog(enc, *logPrefix)
	case "realworld":
		if *explicit != "" {
			return explicitIndicators(out, *explicit)
		}
		return realWorld(out, *corpusDir, *details)
	case "diskstall":
		if *dev == "" {
			return errors.New("diskstall: -dev is required")
		}
		return diskStalls(ctx, *dev, 10*time.Millisecond, 100*time.Millisecond, out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// alertBody is a unique generic alert with n public-looking IPs (the load provider answers for
// them; nothing leaves the machine: the provider is local), and shared when not "".
func alertBody(run string, i, n int, shared string) []byte {
	return alertBodyOn(nil, run, i, n, shared)
}

// alertBodyOn is alertBody over base (a real payload, posted to generic: its own fields kept, the load
// run's title, severity, tags and indicators set on top); nil base is the synthetic alert.
func alertBodyOn(base map[string]any, run string, i, n int, shared string) []byte {
	m := make(map[string]any, len(base)+6)
	for k, v := range base {
		m[k] = v
	}
	m["title"], m["severity"], m["tags"] = fmt.Sprintf("load %s %d", run, i), "High", []string{"load", run}
	if base == nil {
		m["description"], m["rule_id"] = "synthetic load alert", "load-rule"
	}
	var inds []map[string]any
	for k := range n {
		inds = append(inds, map[string]any{"type": "ip", "value": fmt.Sprintf("45.%d.%d.%d", 1+(i/65536)%200, (i/256)%256, (i+k*7919)%256)})
	}
	if shared != "" {
		inds = append(inds, map[string]any{"type": "ip", "value": shared})
	}
	if given, ok := base["indicators"].([]any); ok { // a payload's own explicit indicators stay, the run's join them
		for _, g := range given {
			if gm, ok := g.(map[string]any); ok {
				inds = append(inds, gm)
			}
		}
	}
	if len(inds) > 0 {
		m["indicators"] = inds
	}
	b, _ := json.Marshal(m)
	return b
}

// Stats summarizes latencies in milliseconds.
type Stats struct {
	Rate      float64 `json:"target_rate"`
	Sent      int     `json:"sent"`
	OK        int     `json:"ok"`
	Errors    int     `json:"errors"`
	Achieved  float64 `json:"achieved_rate"`
	P50       float64 `json:"p50_ms"`
	P90       float64 `json:"p90_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	Over200ms int     `json:"over_200ms"`
	// SlowBySecond counts the requests over 100 ms per second of the run (by scheduled start): one
	// stall shows as one or two seconds, a slow path as many.
	SlowBySecond map[int]int `json:"over_100ms_by_second,omitempty"`
	FirstErr     string      `json:"first_error,omitempty"`
}

func summarize(lat []time.Duration) (p50, p90, p99, max float64) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pick := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(lat)))) - 1
		return float64(lat[max0(i)].Microseconds()) / 1000
	}
	return pick(0.50), pick(0.90), pick(0.99), float64(lat[len(lat)-1].Microseconds()) / 1000
}

func max0(i int) int {
	if i < 0 {
		return 0
	}
	return i
}

// constantRate sends mk's requests on a fixed schedule (open loop) and measures each one from its
// scheduled start to the end of its response; slowLog, when not nil, gets a line per answer slower
// than 50 ms (its scheduled start in Unix ms, its latency in ms).
func constantRate(ctx context.Context, mk func() (*http.Request, error), rate float64, warmup, duration time.Duration, want int, slowLog io.Writer) (Stats, error) {
	tr := &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	interval := time.Duration(float64(time.Second) / rate)
	total := int((warmup + duration).Seconds() * rate)
	skip := int(warmup.Seconds() * rate)
	var (
		mu       sync.Mutex
		lat      []time.Duration
		slow     = map[int]int{}
		errs     int
		firstErr string
		wg       sync.WaitGroup
	)
	start := time.Now().Add(50 * time.Millisecond)
	for i := range total {
		scheduled := start.Add(time.Duration(i) * interval)
		if d := time.Until(scheduled); d > 0 {
			select {
			case <-ctx.Done():
				return Stats{}, ctx.Err()
			case <-time.After(d):
			}
		}
		req, err := mk()
		if err != nil {
			return Stats{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Do(req)
			ok := err == nil && resp.StatusCode == want
			var msg string
			if err != nil {
				msg = err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !ok {
					msg = fmt.Sprintf("%d %s", resp.StatusCode, b)
				}
			}
			d := time.Since(scheduled)
			if i < skip {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ok && slowLog != nil && d > 50*time.Millisecond {
				fmt.Fprintf(slowLog, "%d %.1f\n", scheduled.UnixMilli(), float64(d.Microseconds())/1000)
			}
			if ok {
				lat = append(lat, d)
				if d > 100*time.Millisecond {
					slow[int(time.Duration(i-skip)*interval/time.Second)]++
				}
			} else {
				errs++
				if firstErr == "" {
					firstErr = msg
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start.Add(time.Duration(skip) * interval))
	s := Stats{Rate: rate, Sent: total - skip, OK: len(lat), Errors: errs, SlowBySecond: slow, FirstErr: firstErr}
	s.Achieved = float64(len(lat)) / elapsed.Seconds()
	for _, d := range lat {
		if d > 200*time.Millisecond {
			s.Over200ms++
		}
	}
	s.P50, s.P90, s.P99, s.Max = summarize(lat)
	return s, nil
}

// E2E is ingest→Enriched latency as the database recorded it.
type E2E struct {
	Alerts   int     `json:"alerts"`
	Enriched int     `json:"enriched"`
	Failed   int     `json:"failed"`
	Pending  int     `json:"pending"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	PerSec   float64 `json:"enriched_per_second"` // from the first ingest to the last Enriched
	// DrainPerSec is the backlog's drain once ingest is over: alerts Enriched after the last ingest,
	// per second from it to the last Enriched.
	DrainPerSec float64 `json:"drain_per_second"`
	// DuringPerSec is the drain while the ingest ran: alerts of the run whose pipeline finished by its
	// last ingest, per second from its first ingest to its last (issue 26: "Enriched during the
	// burst", compared with DrainPerSec, the same run's drain without ingest).
	DuringPerSec float64 `json:"during_ingest_per_second"`
}

func enrichedLatency(ctx context.Context, dsn, titlePrefix string, wait time.Duration) (E2E, error) {
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	if err != nil {
		return E2E{}, err
	}
	defer st.Close()
	deadline := time.Now().Add(wait)
	var e E2E
	for {
		err := st.DB().NewRaw(`SELECT count(*) AS alerts,
				count(*) FILTER (WHERE enrichment_status = 'Enriched') AS enriched,
				count(*) FILTER (WHERE enrichment_status = 'Failed') AS failed,
				count(*) FILTER (WHERE enrichment_status = 'Pending') AS pending,
				coalesce(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM enriched_at - ingested_at)), 0) AS p50,
				coalesce(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM enriched_at - ingested_at)), 0) AS p99,
				coalesce(1000 * max(extract(epoch FROM enriched_at - ingested_at)), 0) AS max,
				coalesce(count(enriched_at) / nullif(extract(epoch FROM max(enriched_at) - min(ingested_at)), 0), 0) AS per_sec,
				coalesce((SELECT count(*) FROM alerts AS d WHERE d.title LIKE ? || '%' AND d.enriched_at > max(alerts.ingested_at)) /
					nullif(extract(epoch FROM max(enriched_at) - max(ingested_at)), 0), 0) AS drain_per_sec,
				coalesce(count(*) FILTER (WHERE enriched_at <= (SELECT max(l.ingested_at) FROM alerts AS l WHERE l.title LIKE ? || '%')) /
					nullif(extract(epoch FROM max(ingested_at) - min(ingested_at)), 0), 0) AS during_per_sec
			FROM alerts WHERE title LIKE ? || '%'`, titlePrefix, titlePrefix, titlePrefix).Scan(ctx, &e.Alerts, &e.Enriched, &e.Failed, &e.Pending,
			&e.P50, &e.P99, &e.Max, &e.PerSec, &e.DrainPerSec, &e.DuringPerSec)
		if err != nil {
			return E2E{}, fmt.Errorf("enrichment stats: %w", err)
		}
		if e.Pending == 0 || time.Now().After(deadline) {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// backlog ingests n alerts as fast as 16 clients can, then waits until all are enriched and reports
// the enrichment throughput from the first ingestion to the last enrichment.
func backlog(ctx context.Context, enc *json.Encoder, url, key, dsn string, n, inds int, wait time.Duration, sharedIP string, base map[string]any) error {
	if dsn == "" {
		return errors.New("backlog needs -dsn")
	}
	run := uuid.NewString()[:8]
	hc := &http.Client{Timeout: 30 * time.Second}
	next := atomic.Int64{}
	var wg sync.WaitGroup
	var failed atomic.Int64
	started := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/ingest/generic", bytes.NewReader(alertBodyOn(base, run, i, inds, sharedIP)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := hc.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	ingestSecs := time.Since(started).Seconds()
	e, err := enrichedLatency(ctx, dsn, "load "+run+" ", wait)
	if err != nil {
		return err
	}
	return enc.Encode(map[string]any{"backlog": n, "ingest_failures": failed.Load(), "ingest_seconds": ingestSecs,
		"ingest_per_second": float64(n) / ingestSecs, "enrichment": e})
}

// probeRate starts n bare one-activity workflows (workflows.Probe) at once and reports how many
// complete per second: the ceiling the pipeline is compared with.
func probeRate(ctx context.Context, enc *json.Encoder, addr, prefix string, n int, codec *payloadcodec.Codec) error {
	c, err := temporal.Dial(ctx, temporal.Config{HostPort: addr, Codec: codec}, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	queues := temporal.NewQueues(prefix)
	started := time.Now()
	runs := make([]client.WorkflowRun, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var startErr atomic.Value
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "load-probe-" + uuid.NewString(), TaskQueue: queues.Actions},
				workflows.Probe, workflows.ProbeInput{Reason: "load"})
			if err != nil {
				startErr.Store(err)
				return
			}
			mu.Lock()
			runs = append(runs, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err, _ := startErr.Load().(error); err != nil {
		return fmt.Errorf("start probe: %w", err)
	}
	for _, r := range runs {
		if err := r.Get(ctx, nil); err != nil {
			return fmt.Errorf("probe %s: %w", r.GetID(), err)
		}
	}
	secs := time.Since(started).Seconds()
	return enc.Encode(map[string]any{"workflows": n, "seconds": secs, "completed_per_second": float64(n) / secs})
}

// seed inserts n alerts in batches (varied status, severity, source, tags, times) with a plausible
// life cycle (ingested up to 5 min after they occurred, acknowledged, triaged, closed with a
// classification, enriched), each linked to 2 of 5 000 indicators; then runs workflow runs over 5
// workflows, a third of them behind an approval request. For list and metrics latency.
func seed(ctx context.Context, enc *json.Encoder, dsn string, n, runs int) error {
	// Not store.Open: its 5 s read timeout is for requests, and the bulk statements take longer.
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(10*time.Minute)))
	sqldb.SetMaxOpenConns(1)
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()
	started := time.Now()
	const batch = 10_000
	for done := 0; done < n; done += batch {
		k := min(batch, n-done)
		// occurred_at steps back 25 s per alert: 100 000 alerts span the last 29 days.
		_, err := db.NewRaw(`INSERT INTO alerts (title, severity, status, enrichment_status, source_name, occurred_at, ingested_at,
				created_at, acknowledged_at, triaged_at, closed_at, close_classification, tags, fingerprint, raw_payload, is_enriched, enriched_at)
			SELECT 'seeded alert ' || g || ' ' || md5(g::text), severity, status, enrichment_status, source_name, occurred, ingested, ingested,
				CASE WHEN status <> 'Open' THEN ingested + (g % 3600) * interval '1 second' END,
				CASE WHEN status <> 'Open' AND g % 2 = 0 THEN ingested + (g % 3600 + 60) * interval '1 second' END,
				CASE WHEN status = 'Closed' THEN ingested + (g % 86400 + 600) * interval '1 second' END,
				CASE WHEN status = 'Closed' THEN (ARRAY['True Positive - Suspicious Activity', 'Benign Positive - Suspicious but Expected',
					'False Positive - Incorrect Detection Logic', 'False Positive - Inaccurate Data', 'Undetermined', 'Duplicate',
					'Not Applicable'])[1 + g % 7] END,
				ARRAY['seed', 'bucket-' || (g % 50)],
				md5('seed' || g::text || clock_timestamp()::text),
				jsonb_build_object('n', g, 'note', 'seeded'), g % 3 = 1, CASE WHEN g % 3 = 1 THEN ingested + (g % 60) * interval '1 second' END
			FROM (SELECT g,
				(ARRAY['Pending','Informational','Low','Medium','High','Critical'])[1 + g % 6] AS severity,
				(ARRAY['Open','Triaging','Escalated','Closed'])[1 + g % 4] AS status,
				(ARRAY['Pending','Enriched','Failed'])[1 + g % 3] AS enrichment_status,
				(ARRAY['sentinel','elastic','splunk','generic'])[1 + g % 4] AS source_name,
				now() - (g % 100000) * interval '25 seconds' AS occurred,
				now() - (g % 100000) * interval '25 seconds' + (g % 300) * interval '1 second' AS ingested
				FROM generate_series(?, ?) AS g) AS x`, done+1, done+k).Exec(ctx)
		if err != nil {
			return fmt.Errorf("seed alerts: %w", err)
		}
	}
	_, err := db.ExecContext(ctx, `
		INSERT INTO indicators (type, value, is_enriched)
		SELECT 'ip', '10.200.' || (g / 250) || '.' || (g % 250), g % 4 <> 0 FROM generate_series(0, 4999) g
		ON CONFLICT DO NOTHING;
		INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
		SELECT a.uuid, i.uuid
		FROM (SELECT uuid, row_number() OVER () AS n FROM alerts WHERE title LIKE 'seeded alert %') a
		CROSS JOIN (VALUES (1), (2)) AS pick (p)
		-- One equality join per pick (a hash join): "i.k IN (…)" was planned as a nested loop of
		-- 100 000 × 5 000 comparisons that ran for minutes on a busy machine.
		JOIN (SELECT uuid, row_number() OVER (ORDER BY value) - 1 AS k FROM indicators WHERE value LIKE '10.200.%') i
		  ON i.k = CASE pick.p WHEN 1 THEN a.n % 5000 ELSE (a.n * 7 + 1) % 5000 END
		ON CONFLICT DO NOTHING`)
	if err != nil {
		return fmt.Errorf("seed indicators: %w", err)
	}
	if runs > 0 {
		if err := seedRuns(ctx, db, runs); err != nil {
			return err
		}
	}
	for _, table := range []string{"alerts", "alert_indicators", "indicators"} { // VACUUM runs one statement at a time
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	var total int
	if err := db.NewRaw("SELECT count(*) FROM alerts").Scan(ctx, &total); err != nil {
		return err
	}
	return enc.Encode(map[string]any{"seeded": n, "alerts_total": total, "runs": runs, "seconds": time.Since(started).Seconds()})
}

// seedRuns inserts n workflow runs over 5 workflows across the last 29 days (varied status and
// trigger source) and an approval request for every third, decided for most.
func seedRuns(ctx context.Context, db *bun.DB, n int) error {
	_, err := db.ExecContext(ctx, `
		INSERT INTO workflows (name, steps, time_saved_minutes, state)
		SELECT 'seeded workflow ' || g, '[]', 5 * g, 'active' FROM generate_series(1, 5) g;
		INSERT INTO workflow_runs (workflow_uuid, workflow_version, status, trigger_source, indicator_type, indicator_value,
			temporal_workflow_id, created_at, updated_at)
		SELECT w.uuid, 1, (ARRAY['succeeded','succeeded','succeeded','failed','timed_out','rejected','expired','cancelled'])[1 + g % 8],
			(ARRAY['human','agent'])[1 + g % 2], 'ip', '10.200.0.1', 'workflow-run-seed-' || g,
			now() - (g % 100000) * interval '25 seconds', now() - (g % 100000) * interval '25 seconds'
		FROM generate_series(1, ?) g
		JOIN (SELECT uuid, row_number() OVER (ORDER BY name) - 1 AS k FROM workflows WHERE name LIKE 'seeded workflow %') w ON w.k = g % 5;
		INSERT INTO workflow_approval_requests (workflow_uuid, workflow_name, run_uuid, trigger_source, indicator_type, indicator_value,
			risk_level, status, expires_at, created_at, updated_at)
		SELECT r.workflow_uuid, 'seeded', r.uuid, r.trigger_source, 'ip', '10.200.0.1', 'high',
			CASE WHEN r.status IN ('rejected', 'expired') THEN r.status ELSE 'approved' END, r.created_at + interval '1 hour', r.created_at, r.created_at
		FROM workflow_runs r WHERE r.temporal_workflow_id LIKE 'workflow-run-seed-%' AND hashtext(r.temporal_workflow_id) % 3 = 0;
		INSERT INTO workflow_approval_decisions (approval_uuid, identity, responder_id, decision, decided_at)
		SELECT q.uuid, 'seed', 'seed', q.status, q.created_at + (abs(hashtext(q.uuid::text)) % 3000) * interval '1 second'
		FROM workflow_approval_requests q WHERE q.workflow_name = 'seeded' AND q.status IN ('approved', 'rejected');
		ANALYZE workflow_runs; ANALYZE workflow_approval_requests; ANALYZE workflow_approval_decisions`, n)
	if err != nil {
		return fmt.Errorf("seed workflow runs: %w", err)
	}
	return nil
}

// provider serves a minimal enrichment API: GET /ip/<value> → {"score": n}. It is also a loopback
// agent: POST /agent/<name> records when each alert's event arrived (first receipt per agent), and
// GET /agent-received answers {agent: {alert_uuid: unix_ms}}.
func provider(ctx context.Context, addr string) error {
	var mu sync.Mutex
	received := map[string]map[string]int64{}
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/agent/"):
			at := time.Now().UnixMilli()
			var p struct {
				Data struct {
					Alert struct {
						UUID string `json:"uuid"`
					} `json:"alert"`
				} `json:"data"`
			}
			_ = json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&p)
			name := strings.TrimPrefix(r.URL.Path, "/agent/")
			mu.Lock()
			if received[name] == nil {
				received[name] = map[string]int64{}
			}
			if _, seen := received[name][p.Data.Alert.UUID]; !seen {
				received[name][p.Data.Alert.UUID] = at
			}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/agent-received":
			mu.Lock()
			b, _ := json.Marshal(received)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"score": %d}`, len(r.URL.Path)%100)
		}
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// pgbenchLog reads pgbench per-transaction logs (prefix.*) and reports latency from each transaction's
// scheduled start (time + schedule lag, with -R), the same measure as ingest.
func pgbenchLog(enc *json.Encoder, prefix string) error {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no pgbench logs match %s.*", prefix)
	}
	var lat []time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			p := strings.Fields(line)
			if len(p) < 6 || p[2] == "skipped" {
				continue
			}
			us, err := strconv.ParseInt(p[2], 10, 64)
			if err != nil {
				continue
			}
			if len(p) > 6 {
				if lag, err := strconv.ParseInt(p[6], 10, 64); err == nil {
					us += lag
				}
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
	}
	p50, p90, p99, mx := summarize(lat)
	return enc.Encode(map[string]any{"floor": map[string]any{"n": len(lat), "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "max_ms": mx}})
}

// agentLatency reports, for the alerts of one ingest run, ingest→Enriched (enriched_at − ingested_at)
// beside ingest→agent-received (when the loopback agents of `provider` at providerURL first received
// the alert's event − ingested_at), per agent: p50/p99 in ms. One machine, one clock.
func agentLatency(ctx context.Context, enc *json.Encoder, dsn, run, providerURL string) error {
	resp, err := http.Get(providerURL + "/agent-received")
	if err != nil {
		return fmt.Errorf("read agent receipts: %w", err)
	}
	defer resp.Body.Close()
	var received map[string]map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&received); err != nil {
		return fmt.Errorf("decode agent receipts: %w", err)
	}
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	var rows []struct {
		UUID       string    `bun:"uuid"`
		IngestedAt time.Time `bun:"ingested_at"`
		EnrichedAt time.Time `bun:"enriched_at"`
	}
	if err := st.DB().NewRaw(`SELECT uuid::text AS uuid, ingested_at, enriched_at FROM alerts
		WHERE title LIKE ? || '%' AND enriched_at IS NOT NULL`, "load "+run+" ").Scan(ctx, &rows); err != nil {
		return fmt.Errorf("alerts of run %s: %w", run, err)
	}
	var enriched []time.Duration
	agents := map[string][]time.Duration{}
	for _, r := range rows {
		enriched = append(enriched, r.EnrichedAt.Sub(r.IngestedAt))
		for name, got := range received {
			if ms, ok := got[r.UUID]; ok {
				agents[name] = append(agents[name], time.UnixMilli(ms).Sub(r.IngestedAt))
			}
		}
	}
	report := map[string]any{"run": run, "alerts": len(rows)}
	p50, _, p99, mx := summarize(enriched)
	report["ingest_to_enriched"] = map[string]any{"n": len(enriched), "p50_ms": p50, "p99_ms": p99, "max_ms": mx}
	per := map[string]any{}
	for name, d := range agents {
		p50, _, p99, mx := summarize(d)
		per[name] = map[string]any{"n": len(d), "p50_ms": p50, "p99_ms": p99, "max_ms": mx}
	}
	report["ingest_to_agent_received"] = per
	return enc.Encode(report)
}

// loadCodec is the payload codec of the stack under load (its keys given as flags): the ring of
// -payload-keys, or the key derived from -encryption-key, as `vigil` derives it.
func loadCodec(ring, encryptionKey string) (*payloadcodec.Codec, error) {
	if ring != "" {
		keys, err := payloadcodec.ParseKeys(ring)
		if err != nil {
			return nil, fmt.Errorf("-payload-keys: %w", err)
		}
		return payloadcodec.New(keys)
	}
	if encryptionKey == "" {
		return nil, errors.New("probe: -encryption-key (the stack's ENCRYPTION_KEY) or -payload-keys is required: the worker decodes what it starts")
	}
	master, err := secretbox.ParseKey(encryptionKey)
	if err != nil {
		return nil, fmt.Errorf("-encryption-key: %w", err)
	}
	k, err := payloadcodec.Derive(master)
	if err != nil {
		return nil, err
	}
	return payloadcodec.New([]payloadcodec.Key{k})
}

// seedCase opens a case holding alert through the cases' rule owner (domain/cases), as POST
// /v1/cases does, and prints its uuid: the grouping benchmark's case (grouping.sh).
func seedCase(ctx context.Context, enc *json.Encoder, dsn, alert string) error {
	id, err := uuid.Parse(alert)
	if err != nil || dsn == "" {
		return errors.New("seed-case: -dsn and -alert UUID are required")
	}
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	c, err := cases.New(st, alerts.New(st, log), log).Create(ctx, cases.Create{Title: "grouping bench " + alert, AlertUUIDs: []uuid.UUID{id}},
		store.Actor{Type: store.ActorSystem})
	if err != nil {
		return fmt.Errorf("seed-case: %w", err)
	}
	return enc.Encode(map[string]any{"case_uuid": c.UUID})
}
