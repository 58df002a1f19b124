package testenv

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SlowClients opens n connections to addr that send head (an unfinished request) and then nothing,
// as a slowloris attacker does. They come from the loopback addresses 127.0.0.2, 127.0.0.3, …,
// perIP from each, so a per-IP connection cap does not refuse them; the test's own requests, from
// 127.0.0.1, are not counted with them. The connections are closed when the test ends.
func SlowClients(tb testing.TB, addr string, n, perIP int, head string) []net.Conn {
	tb.Helper()
	conns := make([]net.Conn, 0, n)
	tb.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for i := range n {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/perIP))}
		c, err := (&net.Dialer{LocalAddr: src, Timeout: 5 * time.Second}).Dial("tcp", addr)
		if err != nil {
			tb.Fatalf("slow client %d from %s: %v", i, src.IP, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, head); err != nil {
			tb.Fatalf("slow client %d from %s: %v", i, src.IP, err)
		}
	}
	return conns
}

// RequireClosedWithin fails unless the server closes every one of conns (a read ends other than by
// its deadline) within d from now.
func RequireClosedWithin(tb testing.TB, conns []net.Conn, d time.Duration) {
	tb.Helper()
	if closed := ClosedWithin(conns, d); closed < len(conns) {
		tb.Fatalf("%d of %d slow connections still open after %v", len(conns)-closed, len(conns), d)
	}
}

// ClosedWithin is how many of conns the server closes (a read ends other than by its deadline) within
// d from now.
func ClosedWithin(conns []net.Conn, d time.Duration) int {
	deadline := time.Now().Add(d)
	var closed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(deadline)
			if _, err := io.Copy(io.Discard, c); !os.IsTimeout(err) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(closed.Load())
}

// Latencies does req n times through client and returns the durations, sorted, failing on an error
// or a status other than want.
func Latencies(tb testing.TB, client *http.Client, n, want int, newReq func() *http.Request) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		req := newReq()
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			tb.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		out = append(out, time.Since(start))
		if resp.StatusCode != want {
			tb.Fatalf("%s %s: %d, want %d", req.Method, req.URL, resp.StatusCode, want)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// InUse is the process's heap and stack in use after a garbage collection, in bytes.
func InUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// MB formats bytes as megabytes.
func MB(b uint64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
