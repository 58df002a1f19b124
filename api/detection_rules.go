package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// DetectionRuleStore is what the detection-rule routes need.
type DetectionRuleStore interface {
	GetDetectionRule(ctx context.Context, id uuid.UUID) (store.DetectionRule, error)
	ListDetectionRules(ctx context.Context, f store.DetectionRuleFilter) ([]store.DetectionRule, int, error)
	DetectionRuleMetrics(ctx context.Context, ruleID int64, w store.MetricsWindow) (store.DetectionRuleMetrics, error)
}

func (s *Server) detectionRuleRoutes() {
	read, admin := []string{auth.ScopeAlertsRead}, []string{auth.ScopeAdmin}
	const tag = "Detection rules"
	s.add(route{Method: http.MethodGet, Path: "/v1/detection-rules", Tag: tag, Summary: "List detection rules",
		Description: "Filters combine with AND. `severity` sorts by rank (Informational < … < Critical), rules without a severity last.",
		Scopes:      read, Query: listDetectionRulesQuery{}, Response: detectionRuleResponse{}, List: true}, s.listDetectionRules)
	s.add(route{Method: http.MethodPost, Path: "/v1/detection-rules", Tag: tag, Summary: "Create a detection rule",
		Description: "`created_by` defaults to the caller's key prefix. A (source_name, source_rule_id) pair already held by a rule " +
			"answers 409 DUPLICATE_RULE (details.existing_uuid), except when the holder is a stub the pipeline created for an " +
			"unknown reference: the stub is then completed with these fields and keeps its uuid and alerts (201).",
		Scopes: admin, Body: createDetectionRuleRequest{}, Response: detectionRuleResponse{}, Status: http.StatusCreated,
		Errors: []int{http.StatusConflict}}, s.createDetectionRule)
	s.add(route{Method: http.MethodGet, Path: "/v1/detection-rules/:uuid", Tag: tag, Summary: "Get a detection rule",
		Scopes: read, Response: detectionRuleResponse{}}, s.getDetectionRule)
	s.add(route{Method: http.MethodPatch, Path: "/v1/detection-rules/:uuid", Tag: tag, Summary: "Update a detection rule",
		Description: "Absent fields are unchanged. An explicit null clears source_rule_id, source_name, severity, run_frequency " +
			"and documentation; elsewhere null leaves the field unchanged. Lists are replaced, not merged.",
		Scopes: admin, Body: updateDetectionRuleRequest{}, Response: detectionRuleResponse{}, Errors: []int{http.StatusConflict}}, s.updateDetectionRule)
	s.add(route{Method: http.MethodDelete, Path: "/v1/detection-rules/:uuid", Tag: tag, Summary: "Delete a detection rule",
		Description: "The rule's alerts stay, with no detection rule.", Scopes: admin, Status: http.StatusNoContent}, s.deleteDetectionRule)
	s.add(route{Method: http.MethodGet, Path: "/v1/detection-rules/:uuid/metrics", Tag: tag, Summary: "Metrics of a detection rule",
		Description: "Over the rule's alerts whose occurred_at is in [from_time, to_time) (default: the last 30 days; at most 366 days). " +
			"Rates are over closed alerts (null when none is closed); MTTA/MTTC are mean seconds from ingestion to first " +
			"acknowledgement / to close (null when none).",
		Scopes: read, Query: ruleMetricsQuery{}, Response: ruleMetricsResponse{}}, s.detectionRuleMetrics)
}

type detectionRuleResponse struct {
	UUID               uuid.UUID `json:"uuid"`
	Name               string    `json:"name"`
	SourceRuleID       *string   `json:"source_rule_id"`
	SourceName         *string   `json:"source_name"`
	Severity           *string   `json:"severity" enum:"$severity"`
	IsActive           bool      `json:"is_active"`
	MitreTactics       []string  `json:"mitre_tactics"`
	MitreTechniques    []string  `json:"mitre_techniques"`
	MitreSubtechniques []string  `json:"mitre_subtechniques"`
	DataSources        []string  `json:"data_sources"`
	RunFrequency       *string   `json:"run_frequency"`
	CreatedBy          *string   `json:"created_by"`
	Documentation      *string   `json:"documentation"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// toDetectionRuleResponse renders a rule as SEED-SPEC §2.3's DetectionRuleResponse (also for routes
// that embed a rule, such as alert detail).
func toDetectionRuleResponse(r store.DetectionRule) detectionRuleResponse {
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return detectionRuleResponse{UUID: r.UUID, Name: r.Name, SourceRuleID: r.SourceRuleID, SourceName: r.SourceName,
		Severity: r.Severity, IsActive: r.IsActive, MitreTactics: orEmpty(r.MitreTactics), MitreTechniques: orEmpty(r.MitreTechniques),
		MitreSubtechniques: orEmpty(r.MitreSubtechniques), DataSources: orEmpty(r.DataSources), RunFrequency: r.RunFrequency,
		CreatedBy: r.CreatedBy, Documentation: r.Documentation, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

type listDetectionRulesQuery struct {
	PageQuery
	SourceName     *string  `query:"source_name" minLength:"1" maxLength:"100" doc:"Exact source name."`
	Severity       []string `query:"severity" enum:"$severity" doc:"Any of these severities."`
	IsActive       *bool    `query:"is_active"`
	Q              string   `query:"q" maxLength:"500" doc:"Case-insensitive substring of the name."`
	MitreTactic    string   `query:"mitre_tactic" maxLength:"100" doc:"Exact element of mitre_tactics (e.g. TA0001 or Initial Access, as stored)."`
	MitreTechnique string   `query:"mitre_technique" maxLength:"100" doc:"Exact element of mitre_techniques or mitre_subtechniques (e.g. T1059, T1059.001)."`
	SortBy         string   `query:"sort_by" enum:"name,source_name,severity,created_at" default:"created_at"`
	SortOrder      string   `query:"sort_order" enum:"asc,desc" doc:"Default: asc for name and source_name, desc for severity and created_at."`
}

// Validate refuses text the database cannot hold.
func (q listDetectionRulesQuery) Validate() validate.Errors {
	var errs validate.Errors
	if q.SourceName != nil {
		errs.Text([]any{"source_name"}, *q.SourceName)
	}
	errs.Text([]any{"q"}, q.Q)
	errs.Text([]any{"mitre_tactic"}, q.MitreTactic)
	errs.Text([]any{"mitre_technique"}, q.MitreTechnique)
	return errs
}

// sortDesc resolves sort_order with a per-column default.
func sortDesc(order string, ascByDefault bool) bool {
	switch order {
	case "asc":
		return false
	case "desc":
		return true
	}
	return !ascByDefault
}

func (s *Server) listDetectionRules(c *fiber.Ctx) error {
	var q listDetectionRulesQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	f := store.DetectionRuleFilter{SourceName: q.SourceName, Severities: q.Severity, IsActive: q.IsActive, Q: q.Q,
		MitreTactic: q.MitreTactic, MitreTechnique: q.MitreTechnique, SortBy: q.SortBy,
		Desc: sortDesc(q.SortOrder, q.SortBy == store.RuleSortName || q.SortBy == store.RuleSortSourceName), Page: q.storePage()}
	rules, total, err := s.deps.DetectionRules.ListDetectionRules(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := mapSlice(rules, toDetectionRuleResponse)
	return respondList(c, out, total, q.PageQuery)
}

type createDetectionRuleRequest struct {
	Name               string   `json:"name" required:"true" minLength:"1" maxLength:"500"`
	SourceRuleID       *string  `json:"source_rule_id" minLength:"1" maxLength:"500" doc:"The rule's id in its source (SIEM)."`
	SourceName         *string  `json:"source_name" minLength:"1" maxLength:"100" doc:"The source the rule lives in, e.g. sentinel."`
	Severity           *string  `json:"severity" enum:"$severity"`
	IsActive           *bool    `json:"is_active" doc:"Default true."`
	MitreTactics       []string `json:"mitre_tactics" maxItems:"50" minLength:"1" maxLength:"100"`
	MitreTechniques    []string `json:"mitre_techniques" maxItems:"100" minLength:"1" maxLength:"100"`
	MitreSubtechniques []string `json:"mitre_subtechniques" maxItems:"200" minLength:"1" maxLength:"100"`
	DataSources        []string `json:"data_sources" maxItems:"50" minLength:"1" maxLength:"200"`
	RunFrequency       *string  `json:"run_frequency" minLength:"1" maxLength:"100" doc:"Free text, e.g. 5m or hourly."`
	CreatedBy          *string  `json:"created_by" minLength:"1" maxLength:"200" doc:"Default: the caller's key prefix."`
	Documentation      *string  `json:"documentation" maxLength:"100000" doc:"Markdown."`
}

// Validate applies the owner's checks (config.CheckRule), so they report with the tags' in one 422.
func (r createDetectionRuleRequest) Validate() validate.Errors { return config.CheckRule(r.fields()) }

func (r createDetectionRuleRequest) fields() config.RuleFields {
	return config.RuleFields{Name: r.Name, SourceRuleID: r.SourceRuleID, SourceName: r.SourceName, Severity: r.Severity,
		IsActive: r.IsActive, MitreTactics: r.MitreTactics, MitreTechniques: r.MitreTechniques,
		MitreSubtechniques: r.MitreSubtechniques, DataSources: r.DataSources, RunFrequency: r.RunFrequency,
		CreatedBy: r.CreatedBy, Documentation: r.Documentation}
}

func (s *Server) createDetectionRule(c *fiber.Ctx) error {
	var req createDetectionRuleRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	r, err := s.config.Rules.Create(c.UserContext(), s.actor(c), req.fields())
	if err != nil {
		return notFoundAs(err, "Detection rule")
	}
	return respond(c, http.StatusCreated, toDetectionRuleResponse(r))
}

func (s *Server) getDetectionRule(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	r, err := s.deps.DetectionRules.GetDetectionRule(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Detection rule")
	}
	return respond(c, http.StatusOK, toDetectionRuleResponse(r))
}

type updateDetectionRuleRequest struct {
	Name               *string          `json:"name" minLength:"1" maxLength:"500"`
	SourceRuleID       Optional[string] `json:"source_rule_id" minLength:"1" maxLength:"500"`
	SourceName         Optional[string] `json:"source_name" minLength:"1" maxLength:"100"`
	Severity           Optional[string] `json:"severity" enum:"$severity"`
	IsActive           *bool            `json:"is_active"`
	MitreTactics       *[]string        `json:"mitre_tactics" maxItems:"50" minLength:"1" maxLength:"100" doc:"Replaces the list."`
	MitreTechniques    *[]string        `json:"mitre_techniques" maxItems:"100" minLength:"1" maxLength:"100" doc:"Replaces the list."`
	MitreSubtechniques *[]string        `json:"mitre_subtechniques" maxItems:"200" minLength:"1" maxLength:"100" doc:"Replaces the list."`
	DataSources        *[]string        `json:"data_sources" maxItems:"50" minLength:"1" maxLength:"200" doc:"Replaces the list."`
	RunFrequency       Optional[string] `json:"run_frequency" minLength:"1" maxLength:"100"`
	Documentation      Optional[string] `json:"documentation" maxLength:"100000"`
}

// Validate applies the owner's checks (config.CheckRulePatch).
func (r updateDetectionRuleRequest) Validate() validate.Errors {
	return config.CheckRulePatch(r.patch())
}

func (r updateDetectionRuleRequest) patch() config.RulePatch {
	return config.RulePatch{Name: r.Name, SourceRuleID: r.SourceRuleID.kit(), SourceName: r.SourceName.kit(),
		Severity: r.Severity.kit(), RunFrequency: r.RunFrequency.kit(), Documentation: r.Documentation.kit(),
		IsActive: r.IsActive, MitreTactics: r.MitreTactics, MitreTechniques: r.MitreTechniques,
		MitreSubtechniques: r.MitreSubtechniques, DataSources: r.DataSources}
}

func (s *Server) updateDetectionRule(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateDetectionRuleRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	r, err := s.config.Rules.Update(c.UserContext(), s.actor(c), id, req.patch())
	if err != nil {
		return notFoundAs(err, "Detection rule")
	}
	return respond(c, http.StatusOK, toDetectionRuleResponse(r))
}

func (s *Server) deleteDetectionRule(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.config.Rules.Delete(c.UserContext(), s.actor(c), id); err != nil {
		return notFoundAs(err, "Detection rule")
	}
	return c.SendStatus(http.StatusNoContent)
}

// ruleMetricsQuery is the window of the rule metrics (on occurred_at).
type ruleMetricsQuery struct {
	MetricsWindowQuery
}

type ruleMetricsResponse struct {
	DetectionRuleUUID    uuid.UUID            `json:"detection_rule_uuid"`
	FromTime             time.Time            `json:"from_time"`
	ToTime               time.Time            `json:"to_time"`
	TotalAlerts          int                  `json:"total_alerts"`
	ActiveAlerts         int                  `json:"active_alerts" doc:"Alerts not Closed."`
	ClosedAlerts         int                  `json:"closed_alerts"`
	AlertsByStatus       map[string]int       `json:"alerts_by_status" doc:"Every status, zeros included."`
	AlertsBySeverity     map[string]int       `json:"alerts_by_severity" doc:"Every severity, zeros included."`
	FalsePositiveRate    *float64             `json:"false_positive_rate" doc:"Closed as False Positive… / closed; null when none is closed."`
	TruePositiveRate     *float64             `json:"true_positive_rate" doc:"Closed as True Positive… / closed; null when none is closed."`
	CloseClassifications map[string]int       `json:"close_classifications" doc:"Closed alerts per classification, zeros included."`
	AlertsOverTime       []dayCountResponse   `json:"alerts_over_time" doc:"One entry per UTC day of the window, zeros included."`
	MTTASeconds          *float64             `json:"mtta_seconds" doc:"Mean seconds from ingestion to first acknowledgement."`
	MTTCSeconds          *float64             `json:"mttc_seconds" doc:"Mean seconds from ingestion to close, over closed alerts."`
	TopIndicators        []topIndicatorResult `json:"top_indicators" doc:"Up to 10 indicators carried by most of the rule's alerts."`
}

type dayCountResponse struct {
	Date  string `json:"date" doc:"YYYY-MM-DD (UTC)."`
	Count int    `json:"count"`
}

type topIndicatorResult struct {
	UUID       uuid.UUID `json:"uuid"`
	Type       string    `json:"type"`
	Value      string    `json:"value"`
	Malice     string    `json:"malice"`
	AlertCount int       `json:"alert_count"`
}

func (s *Server) detectionRuleMetrics(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q ruleMetricsQuery
	w, err := bindWindow(c, &q)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	r, err := s.deps.DetectionRules.GetDetectionRule(ctx, id)
	if err != nil {
		return notFoundAs(err, "Detection rule")
	}
	m, err := s.deps.DetectionRules.DetectionRuleMetrics(ctx, r.ID, w)
	if err != nil {
		return err
	}
	out := ruleMetricsResponse{DetectionRuleUUID: r.UUID, FromTime: m.Window.From, ToTime: m.Window.To, TotalAlerts: m.TotalAlerts,
		ActiveAlerts: m.ActiveAlerts, ClosedAlerts: m.ClosedAlerts, AlertsByStatus: m.ByStatus, AlertsBySeverity: m.BySeverity,
		FalsePositiveRate: m.FalsePositiveRate, TruePositiveRate: m.TruePositiveRate, CloseClassifications: m.CloseClassifications,
		AlertsOverTime: make([]dayCountResponse, len(m.AlertsOverTime)), MTTASeconds: m.MTTASeconds, MTTCSeconds: m.MTTCSeconds,
		TopIndicators: make([]topIndicatorResult, len(m.TopIndicators))}
	for i, d := range m.AlertsOverTime {
		out.AlertsOverTime[i] = dayCountResponse{Date: d.Start.Format(time.DateOnly), Count: d.Count}
	}
	for i, ind := range m.TopIndicators {
		out.TopIndicators[i] = topIndicatorResult(ind)
	}
	return respond(c, http.StatusOK, out)
}
