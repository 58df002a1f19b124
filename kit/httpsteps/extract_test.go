package httpsteps_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func decoded(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(stringsReader(s))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func TestExtract(t *testing.T) {
	t.Parallel()
	final := decoded(t, `{"data":{"attributes":{"stats":{"malicious":5,"harmless":"60"},"rep":-1.5,"asn":"15169",
	  "flag":"yes","country":"US","ok":true,"tags":["a","b"],"whois":{"org":"G"},"results":[{"name":"x","score":1},{"name":"y","score":2}],
	  "nothing":null,"huge":123456789012345678901234567890,"k.with.dots":"flat"}}}`)
	steps := map[string]any{"token": decoded(t, `{"expires_in":3600}`)}
	exts := []httpsteps.Extraction{
		{SourcePath: "data.attributes.stats.malicious", TargetKey: "malicious", ValueType: "int"},
		{SourcePath: "data.attributes.stats.harmless", TargetKey: "harmless", ValueType: "int"},
		{SourcePath: "data.attributes.rep", TargetKey: "rep", ValueType: "float"},
		{SourcePath: "data.attributes.rep", TargetKey: "rep_int", ValueType: "int"},
		{SourcePath: "data.attributes.asn", TargetKey: "asn", ValueType: "float"},
		{SourcePath: "data.attributes.flag", TargetKey: "flag", ValueType: "bool"},
		{SourcePath: "data.attributes.ok", TargetKey: "ok", ValueType: "bool"},
		{SourcePath: "data.attributes.country", TargetKey: "country_bool", ValueType: "bool"},
		{SourcePath: "data.attributes.country", TargetKey: "country", ValueType: "string"},
		{SourcePath: "data.attributes.stats.malicious", TargetKey: "malicious_str", ValueType: "string"},
		{SourcePath: "data.attributes.tags", TargetKey: "tags", ValueType: "list"},
		{SourcePath: "data.attributes.country", TargetKey: "country_list", ValueType: "list"},
		{SourcePath: "data.attributes.whois", TargetKey: "whois", ValueType: "dict"},
		{SourcePath: "data.attributes.tags", TargetKey: "tags_dict", ValueType: "dict"},
		{SourcePath: "data.attributes.whois", TargetKey: "whois_str", ValueType: "string"},
		{SourcePath: "data.attributes.results.*.name", TargetKey: "names", ValueType: "list"},
		{SourcePath: "data.attributes.results.*.score", TargetKey: "first_score", ValueType: "int"},
		{SourcePath: "data.attributes.results.1.name", TargetKey: "second", ValueType: "any"},
		{SourcePath: "data.attributes.stats", TargetKey: "stats", ValueType: "any"},
		{SourcePath: "data.attributes.nothing", TargetKey: "nothing", ValueType: "string"},
		{SourcePath: "data.attributes.huge", TargetKey: "huge", ValueType: "int"},
		{SourcePath: "data.attributes.missing", TargetKey: "missing", ValueType: "any"},
		{SourcePath: "data.attributes.k.with.dots", TargetKey: "dots", ValueType: "string"},
		{SourcePath: "expires_in", TargetKey: "ttl", ValueType: "int", Step: "token"},
		{SourcePath: "x", TargetKey: "from_unknown_step", ValueType: "any", Step: "nope"},
		{SourcePath: "data", TargetKey: "bad_type", ValueType: "uuid"},
		{SourcePath: "", TargetKey: "empty_path", ValueType: "any"},
	}
	got := httpsteps.Extract(final, steps, exts)
	require.Equal(t, map[string]any{
		"malicious":     int64(5),
		"harmless":      int64(60),
		"rep":           -1.5,
		"asn":           15169.0,
		"flag":          true,
		"ok":            true,
		"country":       "US",
		"malicious_str": "5",
		"tags":          []any{"a", "b"},
		"country_list":  []any{"US"},
		"whois":         map[string]any{"org": "G"},
		"names":         []any{"x", "y"},
		"first_score":   int64(1),
		"second":        "y",
		"stats":         map[string]any{"malicious": int64(5), "harmless": "60"},
		"dots":          "flat",
		"ttl":           int64(3600),
	}, got)
	require.Empty(t, httpsteps.Extract(nil, nil, exts[:3]))
	require.Empty(t, httpsteps.Extract("plain text", nil, exts[:3]))
	require.Equal(t, map[string]any{"found": false}, httpsteps.NotFoundExtracted())
}

func TestValidateExtraction(t *testing.T) {
	t.Parallel()
	require.NoError(t, httpsteps.ValidateExtraction(httpsteps.Extraction{SourcePath: "a.b", TargetKey: "k", ValueType: "int"}))
	require.Error(t, httpsteps.ValidateExtraction(httpsteps.Extraction{SourcePath: "a..b", TargetKey: "k", ValueType: "int"}))
	require.Error(t, httpsteps.ValidateExtraction(httpsteps.Extraction{SourcePath: "a", TargetKey: " ", ValueType: "int"}))
	require.Error(t, httpsteps.ValidateExtraction(httpsteps.Extraction{SourcePath: "a", TargetKey: "k", ValueType: "number"}))
}
