package httpsteps

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/kit/fieldpath"
)

// Value types an extraction may coerce to.
const (
	ValueString = "string"
	ValueInt    = "int"
	ValueFloat  = "float"
	ValueBool   = "bool"
	ValueList   = "list"
	ValueDict   = "dict"
	ValueAny    = "any"
)

// ValueTypes lists the accepted extraction value types.
func ValueTypes() []string {
	return []string{ValueString, ValueInt, ValueFloat, ValueBool, ValueList, ValueDict, ValueAny}
}

// Extraction copies one field of a response into the extracted map. SourcePath is a fieldpath path
// ("data.attributes.last_analysis_stats.malicious", "results.*.name"); Step names the step whose
// response is read ("" = the final response).
type Extraction struct {
	SourcePath string `json:"source_path"`
	TargetKey  string `json:"target_key"`
	ValueType  string `json:"value_type"`
	Step       string `json:"step,omitempty"`
}

// NotFoundExtracted is the extracted map of a call that ended on a not_found_status.
func NotFoundExtracted() map[string]any { return map[string]any{"found": false} }

// Extract applies exts in order to final (or to steps[e.Step]) and returns the extracted values,
// coerced to each ValueType. A missing path or a value that cannot be coerced is skipped, not an
// error. A path with "*" yields a list for ValueList and ValueAny, its first value otherwise. Numbers
// come out as int64 (integral) or float64, never json.Number.
func Extract(final any, steps map[string]any, exts []Extraction) map[string]any {
	out := map[string]any{}
	for _, e := range exts {
		src := final
		if e.Step != "" {
			s, ok := steps[e.Step]
			if !ok {
				continue
			}
			src = s
		}
		if e.SourcePath == "" || e.TargetKey == "" {
			continue
		}
		vals := fieldpath.Get(src, e.SourcePath)
		if len(vals) == 0 {
			continue
		}
		fanOut := strings.Contains(e.SourcePath, "*")
		if v, ok := coerce(vals, fanOut, e.ValueType); ok {
			out[e.TargetKey] = v
		}
	}
	return out
}

func coerce(vals []any, fanOut bool, typ string) (any, bool) {
	first := normalize(vals[0])
	switch typ {
	case ValueList:
		if fanOut {
			return normalize(vals), true
		}
		if l, ok := first.([]any); ok {
			return l, true
		}
		if first == nil {
			return nil, false
		}
		return []any{first}, true
	case ValueAny, "":
		if fanOut {
			return normalize(vals), true
		}
		return first, true
	case ValueString:
		switch x := first.(type) {
		case string:
			return x, true
		case bool, int64, float64:
			s, err := stringify(x)
			return s, err == nil
		}
		return nil, false
	case ValueInt:
		return toInt(first)
	case ValueFloat:
		f, ok := toFloat(first)
		return f, ok
	case ValueBool:
		return toBool(first)
	case ValueDict:
		m, ok := first.(map[string]any)
		return m, ok
	}
	return nil, false
}

// normalize turns json.Number into int64 or float64, recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = normalize(el)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = normalize(el)
		}
		return out
	}
	return v
}

func toInt(v any) (any, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), true
		}
	}
	return nil, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func toBool(v any) (any, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case int64:
		if x == 0 || x == 1 {
			return x == 1, true
		}
	case float64:
		if x == 0 || x == 1 {
			return x == 1, true
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1", "y", "t":
			return true, true
		case "false", "no", "0", "n", "f":
			return false, true
		}
	}
	return nil, false
}

// ValidateExtraction checks one extraction's fields.
func ValidateExtraction(e Extraction) error {
	if err := fieldpath.Validate(e.SourcePath); err != nil {
		return fmt.Errorf("source_path: %w", err)
	}
	if strings.TrimSpace(e.TargetKey) == "" {
		return fmt.Errorf("target_key is empty")
	}
	if !contains(ValueTypes(), e.ValueType) {
		return fmt.Errorf("value_type %q is not one of %s", e.ValueType, strings.Join(ValueTypes(), ", "))
	}
	return nil
}
