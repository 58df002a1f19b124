package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// PipelineStore is what the alert pipeline's activities need.
type PipelineStore interface {
	GetAlert(ctx context.Context, id uuid.UUID) (store.Alert, error)
	ActiveMappings(ctx context.Context, sourceName string) ([]indicators.Mapping, error)
	// Exclusions is the never-indicator list, parsed (ingest.ExclusionCache).
	Exclusions(ctx context.Context) (*indicators.Exclusions, error)
	LinkExtraction(ctx context.Context, alertID uuid.UUID, links store.ExtractionLinks, source, sourceName string, rule *store.RuleReference) (store.Linked, error)
	// FinishEnrichment is the finish's store (cases.FinishStore): cases.Grouping decides the grouping.
	cases.FinishStore
}

// Error types of the pipeline activities (non-retryable).
const (
	ErrTypeAlertNotFound         = "AlertNotFound"
	ErrTypePipelineNotConfigured = "PipelineNotConfigured"
	ErrTypePipelineBadInput      = "PipelineBadInput"
)

// PipelineInput names the alert a pipeline step works on.
type PipelineInput struct {
	AlertUUID string `json:"alert_uuid"`
}

// PipelineExtraction is what extraction found: the alert's routing fields and the merged,
// normalized indicators of the four passes (at most Activities.MaxIndicatorsPerAlert), where each
// was found and the notes for the alert (the cap, pass 4's budget).
type PipelineExtraction struct {
	SourceName  string                 `json:"source_name"`
	Severity    string                 `json:"severity"`
	RuleRef     *store.RuleReference   `json:"rule_ref,omitempty"`
	Indicators  []indicators.Indicator `json:"indicators"`
	ExtractedBy [][]indicators.Origin  `json:"extracted_by,omitempty"` // parallel to Indicators
	Notes       []store.Note           `json:"notes,omitempty"`
	PassCounts  [3]int                 `json:"pass_counts"`
	Pass4Count  int                    `json:"pass4_count,omitempty"`
	Skipped     int                    `json:"skipped"`
	Truncated   bool                   `json:"truncated,omitempty"`
}

// PipelineLinkInput links extracted indicators, and the source rule when there is a reference, to
// the alert.
type PipelineLinkInput struct {
	AlertUUID   string                 `json:"alert_uuid"`
	Indicators  []indicators.Indicator `json:"indicators"`
	ExtractedBy [][]indicators.Origin  `json:"extracted_by,omitempty"` // parallel to Indicators
	Notes       []store.Note           `json:"notes,omitempty"`
	SourceName  string                 `json:"source_name,omitempty"`
	RuleRef     *store.RuleReference   `json:"rule_ref,omitempty"`
}

// PipelineLinkResult lists the linked indicators' uuids (input order), how many links are new and
// the associated rule's uuid ("" without a rule reference).
type PipelineLinkResult struct {
	IndicatorUUIDs []string `json:"indicator_uuids"`
	NewLinks       int      `json:"new_links"`
	RuleUUID       string   `json:"rule_uuid,omitempty"`
}

// PipelineFinishInput records the pipeline's outcome.
type PipelineFinishInput struct {
	AlertUUID     string   `json:"alert_uuid"`
	TemporalRunID string   `json:"run_id"` // the pipeline execution's Temporal run id, not a workflow run
	Status        string   `json:"status"` // Enriched or Failed
	Succeeded     []string `json:"succeeded,omitempty"`
	Failed        []string `json:"failed,omitempty"`
	Error         string   `json:"error,omitempty"`
	// Group (pipeline version 4 on): the finish puts the alert into the open case it shares a
	// Malicious or Suspicious indicator with, within the worker's CaseGroupingWindow. Before
	// version 4 the finish grouped nothing, and a run of an older version still groups nothing.
	Group bool `json:"group,omitempty"`
}

// PipelineFinishResult is the alert's effective malice after enrichment and, when this finish
// grouped it, the case it joined.
type PipelineFinishResult struct {
	Malice   string `json:"malice"`
	CaseUUID string `json:"case_uuid,omitempty"`
}

func (a *Activities) pipeline() (PipelineStore, error) {
	if a.Pipeline == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("the alert pipeline is not configured on this worker", ErrTypePipelineNotConfigured, nil)
	}
	return a.Pipeline, nil
}

func parseAlertUUID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, sdktemporal.NewNonRetryableApplicationError("invalid alert uuid "+s, ErrTypePipelineBadInput, err)
	}
	return id, nil
}

func alertErr(id uuid.UUID, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return sdktemporal.NewNonRetryableApplicationError("alert "+id.String()+" not found", ErrTypeAlertNotFound, err)
	}
	return err
}

// PipelineExtract (local activity) runs the four extraction passes over the stored alert: pass 1
// from the plugin output kept at ingest, pass 2 (mappings over the normalized fields), pass 3
// (mappings over the raw payload, with array fan-out) and pass 4 (the bounded scan of every string
// of the raw payload), with the never-indicator list, and keeps at most MaxIndicatorsPerAlert.
// Pure reads: safe to retry.
func (a *Activities) PipelineExtract(ctx context.Context, in PipelineInput) (PipelineExtraction, error) {
	st, err := a.pipeline()
	if err != nil {
		return PipelineExtraction{}, err
	}
	id, err := parseAlertUUID(in.AlertUUID)
	if err != nil {
		return PipelineExtraction{}, err
	}
	alert, err := st.GetAlert(ctx, id)
	if err != nil {
		return PipelineExtraction{}, alertErr(id, fmt.Errorf("load alert: %w", err))
	}
	mappings, err := st.ActiveMappings(ctx, alert.SourceName)
	if err != nil {
		return PipelineExtraction{}, fmt.Errorf("load indicator mappings: %w", err)
	}
	pass1 := make([]indicators.Indicator, len(alert.Normalized.Indicators))
	for i, p := range alert.Normalized.Indicators {
		pass1[i] = indicators.Indicator{Type: indicators.Type(p.Type), Value: p.Value}
	}
	excl, err := st.Exclusions(ctx)
	if err != nil {
		return PipelineExtraction{}, fmt.Errorf("load extraction exclusions: %w", err)
	}
	res := indicators.ExtractForPipeline(alert.Normalized.Fields, alert.RawPayload, alert.SourceName, pass1, mappings, excl)
	if len(res.Skipped) > 0 {
		activity.GetLogger(ctx).Info("extraction skipped values", "alert_uuid", id.String(), "skipped", len(res.Skipped)+res.SkippedOmitted)
	}
	inds, by, notes := capIndicators(res, a.MaxIndicatorsPerAlert)
	return PipelineExtraction{SourceName: alert.SourceName, Severity: alert.Severity, RuleRef: alert.Normalized.RuleRef,
		Indicators: inds, ExtractedBy: by, Notes: notes, PassCounts: [3]int{len(res.Pass1), len(res.Pass2), len(res.Pass3)},
		Pass4Count: len(res.Pass4), Skipped: len(res.Skipped) + res.SkippedOmitted, Truncated: res.Truncated}, nil
}

// capIndicators keeps the first max indicators of res (pass order: the plugin's first) and says in
// a normalization note (field "indicators") when more were found or pass 4 stopped at its budget.
func capIndicators(res indicators.ExtractionResult, max int) ([]indicators.Indicator, [][]indicators.Origin, []store.Note) {
	if max <= 0 || max > indicators.MaxExtracted {
		max = indicators.MaxExtracted
	}
	inds, by := res.Indicators, res.ExtractedBy
	var notes []store.Note
	switch {
	case len(inds) > max:
		more := fmt.Sprintf("%d", len(inds))
		if res.Truncated {
			more = "more than " + more
		}
		notes = append(notes, store.Note{Field: "indicators", Note: fmt.Sprintf(
			"%s indicators found; the first %d in pass order are linked (MAX_INDICATORS_PER_ALERT)", more, max)})
		inds, by = inds[:max], by[:max]
	case res.Truncated:
		notes = append(notes, store.Note{Field: "indicators", Note: fmt.Sprintf(
			"more than %d indicators found; the first %d in pass order are linked", indicators.MaxExtracted, len(inds))})
	case res.Scan.Stopped != "":
		notes = append(notes, store.Note{Field: "indicators", Note: "pass 4 scanned part of the payload: " + res.Scan.Stopped})
	}
	return inds, by, notes
}

// PipelineLink (local activity) upserts the indicators globally on (type, value), links them to
// the alert and associates the alert with its source rule (a stub when the rule is unknown), in one
// transaction. Idempotent: a retry or a re-run adds nothing twice.
func (a *Activities) PipelineLink(ctx context.Context, in PipelineLinkInput) (PipelineLinkResult, error) {
	st, err := a.pipeline()
	if err != nil {
		return PipelineLinkResult{}, err
	}
	id, err := parseAlertUUID(in.AlertUUID)
	if err != nil {
		return PipelineLinkResult{}, err
	}
	keys := make([]store.IndicatorKey, len(in.Indicators))
	for i, ind := range in.Indicators {
		keys[i] = store.IndicatorKey{Type: string(ind.Type), Value: ind.Value}
	}
	l, err := st.LinkExtraction(ctx, id, store.ExtractionLinks{Keys: keys, ExtractedBy: in.ExtractedBy, Notes: in.Notes},
		"extraction", in.SourceName, in.RuleRef)
	if err != nil {
		return PipelineLinkResult{}, alertErr(id, err)
	}
	out := PipelineLinkResult{IndicatorUUIDs: make([]string, len(l.Indicators)), NewLinks: l.NewLinks}
	for i, ind := range l.Indicators {
		out.IndicatorUUIDs[i] = ind.UUID.String()
	}
	if l.RuleUUID != uuid.Nil {
		out.RuleUUID = l.RuleUUID.String()
	}
	return out, nil
}

// PipelinePrepared is what PipelinePrepare did: the link (indicator uuids in extraction order, new
// links, the rule) and the enrichment plan of the linked indicators.
type PipelinePrepared struct {
	Link PipelineLinkResult `json:"link"`
	Plan enrichment.Plan    `json:"plan"`
	// PlanError is a planning failure that no retry can fix (a non-retryable error of the engine):
	// the pipeline finishes Failed with it, as a failed EnrichPlan step did before version 3.
	PlanError string `json:"plan_error,omitempty"`
}

// PipelinePrepare (local activity, pipeline version 3) is PipelineExtract, PipelineLink (with the
// rule) and EnrichPlan of the linked indicators in one step: one marker and one local-activity round
// trip instead of three (issue 26, CPU per alert). Each part is idempotent (reads, the link's upserts
// with ON CONFLICT DO NOTHING), so a retry of the whole step adds nothing twice. A transient failure
// of any part fails the step, retried with the pipeline's backoff; an alert deleted meanwhile is
// AlertNotFound, as in the separate steps.
func (a *Activities) PipelinePrepare(ctx context.Context, in PipelineInput) (PipelinePrepared, error) {
	ext, err := a.PipelineExtract(ctx, in)
	if err != nil {
		return PipelinePrepared{}, err
	}
	link, err := a.PipelineLink(ctx, PipelineLinkInput{AlertUUID: in.AlertUUID, Indicators: ext.Indicators,
		ExtractedBy: ext.ExtractedBy, Notes: ext.Notes, SourceName: ext.SourceName, RuleRef: ext.RuleRef})
	if err != nil {
		return PipelinePrepared{}, err
	}
	out := PipelinePrepared{Link: link, Plan: enrichment.Plan{Targets: []enrichment.Target{}}}
	if len(link.IndicatorUUIDs) == 0 {
		return out, nil
	}
	plan, err := a.EnrichPlan(ctx, enrichment.PlanInput{IndicatorUUIDs: link.IndicatorUUIDs})
	var appErr *sdktemporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.NonRetryable():
		out.PlanError = err.Error()
	case err != nil:
		return PipelinePrepared{}, fmt.Errorf("enrichment plan: %w", err)
	default:
		out.Plan = plan
	}
	return out, nil
}

// PipelineRuleInput associates the alert with its source rule (PipelineRule).
type PipelineRuleInput struct {
	AlertUUID  string              `json:"alert_uuid"`
	SourceName string              `json:"source_name"`
	RuleRef    store.RuleReference `json:"rule_ref"`
}

// PipelineRule (local activity) associates the alert with its source rule in a step of its own, as
// pipelines started before PipelineLink took the rule over still do. It returns the rule's uuid.
func (a *Activities) PipelineRule(ctx context.Context, in PipelineRuleInput) (string, error) {
	res, err := a.PipelineLink(ctx, PipelineLinkInput{AlertUUID: in.AlertUUID, SourceName: in.SourceName, RuleRef: &in.RuleRef})
	return res.RuleUUID, err
}

// PipelineFinish (local activity) marks the alert Enriched or Failed with enriched_at, records the
// alert_enriched / alert_enrichment_failed event once per run, and returns the alert's malice.
func (a *Activities) PipelineFinish(ctx context.Context, in PipelineFinishInput) (PipelineFinishResult, error) {
	st, err := a.pipeline()
	if err != nil {
		return PipelineFinishResult{}, err
	}
	id, err := parseAlertUUID(in.AlertUUID)
	if err != nil {
		return PipelineFinishResult{}, err
	}
	if in.Status != store.EnrichmentEnriched && in.Status != store.EnrichmentFailed {
		return PipelineFinishResult{}, sdktemporal.NewNonRetryableApplicationError("invalid enrichment status "+in.Status, ErrTypePipelineBadInput, nil)
	}
	// The event is built from the verdict inputs the finish reads in its own transaction (one
	// statement less per alert than reading them first, issue 26).
	var malice string
	event := func(override *string, malices []string) store.ActivityEvent {
		malice = string(indicators.AlertMalice(override, malices))
		ev := store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow, References: map[string]any{
			"workflow_id": ids.Alert(id), "indicator_count": len(malices), "malice": malice,
			"providers_succeeded": pipelineList(in.Succeeded), "providers_failed": pipelineList(in.Failed),
		}}
		if in.Status == store.EnrichmentFailed {
			ev.EventType = "alert_enrichment_failed"
			if in.Error != "" {
				ev.References["error"] = pipelineTruncate(in.Error, 1000)
			}
		}
		return ev
	}
	// Parked with the alert's finish: a failed provider's alerts are re-run once it answers again
	// (temporal.CircuitHealer). The grouping is the case rules' (cases.Grouping), decided in the
	// finish's transaction.
	var grouping cases.Grouping
	if in.Group {
		grouping.Window = a.CaseGroupingWindow
	}
	fin, err := grouping.FinishEnrichment(ctx, st, id, in.Status, in.TemporalRunID, in.Failed, event)
	if err != nil {
		return PipelineFinishResult{}, alertErr(id, err)
	}
	if fin.First && a.Freshness != nil {
		// The alert's first pipeline: its 202 to its finish (a re-run's lag would say nothing of it).
		a.Freshness.AlertEnriched(fin.EnrichedAt.Sub(fin.IngestedAt))
	}
	out := PipelineFinishResult{Malice: malice}
	if fin.GroupedInto != uuid.Nil {
		out.CaseUUID = fin.GroupedInto.String()
	}
	return out, nil
}

func pipelineList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func pipelineTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
