// Package targeting evaluates targeting rules: which alerts a context document applies to (API.md §6),
// and, with the same shape, which alerts an agent's trigger_filter accepts.
//
// Rules are {"match_any": [rule], "match_all": [rule]} with rule = {"field", "op", "value"}. An alert
// matches when every match_all rule holds and, if match_any is non-empty, at least one match_any rule
// holds. String comparisons are case-insensitive.
package targeting

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
)

// Fields a rule may test.
const (
	FieldSourceName  = "source_name"
	FieldSeverity    = "severity"
	FieldTags        = "tags"
	FieldTitle       = "title"
	FieldRuleName    = "detection_rule.name"
	FieldRuleTactics = "detection_rule.mitre_tactics"
)

// Operators.
const (
	OpEq       = "eq"       // equal (list fields: some element equal)
	OpNeq      = "neq"      // not equal (list fields: no element equal)
	OpIn       = "in"       // value is a list; field equals one of it (list fields: some element in it)
	OpContains = "contains" // strings: substring; list fields: some element equal
	OpGte      = "gte"      // severity only: rank ≥ value's rank
	OpLte      = "lte"      // severity only: rank ≤ value's rank
)

// Limits on rule sets.
const (
	MaxRules    = 100 // per list
	MaxValueLen = 500 // characters per string value
	MaxInValues = 100 // elements of an "in" list
)

// Fields returns the fields a rule may test.
func Fields() []string {
	return []string{FieldSourceName, FieldSeverity, FieldTags, FieldTitle, FieldRuleName, FieldRuleTactics}
}

// Ops returns the operators.
func Ops() []string { return []string{OpEq, OpNeq, OpIn, OpContains, OpGte, OpLte} }

// Rule is one condition. After Parse, Value is a string, or a []string for OpIn; severity values are
// in canonical case ("High").
type Rule struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	Value any    `json:"value"`
}

// Rules is a targeting rule set. Parse returns non-nil (possibly empty) lists.
type Rules struct {
	MatchAny []Rule `json:"match_any"`
	MatchAll []Rule `json:"match_all"`
}

// Empty reports whether the set has no rule at all.
func (r Rules) Empty() bool { return len(r.MatchAny) == 0 && len(r.MatchAll) == 0 }

// Subject is the alert being tested.
type Subject struct {
	SourceName  string
	Severity    string
	Title       string
	Tags        []string
	RuleName    string   // "" when the alert has no detection rule
	RuleTactics []string // the detection rule's MITRE tactics
}

// Applies implements the context-document rule: a global document applies to every alert; a
// non-global one applies only when it has rules and they match (no rules → applies to none).
func Applies(isGlobal bool, rules *Rules, s Subject) bool {
	if isGlobal {
		return true
	}
	if rules == nil || rules.Empty() {
		return false
	}
	return rules.Matches(s)
}

// Matches reports whether s satisfies every match_all rule and, when match_any is non-empty, at least
// one match_any rule. An empty rule set matches everything (callers decide what "no rules" means; see
// Applies).
func (r Rules) Matches(s Subject) bool {
	for _, rule := range r.MatchAll {
		if !rule.Matches(s) {
			return false
		}
	}
	if len(r.MatchAny) == 0 {
		return true
	}
	for _, rule := range r.MatchAny {
		if rule.Matches(s) {
			return true
		}
	}
	return false
}

// Matches evaluates one rule against s. Unknown fields or operators never match.
func (r Rule) Matches(s Subject) bool {
	vals := values(r.Value)
	switch r.Field {
	case FieldTags, FieldRuleTactics:
		list := s.Tags
		if r.Field == FieldRuleTactics {
			list = s.RuleTactics
		}
		switch r.Op {
		case OpEq, OpContains:
			return len(vals) == 1 && anyEqual(list, vals[0])
		case OpNeq:
			return len(vals) == 1 && !anyEqual(list, vals[0])
		case OpIn:
			for _, v := range vals {
				if anyEqual(list, v) {
					return true
				}
			}
		}
		return false
	case FieldSourceName, FieldSeverity, FieldTitle, FieldRuleName:
		got := stringField(s, r.Field)
		switch r.Op {
		case OpEq:
			return len(vals) == 1 && strings.EqualFold(got, vals[0])
		case OpNeq:
			return len(vals) == 1 && !strings.EqualFold(got, vals[0])
		case OpIn:
			return anyEqual(vals, got)
		case OpContains:
			return len(vals) == 1 && strings.Contains(strings.ToLower(got), strings.ToLower(vals[0]))
		case OpGte, OpLte:
			if r.Field != FieldSeverity || len(vals) != 1 {
				return false
			}
			have, want := severityRank(got), severityRank(vals[0])
			if have < 1 || want < 1 { // Pending or unknown is not on the scale
				return false
			}
			if r.Op == OpGte {
				return have >= want
			}
			return have <= want
		}
	}
	return false
}

func stringField(s Subject, field string) string {
	switch field {
	case FieldSourceName:
		return s.SourceName
	case FieldSeverity:
		return s.Severity
	case FieldTitle:
		return s.Title
	default: // FieldRuleName
		return s.RuleName
	}
}

// severityRank returns Informational 1 … Critical 5, Pending 0, unknown -1 (case-insensitive).
func severityRank(s string) int {
	for _, sev := range severity.Levels() {
		if strings.EqualFold(s, string(sev)) {
			return sev.Rank()
		}
	}
	return -1
}

func anyEqual(list []string, v string) bool {
	for _, e := range list {
		if strings.EqualFold(e, v) {
			return true
		}
	}
	return false
}

// values reads a rule value as strings: a string, a []string, or a decoded JSON []any of strings.
func values(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Parse decodes and validates a targeting rule set. Empty input or JSON null yields an empty set.
// Error locations are relative to the rule set, e.g. ["match_any", 2, "op"].
func Parse(raw json.RawMessage) (Rules, validate.Errors) {
	out := Rules{MatchAny: []Rule{}, MatchAll: []Rule{}}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return out, nil
	}
	var errs validate.Errors
	var top any
	if err := json.Unmarshal(trimmed, &top); err != nil {
		errs.Add([]any{}, validate.TypeValue, fmt.Sprintf("invalid JSON: %v", err), nil)
		return out, errs
	}
	obj, ok := top.(map[string]any)
	if !ok {
		errs.Add([]any{}, validate.TypeObject, "targeting rules must be an object with match_any and/or match_all", nil)
		return out, errs
	}
	for _, k := range sortedKeys(obj) {
		if k != "match_any" && k != "match_all" {
			errs.Add([]any{k}, validate.TypeExtraForbidden, "unknown key; expected match_any or match_all", nil)
		}
	}
	out.MatchAny = parseList(obj["match_any"], "match_any", &errs)
	out.MatchAll = parseList(obj["match_all"], "match_all", &errs)
	if len(errs) > 0 {
		return Rules{MatchAny: []Rule{}, MatchAll: []Rule{}}, errs
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func parseList(v any, name string, errs *validate.Errors) []Rule {
	out := []Rule{}
	if v == nil {
		return out
	}
	list, ok := v.([]any)
	if !ok {
		errs.Add([]any{name}, validate.TypeList, "must be an array of rules", nil)
		return out
	}
	if len(list) > MaxRules {
		errs.AddCtx([]any{name}, validate.TypeTooLong, fmt.Sprintf("at most %d rules", MaxRules), nil,
			map[string]any{"max_length": MaxRules})
		return out
	}
	for i, e := range list {
		if r, ok := parseRule(e, []any{name, i}, errs); ok {
			out = append(out, r)
		}
	}
	return out
}

func parseRule(v any, at []any, errs *validate.Errors) (Rule, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		errs.Add(at, validate.TypeObject, "rule must be an object with field, op and value", nil)
		return Rule{}, false
	}
	before := len(*errs)
	for _, k := range sortedKeys(obj) {
		if k != "field" && k != "op" && k != "value" {
			errs.Add(validate.Join(at, k), validate.TypeExtraForbidden, "unknown key; expected field, op, value", nil)
		}
	}
	field, fieldOK := enumString(obj, "field", Fields(), at, errs)
	op, opOK := enumString(obj, "op", Ops(), at, errs)
	if fieldOK && opOK && (op == OpGte || op == OpLte) && field != FieldSeverity {
		errs.AddCtx(validate.Join(at, "op"), validate.TypeValue, "gte and lte apply only to the severity field", op,
			map[string]any{"field": field})
		opOK = false
	}
	raw, present := obj["value"]
	var value any
	switch {
	case !present || raw == nil:
		errs.Add(validate.Join(at, "value"), validate.TypeMissing, "field required", nil)
	case !opOK:
		// The value's expected shape depends on the operator; nothing more to check.
	case op == OpIn:
		value = parseInValues(raw, field, fieldOK, validate.Join(at, "value"), errs)
	default:
		if s, ok := parseValue(raw, field, fieldOK, op, validate.Join(at, "value"), errs); ok {
			value = s
		}
	}
	if len(*errs) > before {
		return Rule{}, false
	}
	return Rule{Field: field, Op: op, Value: value}, true
}

func enumString(obj map[string]any, key string, allowed []string, at []any, errs *validate.Errors) (string, bool) {
	raw, present := obj[key]
	if !present || raw == nil {
		errs.Add(validate.Join(at, key), validate.TypeMissing, "field required", nil)
		return "", false
	}
	s, ok := raw.(string)
	if !ok {
		errs.Add(validate.Join(at, key), validate.TypeString, "must be a string", nil)
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	errs.AddCtx(validate.Join(at, key), validate.TypeEnum, fmt.Sprintf("unknown %s", key), s,
		map[string]any{"allowed": allowed})
	return "", false
}

// parseValue checks a single string value; severity values must be severities (ranked ones for
// gte/lte) and are returned in canonical case.
func parseValue(raw any, field string, fieldOK bool, op string, at []any, errs *validate.Errors) (string, bool) {
	s, ok := raw.(string)
	if !ok {
		if _, isList := raw.([]any); isList {
			errs.Add(at, validate.TypeString, fmt.Sprintf("op %q takes a single string; use \"in\" for a list", op), nil)
		} else {
			errs.Add(at, validate.TypeString, "must be a string", nil)
		}
		return "", false
	}
	if !checkString(s, at, errs) {
		return "", false
	}
	if fieldOK && field == FieldSeverity {
		return canonicalSeverity(s, op == OpGte || op == OpLte, at, errs)
	}
	return s, true
}

func parseInValues(raw any, field string, fieldOK bool, at []any, errs *validate.Errors) []string {
	list, ok := raw.([]any)
	if !ok {
		errs.Add(at, validate.TypeList, "op \"in\" needs a list of strings", nil)
		return nil
	}
	if len(list) == 0 {
		errs.Add(at, validate.TypeTooShort, "op \"in\" needs at least one value", nil)
		return nil
	}
	if len(list) > MaxInValues {
		errs.AddCtx(at, validate.TypeTooLong, fmt.Sprintf("at most %d values", MaxInValues), nil,
			map[string]any{"max_length": MaxInValues})
		return nil
	}
	out := make([]string, 0, len(list))
	for j, e := range list {
		s, ok := e.(string)
		if !ok {
			errs.Add(validate.Join(at, j), validate.TypeString, "must be a string", nil)
			continue
		}
		if !checkString(s, validate.Join(at, j), errs) {
			continue
		}
		if fieldOK && field == FieldSeverity {
			if c, ok := canonicalSeverity(s, false, validate.Join(at, j), errs); ok {
				out = append(out, c)
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

func checkString(s string, at []any, errs *validate.Errors) bool {
	if strings.TrimSpace(s) == "" {
		errs.Add(at, validate.TypeStringTooShort, "must not be empty", s)
		return false
	}
	if len([]rune(s)) > MaxValueLen {
		errs.AddCtx(at, validate.TypeStringTooLong, fmt.Sprintf("at most %d characters", MaxValueLen), nil,
			map[string]any{"max_length": MaxValueLen})
		return false
	}
	return true
}

func canonicalSeverity(s string, rankedOnly bool, at []any, errs *validate.Errors) (string, bool) {
	allowed := severity.Levels()
	if rankedOnly {
		allowed = allowed[1:] // Pending is not on the scale
	}
	for _, sev := range allowed {
		if strings.EqualFold(strings.TrimSpace(s), string(sev)) {
			return string(sev), true
		}
	}
	errs.AddCtx(at, validate.TypeEnum, "must be an alert severity", s, map[string]any{"allowed": allowed})
	return "", false
}
