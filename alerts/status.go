package alerts

import (
	"slices"

	"github.com/vigil-soc/vigil/store"
)

// Statuses returns every alert status in the order the API documents them.
func Statuses() []string {
	return []string{store.StatusOpen, store.StatusTriaging, store.StatusEscalated, store.StatusClosed}
}

// CloseClassifications returns every close_classification value (seed §2.10).
func CloseClassifications() []string {
	return []string{
		"True Positive - Suspicious Activity",
		"Benign Positive - Suspicious but Expected",
		"False Positive - Incorrect Detection Logic",
		"False Positive - Inaccurate Data",
		"Undetermined",
		"Duplicate",
		"Not Applicable",
	}
}

// Transitions returns the statuses an alert in status from may move to (API.md §3):
// Open→Triaging|Escalated|Closed, Triaging→Escalated|Closed, Escalated→Triaging|Closed, Closed→Open.
// An unknown status has none.
func Transitions(from string) []string {
	switch from {
	case store.StatusOpen:
		return []string{store.StatusTriaging, store.StatusEscalated, store.StatusClosed}
	case store.StatusTriaging:
		return []string{store.StatusEscalated, store.StatusClosed}
	case store.StatusEscalated:
		return []string{store.StatusTriaging, store.StatusClosed}
	case store.StatusClosed:
		return []string{store.StatusOpen}
	}
	return nil
}

// CanTransition reports whether an alert may move from one status to another. Staying put is not a
// transition and is always allowed.
func CanTransition(from, to string) bool {
	return from == to || slices.Contains(Transitions(from), to)
}
