package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/httpsteps"
)

// Enrichment limits.
const (
	// MaxRateLimitedRetries bounds how often one step is retried after a 429.
	MaxRateLimitedRetries = 5
	// MaxRetryAfter caps a provider's Retry-After hint.
	MaxRetryAfter = 10 * time.Minute
	// stepAttempts is how often a step failing with a retryable error is tried in all.
	stepAttempts = 3
)

// EnrichIndicatorsInput says what EnrichIndicators enriches: stored indicators by uuid and/or one
// ad-hoc value, with every configured provider supporting each type (only Providers when set).
type EnrichIndicatorsInput struct {
	IndicatorUUIDs []string           `json:"indicator_uuids,omitempty"`
	AdHoc          *enrichment.Target `json:"ad_hoc,omitempty"`
	Providers      []string           `json:"providers,omitempty"`
	// Test: the provider test endpoint (no cache, no indicator updates, one attempt per step, step
	// records kept with their response bodies).
	Test      bool `json:"test,omitempty"`
	SkipCache bool `json:"skip_cache,omitempty"`
	// StepQueue is the task queue of the HTTP step activities (the enrichment queue); "" means the
	// calling workflow's own queue. The alert pipeline passes Queues.Enrichment.
	StepQueue string `json:"step_queue,omitempty"`
	// LocalSteps: each HTTP step is tried first as a local activity (runStep); the alert pipeline
	// sets it from version 2 on.
	LocalSteps bool `json:"local_steps,omitempty"`
}

// EnrichIndicatorsResult holds the targets and one outcome per (target, provider) that ran, was
// served from the cache or was skipped (unconfigured providers are left out).
type EnrichIndicatorsResult struct {
	Targets  []enrichment.Target  `json:"targets"`
	Outcomes []enrichment.Outcome `json:"outcomes"`
	// Steps are the step records of each call, by provider name (test mode only).
	Steps map[string][]httpsteps.StepRecord `json:"steps,omitempty"`
}

// EnrichIndicators enriches indicators with every configured provider, in parallel, and records
// the results. It is a workflow-side function, not a workflow: the alert pipeline calls it inline,
// and ProviderCall and EnrichIndicator wrap it. Cost per call: the plan and the record are local
// activities (cache lookups, rate-limit bookkeeping and indicator updates never cost a workflow
// task of their own); each HTTP step is one activity on the step queue.
func EnrichIndicators(ctx workflow.Context, in EnrichIndicatorsInput) (EnrichIndicatorsResult, error) {
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, enrichLocalOptions())
	var plan enrichment.Plan
	planIn := enrichment.PlanInput{IndicatorUUIDs: in.IndicatorUUIDs, AdHoc: in.AdHoc, Providers: in.Providers, Test: in.Test, SkipCache: in.SkipCache}
	if err := workflow.ExecuteLocalActivity(lctx, a.EnrichPlan, planIn).Get(lctx, &plan); err != nil {
		return EnrichIndicatorsResult{}, fmt.Errorf("enrichment plan: %w", err)
	}
	return enrichPlanned(ctx, in, plan)
}

// enrichPlanned runs the calls of plan (made by EnrichPlan for in, or by the alert pipeline's
// PipelinePrepare from version 3) and records the results: EnrichIndicators after its plan step.
func enrichPlanned(ctx workflow.Context, in EnrichIndicatorsInput, plan enrichment.Plan) (EnrichIndicatorsResult, error) {
	var a *activities.Activities
	lctx := workflow.WithLocalActivityOptions(ctx, enrichLocalOptions())
	if len(plan.Targets) == 0 {
		return EnrichIndicatorsResult{Targets: []enrichment.Target{}, Outcomes: []enrichment.Outcome{}}, nil
	}

	calls := make([]enrichment.CallOutcome, len(plan.Calls))
	wg := workflow.NewWaitGroup(ctx)
	for i := range plan.Calls {
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			calls[i] = runProviderCall(gctx, in, plan.Targets[plan.Calls[i].Target], plan.Calls[i])
			calls[i].Call = i
		})
	}
	wg.Wait(ctx)

	res := EnrichIndicatorsResult{Targets: plan.Targets}
	if in.Test {
		res.Steps = map[string][]httpsteps.StepRecord{}
		for i, c := range calls {
			res.Steps[plan.Calls[i].Provider] = c.Steps
		}
	}
	recIn := enrichment.RecordInput{Plan: plan, Calls: calls, Test: in.Test}
	if !in.Test {
		for i := range recIn.Calls {
			recIn.Calls[i].Steps = nil // records stay in history through the step activities
		}
	}
	var rec enrichment.RecordResult
	if err := workflow.ExecuteLocalActivity(lctx, a.EnrichRecord, recIn).Get(lctx, &rec); err != nil {
		return EnrichIndicatorsResult{}, fmt.Errorf("record enrichment: %w", err)
	}
	res.Outcomes = rec.Outcomes
	return res, nil
}

// enrichLocalOptions are the options of the engine's plan and record local activities.
func enrichLocalOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &sdktemporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumAttempts: 5, NonRetryableErrorTypes: []string{"EnrichNotConfigured", "EnrichBadInput"}},
	}
}

// runProviderCall runs the steps of one planned call in order, honouring rate-limit slots and
// Retry-After with durable timers. It never fails: a failure is reported in the outcome.
func runProviderCall(ctx workflow.Context, in EnrichIndicatorsInput, target enrichment.Target, call enrichment.PlannedCall) enrichment.CallOutcome {
	start := workflow.Now(ctx)
	out := enrichment.CallOutcome{}
	finish := func() enrichment.CallOutcome {
		out.DurationMS = workflow.Now(ctx).Sub(start).Milliseconds()
		return out
	}
	attempts := int32(stepAttempts)
	if in.Test {
		attempts = 1
	}
	var state []byte
	var slot time.Time
	rateLimited := 0
	for i := 0; i < len(call.Steps); {
		st := call.Steps[i]
		var res enrichment.StepResult
		err := runStep(ctx, in, st, enrichment.StepInput{
			Provider: call.Provider, Target: target, StepIndex: i, State: state, Slot: slot, KeepRecords: in.Test,
		}, attempts, &res)
		slot = time.Time{}
		if err != nil {
			rec := stepRecordFromError(err, st.Name, i, target.Value)
			if st.Optional {
				rec.Skipped = true
				out.Steps = append(out.Steps, rec)
				i++
				continue
			}
			out.Steps = append(out.Steps, rec)
			out.Error = rec.Error
			return finish()
		}
		switch {
		case !res.WaitUntil.IsZero():
			// A rate-limit slot is reserved: sleep durably until just before it, then send on it.
			if d := res.WaitUntil.Sub(workflow.Now(ctx)) - enrichment.InlineSlotWait*3/4; d > 0 {
				if err := workflow.Sleep(ctx, d); err != nil {
					out.Error = "cancelled while waiting for the provider's rate limit"
					return finish()
				}
			}
			slot = res.WaitUntil
			continue
		case res.RetryAfter > 0:
			rateLimited++
			if rateLimited > MaxRateLimitedRetries {
				out.Steps = append(out.Steps, res.Record)
				out.Error = fmt.Sprintf("step %d (%s): still rate limited after %d retries", i, st.Name, MaxRateLimitedRetries)
				return finish()
			}
			if err := workflow.Sleep(ctx, min(res.RetryAfter, MaxRetryAfter)); err != nil {
				out.Error = "cancelled while honouring Retry-After"
				return finish()
			}
			continue
		}
		out.Steps = append(out.Steps, res.Record)
		if res.Skipped {
			i++
			continue
		}
		state = res.State
		if res.NotFound {
			out.Success, out.NotFound, out.State = true, true, state
			return finish()
		}
		i++
	}
	out.Success, out.State = true, state
	return finish()
}

// Local steps (EnrichIndicatorsInput.LocalSteps).
const (
	// LocalStepBudget bounds the local first attempt of a step (and must stay well under the workflow
	// task timeout); a slower step is sent again as a regular activity with its own timeout.
	LocalStepBudget = 5 * time.Second
	// localStepRetryDelay is the pause between a failed local attempt and the regular activity that
	// retries it (the regular retry policy's initial interval).
	localStepRetryDelay = time.Second
)

// runStep runs one HTTP step. With in.LocalSteps (and not in test mode) the first attempt is a local
// activity on the calling workflow's worker, bounded by LocalStepBudget: no activity task, no
// history events of its own and no workflow task to collect its result, which is most of what a
// provider call costs the Temporal server. When that attempt fails with a retryable error or
// overruns the budget, the step goes, after localStepRetryDelay, to the regular activity on the step
// queue with the step's full timeout, backoff and remaining attempts (an overrun of the budget by a
// step allowed longer is not counted as an attempt), so a slow or flaky provider costs what it
// always did and never holds a workflow task.
func runStep(ctx workflow.Context, in EnrichIndicatorsInput, st enrichment.PlannedStep, stepIn enrichment.StepInput, attempts int32, res *enrichment.StepResult) error {
	var a *activities.Activities
	timeout := time.Duration(st.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = httpsteps.DefaultTimeoutSeconds * time.Second
	}
	permanent := []string{enrichment.ErrTypeStepPermanent, "EnrichNotConfigured"}
	if in.LocalSteps && !in.Test {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: min(timeout, LocalStepBudget) + enrichment.InlineSlotWait,
			RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: 1},
		})
		err := workflow.ExecuteLocalActivity(lctx, a.EnrichStep, stepIn).Get(lctx, res)
		var appErr *sdktemporal.ApplicationError
		if err == nil || (errors.As(err, &appErr) && slices.Contains(permanent, appErr.Type())) {
			return err
		}
		var timeoutErr *sdktemporal.TimeoutError
		if !errors.As(err, &timeoutErr) || timeout <= LocalStepBudget {
			if attempts--; attempts < 1 {
				return err
			}
		}
		if err := workflow.Sleep(ctx, localStepRetryDelay); err != nil {
			return err
		}
		stepIn.Slot = time.Time{}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           in.StepQueue,
		StartToCloseTimeout: timeout + enrichment.InlineSlotWait + 10*time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			MaximumAttempts:        attempts,
			NonRetryableErrorTypes: permanent,
		},
	})
	return workflow.ExecuteActivity(actx, a.EnrichStep, stepIn).Get(ctx, res)
}

// stepRecordFromError recovers the masked step record an activity attached to its error, or builds
// a minimal one from the error message.
func stepRecordFromError(err error, name string, index int, value string) httpsteps.StepRecord {
	var appErr *sdktemporal.ApplicationError
	if errors.As(err, &appErr) && appErr.HasDetails() {
		var rec httpsteps.StepRecord
		if derr := appErr.Details(&rec); derr == nil && rec.StepName != "" {
			return rec
		}
	}
	msg := err.Error()
	if errors.As(err, &appErr) {
		msg = appErr.Message()
	}
	var timeoutErr *sdktemporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		msg = "step timed out"
	}
	return httpsteps.StepRecord{StepName: name, StepIndex: index, IndicatorValue: value, RequestHeaders: map[string]string{},
		RequestQueryParams: map[string]string{}, ResponseHeaders: map[string]string{}, Error: msg}
}

// ProviderCallInput is one provider for one indicator (stored: IndicatorUUID; ad-hoc: Type and
// Value).
type ProviderCallInput struct {
	Provider      string `json:"provider"`
	IndicatorUUID string `json:"indicator_uuid,omitempty"`
	Type          string `json:"type,omitempty"`
	Value         string `json:"value,omitempty"`
	Test          bool   `json:"test,omitempty"`
	SkipCache     bool   `json:"skip_cache,omitempty"`
}

// ProviderCallResult is the provider's result and, in test mode, every step record.
type ProviderCallResult struct {
	Target enrichment.Target      `json:"target"`
	Result enrichment.Answer      `json:"result"`
	Found  bool                   `json:"found"` // false when the provider was not run (unconfigured, wrong type)
	Steps  []httpsteps.StepRecord `json:"steps,omitempty"`
}

// ProviderCall is the standalone multi-step call of one provider (workflow id
// enrich-<provider>-<indicator uuid>, or enrich-<provider>-adhoc-<uuid> for a value that is not
// stored): POST /v1/enrichments and the provider test endpoint run it, through the same code as the
// alert pipeline (EnrichIndicators).
func ProviderCall(ctx workflow.Context, in ProviderCallInput) (ProviderCallResult, error) {
	ein := EnrichIndicatorsInput{Providers: []string{in.Provider}, Test: in.Test, SkipCache: in.SkipCache}
	if in.IndicatorUUID != "" {
		ein.IndicatorUUIDs = []string{in.IndicatorUUID}
	} else {
		ein.AdHoc = &enrichment.Target{Type: in.Type, Value: in.Value}
	}
	res, err := EnrichIndicators(ctx, ein)
	if err != nil {
		return ProviderCallResult{}, err
	}
	out := ProviderCallResult{}
	if len(res.Targets) > 0 {
		out.Target = res.Targets[0]
	}
	for _, o := range res.Outcomes {
		if o.Result.Provider == in.Provider {
			out.Result, out.Found = o.Result, true
		}
	}
	out.Steps = res.Steps[in.Provider]
	return out, nil
}

// EnrichIndicatorInput names one stored indicator.
type EnrichIndicatorInput struct {
	IndicatorUUID string `json:"indicator_uuid"`
	StepQueue     string `json:"step_queue,omitempty"`
	// LocalSteps tries each step first as a local activity (EnrichIndicatorsInput.LocalSteps); false
	// in runs started before it existed.
	LocalSteps bool `json:"local_steps,omitempty"`
}

// EnrichIndicator enriches one stored indicator with every configured provider and records the
// results on it (used when indicators are added to an alert with enrich=true).
func EnrichIndicator(ctx workflow.Context, in EnrichIndicatorInput) (EnrichIndicatorsResult, error) {
	return EnrichIndicators(ctx, EnrichIndicatorsInput{IndicatorUUIDs: []string{in.IndicatorUUID}, StepQueue: in.StepQueue,
		LocalSteps: in.LocalSteps})
}
