package sources

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// timeLayouts are the timestamp forms read besides RFC 3339: without an offset (read as UTC, noted)
// and with a space instead of the "T".
var timeLayouts = []struct {
	layout string
	utc    bool // no offset in the text: read as UTC
}{
	{time.RFC3339Nano, false},
	{"2006-01-02 15:04:05.999999999Z07:00", false},
	{"2006-01-02T15:04:05.999999999-0700", false}, // Suricata, Wazuh: an offset without a colon
	{"2006-01-02T15:04:05.999999999", true},
	{"2006-01-02 15:04:05.999999999", true},
}

// parseTime reads a timestamp: RFC 3339 (with or without an offset, "T" or a space; without an offset
// it is read as UTC and assumedUTC is true), or epoch seconds, milliseconds, microseconds or
// nanoseconds (by magnitude) as a number or numeric string. It reports false for anything else,
// including epochs after 9999.
func parseTime(v any) (t time.Time, assumedUTC, ok bool) {
	if f, isNum := number(v); isNum {
		t, ok = epoch(f)
		return t, false, ok
	}
	s, isStr := v.(string)
	if !isStr {
		return time.Time{}, false, false
	}
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		return time.Time{}, false, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l.layout, s); err == nil {
			return t.UTC(), l.utc, true
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		t, ok = epoch(f)
		return t, false, ok
	}
	return time.Time{}, false, false
}

// number reads a JSON number (float64 or json.Number) as a finite float64.
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(x.String(), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// numberOrText reads a JSON number or a string holding one.
func numberOrText(v any) (float64, bool) {
	if f, ok := number(v); ok {
		return f, true
	}
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// maxEpoch is 9999-12-31T23:59:59Z.
const maxEpoch = 253402300799

// epoch reads f as epoch seconds, or milliseconds (≥ 1e11), microseconds (≥ 1e14) or nanoseconds
// (≥ 1e17): 1e11 seconds is the year 5138, so no real timestamp is misread.
func epoch(f float64) (time.Time, bool) {
	switch {
	case math.IsNaN(f) || f < 0:
		return time.Time{}, false
	case f >= 1e17:
		f /= 1e9
	case f >= 1e14:
		f /= 1e6
	case f >= 1e11:
		f /= 1e3
	}
	if f > maxEpoch {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC(), true
}

// pickTime sets n.OccurredAt from the first candidate path that parses. A candidate present but
// unreadable is noted when no later one parses; one without an offset is read as UTC and noted.
func pickTime(n *Normalized, root any, paths ...string) {
	var bad string
	for _, p := range paths {
		v, ok := lookup(root, p)
		if !ok {
			continue
		}
		t, utc, ok := parseTime(v)
		if !ok {
			if bad == "" {
				bad = p
			}
			continue
		}
		n.OccurredAt = t
		if utc {
			n.note("occurred_at", p+" has no UTC offset; read as UTC")
		}
		return
	}
	if bad != "" {
		n.note("occurred_at", bad+" is not a timestamp Vigil reads (RFC 3339 or epoch); ingested_at used")
	}
}

// pickText returns the first candidate path holding text (a string or a number), and that path. A
// candidate holding an object, array or boolean is noted as ignored.
func pickText(n *Normalized, root any, paths ...string) (string, string) {
	for _, p := range paths {
		v, ok := lookup(root, p)
		if !ok {
			continue
		}
		if s, ok := scalarText(v); ok {
			if s = strings.TrimSpace(s); s != "" {
				return s, p
			}
			continue
		}
		n.note(p, "is "+kindOf(v)+", not text; ignored")
	}
	return "", ""
}

// kindOf names a decoded JSON value's kind for a note.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case nil:
		return "null"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return "a number out of range"
}

// walk calls fn for every scalar leaf of root with its path: object keys (flat dotted keys split on
// "."), array levels transparent, keys in sorted order. It visits at most maxWalkNodes nodes and
// maxWalkDepth levels.
func walk(root any, fn func(path []string, v any, parent map[string]any)) {
	budget := maxWalkNodes
	var rec func(v any, path []string, depth int, parent map[string]any)
	rec = func(v any, path []string, depth int, parent map[string]any) {
		if budget <= 0 || depth > maxWalkDepth {
			return
		}
		budget--
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys) // deterministic: the same payload gives the same fields in the same order
			for _, k := range keys {
				c := x[k]
				p := path[:len(path):len(path)]
				if strings.IndexByte(k, '.') >= 0 {
					p = append(p, strings.Split(k, ".")...)
				} else {
					p = append(p, k)
				}
				rec(c, p, depth+1, x)
			}
		case []any:
			for _, c := range x {
				rec(c, path, depth+1, parent)
			}
		default:
			fn(path, v, parent)
		}
	}
	rec(root, nil, 0, nil)
}

// hasSuffix reports whether path ends with the segments of suffix (a dot path), case-insensitively.
func hasSuffix(path []string, suffix string) bool {
	segs := strings.Split(suffix, ".")
	if len(segs) > len(path) {
		return false
	}
	off := len(path) - len(segs)
	for i, s := range segs {
		if !strings.EqualFold(path[off+i], s) {
			return false
		}
	}
	return true
}
