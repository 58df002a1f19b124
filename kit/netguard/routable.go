package netguard

import (
	"net/netip"
	"net/url"
	"strings"
)

// internalSuffixes are name suffixes that never resolve on the public internet.
var internalSuffixes = []string{
	".localhost", ".local", ".internal", ".lan", ".corp", ".home.arpa", ".test", ".example", ".invalid",
}

// NonRoutable reports whether an indicator value must not be sent to an external provider, and why.
// ip values are judged by ClassifyIP (private, loopback, link-local, CGNAT, multicast, reserved,
// unspecified, ...). domain, url and email values are judged by their host: "localhost", a name ending
// in .localhost .local .internal .lan .corp .home.arpa .test .example .invalid (or equal to one of
// those without the dot), or an IP literal that ClassifyIP refuses. Other types (hashes, accounts) are
// always routable. Values that cannot be parsed are left to the caller's own validation (skip=false).
func NonRoutable(indicatorType, value string) (reason string, skip bool) {
	value = strings.TrimSpace(value)
	switch strings.ToLower(indicatorType) {
	case "ip":
		addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(value, "["), "]"))
		if err != nil {
			return "", false
		}
		if r := ClassifyIP(addr); r != "" {
			return "non-routable ip: " + r, true
		}
		return "", false
	case "domain":
		return hostNonRoutable(value)
	case "email":
		at := strings.LastIndexByte(value, '@')
		if at < 0 {
			return "", false
		}
		return hostNonRoutable(value[at+1:])
	case "url":
		return hostNonRoutable(urlHost(value))
	}
	return "", false
}

func urlHost(value string) string {
	raw := value
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func hostNonRoutable(host string) (string, bool) {
	h := strings.ToLower(strings.TrimSpace(host))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", false
	}
	if addr, err := netip.ParseAddr(h); err == nil {
		if r := ClassifyIP(addr); r != "" {
			return "non-routable host " + h + ": " + r, true
		}
		return "", false
	}
	if h == "localhost" {
		return "non-routable host localhost", true
	}
	for _, suf := range internalSuffixes {
		if strings.HasSuffix(h, suf) || h == suf[1:] {
			return "non-routable host " + h + ": internal suffix " + suf, true
		}
	}
	return "", false
}
