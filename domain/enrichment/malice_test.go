package enrichment_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/validate"
)

func locs(errs validate.Errors) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, validate.LocString(e.Loc)+" "+e.Type)
	}
	return out
}

func TestParseMaliceRules_Valid(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null`, ` `} {
		m, errs := enrichment.ParseMaliceRules(json.RawMessage(raw))
		require.Empty(t, errs)
		require.Equal(t, "Pending", m.Evaluate(map[string]any{"x": 1}, false))
		require.Equal(t, "Pending", m.Evaluate(nil, true))
	}
	m, errs := enrichment.ParseMaliceRules(json.RawMessage(`{"rules":[
	  {"field":"malicious","operator":">=","value":5,"verdict":"Malicious"},
	  {"field":"malicious","operator":">","value":"0","verdict":"Suspicious"}],
	  "default_verdict":"Benign","not_found_verdict":"Benign"}`))
	require.Empty(t, errs)
	require.Len(t, m.Rules, 2)
	require.Equal(t, "Malicious", m.Evaluate(map[string]any{"malicious": int64(7)}, false))
	require.Equal(t, "Suspicious", m.Evaluate(map[string]any{"malicious": "2"}, false))
	require.Equal(t, "Benign", m.Evaluate(map[string]any{"malicious": 0.0}, false))
	require.Equal(t, "Benign", m.Evaluate(map[string]any{}, false))
	require.Equal(t, "Benign", m.Evaluate(map[string]any{"malicious": 100}, true), "not found wins")
}

func TestParseMaliceRules_Invalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, raw string
		want      []string
	}{
		{"not object", `[]`, []string{" dict_type"}},
		{"bad json", `{`, []string{" json_invalid"}},
		{"unknown field", `{"rules":[],"threshold":1}`, []string{"threshold extra_forbidden"}},
		{"rules not list", `{"rules":{}}`, []string{"rules list_type"}},
		{"bad default", `{"default_verdict":"Evil"}`, []string{"default_verdict enum"}},
		{"bad not found", `{"not_found_verdict":3}`, []string{"not_found_verdict string_type"}},
		{"rule not object", `{"rules":[1]}`, []string{"rules[0] dict_type"}},
		{"empty rule", `{"rules":[{}]}`, []string{"rules[0].field missing", "rules[0].operator missing", "rules[0].value missing", "rules[0].verdict missing"}},
		{"bad operator", `{"rules":[{"field":"a","operator":"=~","value":1,"verdict":"Benign"}]}`, []string{"rules[0].operator enum"}},
		{"bad verdict", `{"rules":[{"field":"a","operator":"==","value":1,"verdict":"bad"}]}`, []string{"rules[0].verdict enum"}},
		{"non numeric", `{"rules":[{"field":"a","operator":">","value":"high","verdict":"Benign"}]}`, []string{"rules[0].value float_type"}},
		{"in needs list", `{"rules":[{"field":"a","operator":"in","value":"x","verdict":"Benign"}]}`, []string{"rules[0].value list_type"}},
		{"bad field path", `{"rules":[{"field":"a..b","operator":"==","value":1,"verdict":"Benign"}]}`, []string{"rules[0].field value_error"}},
		{"extra rule key", `{"rules":[{"field":"a","operator":"==","value":1,"verdict":"Benign","score":2}]}`, []string{"rules[0].score extra_forbidden"}},
		{"second rule only", `{"rules":[{"field":"a","operator":"==","value":1,"verdict":"Benign"},{"field":"a","operator":"<","value":[1],"verdict":"Malicious"}]}`, []string{"rules[1].value float_type"}},
		{"too many", `{"rules":[` + strings.TrimSuffix(strings.Repeat(`{"field":"a","operator":"==","value":1,"verdict":"Benign"},`, 101), ",") + `]}`, []string{"rules too_long"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := enrichment.ParseMaliceRules(json.RawMessage(tc.raw))
			require.ElementsMatch(t, tc.want, locs(errs), "%v", errs)
		})
	}
}

func TestEvaluate_Operators(t *testing.T) {
	t.Parallel()
	extracted := map[string]any{
		"n": int64(5), "f": 2.5, "s": "Tor Exit Node", "num_s": "10", "b": true,
		"list": []any{"Scanner", "tor", int64(3)}, "nested": map[string]any{"score": int64(90)},
	}
	cases := []struct {
		field, op string
		value     any
		match     bool
	}{
		{"n", ">", 4, true},
		{"n", ">", 5, false},
		{"n", ">=", 5, true},
		{"n", "<", 5.5, true},
		{"n", "<=", "4", false},
		{"f", "<=", 2.5, true},
		{"num_s", ">", 9, true},
		{"num_s", "==", 10, true},
		{"s", ">", 1, false},
		{"b", ">", 0, false},
		{"n", "==", 5.0, true},
		{"n", "!=", 5, false},
		{"n", "!=", 6, true},
		{"s", "==", "tor exit node", true},
		{"s", "!=", "other", true},
		{"b", "==", true, true},
		{"b", "==", "true", true},
		{"b", "==", false, false},
		{"s", "contains", "exit", true},
		{"s", "contains", "proxy", false},
		{"list", "contains", "TOR", true},
		{"list", "contains", 3, true},
		{"list", "contains", "vpn", false},
		{"n", "contains", "5", false},
		{"s", "in", []any{"a", "Tor Exit Node"}, true},
		{"n", "in", []any{1, 5}, true},
		{"n", "in", []any{1, 2}, false},
		{"list", "in", []any{"vpn", "scanner"}, true},
		{"list", "in", []any{"vpn"}, false},
		{"nested.score", ">=", 80, true},
		{"missing", "!=", 1, false},
		{"missing", "==", nil, false},
	}
	for _, tc := range cases {
		m := enrichment.MaliceRules{Rules: []enrichment.Rule{{Field: tc.field, Operator: tc.op, Value: tc.value, Verdict: "Malicious"}}, DefaultVerdict: "Benign"}
		want := "Benign"
		if tc.match {
			want = "Malicious"
		}
		require.Equal(t, want, m.Evaluate(extracted, false), "%s %s %v", tc.field, tc.op, tc.value)
	}
	// First match wins.
	m := enrichment.MaliceRules{Rules: []enrichment.Rule{
		{Field: "n", Operator: ">", Value: 1, Verdict: "Suspicious"},
		{Field: "n", Operator: ">", Value: 2, Verdict: "Malicious"},
	}}
	require.Equal(t, "Suspicious", m.Evaluate(extracted, false))
	require.Equal(t, "Pending", enrichment.MaliceRules{}.Evaluate(extracted, false))
}

// TestMaliceRulesReadTheExtractedFields: the rule of httpsteps.TestRun_TwoStepOAuth's
// provider (moved here with the malice rules) gives its verdict on the fields that call extracts.
func TestMaliceRulesReadTheExtractedFields(t *testing.T) {
	t.Parallel()
	rules, errs := enrichment.ParseMaliceRules(json.RawMessage(`{"rules":[{"field":"score","operator":">=","value":80,"verdict":"Malicious"}],"default_verdict":"Benign","not_found_verdict":"Benign"}`))
	require.Empty(t, errs)
	require.Equal(t, "Malicious", rules.Evaluate(map[string]any{"score": int64(87), "reports": 12.0, "tags": []any{"scanner", "tor"}, "country": "NL"}, false))
}

// TestMaliceRulesHaveOneOwner fails if the step engine (kit/httpsteps) declares malice rules again:
// a provider's verdict rules live here, beside the engine's Record that applies them.
func TestMaliceRulesHaveOneOwner(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "kit", "httpsteps", "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			var names []string
			switch d := d.(type) {
			case *ast.FuncDecl:
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						names = append(names, sp.Name.Name)
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							names = append(names, n.Name)
						}
					}
				}
			}
			for _, n := range names {
				require.NotContains(t, strings.ToLower(n), "malice", "%s declares %s: malice rules are domain/enrichment's", name, n)
			}
		}
	}
}
