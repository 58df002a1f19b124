package netguard

import (
	"errors"
	"net"
	"strconv"
	"strings"
)

// HostList is a list of host patterns a credential may be sent to (workflow secrets' allowed_hosts,
// a provider's own step hosts): "api.example.com", "*.example.com" (any subdomain, not the apex),
// an IP literal, each with an optional ":port" (without one, any port).
type HostList struct {
	patterns []hostPattern
}

type hostPattern struct {
	host     string // lower case, no brackets; for a wildcard, the suffix after "*."
	wildcard bool
	port     string // "" = any
}

// MaxHostPatternLength bounds one pattern.
const MaxHostPatternLength = 260

// ParseHostPattern checks one pattern; the error says what is wrong with it.
func ParseHostPattern(s string) error {
	_, err := parseHostPattern(s)
	return err
}

func parseHostPattern(s string) (hostPattern, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return hostPattern{}, errors.New("empty host pattern")
	}
	if len(raw) > MaxHostPatternLength {
		return hostPattern{}, errors.New("host pattern too long")
	}
	if strings.ContainsAny(raw, "/?#@ \t\r\n\x00") || strings.Contains(raw, "://") {
		return hostPattern{}, errors.New("a host pattern is a host name or IP with an optional :port, not a URL")
	}
	host, port := splitAllowEntry(raw)
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return hostPattern{}, errors.New("invalid port")
		}
	}
	p := hostPattern{host: host, port: port}
	if strings.HasPrefix(host, "*.") {
		p.wildcard, p.host = true, strings.TrimPrefix(host, "*.")
	}
	if p.host == "" || strings.Contains(p.host, "*") {
		return hostPattern{}, errors.New("a wildcard is allowed only as a leading \"*.\" label")
	}
	if p.wildcard && !strings.Contains(p.host, ".") {
		return hostPattern{}, errors.New("a wildcard needs a domain with at least two labels (*.example.com)")
	}
	return p, nil
}

// NewHostList parses patterns; invalid ones are reported by ParseHostPattern and skipped here.
func NewHostList(patterns []string) HostList {
	var l HostList
	for _, s := range patterns {
		if p, err := parseHostPattern(s); err == nil {
			l.patterns = append(l.patterns, p)
		}
	}
	return l
}

// Matches reports whether host on port (the request URL's, the scheme's default port when the URL
// has none) is in the list.
func (l HostList) Matches(host, port string) bool {
	h := normalizeHost(host)
	for _, p := range l.patterns {
		if p.port != "" && p.port != port {
			continue
		}
		if h == p.host && !p.wildcard {
			return true
		}
		if p.wildcard && strings.HasSuffix(h, "."+p.host) {
			return true
		}
	}
	return false
}

// HostPort splits a URL's Host into host and port, filling the scheme's default port.
func HostPort(scheme, hostport string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	if strings.EqualFold(scheme, "http") {
		return hostport, "80"
	}
	return hostport, "443"
}
