package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/workflows"
)

// enrichFake replaces the three enrichment activities with scripted ones.
type enrichFake struct {
	mu      sync.Mutex
	plan    enrichment.Plan
	step    func(in enrichment.StepInput, n int) (enrichment.StepResult, error)
	inputs  []enrichment.StepInput
	local   []bool // per EnrichStep call: was it a local activity
	record  enrichment.RecordInput
	outcome []enrichment.Outcome
}

func (f *enrichFake) register(env *testsuite.TestWorkflowEnvironment) {
	var a *activities.Activities
	env.OnActivity(a.EnrichPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, _ enrichment.PlanInput) (enrichment.Plan, error) {
		return f.plan, nil
	})
	env.OnActivity(a.EnrichStep, mock.Anything, mock.Anything).Return(func(ctx context.Context, in enrichment.StepInput) (enrichment.StepResult, error) {
		f.mu.Lock()
		f.inputs = append(f.inputs, in)
		f.local = append(f.local, activity.GetInfo(ctx).IsLocalActivity)
		n := len(f.inputs)
		f.mu.Unlock()
		return f.step(in, n)
	})
	env.OnActivity(a.EnrichRecord, mock.Anything, mock.Anything).Return(func(_ context.Context, in enrichment.RecordInput) (enrichment.RecordResult, error) {
		f.record = in
		out := append([]enrichment.Outcome(nil), in.Plan.Done...)
		for _, c := range in.Calls {
			r := enrichment.Answer{Provider: in.Plan.Calls[c.Call].Provider, Success: c.Success, NotFound: c.NotFound, ErrorMessage: c.Error}
			out = append(out, enrichment.Outcome{Target: in.Plan.Calls[c.Call].Target, Result: r})
		}
		f.outcome = out
		return enrichment.RecordResult{Outcomes: out}, nil
	})
}

func onePlan(provider string, steps ...enrichment.PlannedStep) enrichment.Plan {
	return enrichment.Plan{
		Targets: []enrichment.Target{{IndicatorUUID: "0b5c6f4e-8a43-4c55-9a43-46ad0c1e0d01", Type: "domain", Value: "x.example.com"}},
		Calls:   []enrichment.PlannedCall{{Target: 0, Provider: provider, Steps: steps}},
	}
}

func ok(name string, i int, state string) enrichment.StepResult {
	return enrichment.StepResult{Record: httpsteps.StepRecord{StepName: name, StepIndex: i, ResponseStatusCode: 200}, State: []byte(state)}
}

func runEnrich(t *testing.T, f *enrichFake, in workflows.EnrichIndicatorsInput) (workflows.EnrichIndicatorsResult, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.EnrichIndicator)
	f.register(env)
	env.ExecuteWorkflow(workflows.EnrichIndicator, workflows.EnrichIndicatorInput{IndicatorUUID: "0b5c6f4e-8a43-4c55-9a43-46ad0c1e0d01",
		LocalSteps: in.LocalSteps})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.EnrichIndicatorsResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, env
}

func TestEnrichIndicators_StepsPassState(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5}, enrichment.PlannedStep{Name: "b", TimeoutSeconds: 5})}
	f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
		if in.StepIndex == 0 {
			return ok("a", 0, "state-a"), nil
		}
		return ok("b", 1, string(in.State)+"+b"), nil
	}
	res, _ := runEnrich(t, f, workflows.EnrichIndicatorsInput{})
	require.Len(t, f.inputs, 2)
	require.Empty(t, f.inputs[0].State)
	require.Equal(t, "state-a", string(f.inputs[1].State), "step b sees step a's sealed state")
	require.Len(t, f.record.Calls, 1)
	require.True(t, f.record.Calls[0].Success)
	require.Equal(t, "state-a+b", string(f.record.Calls[0].State))
	require.Nil(t, f.record.Calls[0].Steps, "outside test mode step records stay out of the record input")
	require.Len(t, res.Outcomes, 1)
	require.True(t, res.Outcomes[0].Result.Success)
}

func TestEnrichIndicators_WaitsForReservedSlotDurably(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5})}
	var slot time.Time
	f.step = func(in enrichment.StepInput, n int) (enrichment.StepResult, error) {
		if n == 1 {
			slot = time.Now().Add(time.Hour)
			return enrichment.StepResult{WaitUntil: slot}, nil
		}
		return ok("a", 0, "s"), nil
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env)
	start := env.Now()
	env.ExecuteWorkflow(workflows.EnrichIndicator, workflows.EnrichIndicatorInput{IndicatorUUID: "0b5c6f4e-8a43-4c55-9a43-46ad0c1e0d01",
		LocalSteps: true})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, f.inputs, 2)
	require.True(t, f.inputs[0].Slot.IsZero())
	require.True(t, f.inputs[1].Slot.Equal(slot), "the second attempt sends on the reserved slot")
	require.Equal(t, []bool{true, true}, f.local, "a reserved slot is not a failure: both attempts are local")
	require.GreaterOrEqual(t, env.Now().Sub(start), 59*time.Minute, "the workflow slept on a timer")
	require.True(t, f.record.Calls[0].Success)
}

func TestEnrichIndicators_RetryAfterThenSuccess(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5})}
	f.step = func(in enrichment.StepInput, n int) (enrichment.StepResult, error) {
		if n == 1 {
			return enrichment.StepResult{RetryAfter: 90 * time.Second, Record: httpsteps.StepRecord{ResponseStatusCode: 429}}, nil
		}
		return ok("a", 0, "s"), nil
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env)
	start := env.Now()
	env.ExecuteWorkflow(workflows.EnrichIndicator, workflows.EnrichIndicatorInput{IndicatorUUID: "0b5c6f4e-8a43-4c55-9a43-46ad0c1e0d01"})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, f.inputs, 2)
	require.GreaterOrEqual(t, env.Now().Sub(start), 90*time.Second)
	require.True(t, f.record.Calls[0].Success)
}

func TestEnrichIndicators_RateLimitedTooOftenFails(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5})}
	f.step = func(enrichment.StepInput, int) (enrichment.StepResult, error) {
		return enrichment.StepResult{RetryAfter: time.Second, Record: httpsteps.StepRecord{StepName: "a", ResponseStatusCode: 429, Error: "HTTP 429"}}, nil
	}
	runEnrich(t, f, workflows.EnrichIndicatorsInput{})
	require.Len(t, f.inputs, workflows.MaxRateLimitedRetries+1)
	require.False(t, f.record.Calls[0].Success)
	require.Contains(t, f.record.Calls[0].Error, "still rate limited")
}

func TestEnrichIndicators_PermanentFailureIsRecordedNotRetried(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5}, enrichment.PlannedStep{Name: "b", TimeoutSeconds: 5})}
	f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
		rec := httpsteps.StepRecord{StepName: "a", StepIndex: 0, ResponseStatusCode: 403, Error: "step 0 (a): HTTP 403: client error"}
		return enrichment.StepResult{}, sdktemporal.NewNonRetryableApplicationError(rec.Error, enrichment.ErrTypeStepPermanent, nil, rec)
	}
	res, _ := runEnrich(t, f, workflows.EnrichIndicatorsInput{})
	require.Len(t, f.inputs, 1, "a permanent error is not retried and later steps do not run")
	require.False(t, f.record.Calls[0].Success)
	require.Equal(t, "step 0 (a): HTTP 403: client error", f.record.Calls[0].Error)
	require.False(t, res.Outcomes[0].Result.Success, "the enrichment itself still finishes")
}

func TestEnrichIndicators_RetryableFailureRetriedThenOptionalSkipped(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5}, enrichment.PlannedStep{Name: "b", Optional: true, TimeoutSeconds: 5})}
	f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
		if in.StepIndex == 0 {
			return ok("a", 0, "sa"), nil
		}
		rec := httpsteps.StepRecord{StepName: "b", StepIndex: 1, ResponseStatusCode: 502, Error: "HTTP 502"}
		return enrichment.StepResult{}, sdktemporal.NewApplicationError(rec.Error, enrichment.ErrTypeStepRetryable, rec)
	}
	runEnrich(t, f, workflows.EnrichIndicatorsInput{})
	require.Len(t, f.inputs, 1+3, "step b tried 3 times")
	call := f.record.Calls[0]
	require.True(t, call.Success, "a failing optional step does not fail the call")
	require.Equal(t, "sa", string(call.State), "the state is the last successful step's")
}

func TestEnrichIndicators_ParallelCallsAndDoneOutcomes(t *testing.T) {
	plan := onePlan("p1", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5})
	plan.Calls = append(plan.Calls, enrichment.PlannedCall{Target: 0, Provider: "p2", Steps: []enrichment.PlannedStep{{Name: "a", TimeoutSeconds: 5}}})
	plan.Done = []enrichment.Outcome{{Target: 0, Result: enrichment.Answer{Provider: "cached", Success: true, CacheHit: true}}}
	f := &enrichFake{plan: plan}
	f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
		if in.Provider == "p2" {
			return enrichment.StepResult{}, errors.New("boom")
		}
		return ok("a", 0, "s1"), nil
	}
	res, _ := runEnrich(t, f, workflows.EnrichIndicatorsInput{})
	require.Len(t, res.Outcomes, 3)
	byProvider := map[string]enrichment.Answer{}
	for _, o := range res.Outcomes {
		byProvider[o.Result.Provider] = o.Result
	}
	require.True(t, byProvider["cached"].CacheHit)
	require.True(t, byProvider["p1"].Success)
	require.False(t, byProvider["p2"].Success)
	require.Contains(t, byProvider["p2"].ErrorMessage, "boom")
}

func TestProviderCall_TestModeKeepsStepsAndTriesOnce(t *testing.T) {
	f := &enrichFake{plan: onePlan("p", enrichment.PlannedStep{Name: "a", TimeoutSeconds: 5})}
	f.plan.Targets[0].IndicatorUUID = ""
	f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
		rec := httpsteps.StepRecord{StepName: "a", ResponseStatusCode: 500, Error: "HTTP 500"}
		return enrichment.StepResult{}, sdktemporal.NewApplicationError(rec.Error, enrichment.ErrTypeStepRetryable, rec)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env)
	env.ExecuteWorkflow(workflows.ProviderCall, workflows.ProviderCallInput{Provider: "p", Type: "domain", Value: "x.example.com", Test: true})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ProviderCallResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, f.inputs, 1, "test mode tries each step once")
	require.True(t, f.inputs[0].KeepRecords)
	require.True(t, res.Found)
	require.False(t, res.Result.Success)
	require.Len(t, res.Steps, 1)
	require.Equal(t, "HTTP 500", res.Steps[0].Error)
	require.True(t, f.record.Test)
}

// Local steps: a step that answers runs once, as a local activity; a retryable failure of the local
// attempt goes to the regular activity with the remaining attempts; a permanent one is not retried.
func TestEnrichIndicators_LocalSteps(t *testing.T) {
	steps := []enrichment.PlannedStep{{Name: "a", TimeoutSeconds: 5}, {Name: "b", TimeoutSeconds: 5}}
	retryable := func(name string, i int) error {
		rec := httpsteps.StepRecord{StepName: name, StepIndex: i, ResponseStatusCode: 502, Error: "HTTP 502"}
		return sdktemporal.NewApplicationError(rec.Error, enrichment.ErrTypeStepRetryable, rec)
	}
	t.Run("answered locally", func(t *testing.T) {
		f := &enrichFake{plan: onePlan("p", steps...)}
		f.step = func(in enrichment.StepInput, _ int) (enrichment.StepResult, error) {
			return ok(steps[in.StepIndex].Name, in.StepIndex, "s"+steps[in.StepIndex].Name), nil
		}
		runEnrich(t, f, workflows.EnrichIndicatorsInput{LocalSteps: true})
		require.Equal(t, []bool{true, true}, f.local)
		require.Equal(t, "sa", string(f.inputs[1].State), "the local step's state reaches the next step")
		require.True(t, f.record.Calls[0].Success)
	})
	t.Run("retryable failure falls back to the regular activity", func(t *testing.T) {
		f := &enrichFake{plan: onePlan("p", steps[0])}
		f.step = func(in enrichment.StepInput, n int) (enrichment.StepResult, error) {
			if n < 3 {
				return enrichment.StepResult{}, retryable("a", 0)
			}
			return ok("a", 0, "sa"), nil
		}
		runEnrich(t, f, workflows.EnrichIndicatorsInput{LocalSteps: true})
		require.Equal(t, []bool{true, false, false}, f.local, "one local attempt, then the regular activity")
		require.True(t, f.record.Calls[0].Success)
	})
	t.Run("every attempt fails: three in all", func(t *testing.T) {
		f := &enrichFake{plan: onePlan("p", steps[0])}
		f.step = func(enrichment.StepInput, int) (enrichment.StepResult, error) {
			return enrichment.StepResult{}, retryable("a", 0)
		}
		runEnrich(t, f, workflows.EnrichIndicatorsInput{LocalSteps: true})
		require.Equal(t, []bool{true, false, false}, f.local)
		require.False(t, f.record.Calls[0].Success)
		require.Equal(t, "HTTP 502", f.record.Calls[0].Error)
	})
	t.Run("permanent failure is not retried", func(t *testing.T) {
		f := &enrichFake{plan: onePlan("p", steps...)}
		f.step = func(enrichment.StepInput, int) (enrichment.StepResult, error) {
			rec := httpsteps.StepRecord{StepName: "a", ResponseStatusCode: 403, Error: "HTTP 403"}
			return enrichment.StepResult{}, sdktemporal.NewNonRetryableApplicationError(rec.Error, enrichment.ErrTypeStepPermanent, nil, rec)
		}
		runEnrich(t, f, workflows.EnrichIndicatorsInput{LocalSteps: true})
		require.Equal(t, []bool{true}, f.local)
		require.Equal(t, "HTTP 403", f.record.Calls[0].Error)
	})
}
