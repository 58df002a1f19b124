package api

import (
	"context"

	"github.com/vigil-soc/vigil/kit/ratelimit"
)

// RateLimiter counts requests per bucket in fixed one-minute windows.
type RateLimiter interface {
	Take(ctx context.Context, bucket string, limit int) (ratelimit.Decision, error)
}
