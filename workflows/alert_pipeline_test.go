package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/workflows"
)

const pipeAlert = "0b6f3b36-5f53-4d57-9a55-6d1b5a0f6f0e"

type pipelineMocks struct {
	env      *testsuite.TestWorkflowEnvironment
	finished *activities.PipelineFinishInput
}

// pipelineEnv mocks the pipeline's local activities; link succeeds with two indicators and, for the
// extraction's rule reference, a rule.
func pipelineEnv(t *testing.T) *pipelineMocks {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	m := &pipelineMocks{env: env}
	var a *activities.Activities
	env.RegisterWorkflow(workflows.AlertPipeline)
	env.RegisterActivity(a.PipelineExtract)
	env.RegisterActivity(a.PipelineLink)
	env.RegisterActivity(a.PipelineRule)
	env.RegisterActivity(a.PipelineFinish)
	env.RegisterActivity(a.PipelinePrepare)
	env.RegisterActivity(a.EnrichPlan)
	env.RegisterActivity(a.EnrichRecord)
	env.OnActivity(a.PipelineLink, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PipelineLinkInput) (activities.PipelineLinkResult, error) {
		out := activities.PipelineLinkResult{NewLinks: len(in.Indicators)}
		if in.RuleRef != nil && in.RuleRef.SourceRuleID == "r-1" && in.SourceName == "generic" {
			out.RuleUUID = "33333333-3333-3333-3333-333333333333"
		}
		for i := range in.Indicators {
			out.IndicatorUUIDs = append(out.IndicatorUUIDs, []string{"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"}[i])
		}
		return out, nil
	})
	env.OnActivity(a.PipelineFinish, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PipelineFinishInput) (activities.PipelineFinishResult, error) {
		m.finished = &in
		return activities.PipelineFinishResult{Malice: "Malicious"}, nil
	})
	return m
}

func extraction(n int) activities.PipelineExtraction {
	inds := []indicators.Indicator{{Type: indicators.TypeIP, Value: "45.33.32.156"}, {Type: indicators.TypeDomain, Value: "evil.com"}}[:n]
	return activities.PipelineExtraction{SourceName: "generic", Severity: "High", Indicators: inds,
		RuleRef: &store.RuleReference{SourceRuleID: "r-1"}}
}

// run runs version 2 (separate extract, link and plan steps), which replayed runs still take; version 3
// (PipelinePrepare) has its own tests below.
func run(t *testing.T, m *pipelineMocks) workflows.AlertPipelineResult {
	t.Helper()
	return runVersion(t, m, 2)
}

func runVersion(t *testing.T, m *pipelineMocks, version int) workflows.AlertPipelineResult {
	t.Helper()
	m.env.ExecuteWorkflow(workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: pipeAlert, StepQueue: "q", Version: version})
	require.True(t, m.env.IsWorkflowCompleted())
	require.NoError(t, m.env.GetWorkflowError())
	var res workflows.AlertPipelineResult
	require.NoError(t, m.env.GetWorkflowResult(&res))
	return res
}

func TestAlertPipeline_Enriched(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(extraction(2), nil)
	plan := enrichment.Plan{Targets: []enrichment.Target{{IndicatorUUID: "1", Type: "ip", Value: "45.33.32.156"}, {IndicatorUUID: "2", Type: "domain", Value: "evil.com"}}}
	m.env.OnActivity(a.EnrichPlan, mock.Anything, mock.MatchedBy(func(in enrichment.PlanInput) bool { return len(in.IndicatorUUIDs) == 2 })).Return(plan, nil).Once()
	m.env.OnActivity(a.EnrichRecord, mock.Anything, mock.Anything).Return(enrichment.RecordResult{Outcomes: []enrichment.Outcome{
		{Target: 0, Result: enrichment.Answer{Provider: "vt", Status: store.EnrichSuccess}},
		{Target: 1, Result: enrichment.Answer{Provider: "vt", Status: store.EnrichSuccess}},
		{Target: 1, Result: enrichment.Answer{Provider: "abuse", Status: store.EnrichFailed}},
		{Target: 0, Result: enrichment.Answer{Provider: "skipper", Status: store.EnrichSkipped}},
	}}, nil).Once()
	m.env.OnUpsertTypedSearchAttributes(mock.Anything).Never() // set at start by the dispatcher
	res := run(t, m)
	require.Equal(t, store.EnrichmentEnriched, res.EnrichmentStatus)
	require.Equal(t, 2, res.IndicatorCount)
	require.Equal(t, "33333333-3333-3333-3333-333333333333", res.RuleUUID)
	require.Equal(t, []string{"vt"}, res.Succeeded)
	require.Equal(t, []string{"abuse"}, res.Failed)
	require.Equal(t, "Malicious", res.Malice)
	require.NotNil(t, m.finished)
	require.Equal(t, store.EnrichmentEnriched, m.finished.Status)
	require.NotEmpty(t, m.finished.TemporalRunID)
	m.env.AssertExpectations(t)
	m.env.AssertNotCalled(t, "PipelineRule", mock.Anything, mock.Anything)
}

// A run started before versions (Version 0) keeps its shape: the link step without the rule, then
// the rule step, and the search attributes upserted after extraction.
func TestAlertPipeline_Version0(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(extraction(0), nil)
	m.env.OnActivity(a.PipelineRule, mock.Anything, mock.Anything).Return("44444444-4444-4444-4444-444444444444", nil).Once()
	m.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Once()
	res := runVersion(t, m, 0)
	require.Equal(t, "44444444-4444-4444-4444-444444444444", res.RuleUUID, "from the rule step, not the link")
	m.env.AssertExpectations(t)
}

func TestAlertPipeline_AllProvidersFailed(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(extraction(1), nil)
	m.env.OnActivity(a.EnrichPlan, mock.Anything, mock.Anything).Return(enrichment.Plan{Targets: []enrichment.Target{{IndicatorUUID: "1", Type: "ip", Value: "45.33.32.156"}}}, nil)
	m.env.OnActivity(a.EnrichRecord, mock.Anything, mock.Anything).Return(enrichment.RecordResult{Outcomes: []enrichment.Outcome{
		{Result: enrichment.Answer{Provider: "vt", Status: store.EnrichFailed}}}}, nil)
	res := run(t, m)
	require.Equal(t, store.EnrichmentFailed, res.EnrichmentStatus)
	require.Equal(t, store.EnrichmentFailed, m.finished.Status)
	require.Equal(t, "every provider call failed", m.finished.Error)
}

// From version 5 a pipeline that finished is Enriched even when every provider call failed (API.md §7);
// the failed providers reach the finish. Versions before keep Failed (above, version 2).
func TestAlertPipeline_V5_AllProvidersFailedIsEnriched(t *testing.T) {
	var a *activities.Activities
	target := enrichment.Target{IndicatorUUID: "11111111-1111-1111-1111-111111111111", Type: "ip", Value: "45.33.32.156"}
	failed := enrichment.Outcome{Target: 0, Result: enrichment.Answer{Provider: "vt", Status: store.EnrichFailed}}
	for _, tc := range []struct {
		version int
		status  string
	}{{4, store.EnrichmentFailed}, {5, store.EnrichmentEnriched}} {
		m := pipelineEnv(t)
		m.env.OnActivity(a.PipelinePrepare, mock.Anything, mock.Anything).Return(activities.PipelinePrepared{
			Link: activities.PipelineLinkResult{IndicatorUUIDs: []string{target.IndicatorUUID}, NewLinks: 1},
			Plan: enrichment.Plan{Targets: []enrichment.Target{target}, Done: []enrichment.Outcome{failed}}}, nil)
		m.env.OnActivity(a.EnrichRecord, mock.Anything, mock.Anything).Return(enrichment.RecordResult{Outcomes: []enrichment.Outcome{failed}}, nil)
		res := runVersion(t, m, tc.version)
		require.Equal(t, tc.status, res.EnrichmentStatus, "version %d", tc.version)
		require.Equal(t, tc.status, m.finished.Status, "version %d", tc.version)
		require.Equal(t, []string{"vt"}, m.finished.Failed)
	}
}

func TestAlertPipeline_EnrichmentErrorMarksFailed(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(extraction(2), nil)
	m.env.OnActivity(a.EnrichPlan, mock.Anything, mock.Anything).Return(enrichment.Plan{},
		sdktemporal.NewNonRetryableApplicationError("not configured", "EnrichNotConfigured", nil))
	res := run(t, m)
	require.Equal(t, store.EnrichmentFailed, res.EnrichmentStatus)
	require.Contains(t, m.finished.Error, "not configured")
}

func TestAlertPipeline_NoIndicatorsSkipsEnrichment(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	ext := extraction(0)
	ext.RuleRef = nil
	m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(ext, nil)
	res := run(t, m)
	require.Equal(t, store.EnrichmentEnriched, res.EnrichmentStatus)
	require.Empty(t, res.RuleUUID)
	m.env.AssertNotCalled(t, "EnrichPlan", mock.Anything, mock.Anything)
}

func TestAlertPipeline_AlertGone(t *testing.T) {
	for _, step := range []string{"extract", "link", "finish"} {
		t.Run(step, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			var a *activities.Activities
			gone := sdktemporal.NewNonRetryableApplicationError("alert not found", activities.ErrTypeAlertNotFound, nil)
			calls := 0
			env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.PipelineInput) (activities.PipelineExtraction, error) {
				calls++
				if step == "extract" {
					return activities.PipelineExtraction{}, gone
				}
				ext := extraction(1)
				ext.RuleRef = nil
				return ext, nil
			})
			env.OnActivity(a.PipelineLink, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.PipelineLinkInput) (activities.PipelineLinkResult, error) {
				if step == "link" {
					return activities.PipelineLinkResult{}, gone
				}
				return activities.PipelineLinkResult{}, nil
			})
			env.OnActivity(a.PipelineFinish, mock.Anything, mock.Anything).Return(activities.PipelineFinishResult{}, gone)
			env.ExecuteWorkflow(workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: pipeAlert})
			require.NoError(t, env.GetWorkflowError())
			var res workflows.AlertPipelineResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.True(t, res.Gone)
			require.Equal(t, 1, calls, "a non-retryable error is not retried")
		})
	}
}

func TestAlertPipeline_TransientErrorsRetriedThenFail(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	calls := 0
	env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.PipelineInput) (activities.PipelineExtraction, error) {
		calls++
		return activities.PipelineExtraction{}, errors.New("database restarting")
	})
	env.ExecuteWorkflow(workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: pipeAlert})
	require.Error(t, env.GetWorkflowError())
	require.Equal(t, 25, calls, "bounded retries")
}

func TestPipelineSearchAttributeNames(t *testing.T) {
	require.Equal(t, []string{"VigilAlertUUID", "VigilSource", "VigilSeverity"}, workflows.PipelineSearchAttributeNames())
}

// Version 3: extraction, link and plan are one local activity; with nothing to enrich the run is
// PipelinePrepare and PipelineFinish only.
func TestAlertPipeline_V3_NothingToEnrich(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelinePrepare, mock.Anything, activities.PipelineInput{AlertUUID: pipeAlert}).Return(activities.PipelinePrepared{
		Link: activities.PipelineLinkResult{IndicatorUUIDs: []string{"11111111-1111-1111-1111-111111111111"}, NewLinks: 1,
			RuleUUID: "33333333-3333-3333-3333-333333333333"},
		Plan: enrichment.Plan{Targets: []enrichment.Target{}}}, nil).Once()
	res := runVersion(t, m, 3)
	require.Equal(t, store.EnrichmentEnriched, res.EnrichmentStatus)
	require.Equal(t, 1, res.IndicatorCount)
	require.Equal(t, "33333333-3333-3333-3333-333333333333", res.RuleUUID)
	require.Equal(t, "Malicious", res.Malice)
	require.Equal(t, store.EnrichmentEnriched, m.finished.Status)
	require.False(t, m.finished.Group, "version 3 groups nothing")
	for _, step := range []string{"PipelineExtract", "PipelineLink", "EnrichPlan", "EnrichRecord"} {
		m.env.AssertNotCalled(t, step, mock.Anything, mock.Anything)
	}
}

func TestAlertPipeline_V3_PlannedCallsRunAndRecord(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	target := enrichment.Target{IndicatorUUID: "11111111-1111-1111-1111-111111111111", Type: "ip", Value: "45.33.32.156"}
	// Every result already known (Done), no call: the record step still records them.
	m.env.OnActivity(a.PipelinePrepare, mock.Anything, mock.Anything).Return(activities.PipelinePrepared{
		Link: activities.PipelineLinkResult{IndicatorUUIDs: []string{target.IndicatorUUID}, NewLinks: 1},
		Plan: enrichment.Plan{Targets: []enrichment.Target{target}, Done: []enrichment.Outcome{{Target: 0,
			Result: enrichment.Answer{Provider: "p1", Status: store.EnrichSuccess}}}}}, nil).Once()
	m.env.OnActivity(a.EnrichRecord, mock.Anything, mock.MatchedBy(func(in enrichment.RecordInput) bool { return len(in.Plan.Targets) == 1 })).
		Return(enrichment.RecordResult{Outcomes: []enrichment.Outcome{{Target: 0, Result: enrichment.Answer{Provider: "p1", Status: store.EnrichSuccess}}}}, nil).Once()
	res := runVersion(t, m, 3)
	require.Equal(t, store.EnrichmentEnriched, res.EnrichmentStatus)
	require.Equal(t, []string{"p1"}, res.Succeeded)
	require.Equal(t, []string{"p1"}, m.finished.Succeeded)
	m.env.AssertNotCalled(t, "EnrichPlan", mock.Anything, mock.Anything)
}

func TestAlertPipeline_V3_PlanErrorMarksFailed(t *testing.T) {
	m := pipelineEnv(t)
	var a *activities.Activities
	m.env.OnActivity(a.PipelinePrepare, mock.Anything, mock.Anything).Return(activities.PipelinePrepared{
		Link:      activities.PipelineLinkResult{IndicatorUUIDs: []string{"11111111-1111-1111-1111-111111111111"}},
		PlanError: "enrichment engine not configured"}, nil).Once()
	res := runVersion(t, m, 3)
	require.Equal(t, store.EnrichmentFailed, res.EnrichmentStatus)
	require.Contains(t, m.finished.Error, "not configured")
}

func TestAlertPipeline_V3_AlertGone(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	calls := 0
	env.OnActivity(a.PipelinePrepare, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.PipelineInput) (activities.PipelinePrepared, error) {
		calls++
		return activities.PipelinePrepared{}, sdktemporal.NewNonRetryableApplicationError("alert not found", activities.ErrTypeAlertNotFound, nil)
	})
	env.ExecuteWorkflow(workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: pipeAlert, Version: 3})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.AlertPipelineResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.True(t, res.Gone)
	require.Equal(t, 1, calls)
	env.AssertNotCalled(t, "PipelineFinish", mock.Anything, mock.Anything)
}

// Version 4 (what the dispatcher starts now): the steps of version 3, and the finish groups the alert
// into an open case (PipelineFinishInput.Group); the case it joined comes back in the result.
func TestAlertPipeline_V4_FinishGroups(t *testing.T) {
	require.Equal(t, 5, workflows.PipelineVersion)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Activities
	var finished []activities.PipelineFinishInput
	env.OnActivity(a.PipelinePrepare, mock.Anything, activities.PipelineInput{AlertUUID: pipeAlert}).Return(activities.PipelinePrepared{
		Link: activities.PipelineLinkResult{IndicatorUUIDs: []string{"11111111-1111-1111-1111-111111111111"}, NewLinks: 1},
		Plan: enrichment.Plan{Targets: []enrichment.Target{}}}, nil).Once()
	env.OnActivity(a.PipelineFinish, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PipelineFinishInput) (activities.PipelineFinishResult, error) {
		finished = append(finished, in)
		return activities.PipelineFinishResult{Malice: "Malicious", CaseUUID: "44444444-4444-4444-4444-444444444444"}, nil
	})
	env.ExecuteWorkflow(workflows.AlertPipeline, workflows.AlertPipelineInput{AlertUUID: pipeAlert, Version: workflows.PipelineVersion})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.AlertPipelineResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, finished, 1)
	require.True(t, finished[0].Group)
	require.Equal(t, store.EnrichmentEnriched, finished[0].Status)
	require.Equal(t, "44444444-4444-4444-4444-444444444444", res.CaseUUID)
	require.Equal(t, "Malicious", res.Malice)
	for _, step := range []string{"PipelineExtract", "PipelineLink", "EnrichPlan", "EnrichRecord"} {
		env.AssertNotCalled(t, step, mock.Anything, mock.Anything)
	}
}

// Every version before 4 finishes without grouping: a run started before the upgrade replays and
// finishes as it began.
func TestAlertPipeline_BeforeV4_FinishDoesNotGroup(t *testing.T) {
	for _, version := range []int{0, 1, 2} {
		m := pipelineEnv(t)
		var a *activities.Activities
		ext := extraction(1)
		ext.RuleRef = nil
		m.env.OnActivity(a.PipelineExtract, mock.Anything, mock.Anything).Return(ext, nil).Once()
		m.env.OnActivity(a.EnrichPlan, mock.Anything, mock.Anything).Return(enrichment.Plan{Targets: []enrichment.Target{}}, nil).Maybe()
		runVersion(t, m, version)
		require.NotNil(t, m.finished, "version %d", version)
		require.False(t, m.finished.Group, "version %d", version)
	}
}
