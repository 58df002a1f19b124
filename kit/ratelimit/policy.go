package ratelimit

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Limiter counts requests per bucket in fixed one-minute windows (Memory, Postgres).
type Limiter interface {
	Take(ctx context.Context, bucket string, limit int) (Decision, error)
}

// Policy is the one request-budget rule of every door (REST, MCP, the console): which bucket a
// request counts against, the client-IP rule, the X-RateLimit-* headers, the refusal and what a
// limiter outage does. The doors only translate its Verdict into their own answer.
type Policy struct {
	Limiter          Limiter
	DefaultPerMinute int // RATE_LIMIT_DEFAULT_PER_MINUTE: the client-IP bucket, and keys without a limit of their own
	TrustedProxies   int // TRUSTED_PROXY_COUNT
	Log              *slog.Logger
}

// SignInsPerMinute is how many console sign-in attempts one client IP may make in a window.
const SignInsPerMinute = 10

// Code is the contract's error code of a refused request.
const Code = "RATE_LIMITED"

// Caller is who a request counts against: the authenticated key (KeyID set, KeyLimit its own
// rate_limit_per_minute or 0) or else the client IP.
type Caller struct {
	KeyID    uuid.UUID
	KeyLimit int
	IP       string
}

// Verdict is the outcome of one request against the budget.
type Verdict struct {
	Allowed    bool
	Kind       string // "key", "ip" or "sign-in": the bucket's kind (telemetry)
	Limit      int
	Remaining  int
	Reset      int64 // unix seconds
	RetryAfter int   // seconds, when refused
	counted    bool  // false when the limiter was unavailable: no headers
}

// Take counts one request of c: against its key's bucket with the key's own limit (else the default),
// or against its client IP's bucket with the default. A limiter outage must not take a door down: it
// is logged and the request goes through, without headers.
func (p Policy) Take(ctx context.Context, c Caller) Verdict {
	if c.KeyID != uuid.Nil {
		limit := p.DefaultPerMinute
		if c.KeyLimit > 0 {
			limit = c.KeyLimit
		}
		return p.take(ctx, "key", KeyBucket(c.KeyID), limit)
	}
	return p.take(ctx, "ip", IPBucket(c.IP), p.DefaultPerMinute)
}

// TakeSignIn counts one console sign-in attempt from ip (SignInsPerMinute a window), apart from the
// client IP's request budget.
func (p Policy) TakeSignIn(ctx context.Context, ip string) Verdict {
	return p.take(ctx, "sign-in", "signin:"+ip, SignInsPerMinute)
}

func (p Policy) take(ctx context.Context, kind, bucket string, limit int) Verdict {
	if p.Limiter == nil {
		return Verdict{Allowed: true, Kind: kind}
	}
	d, err := p.Limiter.Take(ctx, bucket, limit)
	if err != nil {
		if p.Log != nil {
			p.Log.WarnContext(ctx, "rate limiter unavailable", "err", err, "bucket_kind", kind)
		}
		return Verdict{Allowed: true, Kind: kind}
	}
	v := Verdict{Allowed: d.Allowed, Kind: kind, Limit: d.Limit, Remaining: d.Remaining, Reset: d.Reset.Unix(), counted: true}
	if !d.Allowed {
		v.RetryAfter = max(1, int(d.RetryAfter.Seconds()+0.999))
	}
	return v
}

// Headers are the response headers of v, in order: X-RateLimit-Limit, -Remaining, -Reset, and
// Retry-After when refused (none when the limiter was unavailable).
func (v Verdict) Headers() [][2]string {
	if !v.counted {
		return nil
	}
	h := [][2]string{
		{"X-RateLimit-Limit", strconv.Itoa(v.Limit)},
		{"X-RateLimit-Remaining", strconv.Itoa(v.Remaining)},
		{"X-RateLimit-Reset", strconv.FormatInt(v.Reset, 10)},
	}
	if !v.Allowed {
		h = append(h, [2]string{"Retry-After", strconv.Itoa(v.RetryAfter)})
	}
	return h
}

// Message is the refusal's message (API.md §0's error.message).
func (v Verdict) Message() string {
	return "Rate limit exceeded; retry after " + strconv.Itoa(v.RetryAfter) + " s."
}

// Details are the refusal's error.details.
func (v Verdict) Details() map[string]any {
	return map[string]any{"limit": v.Limit, "retry_after_seconds": strconv.Itoa(v.RetryAfter)}
}

// ClientIP is the client's address: the socket peer, or with TRUSTED_PROXY_COUNT = N > 0 the N-th
// address from the right of X-Forwarded-For (every header line, in order), or the peer when the
// header has fewer entries or that one is malformed. forwardedFor gives the header lines; it is
// called only behind trusted proxies, so a request without them reads and copies no header.
func (p Policy) ClientIP(peer string, forwardedFor func() []string) string {
	n := p.TrustedProxies
	if n <= 0 {
		return peer
	}
	var hops []string
	for _, h := range forwardedFor() {
		for _, part := range strings.Split(h, ",") {
			hops = append(hops, strings.TrimSpace(part))
		}
	}
	if len(hops) < n {
		return peer
	}
	ip := net.ParseIP(hops[len(hops)-n])
	if ip == nil {
		return peer
	}
	return ip.String()
}

// BehindProxy reports whether the doors sit behind trusted proxies, whose X-Forwarded-* headers then
// describe the client's request (scheme, host); without them those headers are the client's own.
func (p Policy) BehindProxy() bool { return p.TrustedProxies > 0 }
