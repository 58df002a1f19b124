package sources

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Severity is an alert severity (seed §2.10 AlertSeverity).
type Severity string

// Alert severities.
const (
	SeverityPending       Severity = "Pending"
	SeverityInformational Severity = "Informational"
	SeverityLow           Severity = "Low"
	SeverityMedium        Severity = "Medium"
	SeverityHigh          Severity = "High"
	SeverityCritical      Severity = "Critical"
)

// ErrUnknownSeverity is returned by ParseSeverity for a value outside the enumeration.
var ErrUnknownSeverity = errors.New("unknown alert severity")

// Severities returns every severity, Pending first, then ascending.
func Severities() []Severity {
	return []Severity{SeverityPending, SeverityInformational, SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}
}

// Rank orders severities: Pending 0, Informational 1, Low 2, Medium 3, High 4, Critical 5; unknown -1.
func (s Severity) Rank() int {
	for i, v := range Severities() {
		if s == v {
			return i
		}
	}
	return -1
}

// Valid reports whether s is one of the enumerated severities.
func (s Severity) Valid() bool { return s.Rank() >= 0 }

// ParseSeverity returns the severity named s (exact match, as the API validates enums).
func ParseSeverity(s string) (Severity, error) {
	sev := Severity(s)
	if !sev.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownSeverity, s)
	}
	return sev, nil
}

// severityByName maps a source's severity word to a Severity, case-insensitively, accepting the
// common aliases "info" and "informational". It reports false for anything else.
func severityByName(s string) (Severity, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "informational", "info":
		return SeverityInformational, true
	case "low":
		return SeverityLow, true
	case "medium":
		return SeverityMedium, true
	case "high":
		return SeverityHigh, true
	case "critical":
		return SeverityCritical, true
	}
	return "", false
}

// severityByRiskScore maps Elastic's 0-100 risk score: 0-21 Low, 22-47 Medium, 48-73 High,
// 74-100 Critical.
func severityByRiskScore(score float64) (Severity, bool) {
	switch {
	case score < 0 || score > 100 || score != score: // NaN fails every comparison
		return "", false
	case score < 22:
		return SeverityLow, true
	case score < 48:
		return SeverityMedium, true
	case score < 74:
		return SeverityHigh, true
	default:
		return SeverityCritical, true
	}
}

// severityBySplunkNumber maps Splunk's 1-5 alert severity: 1 info, 2 low, 3 medium, 4 high,
// 5 critical.
func severityBySplunkNumber(s string) (Severity, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	switch n {
	case 1:
		return SeverityInformational, true
	case 2:
		return SeverityLow, true
	case 3:
		return SeverityMedium, true
	case 4:
		return SeverityHigh, true
	case 5:
		return SeverityCritical, true
	}
	return "", false
}
