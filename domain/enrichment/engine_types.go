package enrichment

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

// The engine's inputs and outputs below are the payloads of the enrichment activities and of the
// enrichment workflows: their JSON is the wire format recorded in running workflows' histories, so a
// field renamed or retyped here breaks replay (workflows/testdata holds recorded histories).

// Answer is one provider's answer for one indicator: what POST /v1/enrichments returns per provider,
// what an indicator's enrichment_results holds per provider (Map) and what the cache keeps
// (AnswerFromMap reads it back). Status is store.EnrichSuccess, EnrichFailed or EnrichSkipped.
type Answer struct {
	Provider     string         `json:"provider"`
	Status       string         `json:"status"` // success, failed or skipped
	Success      bool           `json:"success"`
	NotFound     bool           `json:"not_found"`
	Extracted    map[string]any `json:"extracted"`
	Malice       string         `json:"malice"`
	EnrichedAt   *time.Time     `json:"enriched_at"`
	ErrorMessage string         `json:"error_message"`
	CacheHit     bool           `json:"cache_hit"`
	RawResponse  any            `json:"raw_response,omitempty"` // masked, cut at 50 KB
	DurationMS   int64          `json:"duration_ms"`
}

// Map is the JSON object form of r (for jsonb columns).
func (r Answer) Map() map[string]any {
	raw, err := json.Marshal(r)
	if err != nil {
		return map[string]any{"provider": r.Provider, "status": r.Status, "success": r.Success}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return map[string]any{"provider": r.Provider, "status": r.Status, "success": r.Success}
	}
	return m
}

// AnswerFromMap decodes the JSON object form (a cache entry, an indicator's enrichment_results).
func AnswerFromMap(m map[string]any) (Answer, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return Answer{}, fmt.Errorf("encode enrichment result: %w", err)
	}
	var r Answer
	if err := json.Unmarshal(raw, &r); err != nil {
		return Answer{}, fmt.Errorf("decode enrichment result: %w", err)
	}
	return r, nil
}

// Target is one value to enrich: a stored indicator (IndicatorUUID set) or an ad-hoc value.
type Target struct {
	IndicatorUUID string `json:"indicator_uuid,omitempty"`
	Type          string `json:"type"`
	Value         string `json:"value"`
}

// PlanInput says what to enrich: stored indicators by uuid and/or one ad-hoc value, with every
// configured provider supporting each type (or only Providers when set).
type PlanInput struct {
	IndicatorUUIDs []string `json:"indicator_uuids,omitempty"`
	AdHoc          *Target  `json:"ad_hoc,omitempty"`
	Providers      []string `json:"providers,omitempty"`
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
	Target int    `json:"target"`
	Result Answer `json:"result"`
}

// Plan is what Engine.Plan decided: the targets, the calls to make, and the results already
// known (cache hits, non-routable skips, configuration failures in test mode).
type Plan struct {
	Targets []Target      `json:"targets"`
	Calls   []PlannedCall `json:"calls,omitempty"`
	Done    []Outcome     `json:"done,omitempty"`
}

// StepInput runs step StepIndex of Provider's call for Target. State is the sealed output of
// the earlier steps (nil for the first); Slot is a rate-limit slot reserved by an earlier attempt.
type StepInput struct {
	Provider    string    `json:"provider"`
	Target      Target    `json:"target"`
	StepIndex   int       `json:"step_index"`
	State       []byte    `json:"state,omitempty"`
	Slot        time.Time `json:"slot,omitempty"`
	KeepRecords bool      `json:"keep_records,omitempty"` // keep response bodies in the record (test mode)
}

// StepResult is one step's outcome. When WaitUntil is set nothing was sent: a rate-limit slot
// was reserved for WaitUntil and the workflow must call again with Slot = WaitUntil (after a durable
// sleep). When RetryAfter is set the provider answered 429: sleep, then run the step again.
type StepResult struct {
	Record     httpsteps.StepRecord `json:"record"`
	State      []byte               `json:"state,omitempty"` // sealed state including this step
	NotFound   bool                 `json:"not_found,omitempty"`
	Skipped    bool                 `json:"skipped,omitempty"`
	WaitUntil  time.Time            `json:"wait_until,omitempty"`
	RetryAfter time.Duration        `json:"retry_after,omitempty"`
}

// CallOutcome is how one planned call ended, handed to Engine.Record.
type CallOutcome struct {
	Call       int                    `json:"call"` // index into Plan.Calls
	Success    bool                   `json:"success"`
	NotFound   bool                   `json:"not_found,omitempty"`
	Error      string                 `json:"error,omitempty"`
	State      []byte                 `json:"state,omitempty"`
	Steps      []httpsteps.StepRecord `json:"steps,omitempty"`
	DurationMS int64                  `json:"duration_ms"`
}

// RecordInput records the calls of a plan.
type RecordInput struct {
	Plan  Plan          `json:"plan"`
	Calls []CallOutcome `json:"calls"`
	Test  bool          `json:"test,omitempty"`
}

// RecordResult holds every outcome of the plan (done ones and recorded calls), in plan order.
// Raw responses and step records are left out unless the run was a test.
type RecordResult struct {
	Outcomes []Outcome `json:"outcomes"`
}

// Error types of the engine's failures (Error.Type); the activities raise them as Temporal
// ApplicationErrors of the same type.
const (
	// ErrTypeStepPermanent is a step failure retrying cannot fix (4xx other than 429, a blocked
	// destination, a step that cannot be built). Non-retryable.
	ErrTypeStepPermanent = "EnrichStepPermanent"
	// ErrTypeStepRetryable is a step failure worth retrying (5xx, 408, network errors, timeouts).
	ErrTypeStepRetryable = "EnrichStepRetryable"
)

// Error types besides the step failures.
const (
	// ErrTypeCircuitOpen is the (non-retryable) error type of a step refused because its provider's
	// circuit is open.
	ErrTypeCircuitOpen = "ProviderCircuitOpen"
	// ErrTypeBadInput is a payload the engine cannot use (an unknown call, a malformed uuid).
	ErrTypeBadInput = "EnrichBadInput"
)

// Error is a failure of the engine the workflow must see by type: Type is one of the ErrType
// constants, Retryable says whether running the same input again may succeed, and Record (when not
// nil) is the masked record of the failed step, carried as the failure's details.
type Error struct {
	Type      string
	Message   string
	Retryable bool
	Cause     error
	Record    *httpsteps.StepRecord
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Cause }

// permanent is a non-retryable failure of type typ.
func permanent(typ, msg string, cause error, rec *httpsteps.StepRecord) *Error {
	return &Error{Type: typ, Message: msg, Cause: cause, Record: rec}
}
