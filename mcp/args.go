package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/validate"
)

// argKind is the JSON type of a tool argument.
type argKind int

const (
	kindString argKind = iota
	kindInt
	kindBool
	kindUUID
	kindTime
	kindStringList // a JSON array of strings (a comma-separated string is accepted too, as on REST)
	kindNumber     // a JSON number within [min, max]
	kindObject     // a JSON object of at most max bytes (0: unbounded), given to the service as decoded
	kindObjectList // a JSON array of at most max objects, each decoded
)

// arg declares one tool argument. The same declaration produces the tool's JSON schema (what the
// client sees) and the check the server applies (parseArgs), so the two never disagree.
type arg struct {
	name     string
	kind     argKind
	doc      string
	required bool
	enum     []string // allowed values (strings and list items)
	min, max int      // integers, numbers: bounds; strings and list items: maxLength (max); lists: maxItems (min unused); objects: max bytes; object lists: max items
	def      any      // default when absent
}

// Pagination arguments, bounded as on REST (API.md §0).
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

func pageArgs() []arg {
	return []arg{
		{name: "page", kind: kindInt, doc: "Page number, from 1.", min: 1, max: math.MaxInt32, def: 1},
		{name: "page_size", kind: kindInt, doc: "Items per page (1..500).", min: 1, max: maxPageSize, def: defaultPageSize},
	}
}

// schemaOf is the JSON schema (draft 2020-12 subset) of an argument list.
func schemaOf(specs []arg) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, a := range specs {
		p := map[string]any{"description": a.doc}
		switch a.kind {
		case kindString:
			p["type"] = "string"
			if a.max > 0 {
				p["maxLength"] = a.max
			}
			if a.enum != nil {
				p["enum"] = a.enum
			}
		case kindInt:
			p["type"] = "integer"
			p["minimum"], p["maximum"] = a.min, a.max
		case kindBool:
			p["type"] = "boolean"
		case kindUUID:
			p["type"], p["format"] = "string", "uuid"
		case kindTime:
			p["type"], p["format"] = "string", "date-time"
		case kindNumber:
			p["type"] = "number"
			p["minimum"], p["maximum"] = a.min, a.max
		case kindObject:
			p["type"] = "object"
		case kindObjectList:
			p["type"], p["items"] = "array", map[string]any{"type": "object"}
			if a.max > 0 {
				p["maxItems"] = a.max
			}
		case kindStringList:
			item := map[string]any{"type": "string"}
			if a.enum != nil {
				item["enum"] = a.enum
			}
			if a.max > 0 {
				item["maxLength"] = a.max
			}
			p["type"], p["items"] = "array", item
		}
		if a.def != nil {
			p["default"] = a.def
		}
		props[a.name] = p
		if a.required {
			required = append(required, a.name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// args holds parsed argument values: string, int, bool, float64, uuid.UUID, time.Time, []string,
// map[string]any or []map[string]any.
type args map[string]any

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) integer(name string) int {
	n, _ := a[name].(int)
	return n
}

func (a args) list(name string) []string {
	l, _ := a[name].([]string)
	return l
}

func (a args) boolPtr(name string) *bool {
	if b, ok := a[name].(bool); ok {
		return &b
	}
	return nil
}

func (a args) numberPtr(name string) *float64 {
	if f, ok := a[name].(float64); ok {
		return &f
	}
	return nil
}

func (a args) object(name string) map[string]any {
	m, _ := a[name].(map[string]any)
	return m
}

func (a args) objects(name string) []map[string]any {
	l, _ := a[name].([]map[string]any)
	return l
}

func (a args) uuidPtr(name string) *uuid.UUID {
	if u, ok := a[name].(uuid.UUID); ok {
		return &u
	}
	return nil
}

func (a args) timePtr(name string) *time.Time {
	if t, ok := a[name].(time.Time); ok {
		return &t
	}
	return nil
}

func (a args) strPtr(name string) *string {
	if s, ok := a[name].(string); ok {
		return &s
	}
	return nil
}

// parseArgs checks raw (a JSON object) against specs and returns the values, or every problem found,
// located at ["arguments", name, ...] with the validate package's vocabulary.
func parseArgs(raw json.RawMessage, specs []arg) (args, validate.Errors) {
	var errs validate.Errors
	obj := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			errs.Add([]any{"arguments"}, validate.TypeObject, "Arguments must be a JSON object.", nil)
			return nil, errs
		}
	}
	known := map[string]bool{}
	out := args{}
	for _, a := range specs {
		known[a.name] = true
		v, present := obj[a.name]
		if !present || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			switch {
			case a.required:
				errs.Add([]any{"arguments", a.name}, validate.TypeMissing, "Field required.", nil)
			case a.def != nil:
				out[a.name] = a.def
			}
			continue
		}
		val, ferrs := parseArg(a, v)
		errs = append(errs, ferrs...)
		if len(ferrs) == 0 {
			out[a.name] = val
		}
	}
	extra := []string{}
	for k := range obj {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		errs.Add([]any{"arguments", k}, validate.TypeExtraForbidden, "Unknown argument.", nil)
	}
	return out, errs
}

func parseArg(a arg, raw json.RawMessage) (any, validate.Errors) {
	var errs validate.Errors
	loc := []any{"arguments", a.name}
	switch a.kind {
	case kindInt:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) {
			errs.Add(loc, validate.TypeInt, "Input should be a valid integer.", json.RawMessage(raw))
			return nil, errs
		}
		errs = append(errs, checkBounds(a, loc, f)...)
		return int(f), errs
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			errs.Add(loc, validate.TypeBool, "Input should be a valid boolean.", json.RawMessage(raw))
		}
		return b, errs
	case kindNumber:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			errs.Add(loc, validate.TypeFloat, "Input should be a valid number.", truncate(string(raw)))
			return nil, errs
		}
		errs = append(errs, checkBounds(a, loc, f)...)
		return f, errs
	case kindObject:
		if a.max > 0 && len(raw) > a.max {
			errs.AddCtx(loc, validate.TypeTooLong, fmt.Sprintf("At most %d bytes of JSON.", a.max), nil, map[string]any{"max_bytes": a.max, "bytes": len(raw)})
			return nil, errs
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			errs.Add(loc, validate.TypeObject, "Input should be a JSON object.", truncate(string(raw)))
			return nil, errs
		}
		return m, errs
	case kindObjectList:
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			errs.Add(loc, validate.TypeList, "Input should be a list of objects.", truncate(string(raw)))
			return nil, errs
		}
		if a.max > 0 && len(list) > a.max {
			errs.AddCtx(loc, validate.TypeTooLong, fmt.Sprintf("At most %d items.", a.max), nil, map[string]any{"max_length": a.max})
			return nil, errs
		}
		out := make([]map[string]any, len(list))
		for i, item := range list {
			if err := json.Unmarshal(item, &out[i]); err != nil || out[i] == nil {
				errs.Add(append(slices.Clone(loc), i), validate.TypeObject, "Input should be a JSON object.", truncate(string(item)))
			}
		}
		return out, errs
	case kindStringList:
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				errs.Add(loc, validate.TypeList, "Input should be a list of strings.", json.RawMessage(raw))
				return nil, errs
			}
			list = splitComma(s)
		}
		if len(list) > 100 {
			errs.AddCtx(loc, validate.TypeTooLong, "At most 100 values.", nil, map[string]any{"max_length": 100})
			return nil, errs
		}
		for i, item := range list {
			errs = append(errs, checkString(a, append(slices.Clone(loc), i), item)...)
		}
		return list, errs
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		errs.Add(loc, validate.TypeString, "Input should be a valid string.", json.RawMessage(raw))
		return nil, errs
	}
	switch a.kind {
	case kindUUID:
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 {
			errs.Add(loc, validate.TypeUUID, "Input should be a valid UUID.", truncate(s))
		}
		return u, errs
	case kindTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			errs.Add(loc, validate.TypeDateTime, "Input should be an RFC 3339 timestamp with an offset.", truncate(s))
		}
		return t.UTC(), errs
	}
	return s, checkString(a, loc, s)
}

// checkBounds applies a number argument's [min, max].
func checkBounds(a arg, loc []any, f float64) validate.Errors {
	var errs validate.Errors
	switch {
	case f < float64(a.min):
		errs.AddCtx(loc, validate.TypeGreaterThanEqual, fmt.Sprintf("Input should be greater than or equal to %d.", a.min), f, map[string]any{"ge": a.min})
	case f > float64(a.max):
		errs.AddCtx(loc, validate.TypeLessThanEqual, fmt.Sprintf("Input should be less than or equal to %d.", a.max), f, map[string]any{"le": a.max})
	}
	return errs
}

// checkString applies a string argument's (or list item's) enum, length and NUL rules.
func checkString(a arg, loc []any, s string) validate.Errors {
	var errs validate.Errors
	switch {
	case a.enum != nil && !slices.Contains(a.enum, s):
		errs.AddCtx(loc, validate.TypeEnum, "Input should be one of: "+strings.Join(a.enum, ", ")+".", truncate(s), map[string]any{"expected": a.enum})
	case a.max > 0 && len([]rune(s)) > a.max:
		errs.AddCtx(loc, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d characters.", a.max), truncate(s), map[string]any{"max_length": a.max})
	case strings.IndexByte(s, 0) >= 0:
		errs.Add(loc, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	return errs
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// truncate bounds an echoed input so a hostile argument is not reflected in full.
func truncate(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
