// Package indicators holds the indicator vocabulary (types, malice levels), value normalization and
// type inference, and the three-pass extraction of indicators from an ingested alert.
//
// Everything here is pure: no database, no network. The store persists what Extract returns; the API
// uses Normalize and Infer to validate analyst-supplied indicators.
package indicators

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Type is an indicator type (seed §2.10 IndicatorType).
type Type string

// Indicator types.
const (
	TypeIP      Type = "ip"
	TypeDomain  Type = "domain"
	TypeMD5     Type = "hash_md5"
	TypeSHA1    Type = "hash_sha1"
	TypeSHA256  Type = "hash_sha256"
	TypeURL     Type = "url"
	TypeEmail   Type = "email"
	TypeAccount Type = "account"
)

// Length limits for indicator values.
const (
	// MaxValueLen bounds any indicator value, in bytes, after trimming.
	MaxValueLen = 2048
	// MaxAccountLen bounds account values, in characters.
	MaxAccountLen = 512
	// MaxDomainLen bounds domain names (RFC 1035), in bytes, without the trailing dot.
	MaxDomainLen = 253
	// MaxLabelLen bounds one domain label, in bytes.
	MaxLabelLen = 63
	// MaxEmailLen bounds e-mail addresses (RFC 5321 path limit).
	MaxEmailLen = 254
)

// ErrInvalidValue is wrapped by every Normalize failure; the wrapping message says why.
var ErrInvalidValue = errors.New("invalid indicator value")

// ErrUnknownType is returned by ParseType and Normalize for a type outside the enumeration.
var ErrUnknownType = errors.New("unknown indicator type")

// Types returns every indicator type in enumeration order.
func Types() []Type {
	return []Type{TypeIP, TypeDomain, TypeMD5, TypeSHA1, TypeSHA256, TypeURL, TypeEmail, TypeAccount}
}

// Placeholder reports a value that stands in for an indicator without being one, whoever extracts it
// (a source plugin's pass 1 or the later passes): an account that is a redaction (xxx, ***), a
// template word (username, user) or a "no value" word (none, unknown, n/a, null, -); a hash of one
// repeated digit (CrowdStrike's and others' 000…0 for "no hash"). The one rule both extraction paths
// read.
func Placeholder(t Type, v string) bool {
	v = strings.TrimSpace(v)
	switch t {
	case TypeAccount:
		l := strings.ToLower(v)
		if strings.Trim(l, "x*?-") == "" {
			return true
		}
		switch l {
		case "username", "user", "user_name", "none", "unknown", "n/a", "na", "null", "nil", "undefined", "empty":
			return true
		}
	case TypeMD5, TypeSHA1, TypeSHA256:
		return v != "" && strings.Trim(v, v[:1]) == ""
	}
	return false
}

// IsFreeText reports the types whose values are kept as given rather than parsed into a checked form
// (an account name, a URL): text whoever wrote the alert or indicator chose, which a reader such as an
// AI agent must treat as untrusted data.
func IsFreeText(t Type) bool { return t == TypeAccount || t == TypeURL }

// TypeNames returns every indicator type as a string, in enumeration order: the one list the API's
// enums, the OpenAPI document and validation messages use.
func TypeNames() []string {
	types := Types()
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}

// Valid reports whether t is one of the enumerated types.
func (t Type) Valid() bool {
	switch t {
	case TypeIP, TypeDomain, TypeMD5, TypeSHA1, TypeSHA256, TypeURL, TypeEmail, TypeAccount:
		return true
	}
	return false
}

// ParseType returns the Type named s. Matching is exact (the API validates enums exactly).
func ParseType(s string) (Type, error) {
	t := Type(s)
	if !t.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownType, s)
	}
	return t, nil
}

// Normalize validates value as an indicator of type t and returns its canonical form: trimmed; ip in
// net/netip canonical form (IPv4-mapped IPv6 unmapped); domain lower-case without trailing dot; email
// lower-case; hashes lower-case hex; url as given; account as given. The error wraps ErrInvalidValue
// (or ErrUnknownType) and says why.
func Normalize(t Type, value string) (string, error) {
	if !t.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownType, string(t))
	}
	v := strings.TrimSpace(value)
	if v == "" {
		return "", invalid("value is empty")
	}
	if len(v) > MaxValueLen {
		return "", invalid("value is longer than %d bytes", MaxValueLen)
	}
	if !utf8.ValidString(v) {
		return "", invalid("value is not valid UTF-8")
	}
	switch t {
	case TypeIP:
		return normalizeIP(v)
	case TypeDomain:
		return normalizeDomain(v)
	case TypeEmail:
		return normalizeEmail(v)
	case TypeMD5:
		return normalizeHash(v, 32)
	case TypeSHA1:
		return normalizeHash(v, 40)
	case TypeSHA256:
		return normalizeHash(v, 64)
	case TypeURL:
		return normalizeURL(v)
	default: // TypeAccount
		return normalizeAccount(v)
	}
}

// Infer guesses the type of value: ip, then email, then url, then md5/sha1/sha256 by length and hex
// digits, then domain when the value parses as one. It reports false when none fits.
func Infer(value string) (Type, bool) {
	v := strings.TrimSpace(value)
	if v == "" || len(v) > MaxValueLen || !utf8.ValidString(v) {
		return "", false
	}
	for _, t := range []Type{TypeIP, TypeEmail, TypeURL} {
		if _, err := Normalize(t, v); err == nil {
			return t, true
		}
	}
	if isHex(v) {
		switch len(v) {
		case 32:
			return TypeMD5, true
		case 40:
			return TypeSHA1, true
		case 64:
			return TypeSHA256, true
		}
	}
	if _, err := normalizeDomain(v); err == nil {
		return TypeDomain, true
	}
	return "", false
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidValue, fmt.Sprintf(format, args...))
}

func normalizeIP(v string) (string, error) {
	addr, err := netip.ParseAddr(v)
	if err != nil {
		return "", invalid("not an IP address")
	}
	if addr.Zone() != "" {
		return "", invalid("IP address must not carry a zone")
	}
	return addr.Unmap().String(), nil
}

func normalizeDomain(v string) (string, error) {
	d := strings.ToLower(strings.TrimSuffix(v, "."))
	if d == "" {
		return "", invalid("domain is empty")
	}
	if len(d) > MaxDomainLen {
		return "", invalid("domain is longer than %d bytes", MaxDomainLen)
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "", invalid("domain needs at least two labels")
	}
	for i, l := range labels {
		if l == "" {
			return "", invalid("domain label %d is empty", i)
		}
		if len(l) > MaxLabelLen {
			return "", invalid("domain label %d is longer than %d bytes", i, MaxLabelLen)
		}
		if strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", invalid("domain label %d starts or ends with a hyphen", i)
		}
		for _, r := range l {
			if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
				return "", invalid("domain label %d contains %q", i, r)
			}
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return "", invalid("top-level label is numeric")
	}
	return d, nil
}

func normalizeEmail(v string) (string, error) {
	if len(v) > MaxEmailLen {
		return "", invalid("e-mail address is longer than %d bytes", MaxEmailLen)
	}
	at := strings.LastIndexByte(v, '@')
	if at <= 0 || at == len(v)-1 {
		return "", invalid("e-mail address needs a local part and a domain")
	}
	local, domain := v[:at], v[at+1:]
	if len(local) > 64 {
		return "", invalid("e-mail local part is longer than 64 bytes")
	}
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return "", invalid("e-mail local part has a misplaced dot")
	}
	for _, r := range local {
		if !isAtext(r) && r != '.' {
			return "", invalid("e-mail local part contains %q", r)
		}
	}
	if strings.HasSuffix(domain, ".") {
		return "", invalid("e-mail domain ends with a dot")
	}
	d, err := normalizeDomain(domain)
	if err != nil {
		return "", fmt.Errorf("e-mail domain: %w", err)
	}
	return strings.ToLower(local) + "@" + d, nil
}

// isAtext reports whether r may appear in an unquoted e-mail local part (RFC 5322 atext, plus
// non-ASCII letters and digits for internationalized addresses, RFC 6531).
func isAtext(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r):
		return true
	case r > unicode.MaxASCII:
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	return false
}

func normalizeHash(v string, n int) (string, error) {
	if len(v) != n {
		return "", invalid("hash must be %d hex digits, got %d characters", n, utf8.RuneCountInString(v))
	}
	if !isHex(v) {
		return "", invalid("hash contains a non-hex character")
	}
	return strings.ToLower(v), nil
}

func normalizeURL(v string) (string, error) {
	for _, r := range v {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "", invalid("url contains whitespace or a control character")
		}
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", invalid("url does not parse")
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ftp":
	default:
		return "", invalid("url scheme must be http, https or ftp")
	}
	if u.Hostname() == "" {
		return "", invalid("url has no host")
	}
	return v, nil
}

func normalizeAccount(v string) (string, error) {
	if utf8.RuneCountInString(v) > MaxAccountLen {
		return "", invalid("account is longer than %d characters", MaxAccountLen)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return "", invalid("account contains a control character")
		}
	}
	return v, nil
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Indicator is one typed value. Values produced by this package are normalized.
type Indicator struct {
	Type  Type   `json:"type"`
	Value string `json:"value"`
}

// Key returns "type:value", the identity used for deduplication and fingerprints.
func (i Indicator) Key() string { return string(i.Type) + ":" + i.Value }

// Dedup returns the indicators with repeats of the same (type, value) removed, keeping the first
// occurrence of each and the original order. It does not normalize.
func Dedup(in []Indicator) []Indicator {
	seen := make(map[Indicator]struct{}, len(in))
	out := make([]Indicator, 0, len(in))
	for _, ind := range in {
		if _, ok := seen[ind]; ok {
			continue
		}
		seen[ind] = struct{}{}
		out = append(out, ind)
	}
	return out
}

// MaliceLevel is an indicator or alert verdict (seed §2.10).
type MaliceLevel string

// Malice levels, from least to most severe.
const (
	MalicePending    MaliceLevel = "Pending"
	MaliceBenign     MaliceLevel = "Benign"
	MaliceSuspicious MaliceLevel = "Suspicious"
	MaliceMalicious  MaliceLevel = "Malicious"
)

// ErrUnknownMalice is returned by ParseMalice for a value outside the enumeration.
var ErrUnknownMalice = errors.New("unknown malice level")

// MaliceLevels returns every level in ascending order of severity.
func MaliceLevels() []MaliceLevel {
	return []MaliceLevel{MalicePending, MaliceBenign, MaliceSuspicious, MaliceMalicious}
}

// Rank orders levels: Pending 0 < Benign 1 < Suspicious 2 < Malicious 3; unknown values rank -1.
func (m MaliceLevel) Rank() int {
	switch m {
	case MalicePending:
		return 0
	case MaliceBenign:
		return 1
	case MaliceSuspicious:
		return 2
	case MaliceMalicious:
		return 3
	}
	return -1
}

// Valid reports whether m is one of the enumerated levels.
func (m MaliceLevel) Valid() bool { return m.Rank() >= 0 }

// ParseMalice returns the level named s (exact match).
func ParseMalice(s string) (MaliceLevel, error) {
	m := MaliceLevel(s)
	if !m.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownMalice, s)
	}
	return m, nil
}

// MaliceNames returns every level as a string, in ascending order of severity.
func MaliceNames() []string {
	levels := MaliceLevels()
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = string(l)
	}
	return out
}

// Worst returns the most severe of levels (Malicious > Suspicious > Benign > Pending). Unknown values
// are ignored; with no known level it returns Pending. It is the one owner of "worst malice": the
// store's enrichment record, the on-demand enrichment answer, the indicator malice reset and the
// alert's effective malice all call it.
func Worst(levels ...MaliceLevel) MaliceLevel {
	worst := MalicePending
	for _, l := range levels {
		if l.Rank() > worst.Rank() {
			worst = l
		}
	}
	return worst
}

// WorstOf is Worst over levels given as strings (stored verdicts).
func WorstOf(verdicts ...string) MaliceLevel {
	worst := MalicePending
	for _, v := range verdicts {
		worst = Worst(worst, MaliceLevel(v))
	}
	return worst
}

// ResultsMalice is an indicator's malice computed from its enrichment results (provider name →
// result object): the worst verdict over the results with "success": true. Other shapes are ignored.
func ResultsMalice(results map[string]any) MaliceLevel {
	worst := MalicePending
	for _, v := range results {
		r, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if success, _ := r["success"].(bool); !success {
			continue
		}
		if m, ok := r["malice"].(string); ok {
			worst = Worst(worst, MaliceLevel(m))
		}
	}
	return worst
}

// AlertMalice is an alert's effective malice: its override when set, else the worst malice of its
// indicators, else Pending (API.md §3).
func AlertMalice(override *string, indicatorMalices []string) MaliceLevel {
	if override != nil {
		return MaliceLevel(*override)
	}
	return WorstOf(indicatorMalices...)
}
