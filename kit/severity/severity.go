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

// SplunkNumber maps Splunk's numeric alert severity: 1 Informational, 2 Low, 3 Medium, 4 High,
// 5 Critical, and 6 (Splunk's "fatal", the top of alert.severity's 1-6 scale) Critical. Other text
// and numbers report false.
func SplunkNumber(s string) (Level, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	switch n {
	case 1:
		return Informational, true
	case 2:
		return Low, true
	case 3:
		return Medium, true
	case 4:
		return High, true
	case 5, 6:
		return Critical, true
	}
	return "", false
}

// RiskScore maps a 0-100 risk score (Elastic's rule risk_score, and the same scale elsewhere):
// 0-21 Low, 22-47 Medium, 48-73 High, 74-100 Critical (Elastic's own bands). Outside 0..100 or NaN
// reports false.
func RiskScore(score float64) (Level, bool) {
	switch {
	case score < 0 || score > 100 || score != score: // NaN fails every comparison
		return "", false
	case score < 22:
		return Low, true
	case score < 48:
		return Medium, true
	case score < 74:
		return High, true
	default:
		return Critical, true
	}
}

// OCSFSeverityID maps OCSF's severity_id: 1 Informational, 2 Low, 3 Medium, 4 High, 5 Critical,
// 6 Fatal → Critical. 0 (Unknown) and 99 (Other) say nothing about the level and report false, as
// does every other value (the alert is then Pending with severity_unmapped).
func OCSFSeverityID(id float64) (Level, bool) {
	switch id {
	case 1:
		return Informational, true
	case 2:
		return Low, true
	case 3:
		return Medium, true
	case 4:
		return High, true
	case 5, 6:
		return Critical, true
	}
	return "", false
}

// GuardDuty maps an Amazon GuardDuty finding's severity, 0.0-10.0: ≥ 9 Critical, ≥ 7 High, ≥ 4 Medium,
// else Low. Outside 0..10 or NaN reports false.
func GuardDuty(score float64) (Level, bool) {
	switch {
	case score < 0 || score > 10 || score != score:
		return "", false
	case score >= 9:
		return Critical, true
	case score >= 7:
		return High, true
	case score >= 4:
		return Medium, true
	default:
		return Low, true
	}
}

// TheHive maps TheHive's alert and case severity: 1 Low, 2 Medium, 3 High, 4 Critical. Other values
// report false.
func TheHive(n float64) (Level, bool) {
	switch n {
	case 1:
		return Low, true
	case 2:
		return Medium, true
	case 3:
		return High, true
	case 4:
		return Critical, true
	}
	return "", false
}

// CVSS maps a CVSS-like 0-10 score with CVSS v3's bands: 0 Informational ("None"), 0.1-3.9 Low,
// 4.0-6.9 Medium, 7.0-8.9 High, 9.0-10.0 Critical. Outside 0..10 or NaN reports false.
func CVSS(score float64) (Level, bool) {
	switch {
	case score < 0 || score > 10 || score != score:
		return "", false
	case score == 0:
		return Informational, true
	case score < 4:
		return Low, true
	case score < 7:
		return Medium, true
	case score < 9:
		return High, true
	default:
		return Critical, true
	}
}

// Wazuh maps a Wazuh rule level, 0-15, with the Wazuh dashboard's bands: 0-6 Low, 7-11 Medium,
// 12-14 High, 15 Critical. Other values report false.
func Wazuh(level float64) (Level, bool) {
	switch {
	case level < 0 || level > 15 || level != level || level != float64(int(level)):
		return "", false
	case level >= 15:
		return Critical, true
	case level >= 12:
		return High, true
	case level >= 7:
		return Medium, true
	default:
		return Low, true
	}
}

// Suricata maps a Suricata EVE alert's severity (its classification priority): 1 High, 2 Medium,
// 3 Low, 4 Informational. Other values report false.
func Suricata(n float64) (Level, bool) {
	switch n {
	case 1:
		return High, true
	case 2:
		return Medium, true
	case 3:
		return Low, true
	case 4:
		return Informational, true
	}
	return "", false
}
