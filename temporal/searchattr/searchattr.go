// Package searchattr owns the search-attribute keys Vigil sets on its Temporal workflows (all
// Keyword). They live beside the Temporal wiring, not in kit/ids, because a key is a Temporal SDK
// type: the packages that set or register them (workflows, temporal) import this one, and nothing in
// domain/, store or kit/ links the Temporal SDK for them (docs/DEVELOPING.md "Dependency direction").
//
// Never put indicator values, raw payloads or secrets into a search attribute: Temporal stores them
// unencrypted.
package searchattr

import sdktemporal "go.temporal.io/sdk/temporal"

// The search attributes Vigil sets on its workflows.
var (
	AlertUUID     = sdktemporal.NewSearchAttributeKeyKeyword("VigilAlertUUID")
	Source        = sdktemporal.NewSearchAttributeKeyKeyword("VigilSource")
	Severity      = sdktemporal.NewSearchAttributeKeyKeyword("VigilSeverity")
	WorkflowName  = sdktemporal.NewSearchAttributeKeyKeyword("VigilWorkflowName")
	TriggerSource = sdktemporal.NewSearchAttributeKeyKeyword("VigilTriggerSource")
	RunStatus     = sdktemporal.NewSearchAttributeKeyKeyword("VigilRunStatus")
)

// Keys lists every search-attribute key, in the order they are registered.
func Keys() []sdktemporal.SearchAttributeKeyKeyword {
	return []sdktemporal.SearchAttributeKeyKeyword{
		AlertUUID, Source, Severity, WorkflowName, TriggerSource, RunStatus,
	}
}
