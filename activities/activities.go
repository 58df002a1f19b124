// Package activities holds Vigil's Temporal activities: methods on Activities, which carries
// their dependencies. Every exported method of *Activities is an activity type named after the
// method, so helpers stay unexported and renames are breaking changes for running workflows.
// Activities are retried: each one must be idempotent.
package activities

import (
	"log/slog"
	"time"

	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/retention"
	"github.com/vigil-soc/vigil/kit/httpsteps"
)

// Activities carries what the activities need; cmd/ builds one per worker process.
type Activities struct {
	Log *slog.Logger
	// Enrichment holds the enrichment activities' dependencies (nil: they fail as not configured).
	Enrichment *enrichment.EngineDeps

	// Response workflow runs (workflow_run.go, notify.go).
	WorkflowRuns WorkflowRunStore
	RunSecrets   SecretOpener     // opens sealed workflow secrets and step state
	StepClient   httpsteps.Doer   // SSRF-guarded client for workflow steps
	Approvals    ApprovalNotifier // sends approval requests to the configured channel

	// Pipeline is the alert pipeline's store (pipeline.go); nil: its activities fail as not configured.
	Pipeline PipelineStore
	// CaseGroupingWindow (CASE_GROUPING_WINDOW_HOURS): a pipeline's finish (version 4 on) puts the
	// alert into the oldest open case one of whose alerts, seen within the window, shares a Malicious
	// or Suspicious indicator with it (cases.Grouping, the rule); 0 groups nothing.
	CaseGroupingWindow time.Duration
	// MaxIndicatorsPerAlert (MAX_INDICATORS_PER_ALERT) caps the indicators extraction links to one
	// alert, the first in pass order; when more were found the alert gets a normalization note.
	// 0: indicators.MaxExtracted.
	MaxIndicatorsPerAlert int

	// AgentEvents delivers events to agents (agent_events.go); nil: its activities fail as not configured.
	AgentEvents *AgentEventDeps

	// Retention runs retention passes (retention.go); nil: its activities fail as not configured.
	Retention *retention.Service

	// Freshness receives how long alerts waited for their pipeline and agent events for their
	// delivery (kit/metrics.Worker); nil records nothing.
	Freshness Freshness
}

// Freshness records how fresh what the worker hands out is.
type Freshness interface {
	// AlertEnriched records an alert's first pipeline finish: its 202 (ingested_at) to its finish.
	AlertEnriched(lag time.Duration)
	// AgentEventDelivered records a delivery: the event raised (committed) to the agent's 2xx.
	AgentEventDelivered(lag time.Duration)
}
