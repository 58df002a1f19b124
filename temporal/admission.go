package temporal

import (
	"math"
	"sync"
	"time"
)

// admission paces the alert pipelines against ingest: while alerts keep arriving (the API is busy
// taking them) only busyInFlight pipelines run at once (0: none starts), so the 202s keep the CPU and
// the database; once arrivals stop for a quiet spell, the cap opens to maxInFlight and the backlog
// drains at full speed. Arrivals are the ingest's outbox wake-ups (store.OutboxChannel: one NOTIFY per
// ingest commit, coalesced to at most one per 5 ms; a finished pipeline's store.FreedChannel is not
// one), which every worker sees through Postgres, so it works the same with the API in the worker's
// process (`vigil dev`) or in its own (docker-compose). Alerts wait in the outbox, never in a request.
// Busy for longer than grace (ingest that never pauses), the cap doubles every step up to
// maxInFlight (from 0: 1, 2, 4, …), so a sustained stream cannot leave alerts un-enriched for ever: a
// burst is absorbed at full 202 speed, a flood trades some 202 latency for enrichment that keeps up.
//
// With a latency target (IngestLatencyTarget; PIPELINE_INGEST_LATENCY_TARGET_MS, opt-in) the busy cap is not fixed but
// follows the 202 itself (AIMD): each ingest or re-run wake-up carries the slowest such statement it
// covers (store.IngestLatency); one over the target halves the cap (at most once per cutGap, never below 1),
// and while none is the cap grows by growRate places a second, up to maxInFlight. So pipelines run
// beside ingest, and back off only as far as the 202 needs; no alert waits for a burst to end.
type admission struct {
	target           time.Duration // > 0: AIMD on the ingest latency instead of busyInFlight
	limit            float64       // the AIMD cap while busy
	lastCut, lastAdd time.Time

	pace                      bool
	maxInFlight, busyInFlight int
	busyRate                  float64       // arrivals per second from which the API counts as busy
	quiet                     time.Duration // no arrival for this long: not busy any more
	grace, step               time.Duration // busy this long, the cap starts doubling every step

	mu      sync.Mutex
	rate    float64 // arrivals per second, decayed exponentially (time constant: quiet)
	last    time.Time
	lastArr time.Time
	since   time.Time // start of the current busy spell (zero: not busy)
}

// AIMD steps: a slow ingest halves the cap at most once per cutGap (the running pipelines need that
// long to feel it); without one the cap grows by growRate places a second.
const (
	cutGap   = 500 * time.Millisecond
	growRate = 8.0
)

// withTarget turns AIMD on (target > 0) and returns a.
func (a *admission) withTarget(target time.Duration) *admission {
	if target > 0 && a.maxInFlight > 0 {
		a.target, a.limit, a.pace = target, float64(a.maxInFlight), true
	}
	return a
}

// ingestTook records the slowest ingest a wake-up at now reported.
func (a *admission) ingestTook(now time.Time, worst time.Duration) {
	if a.target <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grow(now)
	if worst > a.target && now.Sub(a.lastCut) >= cutGap {
		a.limit = max(1, a.limit/2)
		a.lastCut = now
	}
}

// grow adds growRate places per second since the last call, up to maxInFlight (caller holds mu).
func (a *admission) grow(now time.Time) {
	if !a.lastAdd.IsZero() {
		if dt := now.Sub(a.lastAdd).Seconds(); dt > 0 && now.Sub(a.lastCut) >= cutGap {
			a.limit = min(float64(a.maxInFlight), a.limit+growRate*dt)
		}
	}
	a.lastAdd = now
}

func newAdmission(pace bool, maxInFlight, busyInFlight int, busyRate float64, quiet time.Duration) *admission {
	return &admission{pace: pace && busyInFlight < maxInFlight, maxInFlight: maxInFlight, busyInFlight: max(0, busyInFlight),
		busyRate: busyRate, quiet: quiet,
		grace: 30 * time.Second, step: 10 * time.Second}
}

// decay brings the rate to now (caller holds mu).
func (a *admission) decay(now time.Time) {
	if !a.last.IsZero() {
		if dt := now.Sub(a.last); dt > 0 {
			a.rate *= math.Exp(-dt.Seconds() / a.quiet.Seconds())
		}
	}
	a.last = now
}

// arrived records n arrivals at now.
func (a *admission) arrived(now time.Time, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decay(now)
	a.rate += float64(n) / a.quiet.Seconds()
	a.lastArr = now
}

// cap is the number of pipelines that may run at now.
func (a *admission) cap(now time.Time) int {
	if !a.pace {
		return a.maxInFlight
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decay(now)
	if now.Sub(a.lastArr) >= a.quiet || a.rate < a.busyRate {
		a.since = time.Time{}
		if a.target > 0 {
			a.grow(now) // no ingest to protect: the cap regrows for the next spell
		}
		return a.maxInFlight
	}
	if a.since.IsZero() {
		a.since = now
	}
	if a.target > 0 {
		a.grow(now)
		return max(1, int(a.limit))
	}
	c := a.busyInFlight
	for over := now.Sub(a.since) - a.grace; over >= 0 && c < a.maxInFlight; over -= a.step {
		c = max(1, 2*c)
	}
	return min(c, a.maxInFlight)
}

// quietAt is when the current spell ends if no alert arrives meanwhile.
func (a *admission) quietAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastArr.Add(a.quiet)
}

// busy reports whether the cap is the busy one at now.
func (a *admission) busy(now time.Time) bool { return a.cap(now) < a.maxInFlight }
