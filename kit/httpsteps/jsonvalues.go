package httpsteps

import (
	"encoding/json"

	"github.com/vigil-soc/vigil/kit/validate"
)

// The engine's reading of decoded JSON, for the rule owners that parse configuration beside it
// (domain/enrichment's malice rules), so a value reads the same in a rule as in a step.

// DecodeJSON decodes raw with numbers kept as json.Number, reporting missing or invalid JSON at the
// root of errs.
func DecodeJSON(raw json.RawMessage, errs *validate.Errors) (any, bool) { return decodeJSON(raw, errs) }

// RejectUnknown reports each key of obj that is not in known as extra_forbidden at loc.
func RejectUnknown(obj map[string]any, loc []any, errs *validate.Errors, known ...string) {
	rejectUnknown(obj, loc, errs, known...)
}

// RequiredString returns obj[key] when it is a non-blank string, reporting it at loc otherwise.
func RequiredString(obj map[string]any, key string, loc []any, errs *validate.Errors) (string, bool) {
	return requiredString(obj, key, loc, errs)
}

// Normalize turns json.Number into int64 or float64, recursively.
func Normalize(v any) any { return normalize(v) }

// ToFloat reads a number (or a numeric string) as a float64.
func ToFloat(v any) (float64, bool) { return toFloat(v) }

// Stringify renders a scalar as a template renders it.
func Stringify(v any) (string, error) { return stringify(v) }
