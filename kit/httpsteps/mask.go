package httpsteps

import (
	"net/url"
	"sort"
	"strings"
)

// MinSecretLen is the shortest secret masked by substring replacement; shorter values would mask
// ordinary text. Sensitive headers and keys are masked whatever their length.
const MinSecretLen = 4

// MaskRevealMinLen is the shortest value whose last 4 characters Mask shows: at most a quarter of a
// secret is ever shown, and never more than 4 characters.
const MaskRevealMinLen = 16

// Mask renders a secret for display: "****" followed by its last 4 characters (enough to tell two
// keys apart), or just "****" for values shorter than MaskRevealMinLen.
func Mask(s string) string {
	r := []rune(s)
	if len(r) < MaskRevealMinLen {
		return "****"
	}
	return "****" + string(r[len(r)-4:])
}

// IsSensitiveHeader reports header names whose values are masked whatever they contain
// (Authorization, Cookie, X-API-Key, anything naming a token, secret, key, password, session,
// signature or credential).
func IsSensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "token", "secret", "key", "password", "passwd", "session", "cookie", "signature", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// isSensitiveKey reports JSON, form and query keys whose values are masked in records.
func isSensitiveKey(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	switch n {
	case "key", "auth", "authorization", "sig", "signature", "assertion", "client_assertion", "code_verifier":
		return true
	}
	for _, w := range []string{"token", "secret", "password", "passwd", "api_key", "apikey", "private_key"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Masker replaces known secret values (and their URL-encoded forms) wherever they appear.
type Masker struct {
	pairs []string // old, new, ... for strings.Replacer, longest first
	r     *strings.Replacer
}

// NewMasker returns a masker for secrets; values shorter than MinSecretLen are ignored.
func NewMasker(secrets []string) *Masker {
	type pair struct{ old, new string }
	seen := map[string]bool{}
	var ps []pair
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		m := Mask(s)
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			if !seen[form] {
				seen[form] = true
				ps = append(ps, pair{form, m})
			}
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].old) > len(ps[j].old) })
	mk := &Masker{}
	for _, p := range ps {
		mk.pairs = append(mk.pairs, p.old, p.new)
	}
	if len(mk.pairs) > 0 {
		mk.r = strings.NewReplacer(mk.pairs...)
	}
	return mk
}

// String masks every secret occurring in s.
func (m *Masker) String(s string) string {
	if m == nil || m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// Header masks one header value: sensitive names entirely (keeping an auth scheme such as
// "Bearer "), others by secret replacement.
func (m *Masker) Header(name, value string) string {
	if !IsSensitiveHeader(name) {
		return m.String(value)
	}
	if scheme, rest, ok := strings.Cut(value, " "); ok && rest != "" && !strings.ContainsAny(scheme, "=:,") && len(scheme) <= 16 {
		return scheme + " " + Mask(rest)
	}
	return Mask(value)
}

// Headers returns a masked copy of h.
func (m *Masker) Headers(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = m.Header(k, v)
	}
	return out
}

// Params returns a masked copy of query or form parameters: sensitive keys entirely, other values by
// secret replacement.
func (m *Masker) Params(p map[string]string) map[string]string {
	out := make(map[string]string, len(p))
	for k, v := range p {
		if isSensitiveKey(k) {
			out[k] = Mask(v)
		} else {
			out[k] = m.String(v)
		}
	}
	return out
}

// Value returns a masked deep copy of a decoded JSON value: strings under sensitive keys entirely,
// every other string by secret replacement.
func (m *Masker) Value(v any) any {
	switch x := v.(type) {
	case string:
		return m.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			if s, ok := el.(string); ok && isSensitiveKey(k) {
				out[k] = Mask(s)
				continue
			}
			out[k] = m.Value(el)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = m.Value(el)
		}
		return out
	}
	return v
}

// URL masks a URL for display: secret values anywhere, sensitive query parameters entirely, and the
// userinfo password.
func (m *Masker) URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return m.String(raw)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "****")
		}
	}
	if u.RawQuery != "" {
		pairs := strings.Split(u.RawQuery, "&")
		for i, p := range pairs {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			key, err := url.QueryUnescape(k)
			if err != nil || !isSensitiveKey(key) {
				continue
			}
			val, err := url.QueryUnescape(v)
			if err != nil {
				val = v
			}
			pairs[i] = k + "=" + Mask(val)
		}
		u.RawQuery = strings.Join(pairs, "&")
	}
	return m.String(strings.Replace(u.String(), ":%2A%2A%2A%2A@", ":****@", 1))
}
