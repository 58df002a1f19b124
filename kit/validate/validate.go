// Package validate holds the field-error vocabulary shared by the API and the domain packages.
//
// A domain package that checks user-supplied configuration (provider http_config, targeting rules,
// workflow steps, ...) returns Errors whose Loc is relative to the value it was given; the API prefixes
// the location with where that value sat in the request ("body", "http_config", ...) and answers 422
// with every error at once.
package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Stable error types, mirroring Pydantic's vocabulary where one exists.
const (
	TypeMissing          = "missing"
	TypeValue            = "value_error"
	TypeEnum             = "enum"
	TypeString           = "string_type"
	TypeInt              = "int_type"
	TypeIntParsing       = "int_parsing"
	TypeFloat            = "float_type"
	TypeBool             = "bool_type"
	TypeBoolParsing      = "bool_parsing"
	TypeList             = "list_type"
	TypeObject           = "dict_type"
	TypeUUID             = "uuid_parsing"
	TypeDateTime         = "datetime_parsing"
	TypeTooShort         = "too_short"
	TypeTooLong          = "too_long"
	TypeStringTooShort   = "string_too_short"
	TypeStringTooLong    = "string_too_long"
	TypeGreaterThanEqual = "greater_than_equal"
	TypeLessThanEqual    = "less_than_equal"
	TypeExtraForbidden   = "extra_forbidden"
	TypePattern          = "string_pattern_mismatch"
	TypeNullForbidden    = "null_forbidden"
)

// FieldError is one problem with one field. Loc is a path of strings (object keys) and ints (array
// indexes).
type FieldError struct {
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Type  string         `json:"type"`
	Input any            `json:"input,omitempty"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// Errors is a list of field errors; a nil or empty list means valid.
type Errors []FieldError

func (e Errors) Error() string {
	parts := make([]string, 0, len(e))
	for _, fe := range e {
		parts = append(parts, fmt.Sprintf("%s: %s", LocString(fe.Loc), fe.Msg))
	}
	return fmt.Sprintf("%d validation error(s): %s", len(e), strings.Join(parts, "; "))
}

// Add appends a field error at loc.
func (e *Errors) Add(loc []any, typ, msg string, input any) {
	*e = append(*e, FieldError{Loc: loc, Msg: msg, Type: typ, Input: input})
}

// AddCtx appends a field error carrying a ctx object.
func (e *Errors) AddCtx(loc []any, typ, msg string, input any, ctx map[string]any) {
	*e = append(*e, FieldError{Loc: loc, Msg: msg, Type: typ, Input: input, Ctx: ctx})
}

// Merge appends other's errors with their locations prefixed by prefix.
func (e *Errors) Merge(prefix []any, other Errors) {
	for _, fe := range other {
		fe.Loc = Join(prefix, fe.Loc...)
		*e = append(*e, fe)
	}
}

// Err returns e as an error, or nil when there is nothing in it.
func (e Errors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// Join returns a new location made of prefix followed by more.
func Join(prefix []any, more ...any) []any {
	out := make([]any, 0, len(prefix)+len(more))
	out = append(out, prefix...)
	return append(out, more...)
}

// LocString renders a location as a dotted path, e.g. body.steps[0].url.
func LocString(loc []any) string {
	var b strings.Builder
	for i, p := range loc {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// FindNUL looks for a NUL character in any key or string of v, a decoded JSON value (Postgres text
// and jsonb cannot hold one), returning its location relative to v.
func FindNUL(v any) ([]any, bool) {
	switch x := v.(type) {
	case string:
		return nil, strings.IndexByte(x, 0) >= 0
	case map[string]any:
		for k, item := range x {
			if strings.IndexByte(k, 0) >= 0 {
				return []any{k}, true
			}
			if p, ok := FindNUL(item); ok {
				return append([]any{k}, p...), true
			}
		}
	case []any:
		for i, item := range x {
			if p, ok := FindNUL(item); ok {
				return append([]any{i}, p...), true
			}
		}
	}
	return nil, false
}

// Truncate shortens an input echoed in a FieldError to 256 bytes (plus "…").
func Truncate(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// JSONSize is the length of v's JSON encoding; a value that cannot be encoded counts as too large.
func JSONSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// Among returns the fields that are in set, in the order of fields: the part of a change a rule
// refuses (the fixed fields of a builtin or system row).
func Among(fields, set []string) []string {
	var out []string
	for _, f := range fields {
		if slices.Contains(set, f) {
			out = append(out, f)
		}
	}
	return out
}
