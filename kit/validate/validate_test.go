package validate

import (
	"math"
	"strings"
	"testing"
)

func TestFindNUL(t *testing.T) {
	cases := []struct {
		v     any
		loc   string
		found bool
	}{
		{"plain", "", false},
		{"a\x00", "", true},
		{map[string]any{"k": []any{1.0, "ok", map[string]any{"x": "y\x00"}}}, "k[2].x", true},
		{map[string]any{"k\x00": 1.0}, "k\x00", true},
		{[]any{nil, true, 2.0}, "", false},
		{nil, "", false},
	}
	for _, tc := range cases {
		loc, found := FindNUL(tc.v)
		if found != tc.found || LocString(loc) != tc.loc {
			t.Errorf("FindNUL(%#v) = %v %v, want %q %v", tc.v, loc, found, tc.loc, tc.found)
		}
	}
}

func TestTruncateAndJSONSize(t *testing.T) {
	if got := Truncate("short"); got != "short" {
		t.Errorf("Truncate(short) = %q", got)
	}
	if got := Truncate(strings.Repeat("x", 300)); got != strings.Repeat("x", 256)+"…" {
		t.Errorf("Truncate(300 x) has length %d", len(got))
	}
	if n := JSONSize(map[string]any{"a": "b"}); n != len(`{"a":"b"}`) {
		t.Errorf("JSONSize = %d", n)
	}
	if n := JSONSize(map[string]any{"f": func() {}}); n != math.MaxInt {
		t.Errorf("JSONSize(unencodable) = %d, want MaxInt", n)
	}
	if n := JSONSize(math.NaN()); n != math.MaxInt {
		t.Errorf("JSONSize(NaN) = %d, want MaxInt", n)
	}
}

func TestAmong(t *testing.T) {
	got := Among([]string{"b", "x", "a", "b"}, []string{"a", "b"})
	if strings.Join(got, ",") != "b,a,b" {
		t.Fatalf("Among = %v, want the fields in set, in their order", got)
	}
	if got := Among([]string{"x"}, []string{"a"}); got != nil {
		t.Fatalf("Among = %v, want nil", got)
	}
}
