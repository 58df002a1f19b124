package indicators

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

func TestMappingValidate(t *testing.T) {
	t.Parallel()
	errs := Mapping{FieldPath: "a..b", Type: "ipv4", Target: "payload"}.Validate()
	require.Len(t, errs, 3)
	require.Equal(t, []any{"field_path"}, errs[0].Loc)
	require.Equal(t, []any{"indicator_type"}, errs[1].Loc)
	require.Equal(t, []any{"extraction_target"}, errs[2].Loc)
	require.Empty(t, Mapping{FieldPath: "Entities.*.Address", Type: TypeIP, Target: TargetRawPayload}.Validate())
}

func TestExtract_ThreePasses(t *testing.T) {
	t.Parallel()
	normalized := map[string]any{
		FieldSrcIP:         "10.0.0.5",
		FieldDstIP:         []string{"203.0.113.9", "::ffff:10.0.0.5"}, // second is a repeat of pass 1 after unmapping
		FieldSrcHostname:   "WIN-01",                                   // bare host name: skipped, not an error
		FieldActorUsername: "alice",
		FieldHTTPURL:       "https://evil.example.com/dl",
	}
	raw := mustJSON(t, `{
		"Entities": [
			{"Type": "ip", "Address": "198.51.100.1"},
			{"Type": "ip", "Address": "10.0.0.5"},
			{"Type": "ip", "Address": "not-an-ip"},
			{"Type": "host", "HostName": "srv"}
		],
		"custom": {"port": 4444, "hashes": ["D41D8CD98F00B204E9800998ECF8427E", ["DA39A3EE5E6B4B0D3255BFEF95601890AFD80709"]]},
		"flag": true
	}`)
	mappings := append(systemMappings(t),
		Mapping{FieldPath: "Entities.*.Address", Type: TypeIP, Target: TargetRawPayload},
		Mapping{SourceName: "sentinel", FieldPath: "custom.hashes", Type: TypeMD5, Target: TargetRawPayload},
		Mapping{SourceName: "elastic", FieldPath: "custom.port", Type: TypeAccount, Target: TargetRawPayload},
		Mapping{FieldPath: "flag", Type: TypeAccount, Target: TargetRawPayload},
		Mapping{FieldPath: "missing.path", Type: TypeIP, Target: TargetRawPayload},
	)
	pass1 := []Indicator{{TypeIP, "10.0.0.5"}, {TypeDomain, "Evil.Example.com"}, {TypeIP, "10.0.0.5"}}

	res := Extract(normalized, raw, "sentinel", pass1, mappings)

	require.Equal(t, []Indicator{{TypeIP, "10.0.0.5"}, {TypeDomain, "evil.example.com"}}, res.Pass1)
	require.Equal(t, []Indicator{
		{TypeIP, "10.0.0.5"}, {TypeIP, "203.0.113.9"}, {TypeAccount, "alice"},
		{TypeURL, "https://evil.example.com/dl"},
	}, res.Pass2)
	require.Equal(t, []Indicator{
		{TypeIP, "198.51.100.1"}, {TypeIP, "10.0.0.5"}, {TypeMD5, "d41d8cd98f00b204e9800998ecf8427e"},
	}, res.Pass3)
	require.Equal(t, []Indicator{
		{TypeIP, "10.0.0.5"}, {TypeDomain, "evil.example.com"}, {TypeIP, "203.0.113.9"},
		{TypeAccount, "alice"}, {TypeURL, "https://evil.example.com/dl"}, {TypeIP, "198.51.100.1"},
		{TypeMD5, "d41d8cd98f00b204e9800998ecf8427e"},
	}, res.Indicators)
	require.Equal(t, []Indicator{
		{TypeIP, "10.0.0.5"}, {TypeDomain, "evil.example.com"}, {TypeIP, "203.0.113.9"},
		{TypeAccount, "alice"}, {TypeURL, "https://evil.example.com/dl"},
	}, res.FingerprintIndicators())

	require.Len(t, res.Skipped, 4)
	require.Equal(t, SkippedValue{Pass: 2, Path: "src_hostname", Type: TypeDomain, Value: "WIN-01",
		Reason: "invalid indicator value: domain needs at least two labels"}, res.Skipped[0])
	require.Equal(t, 3, res.Skipped[1].Pass)
	require.Equal(t, "not-an-ip", res.Skipped[1].Value)
	require.Equal(t, "custom.hashes", res.Skipped[2].Path) // the sha1 does not fit the md5 mapping
	require.Contains(t, res.Skipped[2].Reason, "32 hex")
	require.Equal(t, "flag", res.Skipped[3].Path)
	require.Equal(t, "value is not a string, number or array", res.Skipped[3].Reason)
	require.False(t, res.Truncated)
}

func TestExtract_NumbersAndSourceFilter(t *testing.T) {
	t.Parallel()
	raw := mustJSON(t, `{"user_id": 12345, "big": 1e21, "ip": ["10.0.0.1", null, 7]}`)
	ms := []Mapping{
		{SourceName: "splunk", FieldPath: "user_id", Type: TypeAccount, Target: TargetRawPayload},
		{SourceName: "splunk", FieldPath: "big", Type: TypeAccount, Target: TargetRawPayload},
		{SourceName: "splunk", FieldPath: "ip", Type: TypeIP, Target: TargetRawPayload},
	}
	res := Extract(nil, raw, "splunk", nil, ms)
	require.Equal(t, []Indicator{{TypeAccount, "12345"}, {TypeAccount, "1000000000000000000000"}, {TypeIP, "10.0.0.1"}}, res.Pass3)
	require.Len(t, res.Skipped, 1)
	require.Equal(t, "7", res.Skipped[0].Value)

	other := Extract(nil, raw, "elastic", nil, ms)
	require.Empty(t, other.Indicators)
	require.NotNil(t, other.Indicators, "empty lists serialize as [] for the test-extraction endpoint")
	require.Empty(t, other.Skipped)
}

func TestExtract_InvalidPass1AndMappingType(t *testing.T) {
	t.Parallel()
	res := Extract(map[string]any{"x": "1.1.1.1"}, nil, "generic",
		[]Indicator{{"ipv4", "1.1.1.1"}, {TypeIP, "999.1.1.1"}},
		[]Mapping{{FieldPath: "x", Type: "bogus", Target: TargetNormalized}})
	require.Empty(t, res.Indicators)
	require.Len(t, res.Skipped, 3)
	require.Contains(t, res.Skipped[0].Reason, "unknown indicator type")
	require.Equal(t, 1, res.Skipped[1].Pass)
	require.Equal(t, 2, res.Skipped[2].Pass)
	require.Equal(t, "mapping has an unknown indicator type", res.Skipped[2].Reason)
}

func TestExtract_Limits(t *testing.T) {
	t.Parallel()
	// A raw payload with many distinct values and a fan-out mapping stops at MaxExtracted.
	items := make([]any, 0, MaxExtracted+100)
	for i := 0; i < MaxExtracted+100; i++ {
		items = append(items, fmt.Sprintf("user%d", i))
	}
	bad := make([]any, 0, MaxSkipped+10)
	for i := 0; i < MaxSkipped+10; i++ {
		bad = append(bad, fmt.Sprintf("bad-%d", i))
	}
	raw := map[string]any{"bad": bad, "users": items}
	res := Extract(nil, raw, "generic", nil, []Mapping{
		{FieldPath: "bad", Type: TypeIP, Target: TargetRawPayload},
		{FieldPath: "users", Type: TypeAccount, Target: TargetRawPayload},
	})
	require.Len(t, res.Indicators, MaxExtracted)
	require.True(t, res.Truncated)
	require.Len(t, res.Skipped, MaxSkipped)
	require.Equal(t, 10, res.SkippedOmitted)

	// Deeply nested arrays are cut off, not recursed without bound.
	var deep any = "10.0.0.1"
	for i := 0; i < 20; i++ {
		deep = []any{deep}
	}
	res = Extract(nil, map[string]any{"d": deep}, "generic", nil,
		[]Mapping{{FieldPath: "d", Type: TypeIP, Target: TargetRawPayload}})
	require.Empty(t, res.Indicators)
	require.Len(t, res.Skipped, 1)
	require.Contains(t, res.Skipped[0].Reason, "nested too deeply")

	// Long skipped values are shortened on a rune boundary.
	res = Extract(nil, map[string]any{"v": strings.Repeat("é", 300)}, "generic", nil,
		[]Mapping{{FieldPath: "v", Type: TypeIP, Target: TargetRawPayload}})
	require.Len(t, res.Skipped, 1)
	require.LessOrEqual(t, len(res.Skipped[0].Value), 256+len("…"))
	require.True(t, strings.HasSuffix(res.Skipped[0].Value, "é…"))
}

func FuzzExtract(f *testing.F) {
	f.Add(`{"a":{"b":["10.0.0.1","x"]},"a.b":"evil.example.com"}`, "a.b")
	f.Add(`{"Entities":[{"Address":"1.2.3.4"},{"Address":5}]}`, "Entities.*.Address")
	f.Add(`[1,2,3]`, "*")
	f.Fuzz(func(t *testing.T, doc, path string) {
		var raw map[string]any
		if json.Unmarshal([]byte(doc), &raw) != nil {
			return
		}
		res := Extract(raw, raw, "generic", nil, []Mapping{
			{FieldPath: path, Type: TypeIP, Target: TargetNormalized},
			{FieldPath: path, Type: TypeDomain, Target: TargetRawPayload},
		})
		require.LessOrEqual(t, len(res.Indicators), MaxExtracted)
		require.Equal(t, len(Dedup(res.Indicators)), len(res.Indicators))
		for _, ind := range res.Indicators {
			norm, err := Normalize(ind.Type, ind.Value)
			require.NoError(t, err)
			require.Equal(t, ind.Value, norm)
		}
	})
}

// systemMappings reads the system mappings from their one data file (package builtins embeds it;
// importing builtins here would be an import cycle: builtins imports indicators).
func systemMappings(t testing.TB) []Mapping {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "domain", "builtins", "mappings.json"))
	require.NoError(t, err)
	ms, err := ParseMappings(data)
	require.NoError(t, err)
	// The pass-2 rows: these tests bring their own pass-3 mappings.
	var out []Mapping
	for _, m := range ms {
		if m.Target == TargetNormalized {
			out = append(out, m)
		}
	}
	return out
}

func TestParseMappings_Rejects(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"unknown field":  `[{"field_path": "src_ip", "indicator_type": "ip", "extraction_target": "normalized", "typo": 1}]`,
		"invalid type":   `[{"field_path": "src_ip", "indicator_type": "ipv4", "extraction_target": "normalized"}]`,
		"invalid path":   `[{"field_path": "a..b", "indicator_type": "ip", "extraction_target": "normalized"}]`,
		"wrong type":     `[{"field_path": 1, "indicator_type": "ip", "extraction_target": "normalized"}]`,
		"trailing data":  `[] []`,
		"not an array":   `{"field_path": "src_ip"}`,
		"empty document": ``,
	} {
		_, err := ParseMappings([]byte(in))
		require.Error(t, err, name)
	}
	ms, err := ParseMappings([]byte(`[{"source_name": "sentinel", "field_path": "Entities.*.Address", "indicator_type": "ip", "extraction_target": "raw_payload", "description": "d"}]`))
	require.NoError(t, err)
	require.Equal(t, []Mapping{{SourceName: "sentinel", FieldPath: "Entities.*.Address", Type: TypeIP, Target: TargetRawPayload, Description: "d"}}, ms)
}
