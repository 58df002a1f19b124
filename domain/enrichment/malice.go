package enrichment

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

// MaxMaliceRules bounds the number of rules in one malice_rules object.
const MaxMaliceRules = 100

// Operators lists the rule operators.
func Operators() []string {
	return []string{">", ">=", "<", "<=", "==", "!=", "contains", "in"}
}

// Rule compares one extracted field with a value; the first matching rule gives the verdict.
type Rule struct {
	Field    string `json:"field"` // fieldpath path into the extracted map
	Operator string `json:"operator"`
	Value    any    `json:"value"`
	Verdict  string `json:"verdict"`
}

// MaliceRules turns extracted fields into a verdict.
type MaliceRules struct {
	Rules           []Rule `json:"rules"`
	DefaultVerdict  string `json:"default_verdict"`   // no rule matched; default Pending
	NotFoundVerdict string `json:"not_found_verdict"` // the call ended not-found; default Pending
}

// ParseMaliceRules decodes and validates malice_rules, reporting every problem with locations
// relative to the object (["rules", 0, "operator"]). Empty input or null is valid: no rules, both
// verdicts Pending.
func ParseMaliceRules(raw json.RawMessage) (MaliceRules, validate.Errors) {
	out := MaliceRules{DefaultVerdict: string(indicators.MalicePending), NotFoundVerdict: string(indicators.MalicePending), Rules: []Rule{}}
	trimmed := strings.TrimSpace(string(raw))
	if trimmed == "" || trimmed == "null" {
		return out, nil
	}
	var errs validate.Errors
	root, ok := httpsteps.DecodeJSON(raw, &errs)
	if !ok {
		return MaliceRules{}, errs
	}
	obj, ok := root.(map[string]any)
	if !ok {
		errs.Add([]any{}, validate.TypeObject, "malice_rules must be an object", nil)
		return MaliceRules{}, errs
	}
	httpsteps.RejectUnknown(obj, []any{}, &errs, "rules", "default_verdict", "not_found_verdict")
	for _, key := range []string{"default_verdict", "not_found_verdict"} {
		v, present := obj[key]
		if !present || v == nil {
			continue
		}
		if s, ok := verdictValue(v, []any{key}, &errs); ok {
			if key == "default_verdict" {
				out.DefaultVerdict = s
			} else {
				out.NotFoundVerdict = s
			}
		}
	}
	if v, present := obj["rules"]; present && v != nil {
		list, ok := v.([]any)
		switch {
		case !ok:
			errs.Add([]any{"rules"}, validate.TypeList, "rules must be a list", nil)
		case len(list) > MaxMaliceRules:
			errs.Add([]any{"rules"}, validate.TypeTooLong, fmt.Sprintf("at most %d rules are allowed", MaxMaliceRules), len(list))
		default:
			for i, el := range list {
				if r, ok := parseRule(el, []any{"rules", i}, &errs); ok {
					out.Rules = append(out.Rules, r)
				}
			}
		}
	}
	if len(errs) > 0 {
		return MaliceRules{}, errs
	}
	return out, nil
}

func verdictValue(v any, loc []any, errs *validate.Errors) (string, bool) {
	s, ok := v.(string)
	if !ok {
		errs.Add(loc, validate.TypeString, "verdict must be a string", nil)
		return "", false
	}
	if !indicators.MaliceLevel(s).Valid() {
		verdicts := strings.Join(indicators.MaliceNames(), ", ")
		errs.AddCtx(loc, validate.TypeEnum, "verdict must be one of "+verdicts, s, map[string]any{"expected": verdicts})
		return "", false
	}
	return s, true
}

func parseRule(raw any, loc []any, errs *validate.Errors) (Rule, bool) {
	obj, ok := raw.(map[string]any)
	if !ok {
		errs.Add(loc, validate.TypeObject, "rule must be an object", nil)
		return Rule{}, false
	}
	n := len(*errs)
	httpsteps.RejectUnknown(obj, loc, errs, "field", "operator", "value", "verdict")
	var r Rule
	if s, ok := httpsteps.RequiredString(obj, "field", loc, errs); ok {
		if err := fieldpath.Validate(s); err != nil {
			errs.Add(validate.Join(loc, "field"), validate.TypeValue, "invalid field path: "+err.Error(), s)
		}
		r.Field = s
	}
	if s, ok := httpsteps.RequiredString(obj, "operator", loc, errs); ok {
		if !slices.Contains(Operators(), s) {
			errs.AddCtx(validate.Join(loc, "operator"), validate.TypeEnum, "operator must be one of "+strings.Join(Operators(), " "), s,
				map[string]any{"expected": strings.Join(Operators(), " ")})
		}
		r.Operator = s
	}
	v, present := obj["value"]
	if !present || v == nil {
		errs.Add(validate.Join(loc, "value"), validate.TypeMissing, "value is required", nil)
	} else {
		r.Value = httpsteps.Normalize(v)
		switch r.Operator {
		case ">", ">=", "<", "<=":
			if _, ok := httpsteps.ToFloat(r.Value); !ok {
				errs.Add(validate.Join(loc, "value"), validate.TypeFloat, "value must be a number for "+r.Operator, nil)
			}
		case "in":
			if _, ok := r.Value.([]any); !ok {
				errs.Add(validate.Join(loc, "value"), validate.TypeList, "value must be a list for in", nil)
			}
		}
	}
	if v, present := obj["verdict"]; !present || v == nil {
		errs.Add(validate.Join(loc, "verdict"), validate.TypeMissing, "verdict is required", nil)
	} else if s, ok := verdictValue(v, validate.Join(loc, "verdict"), errs); ok {
		r.Verdict = s
	}
	return r, len(*errs) == n
}

// Evaluate returns NotFoundVerdict when notFound, else the verdict of the first rule that matches
// extracted, else DefaultVerdict (Pending when unset). A rule whose field is missing does not match.
// >, >=, <, <= compare numbers (numeric strings count); == and != compare numerically when both sides
// are numeric, else as text (case-insensitive) or booleans; contains tests a substring of a text
// field (case-insensitive) or an element of a list field; in tests whether the field (or any element
// of a list field) equals an element of the rule's list.
func (m MaliceRules) Evaluate(extracted map[string]any, notFound bool) string {
	if notFound {
		return orPending(m.NotFoundVerdict)
	}
	for _, r := range m.Rules {
		got, ok := fieldpath.First(extracted, r.Field)
		if !ok {
			continue
		}
		if match(httpsteps.Normalize(got), r.Operator, httpsteps.Normalize(r.Value)) {
			return orPending(r.Verdict)
		}
	}
	return orPending(m.DefaultVerdict)
}

func orPending(v string) string {
	if v == "" {
		return string(indicators.MalicePending)
	}
	return v
}

func match(got any, op string, want any) bool {
	switch op {
	case ">", ">=", "<", "<=":
		a, okA := numeric(got)
		b, okB := numeric(want)
		if !okA || !okB {
			return false
		}
		switch op {
		case ">":
			return a > b
		case ">=":
			return a >= b
		case "<":
			return a < b
		default:
			return a <= b
		}
	case "==":
		return equal(got, want)
	case "!=":
		return !equal(got, want)
	case "contains":
		switch g := got.(type) {
		case string:
			w, ok := scalarText(want)
			return ok && strings.Contains(strings.ToLower(g), strings.ToLower(w))
		case []any:
			for _, el := range g {
				if equal(el, want) {
					return true
				}
			}
		}
		return false
	case "in":
		list, ok := want.([]any)
		if !ok {
			return false
		}
		candidates := []any{got}
		if g, isList := got.([]any); isList {
			candidates = g
		}
		for _, c := range candidates {
			for _, w := range list {
				if equal(c, w) {
					return true
				}
			}
		}
	}
	return false
}

func numeric(v any) (float64, bool) {
	switch v.(type) {
	case bool, nil, map[string]any, []any:
		return 0, false
	}
	return httpsteps.ToFloat(v)
}

func equal(a, b any) bool {
	if x, ok := numeric(a); ok {
		if y, ok := numeric(b); ok {
			return x == y
		}
	}
	if x, ok := a.(bool); ok {
		if y, ok := b.(bool); ok {
			return x == y
		}
		if s, ok := b.(string); ok {
			return strings.EqualFold(strconv.FormatBool(x), s)
		}
		return false
	}
	sa, okA := scalarText(a)
	sb, okB := scalarText(b)
	return okA && okB && strings.EqualFold(sa, sb)
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool, int64, float64, int:
		s, err := httpsteps.Stringify(x)
		return s, err == nil
	}
	return "", false
}
