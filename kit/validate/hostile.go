package validate

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Hostile characters are those Postgres text and jsonb cannot store or that are not Unicode text:
// NUL (U+0000), a lone UTF-16 surrogate (a JSON escape \ud800 without its pair) and bytes that are not
// UTF-8 (overlong forms and encoded surrogates included). Go's JSON decoder turns a lone surrogate
// into U+FFFD and keeps NUL, so they are found in the request's JSON text, before decoding.

// Messages of HostileJSON and HostileText, naming the first kind found.
const (
	MsgNUL       = "NUL characters are not accepted."
	MsgSurrogate = "Lone UTF-16 surrogates are not accepted."
	MsgBadUTF8   = "Text must be valid UTF-8."
)

// replacement is U+FFFD as a JSON escape: what SanitizeJSON writes for each hostile character.
const replacement = `\ufffd`

// HostileJSON is what SanitizeJSON found.
type HostileJSON struct {
	Count int    // hostile characters replaced
	Loc   []any  // where the first one sat (object keys and array indexes), relative to the value
	Msg   string // the first one's kind: MsgNUL, MsgSurrogate or MsgBadUTF8
}

// SanitizeJSON returns raw (valid JSON) with every hostile character in its strings (keys included)
// replaced by U+FFFD, and what it replaced. Without any, raw itself is returned and Count is 0.
func SanitizeJSON(raw []byte) ([]byte, HostileJSON) {
	var (
		out   []byte
		last  int // raw[:last] is in out (once out is in use)
		found HostileJSON
	)
	type frame struct {
		object     bool
		expectKey  bool
		key0, key1 int // the current key's token, raw[key0:key1] (decoded only for a location)
		index      int
	}
	var stack []frame
	path := func() []any {
		loc := make([]any, 0, len(stack)+1)
		for _, f := range stack {
			if f.object {
				loc = append(loc, decodeKey(raw[f.key0:f.key1]))
			} else {
				loc = append(loc, f.index)
			}
		}
		return loc
	}
	type bad struct {
		at, n int
		msg   string
	}
	var bads []bad
	collect := func(at, n int, msg string) { bads = append(bads, bad{at, n, msg}) }
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if top := len(stack) - 1; top >= 0 {
				if stack[top].object {
					stack[top].expectKey = true
				} else {
					stack[top].index++
				}
			}
		case ':':
			if top := len(stack) - 1; top >= 0 {
				stack[top].expectKey = false
			}
		case '"':
			start := i
			bads = bads[:0]
			i = scanString(raw, i, collect)
			top := len(stack) - 1
			isKey := top >= 0 && stack[top].object && stack[top].expectKey
			if isKey {
				stack[top].key0, stack[top].key1 = start, i+1
			}
			if len(bads) == 0 {
				continue
			}
			if found.Count == 0 {
				// A hostile key is located at the key itself, as it reads once replaced.
				found.Loc, found.Msg = path(), bads[0].msg
			}
			for _, b := range bads {
				found.Count++
				out = append(out, raw[last:b.at]...)
				out = append(out, replacement...)
				last = b.at + b.n
			}
		}
	}
	if found.Count == 0 {
		return raw, found
	}
	out = append(out, raw[last:]...)
	return out, found
}

// decodeKey decodes an object key's JSON string token, its hostile characters replaced.
func decodeKey(token []byte) string {
	if len(token) < 2 {
		return ""
	}
	token = sanitizedToken(token)
	var key string
	_ = json.Unmarshal(token, &key)
	return key
}

// sanitizedToken is a JSON string token with its hostile characters replaced.
func sanitizedToken(token []byte) []byte {
	var out []byte
	last := 0
	scanString(token, 0, func(at, n int, _ string) {
		out = append(out, token[last:at]...)
		out = append(out, replacement...)
		last = at + n
	})
	return append(out, token[last:]...)
}

// scanString scans the JSON string starting at raw[i] (its opening quote), calling bad for each
// hostile character (its offset and length in raw), and returns the offset of the closing quote.
func scanString(raw []byte, i int, bad func(at, n int, msg string)) int {
	for j := i + 1; j < len(raw); {
		c := raw[j]
		switch {
		case c == '"':
			return j
		case c == '\\':
			if j+1 >= len(raw) {
				return len(raw) - 1
			}
			if raw[j+1] != 'u' {
				j += 2
				continue
			}
			r, ok := hex4(raw, j+2)
			switch {
			case !ok:
				j += 2
			case r == 0:
				bad(j, 6, MsgNUL)
				j += 6
			case r >= 0xD800 && r < 0xDC00:
				if lo, ok := hex4(raw, j+8); ok && raw[j+6] == '\\' && raw[j+7] == 'u' && lo >= 0xDC00 && lo < 0xE000 {
					j += 12
					continue
				}
				bad(j, 6, MsgSurrogate)
				j += 6
			case r >= 0xDC00 && r < 0xE000:
				bad(j, 6, MsgSurrogate)
				j += 6
			default:
				j += 6
			}
		case c < utf8.RuneSelf:
			j++
		default:
			r, n := utf8.DecodeRune(raw[j:])
			if r == utf8.RuneError && n == 1 {
				bad(j, 1, MsgBadUTF8)
			}
			j += n
		}
	}
	return len(raw) - 1
}

// hex4 decodes the 4 hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// HostileText returns the message for the first hostile character of s (a query parameter, a path
// parameter, a decoded string), or "" when there is none.
func HostileText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return MsgNUL
	case !utf8.ValidString(s):
		return MsgBadUTF8
	}
	return ""
}
