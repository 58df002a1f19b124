package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

// registerEnrichmentLocal registers the enrichment local activities, which run on the worker of the
// workflow calling workflows.EnrichIndicators (pipeline and enrichment queues).
func registerEnrichmentLocal(r Registrar, acts *activities.Activities) {
	r.RegisterActivityWithOptions(acts.EnrichPlan, activity.RegisterOptions{})
	r.RegisterActivityWithOptions(acts.EnrichRecord, activity.RegisterOptions{})
}

// registerEnrichment registers the enrichment workflows and the HTTP step activity.
func registerEnrichment(r Registrar, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.ProviderCall, workflow.RegisterOptions{})
	r.RegisterWorkflowWithOptions(workflows.EnrichIndicator, workflow.RegisterOptions{})
	registerEnrichmentLocal(r, acts)
	r.RegisterActivityWithOptions(acts.EnrichStep, activity.RegisterOptions{})
}

// Enrichment workflow limits.
const (
	// DefaultEnrichWait bounds Enrich and TestProvider when the caller's context has no deadline.
	DefaultEnrichWait = 30 * time.Second
	// enrichRunTimeout bounds a ProviderCall run (it may wait for rate-limit slots and Retry-After).
	enrichRunTimeout = 24 * time.Hour
)

// Enricher starts enrichment workflows for the API and waits for their results. It implements
// api.Enricher.
type Enricher struct {
	c      client.Client
	queues Queues
	acts   *activities.Activities
}

// NewEnricher returns an Enricher. acts must carry Enrichment deps (store, box, env): the cache and
// the plan are read in process so a cache hit costs no workflow.
func NewEnricher(c client.Client, queues Queues, acts *activities.Activities) *Enricher {
	return &Enricher{c: c, queues: queues, acts: acts}
}

func withDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultEnrichWait)
}

// Enrich enriches an ad-hoc value with every configured provider supporting its type: cached and
// skipped results first, then one ProviderCall workflow per remaining provider, in parallel, waited
// for until ctx ends. A provider still running then is reported as failed with a message saying it
// continues in the background (its result lands in the cache). Results are sorted by provider.
func (e *Enricher) Enrich(ctx context.Context, typ, value string) ([]enrichment.Answer, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	plan, err := e.acts.EnrichPlan(ctx, enrichment.PlanInput{AdHoc: &enrichment.Target{Type: typ, Value: value}})
	if err != nil {
		return nil, fmt.Errorf("enrich: %w", err)
	}
	results := make([]enrichment.Answer, 0, len(plan.Done)+len(plan.Calls))
	for _, o := range plan.Done {
		results = append(results, o.Result)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(plan.Calls))
	for i, call := range plan.Calls {
		wg.Go(func() {
			res, err := e.runProviderCall(ctx, ids.AdHocProviderCall(call.Provider),
				workflows.ProviderCallInput{Provider: call.Provider, Type: typ, Value: value})
			if err != nil {
				if ctx.Err() == nil {
					errs[i] = err
					return
				}
				res = workflows.ProviderCallResult{Result: enrichment.Answer{Provider: call.Provider, Status: store.EnrichFailed,
					Malice: string(indicators.MalicePending), Extracted: map[string]any{},
					ErrorMessage: "the provider did not answer in time; the call continues in the background and its result will be cached"}}
			}
			mu.Lock()
			results = append(results, res.Result)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(results, func(a, b enrichment.Answer) int { return strings.Compare(a.Provider, b.Provider) })
	return results, nil
}

// TestProvider runs provider against one value through the real ProviderCall workflow in test mode
// (no cache, no indicator updates, one attempt per step) and returns its result and step records.
func (e *Enricher) TestProvider(ctx context.Context, provider, typ, value string) (enrichment.Answer, []httpsteps.StepRecord, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	res, err := e.runProviderCall(ctx, ids.AdHocProviderCall(provider),
		workflows.ProviderCallInput{Provider: provider, Type: typ, Value: value, Test: true})
	if err != nil {
		return enrichment.Answer{}, nil, err
	}
	if !res.Found {
		return enrichment.Answer{Provider: provider, Status: store.EnrichFailed, Malice: string(indicators.MalicePending),
			Extracted: map[string]any{}, ErrorMessage: "provider not found"}, res.Steps, nil
	}
	return res.Result, res.Steps, nil
}

func (e *Enricher) runProviderCall(ctx context.Context, id string, in workflows.ProviderCallInput) (workflows.ProviderCallResult, error) {
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                e.queues.Enrichment,
		WorkflowExecutionTimeout: enrichRunTimeout,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.ProviderCall, in)
	if err != nil {
		return workflows.ProviderCallResult{}, fmt.Errorf("start %s: %w", id, err)
	}
	var res workflows.ProviderCallResult
	if err := run.Get(ctx, &res); err != nil {
		return workflows.ProviderCallResult{}, fmt.Errorf("provider call %s: %w", id, err)
	}
	return res, nil
}

// StartEnrichIndicator starts (idempotently: an enrichment of the same indicator already running is
// reused) the EnrichIndicator workflow for one stored indicator and returns its workflow id.
func StartEnrichIndicator(ctx context.Context, c client.Client, queues Queues, indicator uuid.UUID) (string, error) {
	id := ids.EnrichIndicator(indicator)
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                queues.Enrichment,
		WorkflowExecutionTimeout: enrichRunTimeout,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.EnrichIndicator, workflows.EnrichIndicatorInput{IndicatorUUID: indicator.String(), StepQueue: queues.Enrichment, LocalSteps: true})
	if err != nil {
		return "", fmt.Errorf("start %s: %w", id, err)
	}
	return id, nil
}
