// Package severity is the alert severity vocabulary (seed §2.10 AlertSeverity): the levels, their
// order and parsing. It imports nothing, so sources (which map a source's own severity words onto it),
// targeting (severity rules) and store can share it without depending on each other.
package severity

import (
	"errors"
	"fmt"
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
