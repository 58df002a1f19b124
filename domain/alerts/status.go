package alerts

import (
	"slices"
	"strings"

	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

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

// TransitionSummary is the transition graph as text, from Transitions itself, for the descriptions
// the doors show (REST's PATCH /v1/alerts/{uuid}, MCP's update_alert_status):
// "Open→Triaging|Escalated|Closed, Triaging→Escalated|Closed, Escalated→Triaging|Closed, Closed→Open".
func TransitionSummary() string {
	var moves []string
	for _, from := range store.AlertStatuses() {
		if to := Transitions(from); len(to) > 0 {
			moves = append(moves, from+"→"+strings.Join(to, "|"))
		}
	}
	return strings.Join(moves, ", ")
}

// CheckMove is the status-move rule alerts and cases share (API.md §3, §14), each with its own graph:
// a move from → to must be one transitions(from) allows (staying put always is), and a
// close_classification is accepted only when the subject is or becomes closed. noun names the
// subject in the messages ("alert", "case"), article its indefinite article ("an", "a").
func CheckMove(article, noun string, transitions func(string) []string, closed, from, to string, classification *string) error {
	var errs validate.Errors
	if from != to && !slices.Contains(transitions(from), to) {
		errs.AddCtx([]any{"status"}, "invalid_transition", "Cannot move "+article+" "+noun+" from "+from+" to "+to+".", to,
			map[string]any{"from": from, "to": to, "allowed": transitions(from)})
		return errs
	}
	if classification != nil && to != closed {
		errs.AddCtx([]any{"close_classification"}, validate.TypeValue,
			"close_classification is accepted only when the "+noun+" is or becomes Closed.", *classification,
			map[string]any{"status": to})
		return errs
	}
	return nil
}
