package store

import (
	"context"
	"sync"
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
const wakeSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify(?, '')`

// outboxWaker sends coalesced NOTIFYs on its channel (OutboxChannel, StartChannel, FreedChannel) after
// outbox rows were committed or deleted.
type outboxWaker struct {
	db      *bun.DB
	channel string
	kick    chan struct{}
	once    sync.Once
	stop    chan struct{}
	stopped chan struct{}
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
		_, _ = w.db.ExecContext(ctx, wakeSQL, w.channel)
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
