package sources

import (
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/kit/severity"
)

// Severity is the alert severity vocabulary, owned by package severity; the names here let the source
// plugins keep reading as they did.
type Severity = severity.Level

// Alert severities (package severity's levels).
const (
	SeverityPending       = severity.Pending
	SeverityInformational = severity.Informational
	SeverityLow           = severity.Low
	SeverityMedium        = severity.Medium
	SeverityHigh          = severity.High
	SeverityCritical      = severity.Critical
)

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
