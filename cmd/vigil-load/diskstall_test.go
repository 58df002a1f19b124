package main

import (
	"strings"
	"testing"
	"time"
)

const diskstatsSample = ` 254       0 vda 13021 2771 1210402 8143 900120 201881 71093032 3317340 3 702448 3338770 0 0 0 0 29870 13286
 254       1 vda1 12859 2771 1204634 8101 900108 201881 71093024 3317333 0 702420 3325434 0 0 0 0 0 0
`

func TestReadDiskCounters(t *testing.T) {
	c, err := readDiskCounters(strings.NewReader(diskstatsSample), "vda")
	if err != nil {
		t.Fatal(err)
	}
	if c.completed != 13021+900120 || c.inFlight != 3 {
		t.Fatalf("vda = %+v", c)
	}
	if _, err := readDiskCounters(strings.NewReader(diskstatsSample), "sdz"); err == nil {
		t.Fatal("an unknown device read without error")
	}
	if _, err := readDiskCounters(strings.NewReader(" 254 0 vda 1 2 3 4 x 6 7 8 9 10 11\n"), "vda"); err == nil {
		t.Fatal("a malformed line read without error")
	}
}

func TestStallMeter(t *testing.T) {
	m := &stallMeter{min: 100 * time.Millisecond}
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		ms        int64
		completed uint64
		inFlight  uint64
		want      time.Duration // a span reported at this sample; 0: none
	}{
		{0, 10, 1, 0},
		{10, 12, 1, 0},  // progress
		{20, 12, 0, 0},  // idle: nothing in flight is no stall
		{30, 12, 2, 0},  // stalled from here
		{90, 12, 2, 0},  //
		{100, 13, 0, 0}, // 70 ms: shorter than min, not reported
		{110, 13, 1, 0}, // stalled again
		{400, 13, 1, 0}, //
		{410, 20, 1, 300 * time.Millisecond},
		{420, 25, 1, 0},
	}
	for _, s := range steps {
		start, d, ok := m.observe(at(s.ms), diskCounters{completed: s.completed, inFlight: s.inFlight})
		if (s.want != 0) != ok || (ok && (d != s.want || !start.Equal(at(110)))) {
			t.Fatalf("at %d ms: span %v %v %v, want %v from 110 ms", s.ms, start, d, ok, s.want)
		}
	}
}
