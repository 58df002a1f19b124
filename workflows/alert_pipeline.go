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
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal/searchattr"
)

// PipelineSearchAttributeNames lists the search attributes of AlertPipeline.
func PipelineSearchAttributeNames() []string {
	return []string{searchattr.AlertUUID.GetName(), searchattr.Source.GetName(), searchattr.Severity.GetName()}
}

// PipelineSearchAttributes are the search attributes a pipeline starts with (PipelineVersion 1).
func PipelineSearchAttributes(alertUUID, source, severity string) sdktemporal.SearchAttributes {
	return sdktemporal.NewSearchAttributes(searchattr.AlertUUID.ValueSet(alertUUID),
		searchattr.Source.ValueSet(source), searchattr.Severity.ValueSet(severity))
}

// PipelineVersion is the shape of the pipelines the dispatcher starts now (AlertPipelineInput.Version).
const PipelineVersion = 5

// AlertPipelineInput starts AlertPipeline (workflow id alert-<AlertUUID>).
type AlertPipelineInput struct {
	AlertUUID string `json:"alert_uuid"`
	// StepQueue is the task queue of the provider HTTP step activities (the enrichment queue); ""
	// runs them on the pipeline's own queue.
	StepQueue string `json:"step_queue,omitempty"`
	// Version is the pipeline's shape, fixed at start so that a run replays as it ran. 0 (runs from
	// before versions): the search attributes are upserted after extraction and the rule is
	// associated in a step of its own. 1: the search attributes come with the start
	// (PipelineSearchAttributes) and the rule is associated in the link step's transaction, which
	// saves a history event, a visibility update and a database commit per alert. 2: as 1, and the
	// first attempt of every provider step is a local activity (EnrichIndicatorsInput.LocalSteps), so
	// a pipeline whose provider calls answer promptly runs in one workflow task. 3: as 2, with
	// extraction, link and enrichment plan in one local activity (PipelinePrepare): two local
	// activities fewer per alert (prepare, record, finish and the provider steps). 4: as 3, and the
	// finish groups the alert into an open case it shares a Malicious or Suspicious indicator with
	// (PipelineFinishInput.Group), in the finish's transaction; the steps and their order are those
	// of version 3. 5: as 4, and a pipeline that finished is Enriched even when every provider call
	// failed (API.md §7: Failed only when the pipeline could not finish; the failed providers are
	// listed in the finish), where before it was Failed.
	Version int `json:"version,omitempty"`
}

// AlertPipelineResult is what one pipeline run did.
type AlertPipelineResult struct {
	AlertUUID        string   `json:"alert_uuid"`
	Gone             bool     `json:"gone,omitempty"` // the alert was deleted before or during the run
	IndicatorCount   int      `json:"indicator_count"`
	NewLinks         int      `json:"new_links"`
	RuleUUID         string   `json:"rule_uuid,omitempty"`
	EnrichmentStatus string   `json:"enrichment_status"`
	Succeeded        []string `json:"providers_succeeded"`
	Failed           []string `json:"providers_failed"`
	Malice           string   `json:"malice"`
	CaseUUID         string   `json:"case_uuid,omitempty"` // the case the finish grouped the alert into (version 4 on)
}

// pipelineLocalAttempts bounds the attempts of each pipeline step (about 10 minutes of backoff).
const pipelineLocalAttempts = 25

// pipelineLocalOptions: short database steps run as local activities (no workflow task, no
// history round trip of their own), retried with backoff, never on a typed non-retryable error.
func pipelineLocalOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		// A database restart of a few minutes delays the pipeline; it does not fail it.
		ScheduleToCloseTimeout: 15 * time.Minute,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    500 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    pipelineLocalAttempts,
			NonRetryableErrorTypes: []string{activities.ErrTypeAlertNotFound, activities.ErrTypePipelineNotConfigured,
				activities.ErrTypePipelineBadInput},
		},
	}
}

func alertGone(err error) bool {
	var appErr *sdktemporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeAlertNotFound
}

// AlertPipeline takes one ingested alert to Enriched (or Failed): extract indicators (3 passes) →
// upsert and link them and associate the detection rule (stub when unknown), in one commit → enrich
// every indicator with every configured provider in parallel (EnrichIndicators) → compute malice →
// mark the alert and record the event. Every step is idempotent, so a re-run (POST /v1/alerts/{uuid}/enrich) or a
// worker restart mid-run never duplicates indicators, links or events.
func AlertPipeline(ctx workflow.Context, in AlertPipelineInput) (AlertPipelineResult, error) {
	var a *activities.Activities
	res := AlertPipelineResult{AlertUUID: in.AlertUUID, Succeeded: []string{}, Failed: []string{}}
	lctx := workflow.WithLocalActivityOptions(ctx, pipelineLocalOptions())
	if in.Version >= 3 {
		return alertPipelinePrepared(ctx, lctx, in, res)
	}

	var ext activities.PipelineExtraction
	if err := workflow.ExecuteLocalActivity(lctx, a.PipelineExtract, activities.PipelineInput{AlertUUID: in.AlertUUID}).Get(lctx, &ext); err != nil {
		if alertGone(err) {
			res.Gone = true
			return res, nil
		}
		return res, fmt.Errorf("extract indicators: %w", err)
	}
	if in.Version < 1 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.AlertUUID.ValueSet(in.AlertUUID),
			searchattr.Source.ValueSet(ext.SourceName), searchattr.Severity.ValueSet(ext.Severity)); err != nil {
			return res, fmt.Errorf("upsert search attributes: %w", err)
		}
	}

	ruleInLink := in.Version >= 1
	var link activities.PipelineLinkResult
	linkIn := activities.PipelineLinkInput{AlertUUID: in.AlertUUID, Indicators: ext.Indicators}
	if ruleInLink {
		linkIn.SourceName, linkIn.RuleRef = ext.SourceName, ext.RuleRef
	}
	if err := workflow.ExecuteLocalActivity(lctx, a.PipelineLink, linkIn).Get(lctx, &link); err != nil {
		if alertGone(err) {
			res.Gone = true
			return res, nil
		}
		return res, fmt.Errorf("link indicators and rule: %w", err)
	}
	res.IndicatorCount, res.NewLinks, res.RuleUUID = len(link.IndicatorUUIDs), link.NewLinks, link.RuleUUID

	if !ruleInLink && ext.RuleRef != nil && ext.RuleRef.SourceRuleID != "" {
		in := activities.PipelineRuleInput{AlertUUID: in.AlertUUID, SourceName: ext.SourceName, RuleRef: *ext.RuleRef}
		if err := workflow.ExecuteLocalActivity(lctx, a.PipelineRule, in).Get(lctx, &res.RuleUUID); err != nil {
			if alertGone(err) {
				res.Gone = true
				return res, nil
			}
			return res, fmt.Errorf("associate detection rule: %w", err)
		}
	}

	status, enrichErr := store.EnrichmentEnriched, ""
	if len(link.IndicatorUUIDs) > 0 {
		er, err := EnrichIndicators(ctx, EnrichIndicatorsInput{IndicatorUUIDs: link.IndicatorUUIDs, StepQueue: in.StepQueue,
			LocalSteps: in.Version >= 2})
		if err != nil {
			status, enrichErr = store.EnrichmentFailed, err.Error()
		} else {
			res.Succeeded, res.Failed = providerOutcomes(er.Outcomes)
			status, enrichErr = finishedStatus(in.Version, res)
		}
	}

	return finishPipeline(ctx, lctx, in, res, status, enrichErr)
}

// alertPipelinePrepared is AlertPipeline from version 3: one local activity extracts, links and plans
// (PipelinePrepare), the planned calls run as in version 2 (enrichPlanned), then the finish.
func alertPipelinePrepared(ctx, lctx workflow.Context, in AlertPipelineInput, res AlertPipelineResult) (AlertPipelineResult, error) {
	var a *activities.Activities
	var prep activities.PipelinePrepared
	if err := workflow.ExecuteLocalActivity(lctx, a.PipelinePrepare, activities.PipelineInput{AlertUUID: in.AlertUUID}).Get(lctx, &prep); err != nil {
		if alertGone(err) {
			res.Gone = true
			return res, nil
		}
		return res, fmt.Errorf("extract, link and plan: %w", err)
	}
	res.IndicatorCount, res.NewLinks, res.RuleUUID = len(prep.Link.IndicatorUUIDs), prep.Link.NewLinks, prep.Link.RuleUUID
	status, enrichErr := store.EnrichmentEnriched, ""
	switch {
	case prep.PlanError != "":
		status, enrichErr = store.EnrichmentFailed, "enrichment plan: "+prep.PlanError
	case len(prep.Plan.Targets) > 0:
		er, err := enrichPlanned(ctx, EnrichIndicatorsInput{IndicatorUUIDs: prep.Link.IndicatorUUIDs, StepQueue: in.StepQueue, LocalSteps: true}, prep.Plan)
		if err != nil {
			status, enrichErr = store.EnrichmentFailed, err.Error()
		} else {
			res.Succeeded, res.Failed = providerOutcomes(er.Outcomes)
			status, enrichErr = finishedStatus(in.Version, res)
		}
	}
	return finishPipeline(ctx, lctx, in, res, status, enrichErr)
}

// finishedStatus is the enrichment status of a pipeline whose provider calls ran: Enriched, and before
// version 5 Failed when every call failed (API.md §7 keeps Failed for a pipeline that could not finish).
func finishedStatus(version int, res AlertPipelineResult) (status, enrichErr string) {
	if version < 5 && len(res.Failed) > 0 && len(res.Succeeded) == 0 {
		return store.EnrichmentFailed, "every provider call failed"
	}
	return store.EnrichmentEnriched, ""
}

// finishPipeline runs PipelineFinish (every version's last step) and completes the result.
func finishPipeline(ctx, lctx workflow.Context, in AlertPipelineInput, res AlertPipelineResult, status, enrichErr string) (AlertPipelineResult, error) {
	var a *activities.Activities
	var fin activities.PipelineFinishResult
	finIn := activities.PipelineFinishInput{AlertUUID: in.AlertUUID, TemporalRunID: workflow.GetInfo(ctx).WorkflowExecution.RunID,
		Status: status, Succeeded: res.Succeeded, Failed: res.Failed, Error: enrichErr, Group: in.Version >= 4}
	if err := workflow.ExecuteLocalActivity(lctx, a.PipelineFinish, finIn).Get(lctx, &fin); err != nil {
		if alertGone(err) {
			res.Gone = true
			return res, nil
		}
		return res, fmt.Errorf("finish pipeline: %w", err)
	}
	res.EnrichmentStatus, res.Malice, res.CaseUUID = status, fin.Malice, fin.CaseUUID
	return res, nil
}

// providerOutcomes returns the sorted, distinct providers that succeeded (or were served from the
// cache) and those that failed; skipped calls count as neither.
func providerOutcomes(outcomes []enrichment.Outcome) (succeeded, failed []string) {
	succeeded, failed = []string{}, []string{}
	for _, o := range outcomes {
		switch o.Result.Status {
		case store.EnrichSuccess:
			if !slices.Contains(succeeded, o.Result.Provider) {
				succeeded = append(succeeded, o.Result.Provider)
			}
		case store.EnrichFailed:
			if !slices.Contains(failed, o.Result.Provider) {
				failed = append(failed, o.Result.Provider)
			}
		}
	}
	slices.Sort(succeeded)
	slices.Sort(failed)
	return succeeded, failed
}
