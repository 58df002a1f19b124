// Package ids owns the names operators find Vigil's Temporal workflows by: workflow ids, which carry
// the business key (docs/DEVELOPING.md). They are plain strings: the package imports no project
// package and no Temporal package, so the API (which answers workflow ids in 202 bodies), the store,
// the workflows and the Temporal wiring all read the same names from one place without linking the
// Temporal SDK. The search-attribute keys set on those workflows are Temporal SDK values and live in
// temporal/searchattr.
//
// Never put indicator values, raw payloads or secrets into an id: Temporal stores them unencrypted.
package ids

import (
	"strconv"

	"github.com/google/uuid"
)

// Alert is alert-<alert uuid>, the id of an alert's pipeline.
func Alert(alert uuid.UUID) string { return "alert-" + alert.String() }

// WorkflowRun is workflow-run-<run uuid>, the Temporal workflow of one run of a user's workflow.
func WorkflowRun(run uuid.UUID) string { return "workflow-run-" + run.String() }

// ProviderCall is enrich-<provider>-<indicator uuid>.
func ProviderCall(provider string, indicator uuid.UUID) string {
	return "enrich-" + provider + "-" + indicator.String()
}

// AdHocProviderCall is enrich-<provider>-adhoc-<fresh uuid>, for values that are not stored (the
// value itself never appears in ids).
func AdHocProviderCall(provider string) string {
	return "enrich-" + provider + "-adhoc-" + uuid.NewString()
}

// CircuitProbe is circuit-probe-<provider>-<retry_at in Unix ms>: the half-open probe of an open
// provider circuit, one per cool-down (workers racing to start it share the id).
func CircuitProbe(provider string, retryAtUnixMilli int64) string {
	return "circuit-probe-" + provider + "-" + strconv.FormatInt(retryAtUnixMilli, 10)
}

// EnrichIndicator is enrich-indicator-<indicator uuid> (every provider for one indicator).
func EnrichIndicator(indicator uuid.UUID) string { return "enrich-indicator-" + indicator.String() }

// AgentEvent is event-<event uuid>: the DeliverEvent workflow handing one event to every agent that
// receives it (one activity per delivery).
func AgentEvent(event uuid.UUID) string { return "event-" + event.String() }

// AgentEventBatch is events-<a uuid derived from every event of the batch, in order>: the
// DeliverEvents workflow handing the agent events of one outbox claim to their agents (one activity
// per agent). The same batch started twice gets one id (the second start is a no-op); a batch
// regrouped after a crash (some of the same events, some others) gets another, so none of its
// events is taken for started by a workflow that does not carry it.
func AgentEventBatch(events []uuid.UUID) string {
	b := make([]byte, 0, 32+16*len(events))
	b = append(b, "vigil agent event batch:"...)
	for _, e := range events {
		b = append(b, e[:]...)
	}
	return "events-" + uuid.NewSHA1(uuid.NameSpaceURL, b).String()
}

// RetentionSchedule is <task queue prefix>-retention (vigil-retention with the default prefix): the
// Temporal Schedule of retention passes and the workflow id its runs start with (Temporal appends
// each run's scheduled time).
func RetentionSchedule(taskQueuePrefix string) string { return taskQueuePrefix + "-retention" }
