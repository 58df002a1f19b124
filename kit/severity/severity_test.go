package severity

import (
	"errors"
	"testing"
)

func TestLevels(t *testing.T) {
	want := []string{"Pending", "Informational", "Low", "Medium", "High", "Critical"}
	names := Names()
	if len(names) != len(want) {
		t.Fatalf("Names() = %v, want %v", names, want)
	}
	for i, w := range want {
		if names[i] != w {
			t.Fatalf("Names()[%d] = %q, want %q", i, names[i], w)
		}
		if got := Level(w).Rank(); got != i {
			t.Errorf("Rank(%q) = %d, want %d", w, got, i)
		}
		l, err := Parse(w)
		if err != nil || l != Level(w) {
			t.Errorf("Parse(%q) = %q, %v", w, l, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{"", "high", "CRITICAL", " Low", "Low ", "Severe", "Pending\x00"} {
		if _, err := Parse(s); !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) error = %v, want ErrUnknown", s, err)
		}
		if Level(s).Valid() || Level(s).Rank() != -1 {
			t.Errorf("Level(%q) is valid", s)
		}
	}
}
