package targeting

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/validate"
)

func mustParse(t testing.TB, s string) Rules {
	t.Helper()
	r, errs := Parse(json.RawMessage(s))
	require.Empty(t, errs)
	return r
}

func TestParse_Valid(t *testing.T) {
	t.Parallel()
	r := mustParse(t, `{
		"match_any": [
			{"field": "source_name", "op": "eq", "value": "sentinel"},
			{"field": "severity", "op": "in", "value": ["high", "CRITICAL"]}
		],
		"match_all": [
			{"field": "severity", "op": "gte", "value": "medium"},
			{"field": "tags", "op": "contains", "value": "phishing"},
			{"field": "detection_rule.mitre_tactics", "op": "in", "value": ["TA0001"]},
			{"field": "title", "op": "neq", "value": "test"},
			{"field": "detection_rule.name", "op": "contains", "value": "PowerShell"},
			{"field": "severity", "op": "lte", "value": "Critical"}
		]
	}`)
	require.Equal(t, Rules{
		MatchAny: []Rule{
			{Field: FieldSourceName, Op: OpEq, Value: "sentinel"},
			{Field: FieldSeverity, Op: OpIn, Value: []string{"High", "Critical"}},
		},
		MatchAll: []Rule{
			{Field: FieldSeverity, Op: OpGte, Value: "Medium"},
			{Field: FieldTags, Op: OpContains, Value: "phishing"},
			{Field: FieldRuleTactics, Op: OpIn, Value: []string{"TA0001"}},
			{Field: FieldTitle, Op: OpNeq, Value: "test"},
			{Field: FieldRuleName, Op: OpContains, Value: "PowerShell"},
			{Field: FieldSeverity, Op: OpLte, Value: "Critical"},
		},
	}, r)

	// Round trip: what Parse returns serializes to something Parse accepts unchanged.
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.Equal(t, r, mustParse(t, string(b)))
}

func TestParse_Empty(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, `  `, `null`, `{}`, `{"match_any": null}`, `{"match_any": [], "match_all": []}`} {
		r := mustParse(t, s)
		require.True(t, r.Empty(), s)
		require.NotNil(t, r.MatchAny)
		require.NotNil(t, r.MatchAll)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.JSONEq(t, `{"match_any":[],"match_all":[]}`, string(b))
	}
}

func TestParse_Errors(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxRules+1)
	for i := range many {
		many[i] = `{"field":"title","op":"eq","value":"x"}`
	}
	manyIn := make([]string, MaxInValues+1)
	for i := range manyIn {
		manyIn[i] = fmt.Sprintf(`"v%d"`, i)
	}
	tests := []struct {
		name  string
		in    string
		locs  [][]any
		types []string
	}{
		{"not json", `{`, [][]any{{}}, []string{validate.TypeValue}},
		{"array", `[]`, [][]any{{}}, []string{validate.TypeObject}},
		{"string", `"x"`, [][]any{{}}, []string{validate.TypeObject}},
		{"unknown top key", `{"match_none": []}`, [][]any{{"match_none"}}, []string{validate.TypeExtraForbidden}},
		{"list not array", `{"match_any": {"field":"title"}}`, [][]any{{"match_any"}}, []string{validate.TypeList}},
		{"too many rules", `{"match_all": [` + strings.Join(many, ",") + `]}`, [][]any{{"match_all"}}, []string{validate.TypeTooLong}},
		{"rule not object", `{"match_any": [1]}`, [][]any{{"match_any", 0}}, []string{validate.TypeObject}},
		{
			"names the bad rule", `{"match_any": [
				{"field":"title","op":"eq","value":"a"},
				{"field":"title","op":"eq","value":"b"},
				{"field":"title","op":"like","value":"c"}]}`,
			[][]any{{"match_any", 2, "op"}}, []string{validate.TypeEnum},
		},
		{"unknown field", `{"match_all": [{"field":"status","op":"eq","value":"Open"}]}`, [][]any{{"match_all", 0, "field"}}, []string{validate.TypeEnum}},
		{"field not string", `{"match_all": [{"field":1,"op":"eq","value":"x"}]}`, [][]any{{"match_all", 0, "field"}}, []string{validate.TypeString}},
		{
			"all missing", `{"match_all": [{}]}`,
			[][]any{{"match_all", 0, "field"}, {"match_all", 0, "op"}, {"match_all", 0, "value"}},
			[]string{validate.TypeMissing, validate.TypeMissing, validate.TypeMissing},
		},
		{"extra key", `{"match_all": [{"field":"title","op":"eq","value":"x","negate":true}]}`, [][]any{{"match_all", 0, "negate"}}, []string{validate.TypeExtraForbidden}},
		{"gte on title", `{"match_all": [{"field":"title","op":"gte","value":"x"}]}`, [][]any{{"match_all", 0, "op"}}, []string{validate.TypeValue}},
		{"lte on tags", `{"match_any": [{"field":"tags","op":"lte","value":"x"}]}`, [][]any{{"match_any", 0, "op"}}, []string{validate.TypeValue}},
		{"gte bad severity", `{"match_all": [{"field":"severity","op":"gte","value":"severe"}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeEnum}},
		{"gte pending", `{"match_all": [{"field":"severity","op":"gte","value":"Pending"}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeEnum}},
		{"eq bad severity", `{"match_all": [{"field":"severity","op":"eq","value":"P1"}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeEnum}},
		{"in not list", `{"match_all": [{"field":"source_name","op":"in","value":"sentinel"}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeList}},
		{"in empty", `{"match_all": [{"field":"source_name","op":"in","value":[]}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeTooShort}},
		{"in too many", `{"match_all": [{"field":"tags","op":"in","value":[` + strings.Join(manyIn, ",") + `]}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeTooLong}},
		{
			"in bad elements", `{"match_all": [{"field":"severity","op":"in","value":["High", 3, "", "bogus"]}]}`,
			[][]any{{"match_all", 0, "value", 1}, {"match_all", 0, "value", 2}, {"match_all", 0, "value", 3}},
			[]string{validate.TypeString, validate.TypeStringTooShort, validate.TypeEnum},
		},
		{"eq with list", `{"match_all": [{"field":"title","op":"eq","value":["a"]}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeString}},
		{"eq with number", `{"match_all": [{"field":"title","op":"eq","value":5}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeString}},
		{"eq null value", `{"match_all": [{"field":"title","op":"eq","value":null}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeMissing}},
		{"blank value", `{"match_all": [{"field":"title","op":"contains","value":"  "}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeStringTooShort}},
		{"long value", `{"match_all": [{"field":"title","op":"contains","value":"` + strings.Repeat("x", MaxValueLen+1) + `"}]}`, [][]any{{"match_all", 0, "value"}}, []string{validate.TypeStringTooLong}},
		{
			"errors in both lists", `{"match_any": [{"field":"x","op":"eq","value":"a"}], "match_all": [{"field":"title","op":"eq"}], "extra": 1}`,
			[][]any{{"extra"}, {"match_any", 0, "field"}, {"match_all", 0, "value"}},
			[]string{validate.TypeExtraForbidden, validate.TypeEnum, validate.TypeMissing},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, errs := Parse(json.RawMessage(tc.in))
			require.True(t, r.Empty(), "invalid input yields no rules")
			var locs [][]any
			var types []string
			for _, e := range errs {
				locs = append(locs, e.Loc)
				types = append(types, e.Type)
				require.NotEmpty(t, e.Msg)
			}
			require.Equal(t, tc.locs, locs)
			require.Equal(t, tc.types, types)
		})
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	alert := Subject{
		SourceName: "sentinel", Severity: "High", Title: "Suspicious PowerShell download",
		Tags: []string{"Execution", "windows"}, RuleName: "PS Download Cradle", RuleTactics: []string{"TA0002", "Execution"},
	}
	noRule := Subject{SourceName: "generic", Severity: "Pending", Title: "x"}
	rule := func(field, op string, v any) string {
		b, _ := json.Marshal(map[string]any{"field": field, "op": op, "value": v})
		return string(b)
	}
	tests := []struct {
		name string
		rule string
		s    Subject
		want bool
	}{
		{"eq case-insensitive", rule("source_name", "eq", "SENTINEL"), alert, true},
		{"eq other", rule("source_name", "eq", "splunk"), alert, false},
		{"neq", rule("source_name", "neq", "splunk"), alert, true},
		{"neq same", rule("source_name", "neq", "Sentinel"), alert, false},
		{"in", rule("source_name", "in", []string{"elastic", "sentinel"}), alert, true},
		{"in miss", rule("source_name", "in", []string{"elastic"}), alert, false},
		{"title contains", rule("title", "contains", "powershell"), alert, true},
		{"title contains miss", rule("title", "contains", "mimikatz"), alert, false},
		{"title eq whole", rule("title", "eq", "suspicious powershell download"), alert, true},
		{"severity eq", rule("severity", "eq", "high"), alert, true},
		{"severity gte equal", rule("severity", "gte", "High"), alert, true},
		{"severity gte lower", rule("severity", "gte", "Low"), alert, true},
		{"severity gte higher", rule("severity", "gte", "Critical"), alert, false},
		{"severity lte equal", rule("severity", "lte", "High"), alert, true},
		{"severity lte lower", rule("severity", "lte", "Medium"), alert, false},
		{"severity lte informational", rule("severity", "lte", "Informational"), Subject{Severity: "Informational"}, true},
		{"pending is off the scale gte", rule("severity", "gte", "Informational"), noRule, false},
		{"pending is off the scale lte", rule("severity", "lte", "Critical"), noRule, false},
		{"pending eq", rule("severity", "eq", "Pending"), noRule, true},
		{"severity in", rule("severity", "in", []string{"Medium", "High"}), alert, true},
		{"tags contains element", rule("tags", "contains", "WINDOWS"), alert, true},
		{"tags contains is not substring", rule("tags", "contains", "win"), alert, false},
		{"tags eq element", rule("tags", "eq", "execution"), alert, true},
		{"tags neq", rule("tags", "neq", "linux"), alert, true},
		{"tags neq present", rule("tags", "neq", "windows"), alert, false},
		{"tags in", rule("tags", "in", []string{"linux", "Execution"}), alert, true},
		{"tags in miss", rule("tags", "in", []string{"linux"}), alert, false},
		{"no tags contains", rule("tags", "contains", "x"), noRule, false},
		{"no tags neq", rule("tags", "neq", "x"), noRule, true},
		{"tactics contains", rule("detection_rule.mitre_tactics", "contains", "ta0002"), alert, true},
		{"tactics in", rule("detection_rule.mitre_tactics", "in", []string{"Persistence"}), alert, false},
		{"rule name eq", rule("detection_rule.name", "eq", "ps download cradle"), alert, true},
		{"rule name contains", rule("detection_rule.name", "contains", "Cradle"), alert, true},
		{"no rule eq", rule("detection_rule.name", "eq", "PS Download Cradle"), noRule, false},
		{"no rule neq", rule("detection_rule.name", "neq", "PS Download Cradle"), noRule, true},
		{"no rule tactics", rule("detection_rule.mitre_tactics", "contains", "Execution"), noRule, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all := mustParse(t, `{"match_all": [`+tc.rule+`]}`)
			require.Equal(t, tc.want, all.Matches(tc.s), "match_all")
			anyOf := mustParse(t, `{"match_any": [`+tc.rule+`]}`)
			require.Equal(t, tc.want, anyOf.Matches(tc.s), "match_any")
		})
	}
}

func TestMatches_Combination(t *testing.T) {
	t.Parallel()
	r := mustParse(t, `{
		"match_all": [{"field":"severity","op":"gte","value":"Medium"}],
		"match_any": [{"field":"source_name","op":"eq","value":"elastic"}, {"field":"tags","op":"contains","value":"vip"}]
	}`)
	require.True(t, r.Matches(Subject{SourceName: "elastic", Severity: "High"}))
	require.True(t, r.Matches(Subject{SourceName: "splunk", Severity: "Medium", Tags: []string{"VIP"}}))
	require.False(t, r.Matches(Subject{SourceName: "splunk", Severity: "Critical"}), "no match_any rule holds")
	require.False(t, r.Matches(Subject{SourceName: "elastic", Severity: "Low"}), "match_all fails")

	onlyAll := mustParse(t, `{"match_all": [{"field":"title","op":"contains","value":"x"},{"field":"title","op":"contains","value":"y"}]}`)
	require.True(t, onlyAll.Matches(Subject{Title: "xy"}))
	require.False(t, onlyAll.Matches(Subject{Title: "x"}))

	require.True(t, Rules{}.Matches(Subject{}), "an empty set matches everything")
}

func TestMatches_RulesNotFromParse(t *testing.T) {
	t.Parallel()
	// Rules decoded straight from stored JSON carry []any values; unknown fields/ops never match.
	var r Rules
	require.NoError(t, json.Unmarshal([]byte(`{"match_all":[{"field":"tags","op":"in","value":["a",1]}]}`), &r))
	require.True(t, r.Matches(Subject{Tags: []string{"A"}}))
	require.False(t, Rule{Field: "status", Op: OpEq, Value: "x"}.Matches(Subject{}))
	require.False(t, Rule{Field: FieldTitle, Op: "like", Value: "x"}.Matches(Subject{Title: "x"}))
	require.False(t, Rule{Field: FieldTitle, Op: OpEq, Value: 5.0}.Matches(Subject{Title: "5"}))
	require.False(t, Rule{Field: FieldTitle, Op: OpGte, Value: "x"}.Matches(Subject{Title: "x"}))
	require.False(t, Rule{Field: FieldSeverity, Op: OpGte, Value: "bogus"}.Matches(Subject{Severity: "High"}))
}

func TestApplies(t *testing.T) {
	t.Parallel()
	s := Subject{SourceName: "splunk", Severity: "Low"}
	matching := mustParse(t, `{"match_all":[{"field":"source_name","op":"eq","value":"splunk"}]}`)
	other := mustParse(t, `{"match_all":[{"field":"source_name","op":"eq","value":"elastic"}]}`)
	empty := mustParse(t, `{}`)

	require.True(t, Applies(true, nil, s), "global applies to everything")
	require.True(t, Applies(true, &other, s), "global ignores rules")
	require.False(t, Applies(false, nil, s), "non-global without rules applies to none")
	require.False(t, Applies(false, &empty, s), "non-global with an empty set applies to none")
	require.True(t, Applies(false, &matching, s))
	require.False(t, Applies(false, &other, s))
}

func FuzzParse(f *testing.F) {
	f.Add(`{"match_any":[{"field":"severity","op":"gte","value":"High"}],"match_all":[{"field":"tags","op":"in","value":["a"]}]}`)
	f.Add(`{"match_all":[{"field":"title","op":"contains","value":"x"},{}]}`)
	f.Add(`null`)
	f.Add(`[1,{"a":[]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		r, errs := Parse(json.RawMessage(in))
		if len(errs) > 0 {
			require.True(t, r.Empty())
			return
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		again, errs := Parse(b)
		require.Empty(t, errs, "a parsed rule set must parse again: %s", b)
		require.Equal(t, r, again)
		_ = r.Matches(Subject{SourceName: "s", Severity: "High", Title: in, Tags: []string{in}})
	})
}
