package sources

import (
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

// severityByName maps a source's severity word (severity.FromWord: the levels' names and the
// vendors' words such as crit, p1, sev2, moderate, case-insensitively). It reports false otherwise.
func severityByName(s string) (Severity, bool) { return severity.FromWord(s) }

// severityByRiskScore maps Elastic's 0-100 risk score (severity.RiskScore).
func severityByRiskScore(score float64) (Severity, bool) { return severity.RiskScore(score) }

// severityBySplunkNumber maps Splunk's numeric severity (severity.SplunkNumber).
func severityBySplunkNumber(s string) (Severity, bool) { return severity.SplunkNumber(s) }
