// Package ratelimit implements the doors' fixed-window request budget, in process memory (one replica)
// or in Postgres (shared by every replica), and Policy, the one budget rule REST, MCP and the console
// apply.
package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Decision is the outcome of taking one request from a bucket.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time     // end of the current window
	RetryAfter time.Duration // when refused
}

// Window is the length of a rate-limit window.
const Window = time.Minute

// KeyBucket is the bucket of an authenticated request: the key's id. Not its display prefix, which
// holds only a few random characters, so two keys could share (and drain) one budget.
func KeyBucket(keyID uuid.UUID) string { return "key:" + keyID.String() }

// IPBucket is the bucket of an unauthenticated request: the client IP.
func IPBucket(ip string) string { return "ip:" + ip }

func decide(count, limit int, windowStart, now time.Time) Decision {
	reset := windowStart.Add(Window)
	d := Decision{Allowed: count <= limit, Limit: limit, Remaining: max(0, limit-count), Reset: reset}
	if !d.Allowed {
		d.RetryAfter = reset.Sub(now)
	}
	return d
}

// Memory is an in-process limiter.
type Memory struct {
	now     func() time.Time
	mu      sync.Mutex
	window  time.Time
	buckets map[string]int
}

// NewMemory returns an in-process limiter.
func NewMemory() *Memory { return &Memory{now: time.Now, buckets: map[string]int{}} }

// Take counts one request against bucket.
func (m *Memory) Take(_ context.Context, bucket string, limit int) (Decision, error) {
	now := m.now()
	start := now.Truncate(Window)
	m.mu.Lock()
	if !start.Equal(m.window) {
		m.window = start
		clear(m.buckets)
	}
	m.buckets[bucket]++
	count := m.buckets[bucket]
	m.mu.Unlock()
	return decide(count, limit, start, now), nil
}

// Counter is the store operation the Postgres limiter needs.
type Counter interface {
	IncrementRateWindow(ctx context.Context, bucket string, windowStart time.Time) (int, error)
	SweepRateWindows(ctx context.Context, cutoff time.Time) error
}

// Postgres shares counters across replicas through the store.
type Postgres struct {
	counter Counter
	now     func() time.Time
	mu      sync.Mutex
	swept   time.Time
}

// NewPostgres returns a limiter backed by counter.
func NewPostgres(counter Counter) *Postgres { return &Postgres{counter: counter, now: time.Now} }

// Take counts one request against bucket.
func (p *Postgres) Take(ctx context.Context, bucket string, limit int) (Decision, error) {
	now := p.now()
	start := now.Truncate(Window)
	count, err := p.counter.IncrementRateWindow(ctx, bucket, start)
	if err != nil {
		return Decision{}, fmt.Errorf("count request: %w", err)
	}
	p.mu.Lock()
	sweep := !p.swept.Equal(start)
	p.swept = start
	p.mu.Unlock()
	if sweep {
		if err := p.counter.SweepRateWindows(ctx, start.Add(-Window)); err != nil {
			return Decision{}, fmt.Errorf("sweep windows: %w", err)
		}
	}
	return decide(count, limit, start, now), nil
}
