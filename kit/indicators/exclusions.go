package indicators

import (
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
)

// Exclusion limits (PUT /v1/extraction-exclusions).
const (
	MaxExclusions     = 1000
	MaxExclusionBytes = 253
)

// Exclusions is the never-indicator list (API.md §4): host names, domains (`*.example.com` also
// covers every name below example.com), IP addresses and CIDR ranges that extraction passes 2-4
// never report. Pass 1's explicit indicators are kept. A domain entry drops that domain and every
// URL whose host it is; an address or range drops those IP indicators and URLs whose host is in
// it. E-mail addresses and accounts are never dropped by it: a person at a vendor is still a person.
// The zero value excludes nothing.
type Exclusions struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
	prefixes []netip.Prefix
}

// ParseExclusion checks and canonicalizes one entry: a host name or domain (lower-case, no
// trailing dot), `*.` and a domain, an IP address or a CIDR range (canonical, masked).
func ParseExclusion(entry string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return "", fmt.Errorf("entry is empty")
	case len(e) > MaxExclusionBytes:
		return "", fmt.Errorf("entry is longer than %d bytes", MaxExclusionBytes)
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return "", fmt.Errorf("not a CIDR range")
		}
		return p.Masked().String(), nil
	}
	if a, err := netip.ParseAddr(e); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("an IP address must not carry a zone")
		}
		return a.Unmap().String(), nil
	}
	name := strings.TrimPrefix(e, "*.")
	d, err := normalizeDomain(name)
	if err != nil {
		return "", fmt.Errorf("not a host name, a domain, an IP address or a CIDR range")
	}
	if strings.HasPrefix(e, "*.") {
		return "*." + d, nil
	}
	return d, nil
}

// CanonicalExclusions parses every entry and returns them canonical, sorted and deduplicated; the
// error names the first bad entry by index.
func CanonicalExclusions(entries []string) ([]string, map[int]error) {
	bad := map[int]error{}
	seen := map[string]bool{}
	out := []string{}
	for i, raw := range entries {
		e, err := ParseExclusion(raw)
		if err != nil {
			bad[i] = err
			continue
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out, bad
}

// NewExclusions builds the list from entries; entries that do not parse are ignored (they were
// checked on write).
func NewExclusions(entries []string) *Exclusions {
	x := &Exclusions{exact: make(map[string]bool, len(entries))}
	for _, raw := range entries {
		e, err := ParseExclusion(raw)
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(e, "/"):
			x.prefixes = append(x.prefixes, netip.MustParsePrefix(e))
		case strings.HasPrefix(e, "*."):
			x.exact[e[2:]] = true
			x.suffixes = append(x.suffixes, e[1:])
		default:
			x.exact[e] = true
		}
	}
	return x
}

// Excludes reports whether ind (normalized) is on the list.
func (x *Exclusions) Excludes(ind Indicator) bool {
	if x == nil {
		return false
	}
	switch ind.Type {
	case TypeIP:
		return x.excludesHost(ind.Value)
	case TypeDomain:
		return x.excludesHost(ind.Value)
	case TypeURL:
		u, err := url.Parse(ind.Value)
		if err != nil {
			return false
		}
		return x.excludesHost(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")))
	}
	return false
}

func (x *Exclusions) excludesHost(h string) bool {
	if h == "" {
		return false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap()
		if x.exact[a.String()] {
			return true
		}
		for _, p := range x.prefixes {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	if x.exact[h] {
		return true
	}
	for _, s := range x.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// DefaultExclusions is the list a new installation starts with: the vendors' own consoles,
// documentation and schema hosts, which alerts link to and which are never what an alert is about.
// It is written once, when no list was ever stored (store.SeedExclusions); an admin's edits stay.
var DefaultExclusions = []string{
	// Microsoft: Azure and Defender portals, documentation, schemas, Graph and ARM endpoints.
	"portal.azure.com", "*.portal.azure.com", "security.microsoft.com", "*.security.microsoft.com",
	"securitycenter.microsoft.com", "securitycenter.windows.com", "ti.defender.microsoft.com",
	"learn.microsoft.com", "docs.microsoft.com", "go.microsoft.com", "aka.ms", "schemas.microsoft.com",
	"graph.microsoft.com", "management.azure.com", "portal.cloudappsecurity.com", "*.portal.cloudappsecurity.com",
	"compliance.microsoft.com", "purview.microsoft.com", "entra.microsoft.com", "intune.microsoft.com",
	"protection.office.com", "admin.microsoft.com",
	// Splunk, Elastic.
	"*.splunkcloud.com", "docs.splunk.com", "splunkbase.splunk.com", "www.elastic.co", "elastic.co",
	"*.found.io", "*.elastic-cloud.com", "*.kb.us-east-1.aws.found.io",
	// Schemas and frameworks.
	"schema.ocsf.io", "json-schema.org", "www.w3.org", "schemas.xmlsoap.org", "attack.mitre.org",
	"cve.mitre.org", "cwe.mitre.org", "nvd.nist.gov", "www.cisa.gov",
	// AWS and Google Cloud consoles and documentation.
	"console.aws.amazon.com", "*.console.aws.amazon.com", "docs.aws.amazon.com", "aws.amazon.com",
	"console.cloud.google.com", "cloud.google.com", "*.googleapis.com",
	// Cloud service principals that name the provider's own services in audit records.
	"cloudtrail.amazonaws.com", "guardduty.amazonaws.com", "securityhub.amazonaws.com", "config.amazonaws.com",
	"inspector2.amazonaws.com", "iam.amazonaws.com", "sts.amazonaws.com", "ec2.amazonaws.com",
	"lambda.amazonaws.com", "*.compute.amazonaws.com", // EC2's default names, which spell the address
	// Other vendors' consoles.
	"falcon.crowdstrike.com", "*.falcon.crowdstrike.com", "falcon.us-2.crowdstrike.com",
	"falcon.eu-1.crowdstrike.com", "*.sentinelone.net", "*.okta.com", "*.oktapreview.com",
	"platform.securityscorecard.io", "support.securityscorecard.com", "*.paloaltonetworks.com",
	"threatinsight.proofpoint.com", "asp.net", // ASP.NET in .NET stack traces and IIS logs
	// Addresses that name no host: unspecified, loopback, link-local IPv6, multicast, broadcast.
	"0.0.0.0", "::", "127.0.0.0/8", "::1", "fe80::/10", "224.0.0.0/4", "ff00::/8", "255.255.255.255",
}
