package sources

import (
	"encoding/json"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"

	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/indicators"
)

// lookup returns the first non-null value at path (flat dotted keys and nested objects alike).
func lookup(root any, path string) (any, bool) {
	v, ok := fieldpath.First(root, path)
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

// scalarText renders a string or a finite JSON number as text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// stringsOf returns the non-empty strings in v: v itself when it is a string or number, the string and
// number elements when it is an array (one level). At most maxValuesPerField values are returned.
func stringsOf(v any) []string {
	var out []string
	add := func(x any) {
		if s, ok := scalarText(x); ok {
			if s = strings.TrimSpace(s); s != "" && len(out) < maxValuesPerField {
				out = append(out, s)
			}
		}
	}
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			add(e)
		}
		return out
	}
	add(v)
	return out
}

// stringsAt returns stringsOf the values at path (path may fan out with "*").
func stringsAt(root any, path string) []string {
	var out []string
	for _, v := range fieldpath.Get(root, path) {
		out = append(out, stringsOf(v)...)
		if len(out) >= maxValuesPerField {
			return out[:maxValuesPerField]
		}
	}
	return out
}

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// cleanTitle trims and caps a title, replacing control characters (newlines included) with spaces.
func cleanTitle(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return truncateRunes(strings.TrimSpace(s), MaxTitleLen)
}

// cleanDescription trims and caps a description.
func cleanDescription(s string) string {
	return truncateRunes(strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD")), MaxDescriptionLen)
}

// cleanTags trims, drops blanks and repeats, caps each tag at MaxTagLen and the list at MaxTags. The
// result is never nil.
func cleanTags(in []string) []string {
	out := []string{}
	seen := map[string]struct{}{}
	for _, t := range in {
		t = truncateRunes(cleanTitle(t), MaxTagLen)
		if t == "" {
			continue
		}
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
		if len(out) == MaxTags {
			break
		}
	}
	return out
}

// collector accumulates normalized fields and pass-1 indicator candidates.
type collector struct {
	fields map[string]any
	inds   []indicators.Indicator
}

func newCollector() *collector {
	return &collector{fields: map[string]any{}, inds: []indicators.Indicator{}}
}

// field appends values to a normalized field (string for one value, []string for several).
func (c *collector) field(name string, vals ...string) {
	var all []string
	switch cur := c.fields[name].(type) {
	case string:
		all = append(all, cur)
	case []string:
		all = append(all, cur...)
	}
	for _, v := range vals {
		if v = strings.TrimSpace(v); v == "" || contains(all, v) || len(all) >= maxValuesPerField {
			continue
		}
		all = append(all, v)
	}
	switch len(all) {
	case 0:
	case 1:
		c.fields[name] = all[0]
	default:
		c.fields[name] = all
	}
}

// indicator adds pass-1 candidates of type t (at most maxCandidates in all; the rest are dropped).
// Values that are never an indicator of anything are left out (noIndicator).
func (c *collector) indicator(t indicators.Type, vals ...string) {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" && len(c.inds) < maxCandidates && !noIndicator(t, v) {
			c.inds = append(c.inds, indicators.Indicator{Type: t, Value: v})
		}
	}
}

// both records vals as a normalized field and as pass-1 candidates of type t; a value that is never
// an indicator (noIndicator) is in neither, since pass 2 reads the field.
func (c *collector) both(name string, t indicators.Type, vals ...string) {
	kept := make([]string, 0, len(vals))
	for _, v := range vals {
		if !noIndicator(t, strings.TrimSpace(v)) {
			kept = append(kept, v)
		}
	}
	c.field(name, kept...)
	c.indicator(t, kept...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isIP reports whether s parses as an IP address.
func isIP(s string) bool {
	_, err := indicators.Normalize(indicators.TypeIP, s)
	return err == nil
}

// noIndicator reports values a plugin field may hold that never indicate anything: loopback,
// link-local, unspecified and multicast addresses, all-zero hashes, and Windows' built-in service
// accounts (Elastic Defend and Defender put SYSTEM on most events).
func noIndicator(t indicators.Type, v string) bool {
	switch t {
	case indicators.TypeIP:
		a, err := netip.ParseAddr(v)
		return err == nil && (a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast())
	case indicators.TypeMD5, indicators.TypeSHA1, indicators.TypeSHA256:
		return indicators.Placeholder(t, v) // CrowdStrike's 000…0 for "no hash"
	case indicators.TypeAccount:
		if indicators.Placeholder(t, v) {
			return true // a redaction (xxx) or a template word (username)
		}
		switch strings.ToUpper(v) {
		case "SYSTEM", "LOCAL SERVICE", "NETWORK SERVICE", `NT AUTHORITY\SYSTEM`, `NT AUTHORITY\LOCAL SERVICE`, `NT AUTHORITY\NETWORK SERVICE`:
			return true
		}
	}
	return false
}

// looksLikeHost reports whether s is a host name with a dot under an ICANN public suffix
// (wks-01.corp.example.com, not WKS-01, lees-mbp.localdomain or xxx.xxx.x.x): host-name fields hold
// bare machine names too, which are not domains.
func looksLikeHost(s string) bool {
	s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	if !strings.Contains(s, ".") || strings.ContainsAny(s, " /:@\\") || isIP(s) {
		return false
	}
	suffix, icann := publicsuffix.PublicSuffix(s)
	return icann && suffix != s
}

// lookupOrNil is lookup's value, nil when absent.
func lookupOrNil(root any, path string) any {
	v, _ := lookup(root, path)
	return v
}
