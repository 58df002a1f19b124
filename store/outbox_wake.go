package store

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// outboxWakeGap is the least time between two wake-ups: under load one NOTIFY covers the outbox rows
// of several ingests; an idle system wakes the dispatcher at once.
const outboxWakeGap = 5 * time.Millisecond

// wakeSQL notifies the dispatcher in a statement of its own, committed asynchronously: the wake-up is
// a hint (the dispatcher also polls), so it need not wait for a WAL flush. Kept out of the ingest
// statement because a transaction that NOTIFYs holds Postgres's global notify lock from before its
// commit until after its WAL flush, which would serialise every ingest's durable commit.
//
// An ingest's or a re-run's wake-up payload is the slowest such statement it covers, in microseconds
// (empty when none was timed): the dispatcher's admission backs pipelines off when the 202 slows
// (IngestLatency).
const wakeSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify(?, ?)`

// IngestLatency reads an OutboxChannel payload: the slowest ingest the wake-up covers; false when it
// carries none.
func IngestLatency(payload string) (time.Duration, bool) {
	us, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || us <= 0 {
		return 0, false
	}
	return time.Duration(us) * time.Microsecond, true
}

// outboxWaker sends coalesced NOTIFYs on its channel (OutboxChannel, StartChannel, FreedChannel) after
// outbox rows were committed or deleted.
type outboxWaker struct {
	db      *bun.DB
	channel string
	kick    chan struct{}
	once    sync.Once
	stop    chan struct{}
	stopped chan struct{}
	worst   atomic.Int64 // slowest ingest (µs) since the last NOTIFY
}

func newOutboxWaker(db *bun.DB, channel string) *outboxWaker {
	return &outboxWaker{db: db, channel: channel, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// wake asks for a NOTIFY soon; it never blocks. The sending goroutine starts on first use.
func (w *outboxWaker) wake() {
	w.once.Do(func() { go w.run() })
	select {
	case w.kick <- struct{}{}:
	default: // one is already pending: it covers this commit too
	}
}

// wakeAfter is wake for an ingest that took took: the NOTIFY carries the slowest it covers.
func (w *outboxWaker) wakeAfter(took time.Duration) {
	us := max(1, took.Microseconds())
	for {
		old := w.worst.Load()
		if us <= old || w.worst.CompareAndSwap(old, us) {
			break
		}
	}
	w.wake()
}

func (w *outboxWaker) run() {
	defer close(w.stopped)
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		// An error only delays the dispatch to its next poll.
		payload := ""
		if us := w.worst.Swap(0); us > 0 {
			payload = strconv.FormatInt(us, 10)
		}
		_, _ = w.db.ExecContext(ctx, wakeSQL, w.channel, payload)
		cancel()
		select {
		case <-w.stop:
			return
		case <-time.After(outboxWakeGap):
		}
	}
}

// close stops the goroutine (if it ever started) and waits for it.
func (w *outboxWaker) close() {
	started := true
	w.once.Do(func() { started = false })
	close(w.stop)
	if started {
		<-w.stopped
	}
}
