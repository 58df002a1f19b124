package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemory(t *testing.T) {
	m := NewMemory()
	now := time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC)
	m.now = func() time.Time { return now }
	for i := 1; i <= 3; i++ {
		d, err := m.Take(context.Background(), "k", 3)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, 3-i, d.Remaining)
	}
	d, _ := m.Take(context.Background(), "k", 3)
	require.False(t, d.Allowed)
	require.Equal(t, 30*time.Second, d.RetryAfter)
	require.Equal(t, now.Truncate(time.Minute).Add(time.Minute), d.Reset)
	other, _ := m.Take(context.Background(), "other", 3)
	require.True(t, other.Allowed)
	now = now.Add(time.Minute)
	d, _ = m.Take(context.Background(), "k", 3)
	require.True(t, d.Allowed, "a new window starts afresh")
}

type fakeCounter struct{ counts map[string]int }

func (f *fakeCounter) IncrementRateWindow(_ context.Context, b string, w time.Time) (int, error) {
	f.counts[b+w.String()]++
	return f.counts[b+w.String()], nil
}
func (f *fakeCounter) SweepRateWindows(context.Context, time.Time) error { return nil }

func TestPostgresDecision(t *testing.T) {
	p := NewPostgres(&fakeCounter{counts: map[string]int{}})
	d, err := p.Take(context.Background(), "k", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, _ = p.Take(context.Background(), "k", 1)
	require.False(t, d.Allowed)
	require.Positive(t, d.RetryAfter)
}
