// Package fieldpath reads values out of decoded JSON (map[string]any / []any trees) by dot paths.
//
// A path is a list of segments separated by dots. A segment is an object key, an array index
// ("threat.indicator.0.ip") or "*", which fans out over every element of an array (or every value of an
// object, in key order): "Entities.*.Address". Keys that themselves contain dots are matched first as a
// whole, so flat documents such as Elastic's {"kibana.alert.rule.name": ...} are read by the same path as
// nested ones.
package fieldpath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxDepth bounds the number of segments in a path.
const MaxDepth = 64

// Validate reports whether path is well formed.
func Validate(path string) error {
	if strings.TrimSpace(path) == "" {
		return fmt.Errorf("path is empty")
	}
	segs := strings.Split(path, ".")
	if len(segs) > MaxDepth {
		return fmt.Errorf("path has more than %d segments", MaxDepth)
	}
	for i, s := range segs {
		if s == "" {
			return fmt.Errorf("segment %d is empty", i)
		}
	}
	return nil
}

// Get returns every value found at path in root, in document order. A path without "*" yields at most
// one value. Missing keys, out-of-range indexes and type mismatches yield nothing, and so does a path
// of more than MaxDepth segments.
func Get(root any, path string) []any {
	if path == "" {
		return nil
	}
	segs := strings.Split(path, ".")
	if len(segs) > MaxDepth {
		return nil
	}
	var out []any
	walk(root, segs, &out)
	return out
}

// First returns the first value at path and whether there was one.
func First(root any, path string) (any, bool) {
	vals := Get(root, path)
	if len(vals) == 0 {
		return nil, false
	}
	return vals[0], true
}

func walk(node any, segs []string, out *[]any) {
	if len(segs) == 0 {
		*out = append(*out, node)
		return
	}
	switch v := node.(type) {
	case map[string]any:
		// Longest dotted key first: "kibana.alert.rule.name" as one key beats nested lookups. Looking
		// the joined keys up costs a few lookups; scanning the map for dotted keys cost a pass over
		// every key of every object on the path, for every mapping.
		for n := len(segs); n >= 2; n-- {
			if child, ok := v[strings.Join(segs[:n], ".")]; ok {
				walk(child, segs[n:], out)
				return
			}
		}
		if segs[0] == "*" {
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k], segs[1:], out)
			}
			return
		}
		if child, ok := v[segs[0]]; ok {
			walk(child, segs[1:], out)
		}
	case []any:
		seg := segs[0]
		if seg == "*" {
			for _, child := range v {
				walk(child, segs[1:], out)
			}
			return
		}
		i, ok := index(seg)
		if !ok || i >= len(v) {
			return
		}
		walk(v[i], segs[1:], out)
	}
}

// index parses an array index segment: decimal digits only (no sign, no spaces).
func index(seg string) (int, bool) {
	if seg == "" {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(seg)
	if err != nil { // overflow
		return 0, false
	}
	return i, true
}
