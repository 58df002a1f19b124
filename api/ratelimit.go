package api

import "github.com/vigil-soc/vigil/kit/ratelimit"

// RateLimiter counts requests per bucket in fixed one-minute windows (the doors' shared limiter).
type RateLimiter = ratelimit.Limiter
