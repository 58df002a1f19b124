package temporal

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/store"
)

func TestAdmission(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	a := newAdmission(true, 256, 4, 5, time.Second)
	require.Equal(t, 256, a.cap(t0), "idle: the full cap")

	// 2 arrivals a second: not busy.
	for i := range 10 {
		a.arrived(t0.Add(time.Duration(i)*500*time.Millisecond), 1)
	}
	require.Equal(t, 256, a.cap(t0.Add(5*time.Second)))

	// 50 a second: busy within a few arrivals, for as long as they keep coming.
	t1 := t0.Add(10 * time.Second)
	for i := range 100 {
		a.arrived(t1.Add(time.Duration(i)*20*time.Millisecond), 1)
	}
	end := t1.Add(99 * 20 * time.Millisecond)
	require.Equal(t, 4, a.cap(end))
	require.Equal(t, 4, a.cap(end.Add(500*time.Millisecond)), "a short gap keeps it busy")
	require.Equal(t, 256, a.cap(end.Add(1100*time.Millisecond)), "quiet for a second: open again")

	// Coalesced wake-ups carrying several arrivals count them all.
	t2 := end.Add(time.Minute)
	a.arrived(t2, 3)
	a.arrived(t2.Add(100*time.Millisecond), 3)
	require.Equal(t, 4, a.cap(t2.Add(100*time.Millisecond)))

	// Busy without a pause past the 30 s grace: the cap doubles every 10 s up to the full one.
	t3 := t2.Add(time.Hour)
	// stream feeds adm one arrival every 20 ms from t3 for d and returns the cap after each.
	stream := func(adm *admission, d time.Duration) map[time.Duration]int {
		caps := map[time.Duration]int{}
		for ms := time.Duration(0); ms <= d; ms += 20 * time.Millisecond {
			adm.arrived(t3.Add(ms), 1)
			caps[ms] = adm.cap(t3.Add(ms))
		}
		return caps
	}
	caps := stream(a, 120*time.Second)
	require.Equal(t, 4, caps[29*time.Second])
	require.Equal(t, 8, caps[30200*time.Millisecond])
	require.Equal(t, 16, caps[40200*time.Millisecond])
	require.Equal(t, 32, caps[50200*time.Millisecond])
	require.Equal(t, 256, caps[120*time.Second])
	require.Equal(t, 256, a.cap(t3.Add(122*time.Second)), "quiet")
	a.arrived(t3.Add(123*time.Second), 10)
	require.Equal(t, 4, a.cap(t3.Add(123*time.Second)), "a new spell starts from the busy cap")

	// 0 pauses the starts while busy; past the grace the cap grows 1, 2, 4, …
	caps = stream(newAdmission(true, 256, 0, 5, time.Second), 51*time.Second)
	require.Equal(t, 0, caps[29*time.Second])
	require.Equal(t, 1, caps[30200*time.Millisecond])
	require.Equal(t, 2, caps[40200*time.Millisecond])
	require.Equal(t, 4, caps[50200*time.Millisecond])

	// Pacing off, or a busy cap not below the full one.
	for _, off := range []*admission{newAdmission(false, 256, 0, 5, time.Second), newAdmission(true, 8, 8, 5, time.Second)} {
		off.arrived(t2, 100)
		require.Equal(t, off.maxInFlight, off.cap(t2))
	}
}

// Only ingest wake-ups are arrivals; a finished pipeline's wake-up drains the alert outbox uncounted.
func TestWakes(t *testing.T) {
	note := func(ch string) pgdriver.Notification { return pgdriver.Notification{Channel: ch} }
	w := newWakes()
	take := func(ns ...pgdriver.Notification) wakeSummary {
		for _, n := range ns {
			w.add(n)
		}
		return w.take()
	}
	require.Equal(t, wakeSummary{alerts: true}, take(note(store.FreedChannel), note(store.FreedChannel)), "finishes: a claim, no arrival")
	require.Equal(t, wakeSummary{alerts: true, starts: true, arrivals: 2},
		take(note(store.StartChannel), note(store.OutboxChannel), note(store.FreedChannel), note(store.OutboxChannel)))
	require.Equal(t, wakeSummary{starts: true}, take(note(store.StartChannel)))
	require.Equal(t, wakeSummary{}, take(), "a take starts afresh")

	ch := make(chan pgdriver.Notification, 1)
	ch <- note(store.OutboxChannel)
	close(ch)
	w.fold(ch)
	<-w.ready
	require.Equal(t, wakeSummary{alerts: true, starts: true, arrivals: 1}, w.take(), "a closed listener: drain both")
}

// Ingest wake-ups carry the slowest ingest they cover; a summary reports the slowest of all.
func TestWakes_SlowestIngest(t *testing.T) {
	w := newWakes()
	w.add(pgdriver.Notification{Channel: store.OutboxChannel, Payload: "3000"})
	w.add(pgdriver.Notification{Channel: store.OutboxChannel, Payload: "41000"})
	w.add(pgdriver.Notification{Channel: store.FreedChannel, Payload: "900000"}) // not an ingest
	w.add(pgdriver.Notification{Channel: store.OutboxChannel, Payload: ""})      // a re-run: not timed
	got := w.take()
	require.Equal(t, 3, got.arrivals)
	require.Equal(t, 41*time.Millisecond, got.slowest)
}

// The listener's channel is read while nobody takes: a loop busy in a claim for as long as a burst
// sends thousands of notifications leaves none in the channel (the driver drops what its buffer
// cannot hold), and one token tells the loop there is something to take. The channel here holds one
// notification and every send waits for room: it deadlocks unless fold reads on its own.
func TestWakes_FoldsWhileTheLoopIsBusy(t *testing.T) {
	w := newWakes()
	ch := make(chan pgdriver.Notification, 1)
	done := make(chan struct{})
	go func() { w.fold(ch); close(done) }()
	for i := range 5000 {
		select {
		case ch <- pgdriver.Notification{Channel: store.OutboxChannel, Payload: strconv.Itoa(i + 1)}:
		case <-time.After(10 * time.Second):
			t.Fatalf("notification %d waited 10 s: nothing reads the channel while the loop is away", i)
		}
	}
	close(ch)
	<-done
	<-w.ready
	got := w.take()
	require.Equal(t, wakeSummary{alerts: true, starts: true, arrivals: 5000, slowest: 5 * time.Millisecond}, got,
		"every notification folded in; the closed channel asks for both claims")
	require.Empty(t, w.ready, "one token covered them all")
}

// With a latency target the busy cap follows the 202: ingests within the target leave every place
// open (pipelines run beside ingest, never paused); a slow one halves the cap, at most once per
// cutGap and never below 1; it grows back by growRate a second while ingests are fast.
func TestAdmission_AIMDOnIngestLatency(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	a := newAdmission(true, 256, 0, 5, time.Second).withTarget(25 * time.Millisecond)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// 50 a second, every ingest fast: busy, but the cap stays whole.
	for ms := 0; ms < 2000; ms += 20 {
		a.arrived(at(ms), 1)
		a.ingestTook(at(ms), 3*time.Millisecond)
	}
	require.True(t, a.busy(at(1980)) == false, "fast ingests: nothing held back")
	require.Equal(t, 256, a.cap(at(1980)))

	// Slow ingests: halved once per cutGap, down to 1, never 0.
	a.arrived(at(2000), 1)
	a.ingestTook(at(2000), 60*time.Millisecond)
	require.Equal(t, 128, a.cap(at(2000)))
	a.arrived(at(2100), 1)
	a.ingestTook(at(2100), 60*time.Millisecond)
	require.Equal(t, 128, a.cap(at(2100)), "one cut per cutGap")
	for ms := 2120; ms <= 8000; ms += 20 {
		a.arrived(at(ms), 1)
		a.ingestTook(at(ms), 80*time.Millisecond)
	}
	require.Equal(t, 1, a.cap(at(8000)), "never below one pipeline")

	// Fast again: +growRate places a second (after the cut's own gap).
	for ms := 8020; ms <= 10500; ms += 20 {
		a.arrived(at(ms), 1)
		a.ingestTook(at(ms), 2*time.Millisecond)
	}
	got := a.cap(at(10500))
	require.InDelta(t, 1+growRate*2.0, float64(got), 2, "about 2 s of growth")
	// Quiet: the whole cap, and it has regrown for the next spell.
	require.Equal(t, 256, a.cap(at(60000)))
	a.arrived(at(60100), 10)
	require.Equal(t, 256, a.cap(at(60100)))

	// Without a target the old pacing holds (busy cap 0 pauses).
	b := newAdmission(true, 256, 0, 5, time.Second).withTarget(0)
	for ms := 0; ms < 2000; ms += 20 {
		b.arrived(at(ms), 1)
		b.ingestTook(at(ms), time.Second)
	}
	require.Equal(t, 0, b.cap(at(1980)))
}
