package agents

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// An agent receives only what the key that registered it could read (issue 27): the key's scopes are
// recorded on the agent (store.Agent.RegisteredScopes) when it is registered and when its endpoint
// moves to another origin (the key deciding where deliveries go), and checked when an alert is
// dispatched or triggered to it, when an event's deliveries are planned and when each is made.
// Registration itself is refused for a subscription those scopes cannot read (CheckSubscriptions).

// CannotReceiveError: the agent's registering key lacks Scope, so the agent is not handed what needs
// it (403 FORBIDDEN).
type CannotReceiveError struct {
	Agent string
	Scope string
	Event string // the subscription refused at registration ("" when an alert is handed over)
}

func (e *CannotReceiveError) Error() string {
	if e.Event != "" {
		return fmt.Sprintf("agent %s would subscribe to %s, which needs %s, with a key without it", e.Agent, e.Event, e.Scope)
	}
	return fmt.Sprintf("agent %s was registered by a key without %s: it does not receive what needs it", e.Agent, e.Scope)
}

// CheckSubscriptions refuses (CannotReceiveError naming the event) an agent subscribed to an event
// whose subject its registering key cannot read, by the rule deliveries are checked with
// (MissingScope): such a subscription would only be refused at every delivery.
func CheckSubscriptions(a store.Agent) error {
	for _, e := range a.Events {
		if need := MissingScope(a, e, false); need != "" {
			return &CannotReceiveError{Agent: a.Name, Scope: need, Event: e}
		}
	}
	return nil
}

// may reports whether agent a may receive what needs scope: its registering key held it (or admin).
// An agent registered without a key (RegisteredScopes nil) is unrestricted.
func may(a store.Agent, scope string) bool {
	if a.RegisteredScopes == nil {
		return true
	}
	return auth.Principal{Scopes: a.RegisteredScopes}.Has(scope)
}

// eventScope is the scope reading an event's subject needs: the alert's for alert events, the run's
// for run events, the approval's for approval events ("" for agent.test).
func eventScope(event string) string {
	switch event {
	case EventAlertEnriched, EventAlertUpdated, EventFindingAdded, EventCommentAdded,
		EventCaseCreated, EventCaseUpdated, EventCaseAlertAdded: // cases are read with alerts:read (API.md §14)
		return auth.ScopeAlertsRead
	case EventRunCompleted:
		return auth.ScopeWorkflowsRead
	case EventApprovalRequested, EventApprovalDecided:
		return auth.ScopeApprovalsWrite
	}
	return ""
}

// MissingScope is the scope agent a lacks to receive event ("" when it may receive it); alertBound
// says the event is about an alert (whose data then holds the alert, which needs alerts:read).
// Delivery is refused rather than emptied: an agent whose filters match alerts it cannot read would
// otherwise learn of them by what arrives.
func MissingScope(a store.Agent, event string, alertBound bool) string {
	if need := eventScope(event); need != "" && !may(a, need) {
		return need
	}
	if alertBound && !may(a, auth.ScopeAlertsRead) {
		return auth.ScopeAlertsRead
	}
	return ""
}

// Receives reports whether agent a may receive event (MissingScope is "").
func Receives(a store.Agent, event string, alertBound bool) bool {
	return MissingScope(a, event, alertBound) == ""
}

// dataScopes are the parts of an event's data beyond its subject and the scope each needs.
var dataScopes = map[string]string{
	"workflows":    auth.ScopeWorkflowsRead,
	"workflow_run": auth.ScopeWorkflowsRead,
	"approval":     auth.ScopeApprovalsWrite,
	"decision":     auth.ScopeApprovalsWrite,
}

// VisibleData is the event data agent a receives: the parts its registering key could not read
// removed (the applicable workflows without workflows:read, …). Data that is not a JSON object is
// returned as it is.
func VisibleData(a store.Agent, data json.RawMessage) (json.RawMessage, error) {
	if a.RegisteredScopes == nil || len(data) == 0 {
		return data, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data, nil // not an object: nothing to remove
	}
	removed := false
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if need, ok := dataScopes[k]; ok && !may(a, need) {
			delete(m, k)
			removed = true
		}
	}
	if !removed {
		return data, nil
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode visible data: %w", err)
	}
	return out, nil
}
