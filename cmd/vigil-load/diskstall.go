package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// diskCounters is what /proc/diskstats says of one block device: the reads and writes it has
// completed since boot and the requests in flight now.
type diskCounters struct {
	completed uint64 // reads + writes completed
	inFlight  uint64
}

// readDiskCounters reads dev's line of /proc/diskstats (Documentation/admin-guide/iostats.rst:
// field 4 reads completed, 8 writes completed, 12 I/Os currently in progress, counted from 1 with
// major, minor and name first).
func readDiskCounters(r io.Reader, dev string) (diskCounters, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 12 || f[2] != dev {
			continue
		}
		var v [3]uint64
		for i, idx := range []int{3, 7, 11} {
			n, err := strconv.ParseUint(f[idx], 10, 64)
			if err != nil {
				return diskCounters{}, fmt.Errorf("diskstats %s field %d: %w", dev, idx+1, err)
			}
			v[i] = n
		}
		return diskCounters{completed: v[0] + v[1], inFlight: v[2]}, nil
	}
	if err := sc.Err(); err != nil {
		return diskCounters{}, fmt.Errorf("read diskstats: %w", err)
	}
	return diskCounters{}, fmt.Errorf("no device %q in /proc/diskstats", dev)
}

// stallMeter finds the spans during which a device had requests in flight and completed none: a
// commit's fsync issued then waits the whole span, whoever issued it (the device or the host under
// it held everything).
type stallMeter struct {
	min   time.Duration
	since time.Time // start of the current span; zero when the device is not stalled
	last  diskCounters
	seen  bool
}

// observe takes one sample and returns the span that just ended, if it lasted at least min.
func (m *stallMeter) observe(now time.Time, c diskCounters) (start time.Time, d time.Duration, ok bool) {
	stalled := m.seen && c.completed == m.last.completed && c.inFlight > 0
	m.seen, m.last = true, c
	if stalled {
		if m.since.IsZero() {
			m.since = now
		}
		return time.Time{}, 0, false
	}
	if m.since.IsZero() {
		return time.Time{}, 0, false
	}
	start, d = m.since, now.Sub(m.since)
	m.since = time.Time{}
	return start, d, d >= m.min
}

// diskStalls samples dev every interval until ctx ends and writes a line per stall of at least min
// to out: its start in Unix milliseconds and its length in milliseconds.
func diskStalls(ctx context.Context, dev string, interval, min time.Duration, out io.Writer) error {
	m := &stallMeter{min: min}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f, err := os.Open("/proc/diskstats")
		if err != nil {
			return fmt.Errorf("open diskstats: %w", err)
		}
		c, err := readDiskCounters(f, dev)
		f.Close()
		if err != nil {
			return err
		}
		if start, d, ok := m.observe(time.Now(), c); ok {
			if _, err := fmt.Fprintf(out, "%d %d\n", start.UnixMilli(), d.Milliseconds()); err != nil {
				return fmt.Errorf("write stall: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
