package activities

import (
	"time"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/store"
)

// EnrichTarget is one value to enrich: a stored indicator (IndicatorUUID set) or an ad-hoc value.
type EnrichTarget struct {
	IndicatorUUID string `json:"indicator_uuid,omitempty"`
	Type          string `json:"type"`
	Value         string `json:"value"`
}

// EnrichPlanInput says what to enrich: stored indicators by uuid and/or one ad-hoc value, with every
// configured provider supporting each type (or only Providers when set).
type EnrichPlanInput struct {
	IndicatorUUIDs []string      `json:"indicator_uuids,omitempty"`
	AdHoc          *EnrichTarget `json:"ad_hoc,omitempty"`
	Providers      []string      `json:"providers,omitempty"`
	// Test runs the named providers even when inactive, never reads or writes the cache and never
	// touches indicators (the provider test endpoint).
	Test bool `json:"test,omitempty"`
	// SkipCache forces a fresh call (the result is still cached).
	SkipCache bool `json:"skip_cache,omitempty"`
}

// PlannedStep is what the workflow needs to know about one step of a provider call.
type PlannedStep struct {
	Name           string `json:"name"`
	Optional       bool   `json:"optional,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// PlannedCall is one provider call still to make for one target.
type PlannedCall struct {
	Target   int           `json:"target"`
	Provider string        `json:"provider"`
	Steps    []PlannedStep `json:"steps"`
}

// Outcome is one provider's result for one target.
type Outcome struct {
	Target int                    `json:"target"`
	Result store.EnrichmentResult `json:"result"`
}

// EnrichPlan is what EnrichPlan decided: the targets, the calls to make, and the results already
// known (cache hits, non-routable skips, configuration failures in test mode).
type EnrichPlan struct {
	Targets []EnrichTarget `json:"targets"`
	Calls   []PlannedCall  `json:"calls,omitempty"`
	Done    []Outcome      `json:"done,omitempty"`
}

// EnrichStepInput runs step StepIndex of Provider's call for Target. State is the sealed output of
// the earlier steps (nil for the first); Slot is a rate-limit slot reserved by an earlier attempt.
type EnrichStepInput struct {
	Provider    string       `json:"provider"`
	Target      EnrichTarget `json:"target"`
	StepIndex   int          `json:"step_index"`
	State       []byte       `json:"state,omitempty"`
	Slot        time.Time    `json:"slot,omitempty"`
	KeepRecords bool         `json:"keep_records,omitempty"` // keep response bodies in the record (test mode)
}

// EnrichStepResult is one step's outcome. When WaitUntil is set nothing was sent: a rate-limit slot
// was reserved for WaitUntil and the workflow must call again with Slot = WaitUntil (after a durable
// sleep). When RetryAfter is set the provider answered 429: sleep, then run the step again.
type EnrichStepResult struct {
	Record     httpsteps.StepRecord `json:"record"`
	State      []byte               `json:"state,omitempty"` // sealed state including this step
	NotFound   bool                 `json:"not_found,omitempty"`
	Skipped    bool                 `json:"skipped,omitempty"`
	WaitUntil  time.Time            `json:"wait_until,omitempty"`
	RetryAfter time.Duration        `json:"retry_after,omitempty"`
}

// CallOutcome is how one planned call ended, handed to EnrichRecord.
type CallOutcome struct {
	Call       int                    `json:"call"` // index into EnrichPlan.Calls
	Success    bool                   `json:"success"`
	NotFound   bool                   `json:"not_found,omitempty"`
	Error      string                 `json:"error,omitempty"`
	State      []byte                 `json:"state,omitempty"`
	Steps      []httpsteps.StepRecord `json:"steps,omitempty"`
	DurationMS int64                  `json:"duration_ms"`
}

// EnrichRecordInput records the calls of a plan.
type EnrichRecordInput struct {
	Plan  EnrichPlan    `json:"plan"`
	Calls []CallOutcome `json:"calls"`
	Test  bool          `json:"test,omitempty"`
}

// EnrichRecordResult holds every outcome of the plan (done ones and recorded calls), in plan order.
// Raw responses and step records are left out unless the run was a test.
type EnrichRecordResult struct {
	Outcomes []Outcome `json:"outcomes"`
}

// Error types of enrichment activities (ApplicationError types).
const (
	// ErrTypeStepPermanent is a step failure retrying cannot fix (4xx other than 429, a blocked
	// destination, a step that cannot be built). Non-retryable.
	ErrTypeStepPermanent = "EnrichStepPermanent"
	// ErrTypeStepRetryable is a step failure worth retrying (5xx, 408, network errors, timeouts).
	ErrTypeStepRetryable = "EnrichStepRetryable"
)
