package netguard

import (
	"net/netip"
)

type prefixRule struct {
	prefix netip.Prefix
	reason string
}

// Reasons reported for blocked or non-routable addresses.
const (
	ReasonLoopback    = "loopback address"
	ReasonPrivate     = "private address"
	ReasonLinkLocal   = "link-local address"
	ReasonCGNAT       = "carrier-grade NAT address (100.64.0.0/10)"
	ReasonUnspecified = "unspecified address"
	ReasonMulticast   = "multicast address"
	ReasonBroadcast   = "broadcast address"
	ReasonReserved    = "reserved address"
	ReasonMetadata    = "cloud metadata address"
)

// Order matters only for the reason reported: the first matching prefix wins.
var ipv4Rules = []prefixRule{
	{netip.MustParsePrefix("169.254.169.254/32"), ReasonMetadata},
	{netip.MustParsePrefix("255.255.255.255/32"), ReasonBroadcast},
	{netip.MustParsePrefix("0.0.0.0/32"), ReasonUnspecified},
	{netip.MustParsePrefix("0.0.0.0/8"), ReasonReserved}, // "this network"
	{netip.MustParsePrefix("10.0.0.0/8"), ReasonPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), ReasonCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), ReasonLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), ReasonLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), ReasonPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), ReasonReserved},   // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), ReasonReserved},   // TEST-NET-1
	{netip.MustParsePrefix("192.88.99.0/24"), ReasonReserved}, // deprecated 6to4 relay anycast
	{netip.MustParsePrefix("192.168.0.0/16"), ReasonPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), ReasonReserved},   // benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), ReasonReserved}, // TEST-NET-2
	{netip.MustParsePrefix("203.0.113.0/24"), ReasonReserved},  // TEST-NET-3
	{netip.MustParsePrefix("224.0.0.0/4"), ReasonMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), ReasonReserved},
}

var ipv6Rules = []prefixRule{
	{netip.MustParsePrefix("fd00:ec2::254/128"), ReasonMetadata},
	{netip.MustParsePrefix("::/128"), ReasonUnspecified},
	{netip.MustParsePrefix("::1/128"), ReasonLoopback},
	{netip.MustParsePrefix("::/96"), ReasonReserved}, // deprecated IPv4-compatible addresses
	{netip.MustParsePrefix("100::/64"), ReasonReserved},
	{netip.MustParsePrefix("2001::/32"), ReasonReserved}, // Teredo tunnelling
	{netip.MustParsePrefix("2001:db8::/32"), ReasonReserved},
	{netip.MustParsePrefix("fc00::/7"), ReasonPrivate},
	{netip.MustParsePrefix("fe80::/10"), ReasonLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), ReasonReserved}, // deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), ReasonMulticast},
}

var (
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalPrefix = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")
)

// ClassifyIP reports why addr must not be contacted (or treated as a routable indicator), or "" when
// it is a public unicast address. IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4
// (2002::/16) forms are judged by the IPv4 address they embed.
func ClassifyIP(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	addr = addr.WithZone("")
	if addr.Is4In6() {
		addr = addr.Unmap()
	}
	if addr.Is4() {
		for _, r := range ipv4Rules {
			if r.prefix.Contains(addr) {
				return r.reason
			}
		}
		return ""
	}
	if nat64Prefix.Contains(addr) {
		b := addr.As16()
		return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if nat64LocalPrefix.Contains(addr) {
		return ReasonPrivate
	}
	if sixToFourPrefix.Contains(addr) {
		b := addr.As16()
		return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, r := range ipv6Rules {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

func embedded(v4 netip.Addr) string {
	if reason := ClassifyIP(v4); reason != "" {
		return reason + " (embedded IPv4)"
	}
	return ""
}
