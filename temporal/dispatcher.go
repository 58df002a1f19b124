package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// OutboxStore is what the dispatcher needs from the store.
type OutboxStore interface {
	DispatchOutbox(ctx context.Context, limit int, caps store.OutboxCaps, start store.OutboxStart) (int, error)
	RecheckOutbox(ctx context.Context, limit int, olderThan time.Duration, start store.OutboxStart) (int, error)
	DB() *bun.DB
	StartStore
}

// DispatcherMetrics is what the dispatcher reports (kit/metrics.Worker).
type DispatcherMetrics interface {
	// StaleStarts counts n entries the recheck found still marked started after their work ended.
	StaleStarts(n int)
}

// busyClaimGap is the least time between two claims of the alert outbox while the API is busy.
const busyClaimGap = 100 * time.Millisecond

// startClaimGap is the least time between two claims of the start outbox: the entries committed
// meanwhile are claimed together, so the agent events among them become one DeliverEvents batch (a
// workflow per claim, not per event: at 50 alerts a second with an agent subscribed, about ten events
// a batch instead of one or two) at the cost of at most this much delay before a start.
const startClaimGap = 200 * time.Millisecond

// rerunsCappedFor is how long after the newest alert was created re-runs stay within
// DispatcherOptions.RerunMaxInFlight: alerts still arriving keep places free for their first runs;
// with none for this long, a re-run backlog (the healer's after an outage) may use every place. The
// claim reads it from the newest alerts.created_at, not from the admission's busy test: re-run requests
// wake that too, and it is each worker's own, where the newest alert is the same for every worker.
const rerunsCappedFor = 10 * time.Second

// DispatcherOptions tune the dispatcher; zero values take the defaults.
type DispatcherOptions struct {
	Poll        time.Duration // also the retry tick for entries backed off; default 1 s
	Batch       int           // entries claimed per transaction; default 64
	Concurrency int           // concurrent StartWorkflow calls; default 16
	StartLimit  time.Duration // bound of one StartWorkflow call; default 10 s
	// MaxInFlight caps the pipelines started and not yet finished, over every dispatcher; default 256.
	// Past it, new alerts wait in the outbox, so a burst never floods Temporal with runs it cannot
	// drain yet.
	MaxInFlight int
	// RerunMaxInFlight caps the re-runs among them (POST /v1/alerts/{uuid}/enrich, the healer's after a
	// provider outage) while alerts arrive (one created in the last rerunsCappedFor); default 8. A first
	// run is claimed before any re-run, but once started it shares the machine with every pipeline in
	// flight: the fewer re-runs beside it, the sooner it ends (docs/INGEST.md "Re-runs hold at most …").
	RerunMaxInFlight int
	// Pace turns on admission (admission.go): while the API is busy taking alerts (at least BusyRate
	// arrivals per second, the last one less than Quiet ago) at most BusyInFlight pipelines run — 0
	// pauses new starts — so the 202s keep the machine, and the backlog drains once ingest pauses.
	// BusyInFlight at MaxInFlight or above leaves pacing off.
	Pace         bool
	BusyInFlight int
	BusyRate     float64       // arrivals per second; default 5
	Quiet        time.Duration // default 1 s
	// RecheckAfter is the age of a started entry after which the dispatcher asks Temporal whether its
	// pipeline still runs (it deletes the entry when not); default 10 minutes.
	RecheckAfter time.Duration
	// Metrics receives the recheck's findings; nil reports nothing.
	Metrics DispatcherMetrics
	// IngestLatencyTarget (> 0, with Pace) replaces BusyInFlight with a cap that follows the 202: an
	// ingest slower than this halves it, and it grows back while none is (admission.go).
	IngestLatencyTarget time.Duration
}

// Dispatcher turns committed outbox rows into Temporal workflows: alert_outbox rows into
// AlertPipeline workflows (DESIGN.md "Ingest path") and start_outbox rows into WorkflowRun and
// EnrichIndicator workflows (DrainStarts, starts.go; those rows are deleted once started). It
// runs in the worker, woken by LISTEN/NOTIFY and a short poll, claims rows FOR UPDATE SKIP LOCKED
// (several workers never take the same row), starts alert-<uuid> and marks the row started in the
// same transaction; the pipeline deletes the row when it finishes, and at most MaxInFlight rows are
// started at once. A start that fails leaves the row with attempts, last_error and a backed-off
// not_before; nothing is lost. Starts are idempotent: a first run uses reuse policy
// REJECT_DUPLICATE (an already finished pipeline is not run again when a row is replayed after a
// crash), a re-run (POST /v1/alerts/{uuid}/enrich) ALLOW_DUPLICATE, and both conflict policy
// USE_EXISTING (a running pipeline is never started twice).
type Dispatcher struct {
	st     OutboxStore
	c      client.Client
	queues Queues
	log    *slog.Logger
	opts   DispatcherOptions
	adm    *admission
}

// NewDispatcher returns a dispatcher starting pipelines through c on queues.Pipeline.
func NewDispatcher(st OutboxStore, c client.Client, queues Queues, log *slog.Logger, opts DispatcherOptions) *Dispatcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Batch <= 0 {
		opts.Batch = 64
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	if opts.StartLimit <= 0 {
		opts.StartLimit = 10 * time.Second
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 256
	}
	if opts.RerunMaxInFlight <= 0 {
		opts.RerunMaxInFlight = 8
	}
	if opts.RecheckAfter <= 0 {
		opts.RecheckAfter = 10 * time.Minute
	}
	if opts.BusyRate <= 0 {
		opts.BusyRate = 5
	}
	if opts.Quiet <= 0 {
		opts.Quiet = time.Second
	}
	adm := newAdmission(opts.Pace, opts.MaxInFlight, opts.BusyInFlight, opts.BusyRate, opts.Quiet)
	if opts.Pace {
		adm.withTarget(opts.IngestLatencyTarget)
	}
	return &Dispatcher{st: st, c: c, queues: queues, log: log.With("component", "outbox-dispatcher"), opts: opts, adm: adm}
}

// Run dispatches until ctx ends (then it returns nil). A broken LISTEN connection only slows it to
// the poll interval; the listener reconnects by itself.
func (d *Dispatcher) Run(ctx context.Context) error {
	ln := pgdriver.NewListener(d.st.DB())
	defer ln.Close()
	wake := newWakes()
	if err := ln.Listen(ctx, store.OutboxChannel, store.FreedChannel, store.StartChannel); err != nil {
		d.log.Warn("listen for outbox notifications failed; polling only", "err", err)
	} else {
		go wake.fold(ln.Channel(pgdriver.WithChannelSize(1024)))
	}
	tick := time.NewTicker(d.opts.Poll)
	defer tick.Stop()
	// Each outbox is drained when its own channel was notified (or at the poll): an ingest or a
	// finished pipeline wakes only the pipeline's claim, a workflow run or enrichment only the start
	// claim.
	alerts, starts := true, true
	var lastClaim time.Time
	// resume fires when a busy spell ends, so the backlog starts draining then, not at the next poll.
	resume := time.NewTimer(time.Hour)
	resume.Stop()
	defer resume.Stop()
	// The start outbox is drained by a goroutine of its own, kicked from here: a claim of pipelines
	// (up to 64 starts, seconds on a loaded server) never holds back an agent event's delivery.
	kick := make(chan struct{}, 1)
	var startsDone sync.WaitGroup
	defer startsDone.Wait()
	startsDone.Go(func() { d.runStarts(ctx, kick) })
	for {
		// While the API is busy the cap is tiny and a place frees only when a pipeline ends, so one
		// claim per busyClaimGap is enough; a claim per wake-up (up to 200 a second) would only add
		// transactions beside the ingests. resume claims after the spell.
		if alerts && (!d.adm.busy(time.Now()) || time.Since(lastClaim) >= busyClaimGap) {
			lastClaim = time.Now()
			if _, err := d.Drain(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("dispatch outbox", "err", err)
			}
		}
		if starts {
			select {
			case kick <- struct{}{}:
			default: // a drain is already due: it covers these entries too
			}
			starts = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			alerts, starts = true, true
			if _, err := d.Recheck(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("recheck outbox", "err", err)
			}
		case <-resume.C:
			alerts = true
		case <-wake.ready:
			// One pass covers every notification received so far.
			w := wake.take()
			alerts, starts = w.alerts, w.starts
			d.adm.arrived(time.Now(), w.arrivals)
			if w.arrivals > 0 {
				d.adm.ingestTook(time.Now(), w.slowest)
			}
			if w.arrivals > 0 && d.adm.busy(time.Now()) {
				resume.Reset(time.Until(d.adm.quietAt()) + 10*time.Millisecond)
			}
		}
	}
}

// runStarts drains the start outbox each time it is kicked, at most once per startClaimGap (kicks
// meanwhile fold into the next drain), until ctx ends.
func (d *Dispatcher) runStarts(ctx context.Context, kick <-chan struct{}) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		if wait := startClaimGap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if _, err := d.DrainStarts(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("dispatch start outbox", "err", err)
		}
	}
}

// wakeSummary is what the notifications received since the last look ask for: a claim of the alert
// outbox (alerts), of the start outbox (starts), how many of them were alerts arriving (OutboxChannel:
// the arrivals admission counts; a finished pipeline's FreedChannel is not one) and the slowest ingest
// they report (store.IngestLatency).
type wakeSummary struct {
	alerts, starts bool
	arrivals       int
	slowest        time.Duration
}

// wakes folds the listener's notifications into one wakeSummary as they arrive, on a goroutine of
// its own. The dispatcher's loop can spend seconds in a claim (starting up to MaxInFlight pipelines
// on a loaded Temporal server); a listener channel left unread meanwhile overflows, and the driver
// drops each notification past its buffer with a log line: 5 064 of them in a 200 req/s burst
// (docs/PERFORMANCE.md "Session 18"), the ingests' latencies that admission follows among them.
type wakes struct {
	mu      sync.Mutex
	pending wakeSummary
	ready   chan struct{} // holds a token while pending has something to say
}

func newWakes() *wakes { return &wakes{ready: make(chan struct{}, 1)} }

// fold reads ch until it closes (the listener closed); a closed listener asks for a claim of both
// outboxes, and from then on the poll alone wakes the loop.
func (w *wakes) fold(ch <-chan pgdriver.Notification) {
	for n := range ch {
		w.add(n)
	}
	w.mu.Lock()
	w.pending.alerts, w.pending.starts = true, true
	w.mu.Unlock()
	w.signal()
}

// add folds one notification in.
func (w *wakes) add(n pgdriver.Notification) {
	w.mu.Lock()
	switch n.Channel {
	case store.StartChannel:
		w.pending.starts = true
	case store.OutboxChannel:
		w.pending.arrivals++
		w.pending.alerts = true
		if took, ok := store.IngestLatency(n.Payload); ok {
			w.pending.slowest = max(w.pending.slowest, took)
		}
	default:
		w.pending.alerts = true
	}
	w.mu.Unlock()
	w.signal()
}

func (w *wakes) signal() {
	select {
	case w.ready <- struct{}{}:
	default: // a token is already waiting: it covers this notification too
	}
}

// take returns what was folded in since the last take and starts afresh.
func (w *wakes) take() wakeSummary {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.pending
	w.pending = wakeSummary{}
	return s
}

// Drain dispatches due rows until none is left or the admitted number of pipelines run (MaxInFlight,
// BusyInFlight while the API is busy; rows backed off are left for later) and returns how many it
// claimed.
func (d *Dispatcher) Drain(ctx context.Context) (int, error) {
	total := 0
	limit := d.adm.cap(time.Now())
	if limit <= 0 {
		return 0, nil // paused while the API is busy: no claim transaction beside the ingests
	}
	for {
		n, err := d.st.DispatchOutbox(ctx, d.opts.Batch, store.OutboxCaps{InFlight: limit, Reruns: d.opts.RerunMaxInFlight,
			RerunsWhile: rerunsCappedFor}, d.startAll)
		total += n
		if err != nil {
			return total, err
		}
		if n < d.opts.Batch {
			return total, nil
		}
	}
}

// Recheck asks Temporal about one batch of entries started more than RecheckAfter ago: a pipeline
// still running keeps its entry, one that ended without deleting it (failed, terminated) loses it,
// one never started is started. It returns how many entries it looked at.
//
// An entry whose pipeline had ended is a place held in flight for work that was over, which should
// never happen (the finish deletes its entries): each is logged and counted
// (vigil_outbox_stale_starts_total), so the bug class shows.
func (d *Dispatcher) Recheck(ctx context.Context) (int, error) {
	var stale []store.OutboxEntry
	n, err := d.st.RecheckOutbox(ctx, d.opts.Batch, d.opts.RecheckAfter, func(ctx context.Context, entries []store.OutboxEntry) []error {
		stale = stale[:0]
		errs := d.startEach(ctx, entries, true)
		for i, err := range errs {
			if errors.Is(err, store.ErrOutboxDone) {
				stale = append(stale, entries[i])
			}
		}
		return errs
	})
	if err != nil || len(stale) == 0 {
		return n, err
	}
	for _, e := range stale {
		d.log.Warn("outbox entry held a place in flight after its pipeline ended; deleted", "alert_uuid", e.AlertUUID.String(),
			"kind", e.Kind, "started_before", d.opts.RecheckAfter.String())
	}
	if d.opts.Metrics != nil {
		d.opts.Metrics.StaleStarts(len(stale))
	}
	return n, nil
}

func (d *Dispatcher) startAll(ctx context.Context, entries []store.OutboxEntry) []error {
	return d.startEach(ctx, entries, false)
}

// startEach starts one pipeline per entry, concurrently, and reports each outcome.
func (d *Dispatcher) startEach(ctx context.Context, entries []store.OutboxEntry, recheck bool) []error {
	return startConcurrently(entries, d.opts.Concurrency, func(e store.OutboxEntry) error {
		err := d.start(ctx, e, recheck)
		if err != nil && !errors.Is(err, store.ErrOutboxDone) && !errors.Is(err, errPipelineRunning) {
			d.log.Warn("start alert pipeline failed; will retry", "alert_uuid", e.AlertUUID.String(),
				"attempts", e.Attempts+1, "err", err)
		}
		return err
	})
}

// startConcurrently runs start for each entry, at most limit at once, and returns the outcomes in
// the entries' order.
func startConcurrently[E any](entries []E, limit int, start func(E) error) []error {
	errs := make([]error, len(entries))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, e := range entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = start(e)
		})
	}
	wg.Wait()
	return errs
}

// errPipelineRunning says a re-run found its alert's pipeline still open; the entry is retried after
// its backoff (1 s the first time), by when that run has closed.
var errPipelineRunning = errors.New("the alert's pipeline is still running; the re-run waits for it")

// start starts the entry's pipeline, or finds it running (nil), or finds it finished
// (store.ErrOutboxDone). A recheck never starts a new run of a finished pipeline, re-run or not.
func (d *Dispatcher) start(ctx context.Context, e store.OutboxEntry, recheck bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartLimit)
	defer cancel()
	id := ids.Alert(e.AlertUUID)
	reuse := enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	rerun := e.Kind == store.OutboxRerun && !recheck
	if rerun {
		// A re-run never attaches to a run in progress: that run may be past its finish step (its
		// entries already deleted, the workflow not yet closed), and the re-run's entry would then
		// hold a place in flight for work that has ended, and the re-run asked for would never run.
		reuse = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
		conflict = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	}
	_, err := d.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                d.queues.Pipeline,
		WorkflowIDReusePolicy:    reuse,
		WorkflowIDConflictPolicy: conflict,
		// A finished pipeline that the reuse policy refuses to run again answers an error (otherwise
		// the SDK hands back the old run as if it had started).
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowExecutionTimeout:                 24 * time.Hour,
		// The dispatcher shares its client with the pipeline worker of this process: the first
		// workflow task comes back with the start and runs here, without a trip through matching.
		// Without a free local slot the server dispatches it as usual.
		EnableEagerStart:      true,
		TypedSearchAttributes: workflows.PipelineSearchAttributes(e.AlertUUID.String(), e.SourceName, e.Severity),
	}, workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: e.AlertUUID.String(), StepQueue: d.queues.Enrichment,
		Version: workflows.PipelineVersion})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) && rerun {
		// ALLOW_DUPLICATE refuses only while a run is open: the re-run waits for it to close.
		return fmt.Errorf("start %s: %w", id, errPipelineRunning)
	}
	if errors.As(err, &started) {
		// A first-run row replayed after its pipeline finished, or a recheck of a finished one.
		return store.ErrOutboxDone
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	return nil
}
