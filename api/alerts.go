package api

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// AlertStore is what the alert routes need.
type AlertStore interface {
	ListAlerts(ctx context.Context, f store.AlertFilter) ([]store.Alert, int, error)
	GetAlert(ctx context.Context, id uuid.UUID) (store.Alert, error)
	AlertExists(ctx context.Context, id uuid.UUID) error
	AlertIndicators(ctx context.Context, id uuid.UUID) ([]store.Indicator, error)
	DeleteAlert(ctx context.Context, id uuid.UUID, actor store.Actor) error
	ListFindings(ctx context.Context, alertID uuid.UUID) ([]store.Finding, error)
	ListActivity(ctx context.Context, f store.ActivityFilter) ([]store.ActivityEvent, int, error)
	EnqueueRerun(ctx context.Context, alertID uuid.UUID, actorType, actorKeyPrefix string) error
	SiblingAlerts(ctx context.Context, alertID uuid.UUID, limit int) ([]store.Sibling, error)
	AlertDetail(ctx context.Context, a store.Alert) (store.AlertDetail, error)
}

func (s *Server) alertRoutes() {
	read := []string{auth.ScopeAlertsRead}
	write := []string{auth.ScopeAlertsWrite}
	const tag = "Alerts"
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts", Tag: tag, Summary: "List alerts",
		Description: "Alert summaries (no raw_payload, no indicators). Multi-value filters take comma-separated values; `tags` is repeatable and the alert must have all of them.",
		Scopes:      read, Query: listAlertsQuery{}, Response: alertSummary{}, List: true}, s.listAlerts)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid", Tag: tag, Summary: "Get an alert",
		Description: "The full alert with indicators, detection rule, applicable context documents, agent findings and computed malice.",
		Scopes:      read, Response: alertDetail{}}, s.getAlert)
	s.add(route{Method: http.MethodPatch, Path: "/v1/alerts/:uuid", Tag: tag, Summary: "Update an alert",
		Description: "Status moves follow the transition graph (" + alerts.TransitionSummary() + "); others are 422 invalid_transition. Closing needs close_classification. null leaves a field unchanged; reset_malice_override may not be null.",
		Scopes:      write, Body: patchAlertRequest{}, Response: alertDetail{}}, s.patchAlert)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/bulk", Tag: tag, Summary: "Change many alerts at once",
		Description: "1..500 alert uuids and one patch (status, close_classification, severity, assignee, tags_add, tags_remove, malice_override). Each alert goes through the PATCH rules in its own transaction; one refused alert does not stop or undo the others. 200 with one result per alert, in the order given.",
		Scopes:      write, Body: bulkAlertsRequest{}, Response: bulkAlertsResponse{}}, s.bulkAlerts)
	s.add(route{Method: http.MethodDelete, Path: "/v1/alerts/:uuid", Tag: tag, Summary: "Delete an alert",
		Scopes: []string{auth.ScopeAdmin}, Status: http.StatusNoContent}, s.deleteAlert)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/findings", Tag: tag, Summary: "Post an agent finding",
		Description: "Append-only.", Scopes: write, Body: createFindingRequest{}, Response: findingResponse{}, Status: http.StatusCreated}, s.createFinding)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/findings", Tag: tag, Summary: "List an alert's findings",
		Description: "Oldest first.", Scopes: read, Response: []findingResponse{}}, s.listFindings)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/indicators", Tag: tag, Summary: "List an alert's indicators",
		Description: "Enriched indicators; provider raw responses are stripped (GET /v1/indicators/{uuid} has them).",
		Scopes:      read, Response: []alertIndicatorResponse{}}, s.listAlertIndicators)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/indicators", Tag: tag, Summary: "Add indicators to an alert",
		Description: "1..100 `{value, type?}`; a missing type is inferred from the value. Each is upserted globally on (type, value) and linked. With enrich=true (absent: enrich=" + strconv.FormatBool(alerts.EnrichAddedByDefault) + ") the alert's pipeline re-runs to enrich them (202-style: queued through the outbox).",
		Scopes:      write, Query: addIndicatorsQuery{}, Body: addIndicatorsRequest{}, Response: addIndicatorsResponse{}, Status: http.StatusCreated}, s.addAlertIndicators)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/activity", Tag: tag, Summary: "An alert's activity",
		Description: "Newest first.", Scopes: read, Query: alertActivityQuery{}, Response: activityEventResponse{}, List: true}, s.alertActivity)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/enrich", Tag: tag, Summary: "Re-run the enrichment pipeline",
		Description: "Queues a re-run of `alert-<uuid>` (a running pipeline is not started twice). Safe to repeat.",
		Scopes:      write, Response: alertEnrichResponse{}, Status: http.StatusAccepted}, s.enrichAlert)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/relationship-graph", Tag: tag, Summary: "Alerts related through shared indicators",
		Scopes: read, Query: graphQuery{}, Response: graphResponse{}}, s.relationshipGraph)
}

// Responses.

type alertSummary struct {
	UUID                 uuid.UUID  `json:"uuid"`
	Title                string     `json:"title"`
	Severity             string     `json:"severity" enum:"$severity"`
	Status               string     `json:"status" enum:"$alert_status"`
	EnrichmentStatus     string     `json:"enrichment_status" enum:"$enrichment_status"`
	SourceName           string     `json:"source_name"`
	OccurredAt           time.Time  `json:"occurred_at"`
	IngestedAt           time.Time  `json:"ingested_at"`
	EnrichedAt           *time.Time `json:"enriched_at"`
	IsEnriched           bool       `json:"is_enriched"`
	Fingerprint          *string    `json:"fingerprint"`
	CloseClassification  *string    `json:"close_classification"`
	AcknowledgedAt       *time.Time `json:"acknowledged_at"`
	TriagedAt            *time.Time `json:"triaged_at"`
	ClosedAt             *time.Time `json:"closed_at"`
	Tags                 []string   `json:"tags"`
	DetectionRuleID      *int64     `json:"detection_rule_id"`
	Description          *string    `json:"description"`
	DuplicateCount       int        `json:"duplicate_count"`
	LastSeenAt           *time.Time `json:"last_seen_at"`
	Malice               string     `json:"malice" enum:"$malice" doc:"The override, else the worst indicator malice, else Pending."`
	MaliceOverride       *string    `json:"malice_override"`
	MaliceOverrideSource *string    `json:"malice_override_source" enum:"analyst,agent"`
	MaliceOverrideAt     *time.Time `json:"malice_override_at"`
	CreatedAt            time.Time  `json:"created_at"`
	UpdatedAt            time.Time  `json:"updated_at"`
	InputSanitized       bool       `json:"input_sanitized" doc:"The payload held NUL, lone UTF-16 surrogates or invalid UTF-8, replaced by U+FFFD at ingest; the detail's original_body has it as received."`
	Assignee             *string    `json:"assignee" doc:"Handle of the person who owns the alert; null when unassigned."`
	AssignedAt           *time.Time `json:"assigned_at" doc:"When the current assignee was set; null when unassigned."`
	CaseUUID             *uuid.UUID `json:"case_uuid" doc:"The case the alert belongs to (at most one); null when none."`
}

type alertDetail struct {
	alertSummary
	RawPayload       map[string]any            `json:"raw_payload"`
	OriginalBody     *string                   `json:"original_body" doc:"Base64 of the payload exactly as received when input_sanitized; null otherwise."`
	Indicators       []indicatorResponse       `json:"indicators"`
	DetectionRule    *detectionRuleResponse    `json:"detection_rule"`
	ContextDocuments []contextDocumentResponse `json:"context_documents"`
	AgentFindings    []findingResponse         `json:"agent_findings"`
	SourceSeverity   *string                   `json:"source_severity" doc:"The source's own severity value as received (null when it gave none)."`
	SeverityUnmapped bool                      `json:"severity_unmapped" doc:"source_severity is a value no mapping knows (the plugin's vendor words nor the integration's severity_mapping): severity is Pending for that reason. Map it with the integration's severity_mapping."`
	Notes            []store.Note              `json:"normalization_notes" doc:"The fallbacks used while normalizing the payload and the payload fields ignored (source plugin first, then the pipeline's), each {field, note}; [] when none."`
}

type alertDetailMeta struct {
	GeneratedAt             time.Time      `json:"generated_at"`
	IndicatorCount          int            `json:"indicator_count"`
	Enrichment              enrichmentMeta `json:"enrichment"`
	DetectionRuleMatched    bool           `json:"detection_rule_matched" doc:"The alert's rule is a documented (non-stub) rule."`
	ContextDocumentsApplied int            `json:"context_documents_applied"`
}

type enrichmentMeta struct {
	Succeeded  []string   `json:"succeeded"`
	Failed     []string   `json:"failed"`
	EnrichedAt *time.Time `json:"enriched_at"`
}

func toAlertSummary(a store.Alert) alertSummary {
	tags := a.Tags
	if tags == nil {
		tags = []string{}
	}
	return alertSummary{UUID: a.UUID, Title: a.Title, Severity: a.Severity, Status: a.Status, EnrichmentStatus: a.EnrichmentStatus,
		SourceName: a.SourceName, OccurredAt: a.OccurredAt.UTC(), IngestedAt: a.IngestedAt.UTC(), EnrichedAt: utcPtr(a.EnrichedAt),
		IsEnriched: a.IsEnriched, Fingerprint: a.Fingerprint, CloseClassification: a.CloseClassification,
		AcknowledgedAt: utcPtr(a.AcknowledgedAt), TriagedAt: utcPtr(a.TriagedAt), ClosedAt: utcPtr(a.ClosedAt), Tags: tags,
		DetectionRuleID: a.DetectionRuleID, Description: a.Description, DuplicateCount: a.DuplicateCount, LastSeenAt: utcPtr(a.LastSeenAt),
		Malice: a.EffectiveMalice, MaliceOverride: a.MaliceOverride, MaliceOverrideSource: a.MaliceOverrideSource,
		MaliceOverrideAt: utcPtr(a.MaliceOverrideAt), CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
		InputSanitized: a.InputSanitized, Assignee: a.Assignee, AssignedAt: utcPtr(a.AssignedAt), CaseUUID: a.CaseUUID}
}

// List.

type listAlertsQuery struct {
	PageQuery
	Status            []string   `query:"status" enum:"$alert_status" doc:"Comma-separated; any of."`
	Severity          []string   `query:"severity" enum:"$severity" doc:"Comma-separated; any of."`
	SourceName        []string   `query:"source_name" maxLength:"100" doc:"Comma-separated; any of."`
	EnrichmentStatus  []string   `query:"enrichment_status" enum:"$enrichment_status" doc:"Comma-separated; any of."`
	IsEnriched        *bool      `query:"is_enriched"`
	DetectionRuleUUID *uuid.UUID `query:"detection_rule_uuid"`
	FromTime          *time.Time `query:"from_time" doc:"occurred_at ≥ this (RFC 3339 with offset)."`
	ToTime            *time.Time `query:"to_time" doc:"occurred_at ≤ this (RFC 3339 with offset)."`
	Tags              []string   `query:"tags" maxLength:"100" doc:"Repeatable (or comma-separated); the alert has all of them."`
	Q                 string     `query:"q" maxLength:"500" doc:"Case-insensitive substring of the title or the description."`
	Assignee          []string   `query:"assignee" maxLength:"200" doc:"Comma-separated handles; any of. none = unassigned."`
	Indicator         string     `query:"indicator" maxLength:"2048" doc:"Alerts linked to this indicator value, normalized as ingest does; exact match on any type unless indicator_type is given."`
	IndicatorType     string     `query:"indicator_type" enum:"$indicator_type" doc:"Narrows indicator to one type (only with indicator)."`
	Malice            []string   `query:"malice" enum:"$malice" doc:"Comma-separated; any of. The computed malice: the override, else the worst indicator malice."`
	Closure           []string   `query:"close_classification" enum:"$close_classification" doc:"Comma-separated; any of."`
	CaseUUID          *uuid.UUID `query:"case_uuid" doc:"The alerts of this case."`
	SortBy            string     `query:"sort_by" enum:"$alert_sort" default:"occurred_at"`
	SortOrder         string     `query:"sort_order" enum:"asc,desc" default:"desc"`
}

// Validate checks the time range and refuses text the database cannot hold.
func (q listAlertsQuery) Validate() validate.Errors {
	var errs validate.Errors
	if q.FromTime != nil && q.ToTime != nil && q.ToTime.Before(*q.FromTime) {
		errs.Add([]any{"to_time"}, validate.TypeValue, "to_time must not be before from_time.", q.ToTime.Format(time.RFC3339Nano))
	}
	if strings.IndexByte(q.Q, 0) >= 0 {
		errs.Add([]any{"q"}, validate.TypeValue, "NUL characters are not accepted.", nil)
	}
	for i, t := range q.Tags {
		if strings.IndexByte(t, 0) >= 0 {
			errs.Add([]any{"tags", i}, validate.TypeValue, "NUL characters are not accepted.", nil)
		}
	}
	for i, t := range q.SourceName {
		if strings.IndexByte(t, 0) >= 0 {
			errs.Add([]any{"source_name", i}, validate.TypeValue, "NUL characters are not accepted.", nil)
		}
	}
	for i, t := range q.Assignee {
		if strings.IndexByte(t, 0) >= 0 {
			errs.Add([]any{"assignee", i}, validate.TypeValue, "NUL characters are not accepted.", nil)
		}
	}
	if q.Indicator != "" {
		_, ierrs := alerts.IndicatorFilter(q.Indicator, q.IndicatorType)
		errs = append(errs, ierrs...)
	} else if q.IndicatorType != "" {
		errs.Add([]any{"indicator_type"}, validate.TypeValue, "indicator_type narrows indicator: give indicator too.", q.IndicatorType)
	}
	return errs
}

// filter is the query as ListAlerts takes it (validated: Validate passed).
func (q listAlertsQuery) filter() store.AlertFilter {
	f := store.AlertFilter{
		Statuses: q.Status, Severities: q.Severity, SourceNames: q.SourceName, EnrichmentStatuses: q.EnrichmentStatus,
		IsEnriched: q.IsEnriched, DetectionRuleUUID: q.DetectionRuleUUID, From: q.FromTime, To: q.ToTime, Tags: q.Tags,
		Query: q.Q, Malices: q.Malice, CloseClassifications: q.Closure, CaseUUID: q.CaseUUID,
		SortBy: q.SortBy, SortDesc: q.SortOrder == "desc", Page: q.storePage(),
	}
	f.Assignees, f.Unassigned = alerts.AssigneeFilter(q.Assignee)
	if q.Indicator != "" {
		f.Indicators, _ = alerts.IndicatorFilter(q.Indicator, q.IndicatorType)
		f.IndicatorFilter = true
	}
	return f
}

func (s *Server) listAlerts(c *fiber.Ctx) error {
	var q listAlertsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	out, total, err := s.alertSummaries(c.UserContext(), q.filter())
	if err != nil {
		return err
	}
	return respondList(c, out, total, q.PageQuery)
}

// alertSummaries reads one page of alerts by f (each with its effective malice as stored).
func (s *Server) alertSummaries(ctx context.Context, f store.AlertFilter) ([]alertSummary, int, error) {
	rows, total, err := s.deps.Alerts.ListAlerts(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	out := make([]alertSummary, len(rows))
	for i, a := range rows {
		out[i] = toAlertSummary(a)
	}
	return out, total, nil
}

// Detail.

func (s *Server) alertDetail(ctx context.Context, a store.Alert) (alertDetail, alertDetailMeta, error) {
	det, err := s.deps.Alerts.AlertDetail(ctx, a)
	if err != nil {
		return alertDetail{}, alertDetailMeta{}, err
	}
	meta := alertDetailMeta{GeneratedAt: time.Now().UTC(), IndicatorCount: len(det.Indicators),
		Enrichment:           enrichmentMeta{Succeeded: det.EnrichmentSucceeded, Failed: det.EnrichmentFailed, EnrichedAt: utcPtr(a.EnrichedAt)},
		DetectionRuleMatched: det.RuleMatched(), ContextDocumentsApplied: len(det.ContextDocuments)}
	d := alertDetail{alertSummary: toAlertSummary(a), RawPayload: a.RawPayload,
		Indicators:       mapSlice(det.Indicators, func(ind store.Indicator) indicatorResponse { return toIndicatorResponse(ind, true) }),
		ContextDocuments: mapSlice(det.ContextDocuments, toContextDocumentResponse),
		AgentFindings:    mapSlice(det.Findings, toFindingResponse), SeverityUnmapped: a.Normalized.SeverityUnmapped,
		Notes: a.Normalized.NormalizationNotes}
	if d.Notes == nil {
		d.Notes = []store.Note{}
	}
	if src := a.Normalized.SourceSeverity; src != "" {
		d.SourceSeverity = &src
	}
	if a.OriginalBody != nil {
		b64 := base64.StdEncoding.EncodeToString(a.OriginalBody)
		d.OriginalBody = &b64
	}
	if det.DetectionRule != nil {
		resp := toDetectionRuleResponse(*det.DetectionRule)
		d.DetectionRule = &resp
	}
	return d, meta, nil
}

func (s *Server) getAlert(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	a, err := s.deps.Alerts.GetAlert(ctx, id)
	if err != nil {
		return notFoundAs(err, "Alert")
	}
	d, meta, err := s.alertDetail(ctx, a)
	if err != nil {
		return err
	}
	return respondMeta(c, http.StatusOK, d, meta)
}

// PATCH.

type patchAlertRequest struct {
	Status              *string            `json:"status" enum:"$alert_status"`
	Severity            *string            `json:"severity" enum:"$severity"`
	CloseClassification *string            `json:"close_classification" enum:"$close_classification"`
	Tags                Optional[[]string] `json:"tags" maxItems:"50" maxLength:"100" doc:"Replaces the list (blank and repeated tags are dropped)."`
	MaliceOverride      *string            `json:"malice_override" enum:"$malice"`
	ResetMaliceOverride bool               `json:"reset_malice_override" doc:"true clears malice_override, its source and time. null is rejected."`
	Assignee            *string            `json:"assignee" doc:"A person's handle (1..200 characters, trimmed; not \"none\"); \"\" unassigns; null leaves it."`
}

// patch is the request as the alerts service takes it (a null field leaves the value unchanged).
func (r patchAlertRequest) patch() alerts.Patch {
	p := alerts.Patch{Status: r.Status, Severity: r.Severity, CloseClassification: r.CloseClassification,
		MaliceOverride: r.MaliceOverride, ResetMaliceOverride: r.ResetMaliceOverride, Assignee: r.Assignee}
	if r.Tags.Set && !r.Tags.Null {
		p.Tags = &r.Tags.Value
	}
	return p
}

// Validate checks the rules that do not need the stored alert (alerts.Patch.Validate).
func (r patchAlertRequest) Validate() validate.Errors { return r.patch().Validate() }

// inBody moves the locations of a domain service's validation errors under "body"; other errors pass.
func inBody(err error) error {
	var verrs validate.Errors
	if errors.As(err, &verrs) {
		var out validate.Errors
		out.Merge([]any{"body"}, verrs)
		return out
	}
	return err
}

func (s *Server) patchAlert(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req patchAlertRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	a, err := s.alertRules.Patch(ctx, id, req.patch(), s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Alert")
	}
	d, meta, err := s.alertDetail(ctx, a)
	if err != nil {
		return err
	}
	return respondMeta(c, http.StatusOK, d, meta)
}

// Bulk.

type bulkAlertsRequest struct {
	AlertUUIDs []uuid.UUID `json:"alert_uuids" required:"true" minItems:"1" maxItems:"500"`
	Patch      bulkPatch   `json:"patch" required:"true"`
}

type bulkPatch struct {
	Status              *string  `json:"status" enum:"$alert_status"`
	CloseClassification *string  `json:"close_classification" enum:"$close_classification"`
	Severity            *string  `json:"severity" enum:"$severity"`
	Assignee            *string  `json:"assignee" doc:"A handle; \"\" unassigns."`
	TagsAdd             []string `json:"tags_add" maxItems:"50" doc:"Tags each alert gets (kept once)."`
	TagsRemove          []string `json:"tags_remove" maxItems:"50" doc:"Tags removed from each alert."`
	MaliceOverride      *string  `json:"malice_override" enum:"$malice"`
}

func (r bulkAlertsRequest) patch() alerts.Patch {
	p := r.Patch
	return alerts.Patch{Status: p.Status, CloseClassification: p.CloseClassification, Severity: p.Severity,
		Assignee: p.Assignee, TagsAdd: p.TagsAdd, TagsRemove: p.TagsRemove, MaliceOverride: p.MaliceOverride}
}

// Validate checks the request as a whole (alerts.ValidateBulk) before any alert is touched.
func (r bulkAlertsRequest) Validate() validate.Errors {
	return alerts.ValidateBulk(r.AlertUUIDs, r.patch())
}

type bulkAlertsResponse struct {
	Results   []bulkResult `json:"results"`
	Succeeded int          `json:"succeeded"`
	Failed    int          `json:"failed"`
}

type bulkResult struct {
	AlertUUID uuid.UUID  `json:"alert_uuid"`
	OK        bool       `json:"ok"`
	Error     *bulkError `json:"error,omitempty"`
}

type bulkError struct {
	Code    string                `json:"code"`
	Message string                `json:"message"`
	Detail  []validate.FieldError `json:"detail,omitempty" doc:"The refused fields (as a 422's detail), for VALIDATION_ERROR and INVALID_TRANSITION."`
}

func (s *Server) bulkAlerts(c *fiber.Ctx) error {
	var req bulkAlertsRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	done, err := s.alertRules.Bulk(c.UserContext(), req.AlertUUIDs, req.patch(), principal(c).Actor(store.ActorAPI))
	if err != nil {
		return inBody(err)
	}
	return respond(c, http.StatusOK, s.bulkResponse(c.UserContext(), done))
}

func (s *Server) deleteAlert(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.deps.Alerts.DeleteAlert(c.UserContext(), id, s.actor(c)); err != nil {
		return notFoundAs(err, "Alert")
	}
	return c.SendStatus(http.StatusNoContent)
}

// Findings.

type createFindingRequest struct {
	AgentName         string         `json:"agent_name" required:"true" minLength:"1" maxLength:"200"`
	Summary           string         `json:"summary" required:"true" minLength:"1" maxLength:"50000"`
	Confidence        *string        `json:"confidence" enum:"$finding_confidence"`
	RecommendedAction *string        `json:"recommended_action" maxLength:"10000"`
	Evidence          map[string]any `json:"evidence" doc:"Free-form object, at most 64 KB of JSON."`
}

func (r createFindingRequest) finding() alerts.NewFinding {
	return alerts.NewFinding{AgentName: r.AgentName, Summary: r.Summary, Confidence: r.Confidence,
		RecommendedAction: r.RecommendedAction, Evidence: r.Evidence}
}

// Validate bounds the evidence and refuses NUL characters (alerts.NewFinding.Validate).
func (r createFindingRequest) Validate() validate.Errors { return r.finding().Validate() }

type findingResponse struct {
	ID                uuid.UUID      `json:"id"`
	AgentName         string         `json:"agent_name"`
	Summary           string         `json:"summary"`
	Confidence        *string        `json:"confidence" enum:"$finding_confidence"`
	RecommendedAction *string        `json:"recommended_action"`
	Evidence          map[string]any `json:"evidence"`
	PostedAt          time.Time      `json:"posted_at"`
}

func toFindingResponse(f store.Finding) findingResponse {
	return findingResponse{ID: f.ID, AgentName: f.AgentName, Summary: f.Summary, Confidence: f.Confidence,
		RecommendedAction: f.RecommendedAction, Evidence: f.Evidence, PostedAt: f.PostedAt.UTC()}
}

func (s *Server) createFinding(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req createFindingRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	f, err := s.alertRules.AddFinding(c.UserContext(), id, req.finding(), s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Alert")
	}
	return respond(c, http.StatusCreated, toFindingResponse(f))
}

func (s *Server) listFindings(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	rows, err := s.alertRules.Findings(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Alert")
	}
	out := mapSlice(rows, toFindingResponse)
	return respond(c, http.StatusOK, out)
}

// Alert indicators.

func (s *Server) listAlertIndicators(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.deps.Alerts.AlertExists(ctx, id); err != nil {
		return notFoundAs(err, "Alert")
	}
	rows, err := s.deps.Alerts.AlertIndicators(ctx, id)
	if err != nil {
		return err
	}
	out := mapSlice(rows, func(ind store.Indicator) alertIndicatorResponse {
		return alertIndicatorResponse{indicatorResponse: toIndicatorResponse(ind, true), ExtractedBy: ind.ExtractedBy}
	})
	return respond(c, http.StatusOK, out)
}

// alertIndicatorResponse is an indicator linked to an alert, with where extraction found it.
type alertIndicatorResponse struct {
	indicatorResponse
	ExtractedBy []indicators.Origin `json:"extracted_by" doc:"Each extraction pass that found it for this alert and where ({pass, field_path}: pass 1 without a path, passes 2-3 the mapping's field path, pass 4 the path in the raw payload); null for a link made before extraction recorded it, or added by an analyst."`
}

type addIndicatorsQuery struct {
	Enrich *bool `query:"enrich" doc:"Enrich the added indicators (re-runs the alert's pipeline); the route's description gives the default."`
}

type addIndicatorElement struct {
	Value string  `json:"value" required:"true" minLength:"1" maxLength:"2048"`
	Type  *string `json:"type" enum:"$indicator_type" doc:"Inferred from the value when absent."`
}

type addIndicatorsRequest struct {
	Indicators []addIndicatorElement `json:"indicators" required:"true" minItems:"1" maxItems:"100"`
}

func (r addIndicatorsRequest) indicators() []alerts.NewIndicator {
	out := make([]alerts.NewIndicator, len(r.Indicators))
	for i, el := range r.Indicators {
		out[i] = alerts.NewIndicator{Value: el.Value, Type: el.Type}
	}
	return out
}

type addIndicatorsResponse struct {
	AddedCount      int                 `json:"added_count" doc:"Links that did not exist before."`
	Indicators      []indicatorResponse `json:"indicators"`
	EnrichRequested bool                `json:"enrich_requested"`
}

func (s *Server) addAlertIndicators(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q addIndicatorsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	var req addIndicatorsRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	added, err := s.alertRules.AddIndicators(c.UserContext(), id, req.indicators(), q.Enrich, s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Alert")
	}
	out := addIndicatorsResponse{AddedCount: added.NewLinks, Indicators: make([]indicatorResponse, len(added.Indicators)), EnrichRequested: added.Enriched}
	for i, ind := range added.Indicators {
		out.Indicators[i] = toIndicatorResponse(ind, false)
	}
	return respond(c, http.StatusCreated, out)
}

// Activity.

type alertActivityQuery struct {
	PageQuery
	EventType []string `query:"event_type" maxLength:"100" doc:"Comma-separated; any of."`
}

type activityEventResponse struct {
	UUID              uuid.UUID      `json:"uuid"`
	EventType         string         `json:"event_type"`
	ActorType         string         `json:"actor_type" enum:"$actor_type"`
	ActorKeyPrefix    *string        `json:"actor_key_prefix"`
	AlertUUID         *uuid.UUID     `json:"alert_uuid"`
	WorkflowUUID      *uuid.UUID     `json:"workflow_uuid"`
	DetectionRuleUUID *uuid.UUID     `json:"detection_rule_uuid"`
	CaseUUID          *uuid.UUID     `json:"case_uuid" doc:"The case an event is about (an alert joining or leaving one, API.md §14)."`
	References        map[string]any `json:"references"`
	CreatedAt         time.Time      `json:"created_at"`
}

func toActivityEventResponse(e store.ActivityEvent) activityEventResponse {
	refs := e.References
	if refs == nil {
		refs = map[string]any{}
	}
	return activityEventResponse{UUID: e.UUID, EventType: e.EventType, ActorType: e.ActorType, ActorKeyPrefix: e.ActorKeyPrefix,
		AlertUUID: e.AlertUUID, WorkflowUUID: e.WorkflowUUID, DetectionRuleUUID: e.DetectionRuleUUID, CaseUUID: e.CaseUUID, References: refs,
		CreatedAt: e.CreatedAt.UTC()}
}

func (s *Server) alertActivity(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q alertActivityQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.deps.Alerts.AlertExists(ctx, id); err != nil {
		return notFoundAs(err, "Alert")
	}
	rows, total, err := s.deps.Alerts.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: q.EventType, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(rows, toActivityEventResponse)
	return respondList(c, out, total, q.PageQuery)
}

// Enrich.

type alertEnrichResponse struct {
	WorkflowID string `json:"workflow_id"`
}

func (s *Server) enrichAlert(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.deps.Alerts.EnqueueRerun(c.UserContext(), id, store.ActorAPI, principal(c).KeyPrefix); err != nil {
		return notFoundAs(err, "Alert")
	}
	return respond(c, http.StatusAccepted, alertEnrichResponse{WorkflowID: ids.Alert(id)})
}

// Relationship graph.

type graphQuery struct {
	SiblingLimit int `query:"sibling_limit" minimum:"1" maximum:"50" default:"10" doc:"Other alerts per indicator."`
}

type graphAlert struct {
	UUID       uuid.UUID `json:"uuid"`
	Title      string    `json:"title"`
	Severity   string    `json:"severity"`
	Status     string    `json:"status"`
	SourceName string    `json:"source_name"`
	OccurredAt time.Time `json:"occurred_at"`
}

type graphIndicator struct {
	UUID          uuid.UUID    `json:"uuid"`
	Type          string       `json:"type"`
	Value         string       `json:"value"`
	Malice        string       `json:"malice"`
	RelatedAlerts []graphAlert `json:"related_alerts"`
}

type graphResponse struct {
	Alert      graphAlert       `json:"alert"`
	Indicators []graphIndicator `json:"indicators"`
}

func (s *Server) relationshipGraph(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q graphQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	a, err := s.deps.Alerts.GetAlert(ctx, id)
	if err != nil {
		return notFoundAs(err, "Alert")
	}
	inds, err := s.deps.Alerts.AlertIndicators(ctx, id)
	if err != nil {
		return err
	}
	sibs, err := s.deps.Alerts.SiblingAlerts(ctx, id, q.SiblingLimit)
	if err != nil {
		return err
	}
	byInd := map[uuid.UUID][]graphAlert{}
	for _, sb := range sibs {
		byInd[sb.IndicatorUUID] = append(byInd[sb.IndicatorUUID], graphAlert{UUID: sb.AlertUUID, Title: sb.Title, Severity: sb.Severity,
			Status: sb.Status, SourceName: sb.SourceName, OccurredAt: sb.OccurredAt.UTC()})
	}
	out := graphResponse{Alert: graphAlert{UUID: a.UUID, Title: a.Title, Severity: a.Severity, Status: a.Status, SourceName: a.SourceName,
		OccurredAt: a.OccurredAt.UTC()}, Indicators: make([]graphIndicator, len(inds))}
	for i, ind := range inds {
		rel := byInd[ind.UUID]
		if rel == nil {
			rel = []graphAlert{}
		}
		out.Indicators[i] = graphIndicator{UUID: ind.UUID, Type: ind.Type, Value: ind.Value, Malice: ind.Malice, RelatedAlerts: rel}
	}
	return respond(c, http.StatusOK, out)
}
