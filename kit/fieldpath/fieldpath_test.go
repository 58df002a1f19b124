package fieldpath

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func doc(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func TestGet(t *testing.T) {
	t.Parallel()
	nested := `{
		"properties": {"title": "T", "labels": [{"labelName": "a"}, {"labelName": "b"}, {"other": 1}]},
		"Entities": [{"Address": "1.1.1.1"}, {"Name": "x"}, {"Address": "2.2.2.2"}, "str", null],
		"threat": {"indicator": [{"ip": "3.3.3.3"}, {"ip": "4.4.4.4"}]},
		"obj": {"b": 2, "a": 1, "c": {"d": 3}},
		"zero": 0, "nul": null, "empty": "", "arr": [[1, 2], [3]]
	}`
	flat := `{
		"kibana.alert.rule.name": "R",
		"kibana.alert.rule": {"uuid": "U"},
		"host.ip": ["10.0.0.1", "10.0.0.2"],
		"host": {"name": "h"},
		"source": {"ip": "10.9.9.9"}
	}`
	tests := []struct {
		name string
		doc  string
		path string
		want []any
	}{
		{"nested key", nested, "properties.title", []any{"T"}},
		{"object", nested, "obj.c", []any{map[string]any{"d": 3.0}}},
		{"fan-out array", nested, "properties.labels.*.labelName", []any{"a", "b"}},
		{"fan-out skips misses and non-objects", nested, "Entities.*.Address", []any{"1.1.1.1", "2.2.2.2"}},
		{"index", nested, "threat.indicator.1.ip", []any{"4.4.4.4"}},
		{"index 0", nested, "threat.indicator.0.ip", []any{"3.3.3.3"}},
		{"index out of range", nested, "threat.indicator.2.ip", nil},
		{"negative index", nested, "threat.indicator.-1.ip", nil},
		{"signed index", nested, "threat.indicator.+1.ip", nil},
		{"spaced index", nested, "threat.indicator. 1.ip", nil},
		{"huge index", nested, "threat.indicator.99999999999999999999999.ip", nil},
		{"index on object", nested, "properties.0", nil},
		{"key on array", nested, "Entities.Address", nil},
		{"fan-out over object values in key order", nested, "obj.*", []any{1.0, 2.0, map[string]any{"d": 3.0}}},
		{"double fan-out", nested, "arr.*.*", []any{1.0, 2.0, 3.0}},
		{"whole array", nested, "arr", []any{[]any{[]any{1.0, 2.0}, []any{3.0}}}},
		{"zero value", nested, "zero", []any{0.0}},
		{"null value", nested, "nul", []any{nil}},
		{"empty string", nested, "empty", []any{""}},
		{"missing", nested, "properties.nope", nil},
		{"through scalar", nested, "properties.title.x", nil},
		{"empty path", nested, "", nil},
		{"empty segment", nested, "properties..title", nil},
		{"flat dotted key", flat, "kibana.alert.rule.name", []any{"R"}},
		{"partly flat", flat, "kibana.alert.rule.uuid", []any{"U"}},
		{"flat array", flat, "host.ip", []any{[]any{"10.0.0.1", "10.0.0.2"}}},
		{"flat array fan-out", flat, "host.ip.*", []any{"10.0.0.1", "10.0.0.2"}},
		{"flat array index", flat, "host.ip.1", []any{"10.0.0.2"}},
		{"nested beside flat", flat, "host.name", []any{"h"}},
		{"nested only, map has dotted keys", flat, "source.ip", []any{"10.9.9.9"}},
		{"root array", `[{"a":1},{"a":2}]`, "*.a", []any{1.0, 2.0}},
		{"root scalar", `"x"`, "a", nil},
		{"star key on map with dots", `{"a.b": 1, "c": 2}`, "*", []any{1.0, 2.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Get(doc(t, tc.doc), tc.path))
		})
	}
}

func TestGet_NilAndTypedRoots(t *testing.T) {
	t.Parallel()
	require.Nil(t, Get(nil, "a"))
	var m map[string]any
	require.Nil(t, Get(m, "a"))
	require.Nil(t, Get(map[string]string{"a": "b"}, "a"), "only decoded-JSON shapes are walked")
	require.Equal(t, []any{"b"}, Get(map[string]any{"a": "b"}, "a"))
}

func TestGet_MaxDepth(t *testing.T) {
	t.Parallel()
	var root any = "leaf"
	for i := 0; i < MaxDepth+1; i++ {
		root = map[string]any{"a": root}
	}
	path := strings.TrimSuffix(strings.Repeat("a.", MaxDepth), ".")
	require.Len(t, Get(root, path), 1)
	require.Nil(t, Get(root, path+".a"), "more than MaxDepth segments yields nothing")
}

func TestGet_LongPathOnDottedKeysIsBounded(t *testing.T) {
	t.Parallel()
	// A hostile path with very many segments against an object with dotted keys must not cost
	// quadratic work per level.
	root := map[string]any{"a.b": 1, "a": map[string]any{"a": 2}}
	path := strings.Repeat("a.", 200000) + "a"
	require.Nil(t, Get(root, path))
}

func TestFirst(t *testing.T) {
	t.Parallel()
	d := doc(t, `{"a":[{"b":1},{"b":2}],"n":null}`)
	v, ok := First(d, "a.*.b")
	require.True(t, ok)
	require.Equal(t, 1.0, v)
	_, ok = First(d, "a.*.c")
	require.False(t, ok)
	v, ok = First(d, "n")
	require.True(t, ok, "a present null is found")
	require.Nil(t, v)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "a.b", "Entities.*.Address", "threat.indicator.0.ip", "@timestamp", "kibana.alert.rule.name"} {
		require.NoError(t, Validate(ok), ok)
	}
	for _, bad := range []string{"", "  ", ".", "a.", ".a", "a..b", strings.Repeat("a.", MaxDepth) + "a"} {
		require.Error(t, Validate(bad), bad)
	}
	require.NoError(t, Validate(strings.TrimSuffix(strings.Repeat("a.", MaxDepth), ".")))
}

func FuzzGet(f *testing.F) {
	f.Add(`{"a":{"b":[1,{"c":2}]},"a.b":3}`, "a.b.1.c")
	f.Add(`[[[]]]`, "*.*.*")
	f.Add(`{"x.y.z":{"*":1}}`, "x.y.z.*")
	f.Add(`{"":{"":1}}`, ".")
	f.Fuzz(func(t *testing.T, js, path string) {
		var root any
		if json.Unmarshal([]byte(js), &root) != nil {
			return
		}
		vals := Get(root, path)
		if !strings.Contains(path, "*") {
			require.LessOrEqual(t, len(vals), 1, "a path without * yields at most one value")
		}
		v, ok := First(root, path)
		require.Equal(t, len(vals) > 0, ok)
		if ok {
			require.Equal(t, vals[0], v)
		}
		if Validate(path) != nil && path != "" && !strings.Contains(path, "..") &&
			!strings.HasPrefix(path, ".") && !strings.HasSuffix(path, ".") && strings.TrimSpace(path) != "" {
			require.Nil(t, vals, "paths Validate rejects for depth yield nothing")
		}
	})
}
