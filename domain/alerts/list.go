package alerts

import (
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// IndicatorFilter is the alert list's indicator filter (API.md §13) as (type, value) pairs to look
// up: value normalized as ingest normalizes it (indicators.Normalize), under typ when typ is given,
// else under every type that accepts the value (an exact match on any type). A value no type
// accepts, or typ refusing it, is a validation error at loc "indicator"; an unknown typ at
// "indicator_type".
func IndicatorFilter(value, typ string) ([]store.IndicatorKey, validate.Errors) {
	var errs validate.Errors
	if strings.IndexByte(value, 0) >= 0 {
		errs.Add([]any{"indicator"}, validate.TypeValue, "NUL characters are not accepted.", nil)
		return nil, errs
	}
	if len(value) > indicators.MaxValueLen {
		errs.AddCtx([]any{"indicator"}, validate.TypeStringTooLong, "String should have at most 2048 character(s).",
			validate.Truncate(value), map[string]any{"max_length": indicators.MaxValueLen})
		return nil, errs
	}
	types := indicators.Types()
	if typ != "" {
		t, err := indicators.ParseType(typ)
		if err != nil {
			errs.AddCtx([]any{"indicator_type"}, validate.TypeEnum, "Input should be one of: "+strings.Join(indicators.TypeNames(), ", ")+".",
				typ, map[string]any{"expected": indicators.TypeNames()})
			return nil, errs
		}
		types = []indicators.Type{t}
	}
	var keys []store.IndicatorKey
	var lastErr error
	for _, t := range types {
		v, err := indicators.Normalize(t, value)
		if err != nil {
			lastErr = err
			continue
		}
		keys = append(keys, store.IndicatorKey{Type: string(t), Value: v})
	}
	if len(keys) == 0 {
		msg := "Not a valid indicator value of any type."
		if typ != "" && lastErr != nil {
			msg = "Not a valid " + typ + ": " + lastErr.Error() + "."
		}
		errs.Add([]any{"indicator"}, validate.TypeValue, msg, validate.Truncate(value))
	}
	return keys, errs
}

// AssigneeFilter splits the assignee filter's values (API.md §13) into handles and whether
// "none" (unassigned, any case) was asked for. Values are trimmed; blank ones are dropped.
func AssigneeFilter(values []string) (handles []string, unassigned bool) {
	for _, v := range values {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case strings.EqualFold(v, Unassigned):
			unassigned = true
		default:
			handles = append(handles, v)
		}
	}
	return handles, unassigned
}
