package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// MetricsStore is what the metrics routes need.
type MetricsStore interface {
	AlertMetrics(ctx context.Context, f store.AlertMetricsFilter) (store.AlertMetrics, error)
	WorkflowMetrics(ctx context.Context, w store.MetricsWindow) (store.WorkflowMetrics, error)
	MetricsSummary(ctx context.Context, w store.MetricsWindow, env store.Env) (store.MetricsSummary, error)
}

func (s *Server) metricsRoutes() {
	const tag = "Metrics"
	s.add(route{Method: http.MethodGet, Path: "/v1/metrics/alerts", Tag: tag, Summary: "Alert metrics",
		Description: "Over the alerts whose created_at is in [from_time, to_time) (default: the last 30 days; at most 366 days), " +
			"narrowed by the optional filters. Seconds are numbers, rates are 0..1, and a figure with nothing to measure is null. " +
			"A window without alerts answers zeros and nulls.",
		Scopes: []string{auth.ScopeAlertsRead}, Query: alertMetricsQuery{}, Response: alertMetricsResponse{}}, s.alertMetrics)
	s.add(route{Method: http.MethodGet, Path: "/v1/metrics/workflows", Tag: tag, Summary: "Workflow run and approval metrics",
		Description: "Over the workflow runs and approval requests whose created_at is in [from_time, to_time) (default: the last " +
			"30 days; at most 366 days).",
		Scopes: []string{auth.ScopeWorkflowsRead}, Query: MetricsWindowQuery{}, Response: workflowMetricsResponse{}}, s.workflowMetrics)
	s.add(route{Method: http.MethodGet, Path: "/v1/metrics/summary", Tag: tag, Summary: "Dashboard summary",
		Description: "The first screen of a dashboard in one object: alert, workflow, approval and platform figures over " +
			"[from_time, to_time) (default: the last 30 days), computed as in /v1/metrics/alerts and /v1/metrics/workflows.",
		Scopes: []string{auth.ScopeAlertsRead}, Query: MetricsWindowQuery{}, Response: metricsSummaryResponse{}}, s.metricsSummary)
}

// MetricsWindowQuery is the from_time/to_time pair of every metrics route (the per-rule metrics too):
// one owner of the defaults and bounds.
type MetricsWindowQuery struct {
	FromTime *time.Time `query:"from_time" doc:"Inclusive start, RFC 3339 with offset. Default: to_time minus 30 days."`
	ToTime   *time.Time `query:"to_time" doc:"Exclusive end, RFC 3339 with offset. Default: now."`
}

// window resolves the defaults against now and answers 422 for an empty, inverted or too long window.
func (q MetricsWindowQuery) window(now time.Time) (store.MetricsWindow, error) {
	w, ok := store.NewMetricsWindow(q.FromTime, q.ToTime, now)
	if ok {
		return w, nil
	}
	var errs validate.Errors
	from, to := w.From.Format(time.RFC3339Nano), w.To.Format(time.RFC3339Nano)
	if !w.From.Before(w.To) {
		errs.AddCtx([]any{"query", "from_time"}, validate.TypeValue, "from_time must be before to_time.", from, map[string]any{"to_time": to})
	} else {
		maxDays := int(store.MaxMetricsRange / (24 * time.Hour))
		errs.AddCtx([]any{"query", "from_time"}, validate.TypeValue, "The window from from_time to to_time is at most 366 days.",
			from, map[string]any{"max_days": maxDays})
	}
	return w, errs
}

// windowedQuery is a query struct embedding MetricsWindowQuery (passed as a pointer).
type windowedQuery interface {
	window(now time.Time) (store.MetricsWindow, error)
}

// bindWindow binds the query string into q and resolves its window.
func bindWindow(c *fiber.Ctx, q windowedQuery) (store.MetricsWindow, error) {
	if err := bindQuery(c, q); err != nil {
		return store.MetricsWindow{}, err
	}
	return q.window(time.Now())
}

type alertMetricsQuery struct {
	MetricsWindowQuery
	SourceName        *string    `query:"source_name" maxLength:"100" doc:"Only alerts of this source (exact)."`
	Severity          []string   `query:"severity" enum:"$severity" doc:"Only alerts of these severities; any of."`
	DetectionRuleUUID *uuid.UUID `query:"detection_rule_uuid" doc:"Only alerts of this detection rule (an unknown rule matches no alert)."`
}

// Validate refuses text the database cannot hold.
func (q alertMetricsQuery) Validate() validate.Errors {
	var errs validate.Errors
	if q.SourceName != nil {
		errs.Text([]any{"source_name"}, *q.SourceName)
	}
	return errs
}

type timeBucketResponse struct {
	Start time.Time `json:"start" doc:"Start of the bucket (UTC); the bucket lasts one hour or one day (see bucket)."`
	Count int       `json:"count"`
}

func timeBuckets(in []store.TimeBucket) []timeBucketResponse {
	out := make([]timeBucketResponse, len(in))
	for i, b := range in {
		out[i] = timeBucketResponse{Start: b.Start, Count: b.Count}
	}
	return out
}

type timingResponse struct {
	MeanSeconds *float64 `json:"mean_seconds" doc:"Mean; null when no alert qualifies."`
	P50Seconds  *float64 `json:"p50_seconds" doc:"Median (continuous percentile); null when no alert qualifies."`
	P90Seconds  *float64 `json:"p90_seconds" doc:"90th percentile (continuous); null when no alert qualifies."`
}

func timing(t store.Timing) timingResponse {
	return timingResponse{MeanSeconds: t.Mean, P50Seconds: t.P50, P90Seconds: t.P90}
}

type enrichmentCoverageResponse struct {
	AlertsWithIndicators int      `json:"alerts_with_indicators" doc:"Alerts linked to at least one indicator."`
	FullyEnrichedAlerts  int      `json:"fully_enriched_alerts" doc:"Of those, alerts whose every indicator is enriched."`
	Coverage             *float64 `json:"coverage" doc:"fully_enriched_alerts / alerts_with_indicators; null when no alert has an indicator."`
}

type ruleOutcomeResponse struct {
	UUID              uuid.UUID `json:"uuid" doc:"The detection rule."`
	Name              string    `json:"name"`
	AlertCount        int       `json:"alert_count" doc:"Its alerts in the window (with the filters)."`
	ClosedAlerts      int       `json:"closed_alerts"`
	FalsePositiveRate *float64  `json:"false_positive_rate" doc:"Closed as False Positive… / closed; null when none is closed."`
}

type alertMetricsResponse struct {
	FromTime               time.Time                  `json:"from_time" doc:"Inclusive start of the window (on created_at)."`
	ToTime                 time.Time                  `json:"to_time" doc:"Exclusive end of the window."`
	Bucket                 string                     `json:"bucket" enum:"hour,day" doc:"Granularity of alerts_over_time: hour for windows up to 48 hours, else day (UTC)."`
	TotalAlerts            int                        `json:"total_alerts"`
	AlertsByStatus         map[string]int             `json:"alerts_by_status" doc:"Every status, zeros included."`
	AlertsBySeverity       map[string]int             `json:"alerts_by_severity" doc:"Every severity, zeros included."`
	AlertsBySource         map[string]int             `json:"alerts_by_source" doc:"Each source_name with alerts in the window."`
	ActiveAlertsBySeverity map[string]int             `json:"active_alerts_by_severity" doc:"The window's alerts not Closed (now), per severity, zeros included."`
	ClosedAlerts           int                        `json:"closed_alerts"`
	FalsePositiveRate      *float64                   `json:"false_positive_rate" doc:"Closed alerts whose classification starts with \"False Positive\" / closed alerts; null when none is closed."`
	TruePositiveRate       *float64                   `json:"true_positive_rate" doc:"Closed alerts whose classification starts with \"True Positive\" / closed alerts; null when none is closed."`
	AlertsOverTime         []timeBucketResponse       `json:"alerts_over_time" doc:"One entry per bucket of the window, zeros included."`
	TimeToDetect           timingResponse             `json:"time_to_detect" doc:"created_at − occurred_at, over every alert."`
	TimeToAcknowledge      timingResponse             `json:"time_to_acknowledge" doc:"acknowledged_at (first time it left Open) − ingested_at, over acknowledged alerts (MTTA = mean)."`
	TimeToTriage           timingResponse             `json:"time_to_triage" doc:"triaged_at (first time it entered Triaging) − ingested_at, over alerts that were triaged."`
	TimeToClose            timingResponse             `json:"time_to_close" doc:"closed_at − ingested_at, over Closed alerts (MTTC = mean)."`
	TimeToEnrich           timingResponse             `json:"time_to_enrich" doc:"enriched_at (pipeline finished) − ingested_at, over alerts with enriched_at."`
	EnrichmentCoverage     enrichmentCoverageResponse `json:"enrichment_coverage"`
	TopDetectionRules      []ruleOutcomeResponse      `json:"top_detection_rules" doc:"Up to 10 rules with the most alerts in the window, most first (ties by name)."`
}

func (s *Server) alertMetrics(c *fiber.Ctx) error {
	var q alertMetricsQuery
	w, err := bindWindow(c, &q)
	if err != nil {
		return err
	}
	m, err := s.deps.Metrics.AlertMetrics(c.UserContext(), store.AlertMetricsFilter{Window: w, SourceName: q.SourceName,
		Severities: q.Severity, DetectionRuleUUID: q.DetectionRuleUUID})
	if err != nil {
		return err
	}
	out := alertMetricsResponse{FromTime: m.Window.From, ToTime: m.Window.To, Bucket: m.Bucket, TotalAlerts: m.Total,
		AlertsByStatus: m.ByStatus, AlertsBySeverity: m.BySeverity, AlertsBySource: m.BySource, ActiveAlertsBySeverity: m.ActiveBySeverity,
		ClosedAlerts: m.Outcomes.Closed, FalsePositiveRate: m.FalsePositiveRate, TruePositiveRate: m.TruePositiveRate,
		AlertsOverTime: timeBuckets(m.AlertsOverTime), TimeToDetect: timing(m.Timings.Detect), TimeToAcknowledge: timing(m.Timings.Acknowledge),
		TimeToTriage: timing(m.Timings.Triage), TimeToClose: timing(m.Timings.Close), TimeToEnrich: timing(m.Timings.Enrich),
		EnrichmentCoverage: enrichmentCoverageResponse{AlertsWithIndicators: m.Enrichment.AlertsWithIndicators,
			FullyEnrichedAlerts: m.Enrichment.FullyEnriched, Coverage: m.Enrichment.Coverage},
		TopDetectionRules: make([]ruleOutcomeResponse, len(m.TopRules))}
	for i, r := range m.TopRules {
		out.TopDetectionRules[i] = ruleOutcomeResponse{UUID: r.UUID, Name: r.Name, AlertCount: r.Alerts, ClosedAlerts: r.Closed,
			FalsePositiveRate: r.FalsePositiveRate}
	}
	return respond(c, http.StatusOK, out)
}

type workflowRunCountResponse struct {
	WorkflowUUID   uuid.UUID `json:"workflow_uuid"`
	Name           string    `json:"name"`
	RunCount       int       `json:"run_count" doc:"Its runs in the window."`
	SucceededRuns  int       `json:"succeeded_runs"`
	TimeSavedHours float64   `json:"time_saved_hours" doc:"Its time_saved_minutes × succeeded_runs / 60."`
}

type approvalMetricsResponse struct {
	Total                 int                       `json:"total" doc:"Approval requests created in the window."`
	Pending               int                       `json:"pending" doc:"Still pending and not past expires_at."`
	Approved              int                       `json:"approved"`
	Rejected              int                       `json:"rejected"`
	Expired               int                       `json:"expired" doc:"Expired, or pending past expires_at (no longer decidable)."`
	Cancelled             int                       `json:"cancelled"`
	MedianResponseSeconds *float64                  `json:"median_response_seconds" doc:"Median seconds from the request's creation to the decision that approved or rejected it; null when none was decided."`
	ByTriggerSource       map[string]map[string]int `json:"by_trigger_source" doc:"Requests per trigger_source (human, agent), each per outcome (pending, approved, rejected, expired, cancelled), zeros included."`
}

type workflowMetricsResponse struct {
	FromTime       time.Time                  `json:"from_time" doc:"Inclusive start of the window (on created_at of runs and approval requests)."`
	ToTime         time.Time                  `json:"to_time" doc:"Exclusive end of the window."`
	Bucket         string                     `json:"bucket" enum:"hour,day" doc:"Granularity of runs_over_time: hour for windows up to 48 hours, else day (UTC)."`
	TotalRuns      int                        `json:"total_runs"`
	RunsByStatus   map[string]int             `json:"runs_by_status" doc:"Every run status, zeros included."`
	RunsByTrigger  map[string]int             `json:"runs_by_trigger_source" doc:"human and agent, zeros included."`
	SuccessRate    *float64                   `json:"success_rate" doc:"succeeded / (succeeded + failed + timed_out): the runs that executed to an end; null when none did."`
	RunsOverTime   []timeBucketResponse       `json:"runs_over_time" doc:"One entry per bucket of the window, zeros included."`
	TimeSavedHours float64                    `json:"time_saved_hours" doc:"Σ over succeeded runs of their workflow's time_saved_minutes (unset counts 0), in hours."`
	MostExecuted   []workflowRunCountResponse `json:"most_executed" doc:"Up to 10 workflows with the most runs in the window, most first (ties by name)."`
	Approvals      approvalMetricsResponse    `json:"approvals"`
}

func (s *Server) workflowMetrics(c *fiber.Ctx) error {
	var q MetricsWindowQuery
	w, err := bindWindow(c, &q)
	if err != nil {
		return err
	}
	m, err := s.deps.Metrics.WorkflowMetrics(c.UserContext(), w)
	if err != nil {
		return err
	}
	out := workflowMetricsResponse{FromTime: m.Window.From, ToTime: m.Window.To, Bucket: m.Bucket, TotalRuns: m.Runs.Total,
		RunsByStatus: m.Runs.ByStatus, RunsByTrigger: m.Runs.ByTriggerSource, SuccessRate: m.Runs.SuccessRate(),
		RunsOverTime: timeBuckets(m.RunsOverTime), TimeSavedHours: m.Runs.TimeSavedHours(),
		MostExecuted: make([]workflowRunCountResponse, len(m.MostExecuted)), Approvals: approvalMetrics(m.Approvals)}
	for i, r := range m.MostExecuted {
		out.MostExecuted[i] = workflowRunCountResponse(r)
	}
	return respond(c, http.StatusOK, out)
}

func approvalMetrics(a store.ApprovalCounts) approvalMetricsResponse {
	return approvalMetricsResponse{Total: a.Total, Pending: a.ByStatus[store.ApprovalPending], Approved: a.ByStatus[store.ApprovalApproved],
		Rejected: a.ByStatus[store.ApprovalRejected], Expired: a.ByStatus[store.ApprovalExpired], Cancelled: a.ByStatus[store.ApprovalCancelled],
		MedianResponseSeconds: a.MedianResponseSeconds, ByTriggerSource: a.ByTriggerSource}
}

type summaryAlertsResponse struct {
	Total             int            `json:"total" doc:"Alerts created in the window."`
	Open              int            `json:"open" doc:"Of those, not Closed."`
	OpenBySeverity    map[string]int `json:"open_by_severity" doc:"Not Closed, per severity, zeros included."`
	MTTASeconds       *float64       `json:"mtta_seconds" doc:"Mean time to acknowledge (as time_to_acknowledge.mean_seconds in /v1/metrics/alerts)."`
	MTTCSeconds       *float64       `json:"mttc_seconds" doc:"Mean time to close (as time_to_close.mean_seconds in /v1/metrics/alerts)."`
	FalsePositiveRate *float64       `json:"false_positive_rate" doc:"As in /v1/metrics/alerts; null when none is closed."`
}

type summaryWorkflowsResponse struct {
	Runs           int      `json:"runs" doc:"Workflow runs created in the window."`
	SuccessRate    *float64 `json:"success_rate" doc:"As in /v1/metrics/workflows; null when no run executed to an end."`
	TimeSavedHours float64  `json:"time_saved_hours" doc:"As in /v1/metrics/workflows."`
}

type summaryApprovalsResponse struct {
	Pending int `json:"pending" doc:"Approval requests created in the window still pending and not past expires_at."`
}

type summaryProvidersResponse struct {
	Total      int `json:"total" doc:"Enrichment providers."`
	Active     int `json:"active" doc:"Of those, is_active."`
	Configured int `json:"configured" doc:"Of those, is_configured: active and (auth_type none or with credentials)."`
}

type summaryCasesResponse struct {
	Open           int            `json:"open" doc:"Cases not Closed now (not windowed)."`
	OpenBySeverity map[string]int `json:"open_by_severity" doc:"Cases not Closed now, per severity (the case's: set by hand, else the worst of its alerts), zeros included."`
	Closed         int            `json:"closed" doc:"Cases whose latest close is in the window."`
	MTTCSeconds    *float64       `json:"mttc_seconds" doc:"Mean time to close a case: creation to its latest close, over the cases closed in the window; null when none."`
}

type metricsSummaryResponse struct {
	FromTime            time.Time                `json:"from_time" doc:"Inclusive start of the window."`
	ToTime              time.Time                `json:"to_time" doc:"Exclusive end of the window."`
	Alerts              summaryAlertsResponse    `json:"alerts"`
	Workflows           summaryWorkflowsResponse `json:"workflows"`
	Approvals           summaryApprovalsResponse `json:"approvals"`
	EnrichmentProviders summaryProvidersResponse `json:"enrichment_providers" doc:"Now, not windowed."`
	Cases               summaryCasesResponse     `json:"cases"`
}

func (s *Server) metricsSummary(c *fiber.Ctx) error {
	var q MetricsWindowQuery
	w, err := bindWindow(c, &q)
	if err != nil {
		return err
	}
	m, err := s.deps.Metrics.MetricsSummary(c.UserContext(), w, s.deps.Enrichment.Env)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, metricsSummaryResponse{FromTime: m.Window.From, ToTime: m.Window.To,
		Alerts: summaryAlertsResponse{Total: m.Alerts, Open: m.Open, OpenBySeverity: m.OpenBySeverity, MTTASeconds: m.MTTASeconds,
			MTTCSeconds: m.MTTCSeconds, FalsePositiveRate: m.FalsePositiveRate},
		Workflows: summaryWorkflowsResponse{Runs: m.Runs.Total, SuccessRate: m.Runs.SuccessRate(), TimeSavedHours: m.Runs.TimeSavedHours()},
		Approvals: summaryApprovalsResponse{Pending: m.ApprovalsPending},
		EnrichmentProviders: summaryProvidersResponse{Total: m.Providers.Total, Active: m.Providers.Active,
			Configured: m.Providers.Configured},
		Cases: summaryCasesResponse{Open: m.Cases.Open, OpenBySeverity: m.Cases.OpenBySeverity, Closed: m.Cases.Closed,
			MTTCSeconds: m.Cases.MTTCSeconds}})
}
