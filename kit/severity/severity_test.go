package severity

import (
	"errors"
	"math"
	"strings"
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

func TestFromWord(t *testing.T) {
	cases := map[string]Level{
		"critical": Critical, "CRIT": Critical, "P1": Critical, "sev1": Critical, "Sev 1": Critical, "SEV-1": Critical,
		"sev_1": Critical, "Emergency": Critical, "very high": Critical, " Critical ": Critical,
		"High": High, "p2": High, "SEV2": High, "major": High, "Error": High,
		"medium": Medium, "Med": Medium, "moderate": Medium, "P3": Medium, "warning": Medium,
		"low": Low, "p4": Low, "Sev4": Low, "minor": Low,
		"info": Informational, "Informational": Informational, "information": Informational, "p5": Informational, "notice": Informational,
	}
	for in, want := range cases {
		got, ok := FromWord(in)
		if !ok || got != want {
			t.Errorf("FromWord(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "pending", "Pending", "1", "5", "sev9", "p0", "purple", "crit\x00", "hígh", strings.Repeat("a", 10000)} {
		if got, ok := FromWord(in); ok {
			t.Errorf("FromWord(%q) = %q, want unknown", in, got)
		}
	}
}

func TestSplunkNumberAndRiskScore(t *testing.T) {
	for in, want := range map[string]Level{"1": Informational, "2": Low, " 3 ": Medium, "4": High, "5": Critical, "6": Critical} {
		if got, ok := SplunkNumber(in); !ok || got != want {
			t.Errorf("SplunkNumber(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"0", "7", "-1", "3.5", "high", "", "99999999999999999999"} {
		if got, ok := SplunkNumber(in); ok {
			t.Errorf("SplunkNumber(%q) = %q, want unknown", in, got)
		}
	}
	for score, want := range map[float64]Level{0: Low, 21.9: Low, 22: Medium, 47: Medium, 48: High, 73: High, 74: Critical, 100: Critical} {
		if got, ok := RiskScore(score); !ok || got != want {
			t.Errorf("RiskScore(%v) = %q, %v; want %q", score, got, ok, want)
		}
	}
	for _, score := range []float64{-0.1, 100.1, math.NaN(), math.Inf(1)} {
		if _, ok := RiskScore(score); ok {
			t.Errorf("RiskScore(%v) accepted", score)
		}
	}
}

func TestVendorScales(t *testing.T) {
	type c struct {
		f    func(float64) (Level, bool)
		in   float64
		want Level // "" = reports false
	}
	nan := math.NaN()
	for i, tc := range []c{
		{OCSFSeverityID, 0, ""}, {OCSFSeverityID, 1, Informational}, {OCSFSeverityID, 2, Low}, {OCSFSeverityID, 3, Medium},
		{OCSFSeverityID, 4, High}, {OCSFSeverityID, 5, Critical}, {OCSFSeverityID, 6, Critical}, {OCSFSeverityID, 99, ""},
		{OCSFSeverityID, 3.5, ""},
		{GuardDuty, 0, Low}, {GuardDuty, 3.9, Low}, {GuardDuty, 4, Medium}, {GuardDuty, 6.9, Medium}, {GuardDuty, 7, High},
		{GuardDuty, 8.9, High}, {GuardDuty, 9, Critical}, {GuardDuty, 10, Critical}, {GuardDuty, 10.1, ""}, {GuardDuty, -1, ""}, {GuardDuty, nan, ""},
		{TheHive, 1, Low}, {TheHive, 2, Medium}, {TheHive, 3, High}, {TheHive, 4, Critical}, {TheHive, 0, ""}, {TheHive, 5, ""},
		{CVSS, 0, Informational}, {CVSS, 0.1, Low}, {CVSS, 3.9, Low}, {CVSS, 4, Medium}, {CVSS, 7, High}, {CVSS, 9, Critical},
		{CVSS, 10, Critical}, {CVSS, 11, ""}, {CVSS, nan, ""},
		{Wazuh, 3, Low}, {Wazuh, 7, Medium}, {Wazuh, 12, High}, {Wazuh, 15, Critical}, {Wazuh, 16, ""}, {Wazuh, 7.5, ""},
		{Suricata, 1, High}, {Suricata, 2, Medium}, {Suricata, 3, Low}, {Suricata, 4, Informational}, {Suricata, 0, ""},
	} {
		got, ok := tc.f(tc.in)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("case %d (%v): got %q, %v; want %q", i, tc.in, got, ok, tc.want)
		}
	}
}
