// Package netguard keeps configuration-driven outbound HTTP (enrichment providers, workflow steps,
// agent webhooks, notifiers) away from internal networks, and decides which indicator values are not
// routable and therefore never sent to a provider.
//
// The SSRF guard checks a URL before the request (scheme, host, literal addresses, well-known metadata
// names) and, decisively, the resolved address at dial time through net.Dialer's Control hook, so a
// name that resolves to a public address when checked and to 127.0.0.1 when dialled (DNS rebinding)
// is still refused. SSRF_ALLOWED_HOSTS entries (host names or IPs, optionally with a port) are the
// explicit escape hatch for development.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxRedirects is the number of redirects an HTTPClient follows before giving up.
const MaxRedirects = 5

// BlockedError reports a destination the guard refused.
type BlockedError struct {
	Target string // the URL, host or address that was refused
	Reason string
}

func (e *BlockedError) Error() string {
	if e.Target == "" {
		return "ssrf guard: blocked: " + e.Reason
	}
	return fmt.Sprintf("ssrf guard: blocked %s: %s", e.Target, e.Reason)
}

// IsBlocked reports whether err is (or wraps) a *BlockedError.
func IsBlocked(err error) bool {
	var be *BlockedError
	return errors.As(err, &be)
}

// blockedName reports host names refused by name, before any resolution.
func blockedName(h string) (string, bool) {
	switch h {
	case "metadata.google.internal", "metadata.goog":
		return ReasonMetadata, true
	}
	return "", false
}

// Guard is the SSRF guard. The zero value is not usable; call NewGuard. A Guard is immutable and safe
// for concurrent use.
type Guard struct {
	// host name or IP literal (lower case, no brackets) -> allowed ports; an empty set means any port.
	allowed  map[string]map[string]bool
	resolver *net.Resolver
}

// NewGuard returns a guard whose only exceptions are allowedHosts: entries such as "localhost",
// "127.0.0.1", "127.0.0.1:8080", "[::1]:9000" or "::1". Blank entries are ignored, so the result of
// strings.Split(os.Getenv("SSRF_ALLOWED_HOSTS"), ",") can be passed as is. An entry with a port
// allows only that port.
func NewGuard(allowedHosts []string) *Guard {
	g := &Guard{allowed: map[string]map[string]bool{}}
	for _, entry := range allowedHosts {
		host, port := splitAllowEntry(entry)
		if host == "" {
			continue
		}
		ports, ok := g.allowed[host]
		if !ok {
			ports = map[string]bool{}
			g.allowed[host] = ports
		}
		if port == "" {
			// Any port: represented by an explicit marker so a later port-specific entry cannot narrow it.
			ports["*"] = true
			continue
		}
		ports[port] = true
	}
	return g
}

// WithResolver returns a copy of g that resolves names with r (nil: the default resolver).
func (g *Guard) WithResolver(r *net.Resolver) *Guard {
	c := *g
	c.resolver = r
	return &c
}

func splitAllowEntry(entry string) (host, port string) {
	entry = strings.ToLower(strings.TrimSpace(entry))
	if entry == "" {
		return "", ""
	}
	if h, p, err := net.SplitHostPort(entry); err == nil {
		return normalizeHost(h), p
	}
	return normalizeHost(entry), ""
}

func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return h
}

// Allowed reports whether host (a name or IP literal) on port is in the allow-list.
func (g *Guard) Allowed(host, port string) bool {
	ports, ok := g.allowed[normalizeHost(host)]
	if !ok {
		return false
	}
	return ports["*"] || ports[port]
}

// CheckURL validates raw before a request is made: scheme http or https, a host present, no blocked
// literal address, no blocked metadata name, no ambiguous numeric host form (2130706433, 0x7f.1,
// 0177.0.0.1) that some resolvers read as an IP address. Host names are resolved only at dial time.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &BlockedError{Target: raw, Reason: "unparseable URL"}
	}
	return g.checkParsedURL(u)
}

func (g *Guard) checkParsedURL(u *url.URL) error {
	target := u.Redacted()
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return &BlockedError{Target: target, Reason: fmt.Sprintf("scheme %q is not allowed (http or https only)", u.Scheme)}
	}
	host := u.Hostname()
	if host == "" {
		return &BlockedError{Target: target, Reason: "URL has no host"}
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	if reason := g.hostReason(host, port); reason != "" {
		return &BlockedError{Target: target, Reason: reason}
	}
	return nil
}

// hostReason judges a host as written (before resolution).
func (g *Guard) hostReason(host, port string) string {
	if g.Allowed(host, port) {
		return ""
	}
	h := normalizeHost(host)
	if a, err := netip.ParseAddr(h); err == nil {
		return ClassifyIP(a)
	}
	if reason, ok := blockedName(h); ok {
		return reason
	}
	if looksNumeric(h) {
		return "ambiguous numeric host name"
	}
	return ""
}

// looksNumeric reports host names that inet_aton-style parsers would read as an address: every
// dot-separated label is a decimal, octal or 0x-hex number (e.g. "2130706433", "0x7f.0.0.1", "017700000001").
func looksNumeric(h string) bool {
	if h == "" {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return false
		}
		l := label
		if strings.HasPrefix(l, "0x") {
			l = l[2:]
			if l == "" {
				continue
			}
			if _, err := strconv.ParseUint(l, 16, 64); err != nil {
				return false
			}
			continue
		}
		for _, c := range l {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// Control is a net.Dialer Control hook: it refuses the connection when the resolved address is
// blocked and not in the allow-list by IP. Use it as net.Dialer{Control: g.Control}. It does not know
// the host name being dialled; DialContext adds the name-based allow-list on top of it.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	return g.checkResolved(network, address)
}

func (g *Guard) checkResolved(network, address string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return &BlockedError{Target: address, Reason: fmt.Sprintf("network %q is not allowed", network)}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Target: address, Reason: "unparseable dial address"}
	}
	ip := ap.Addr().Unmap().WithZone("")
	if g.Allowed(ip.String(), strconv.Itoa(int(ap.Port()))) {
		return nil
	}
	if reason := ClassifyIP(ip); reason != "" {
		return &BlockedError{Target: address, Reason: reason}
	}
	return nil
}

// DialContext dials addr ("host:port") through the guard. A host name in the allow-list is dialled
// without the address check (for this connection only); every other connection has its resolved
// address checked by Control.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("ssrf guard: dial %s: %w", addr, err)
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: g.resolver}
	if !g.Allowed(host, port) {
		if reason := g.hostReason(host, port); reason != "" {
			return nil, &BlockedError{Target: addr, Reason: reason}
		}
		d.Control = g.Control
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, dialError(addr, err)
	}
	return conn, nil
}

// DialError is a failed dial as the caller may see it: it names the host and port that were asked
// for, never the addresses they resolved to nor the resolver's, which configuration authors must not
// learn about the internal network (issue 27 item 5). The full error is Detail's, for logs.
type DialError struct {
	Addr    string // as asked: "host:port"
	Reason  string // "cannot resolve the host", "connection refused", "timed out", "unreachable"
	Detail  error  // the dialer's own error (with addresses); not in Error()
	timeout bool
}

func (e *DialError) Error() string { return "dial " + e.Addr + ": " + e.Reason }

// Timeout reports a dial that timed out (net.Error).
func (e *DialError) Timeout() bool { return e.timeout }

// Temporary is false (net.Error; deprecated there).
func (e *DialError) Temporary() bool { return false }

// Unwrap returns the context's error when the dial was cancelled or ran out of time, so errors.Is
// still sees it; nothing else (its text holds addresses).
func (e *DialError) Unwrap() error {
	switch {
	case errors.Is(e.Detail, context.Canceled):
		return context.Canceled
	case errors.Is(e.Detail, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// dialError rewrites err, the dialer's error for addr, without resolved or resolver addresses: a
// refusal of the guard's becomes a *BlockedError naming addr, anything else a *DialError.
func dialError(addr string, err error) error {
	var be *BlockedError
	if errors.As(err, &be) {
		return &BlockedError{Target: addr, Reason: be.Reason}
	}
	de := &DialError{Addr: addr, Reason: "connection failed", Detail: err}
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr):
		de.Reason, de.timeout = "cannot resolve the host", dnsErr.IsTimeout
	case errors.Is(err, context.Canceled):
		de.Reason = "cancelled"
	case errors.As(err, &ne) && ne.Timeout():
		de.Reason, de.timeout = "timed out", true
	case errors.Is(err, syscall.ECONNREFUSED):
		de.Reason = "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		de.Reason = "unreachable"
	}
	return de
}

// HTTPClient returns a client for configuration-driven calls: every connection goes through
// DialContext, proxies from the environment are ignored, every request URL (the first one and each
// redirect target) passes CheckURL, and at most MaxRedirects redirects are followed. The caller bounds
// how much of the response body it reads.
func (g *Guard) HTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: &checkedTransport{guard: g, next: tr},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("ssrf guard: stopped after %d redirects", MaxRedirects)
			}
			return g.checkParsedURL(req.URL)
		},
	}
}

// checkedTransport runs CheckURL on every request before handing it to the real transport.
type checkedTransport struct {
	guard *Guard
	next  http.RoundTripper
}

func (t *checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.guard.checkParsedURL(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}
