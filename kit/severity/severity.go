// Package severity is the alert severity vocabulary (seed §2.10 AlertSeverity): the levels, their
// order and parsing. It imports nothing, so sources (which map a source's own severity words onto it),
// targeting (severity rules) and store can share it without depending on each other.
package severity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Level is an alert severity.
type Level string

// Alert severities.
const (
	Pending       Level = "Pending"
	Informational Level = "Informational"
	Low           Level = "Low"
	Medium        Level = "Medium"
	High          Level = "High"
	Critical      Level = "Critical"
)

// ErrUnknown is returned by Parse for a value outside the enumeration.
var ErrUnknown = errors.New("unknown alert severity")

// Levels returns every severity, Pending first, then ascending.
func Levels() []Level {
	return []Level{Pending, Informational, Low, Medium, High, Critical}
}

// Names returns every severity as a string, in the order of Levels.
func Names() []string {
	levels := Levels()
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = string(l)
	}
	return out
}

// Rank orders severities: Pending 0, Informational 1, Low 2, Medium 3, High 4, Critical 5; unknown -1.
func (l Level) Rank() int {
	for i, v := range Levels() {
		if l == v {
			return i
		}
	}
	return -1
}

// Valid reports whether l is one of the enumerated severities.
func (l Level) Valid() bool { return l.Rank() >= 0 }

// Parse returns the severity named s (exact match, as the API validates enums).
func Parse(s string) (Level, error) {
	l := Level(s)
	if !l.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknown, s)
	}
	return l, nil
}

// FromWord maps a vendor's severity word onto a Level, case-insensitively and ignoring surrounding
// space, "-", "_" and inner spaces ("Sev 1", "sev-1", "SEV_1" read as "sev1"). It knows the
// levels' own names and the words SIEMs, EDRs, ticketing and paging tools use:
//
//	Critical       critical, crit, p1, sev1, s1, emergency, emerg, fatal, urgent, very high, veryhigh
//	High           high, p2, sev2, s2, major, severe, important, error, err
//	Medium         medium, med, moderate, p3, sev3, s3, warning, warn, elevated
//	Low            low, p4, sev4, s4, minor
//	Informational  informational, information, info, p5, sev5, s5, notice, notification, debug, none
//
// Bare numbers are not words: what "1" means depends on the vendor (Splunk 1 is informational, a
// pager's 1 critical), so the source plugins read numbers (SplunkNumber, RiskScore). It reports
// false for anything else, Pending included (a source saying "pending" has not decided).
func FromWord(s string) (Level, bool) {
	w := strings.ToLower(strings.TrimSpace(s))
	w = strings.NewReplacer(" ", "", "-", "", "_", "").Replace(w)
	switch w {
	case "critical", "crit", "p1", "sev1", "s1", "emergency", "emerg", "fatal", "urgent", "veryhigh":
		return Critical, true
	case "high", "p2", "sev2", "s2", "major", "severe", "important", "error", "err":
		return High, true
	case "medium", "med", "moderate", "p3", "sev3", "s3", "warning", "warn", "elevated":
		return Medium, true
	case "low", "p4", "sev4", "s4", "minor":
		return Low, true
	case "informational", "information", "info", "p5", "sev5", "s5", "notice", "notification", "debug", "none":
		return Informational, true
	}
	return "", false
}

// Scale is a vendor's numeric severity: the values it takes (Lo..Hi, whole numbers only when Whole)
// and the lowest value of each band, checked in order (From[i].Min descending). One table of them
// (Scales) is every vendor number Vigil reads; docs/SOURCES.md prints it.
type Scale struct {
	Name   string
	Lo, Hi float64
	Whole  bool
	From   []Band
}

// Band is the level of the values from Min up to the previous band's Min.
type Band struct {
	Min   float64
	Level Level
}

// Level maps v onto the scale; outside Lo..Hi, a fraction on a whole scale, or NaN report false.
func (s Scale) Level(v float64) (Level, bool) {
	if v != v || v < s.Lo || v > s.Hi || s.Whole && v != float64(int64(v)) { // NaN fails every comparison
		return "", false
	}
	for _, b := range s.From {
		if v >= b.Min {
			return b.Level, true
		}
	}
	return "", false
}

// The vendor scales.
var (
	// Splunk's alert.severity 1-6: 1 Informational, 2 Low, 3 Medium, 4 High, 5 Critical, 6 (Splunk's
	// "fatal") Critical.
	splunkScale = Scale{Name: "Splunk alert severity", Lo: 1, Hi: 6, Whole: true,
		From: []Band{{5, Critical}, {4, High}, {3, Medium}, {2, Low}, {1, Informational}}}
	// Elastic's rule risk_score 0-100 (and the same scale elsewhere), Elastic's own bands.
	riskScale = Scale{Name: "risk score (Elastic)", Lo: 0, Hi: 100,
		From: []Band{{74, Critical}, {48, High}, {22, Medium}, {0, Low}}}
	// OCSF severity_id: 1-5 the levels, 6 Fatal Critical; 0 Unknown and 99 Other are no level.
	ocsfScale = Scale{Name: "OCSF severity_id", Lo: 1, Hi: 6, Whole: true,
		From: []Band{{5, Critical}, {4, High}, {3, Medium}, {2, Low}, {1, Informational}}}
	// Amazon GuardDuty 0.0-10.0.
	guardDutyScale = Scale{Name: "GuardDuty", Lo: 0, Hi: 10,
		From: []Band{{9, Critical}, {7, High}, {4, Medium}, {0, Low}}}
	// TheHive's alert and case severity 1-4.
	theHiveScale = Scale{Name: "TheHive", Lo: 1, Hi: 4, Whole: true,
		From: []Band{{4, Critical}, {3, High}, {2, Medium}, {1, Low}}}
	// CVSS v3's bands over a 0-10 score: 0 "None".
	cvssScale = Scale{Name: "CVSS-like 0-10", Lo: 0, Hi: 10,
		From: []Band{{9, Critical}, {7, High}, {4, Medium}, {0.1, Low}, {0, Informational}}}
	// Wazuh rule levels 0-15, the Wazuh dashboard's bands.
	wazuhScale = Scale{Name: "Wazuh rule level", Lo: 0, Hi: 15, Whole: true,
		From: []Band{{15, Critical}, {12, High}, {7, Medium}, {0, Low}}}
	// Suricata EVE alert severity (the classification priority): 1 is the most severe.
	suricataScale = Scale{Name: "Suricata priority", Lo: 1, Hi: 4, Whole: true,
		From: []Band{{4, Informational}, {3, Low}, {2, Medium}, {1, High}}}
)

// Scales is the one table of vendor numbers, in the order docs/SOURCES.md lists them.
func Scales() []Scale {
	return []Scale{splunkScale, riskScale, ocsfScale, guardDutyScale, theHiveScale, cvssScale, wazuhScale, suricataScale}
}

// SplunkNumber maps Splunk's numeric alert severity (text): 1 Informational, 2 Low, 3 Medium, 4 High,
// 5 and 6 Critical. Other text and numbers report false.
func SplunkNumber(s string) (Level, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	return splunkScale.Level(float64(n))
}

// RiskScore maps a 0-100 risk score: 0-21 Low, 22-47 Medium, 48-73 High, 74-100 Critical.
func RiskScore(score float64) (Level, bool) { return riskScale.Level(score) }

// OCSFSeverityID maps OCSF's severity_id: 1 Informational … 5 Critical, 6 Fatal → Critical; 0
// (Unknown), 99 (Other) and every other value report false (Pending with severity_unmapped).
func OCSFSeverityID(id float64) (Level, bool) { return ocsfScale.Level(id) }

// GuardDuty maps an Amazon GuardDuty finding's severity, 0.0-10.0: ≥ 9 Critical, ≥ 7 High, ≥ 4
// Medium, else Low.
func GuardDuty(score float64) (Level, bool) { return guardDutyScale.Level(score) }

// TheHive maps TheHive's severity: 1 Low, 2 Medium, 3 High, 4 Critical.
func TheHive(n float64) (Level, bool) { return theHiveScale.Level(n) }

// CVSS maps a CVSS-like 0-10 score with CVSS v3's bands: 0 Informational ("None"), 0.1-3.9 Low,
// 4.0-6.9 Medium, 7.0-8.9 High, 9.0-10.0 Critical.
func CVSS(score float64) (Level, bool) { return cvssScale.Level(score) }

// Wazuh maps a Wazuh rule level, 0-15: 0-6 Low, 7-11 Medium, 12-14 High, 15 Critical.
func Wazuh(level float64) (Level, bool) { return wazuhScale.Level(level) }

// Suricata maps a Suricata EVE alert's severity: 1 High, 2 Medium, 3 Low, 4 Informational.
func Suricata(n float64) (Level, bool) { return suricataScale.Level(n) }
