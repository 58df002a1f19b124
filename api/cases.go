package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// CaseService is the rules of cases (cases.Service), shared with MCP and the console.
type CaseService interface {
	Create(ctx context.Context, in cases.Create, actor store.Actor) (store.Case, error)
	Get(ctx context.Context, id uuid.UUID) (cases.Detail, error)
	Exists(ctx context.Context, id uuid.UUID) error
	List(ctx context.Context, f cases.Filter) ([]store.Case, int, error)
	Patch(ctx context.Context, id uuid.UUID, p cases.Patch, actor store.Actor) (cases.Patched, error)
	AddAlerts(ctx context.Context, id uuid.UUID, ids []uuid.UUID, move bool, actor store.Actor) (store.CaseAdded, error)
	RemoveAlert(ctx context.Context, id, alertID uuid.UUID, actor store.Actor) error
	Delete(ctx context.Context, id uuid.UUID, actor store.Actor) error
}

// caseRoutes: cases (API.md §14). Served when Deps.Cases is set (and their comments and timeline
// with Deps.Comments and Deps.Timeline).
func (s *Server) caseRoutes() {
	if s.deps.Cases == nil {
		return
	}
	read := []string{auth.ScopeAlertsRead}
	write := cases.WriteScopes // alerts:read too (R4-3)
	const tag = "Cases"
	s.add(route{Method: http.MethodGet, Path: "/v1/cases", Tag: tag, Summary: "List cases",
		Description: "Case summaries (no indicators). Multi-value filters take comma-separated values. q matches the title or description (case-insensitive substring) or a case number (CASE-12).",
		Scopes:      read, Query: listCasesQuery{}, Response: caseResponse{}, List: true}, s.listCases)
	s.add(route{Method: http.MethodPost, Path: "/v1/cases", Tag: tag, Summary: "Create a case",
		Description: "With alert_uuids the alerts join it at once, all or none: an alert of another case is 409 ALERT_IN_OTHER_CASE naming it unless move is true. case_number is a per-installation sequence shown as CASE-<n>. Raises case.created (and case.alert_added per alert).",
		Scopes:      write, Body: createCaseRequest{}, Response: caseResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusNotFound, http.StatusConflict}}, s.createCase)
	s.add(route{Method: http.MethodGet, Path: "/v1/cases/:uuid", Tag: tag, Summary: "Get a case",
		Description: "The case with its distinct indicators (worst malice first). severity is the one set by hand, else the worst of its alerts; malice is the worst of its alerts.",
		Scopes:      read, Response: caseResponse{}}, s.getCase)
	s.add(route{Method: http.MethodPatch, Path: "/v1/cases/:uuid", Tag: tag, Summary: "Update a case",
		Description: "Status moves follow the graph (" + cases.TransitionSummary() + "); others are 422 invalid_transition. Closing needs close_classification; close_alerts: true with it closes every alert of the case that is not Closed with the same classification, each through the alert rules in its own transaction (meta.closed_alerts reports each). null leaves a field unchanged. Raises case.updated.",
		Scopes:      write, Body: patchCaseRequest{}, Response: caseResponse{}}, s.patchCase)
	s.add(route{Method: http.MethodDelete, Path: "/v1/cases/:uuid", Tag: tag, Summary: "Delete a case",
		Description: "Its alerts stay, outside any case; its comments are deleted.",
		Scopes:      []string{auth.ScopeAdmin}, Status: http.StatusNoContent}, s.deleteCase)
	s.add(route{Method: http.MethodGet, Path: "/v1/cases/:uuid/alerts", Tag: tag, Summary: "List a case's alerts",
		Description: "Alert summaries, as GET /v1/alerts?case_uuid= (newest occurrence first).",
		Scopes:      read, Query: PageQuery{}, Response: alertSummary{}, List: true}, s.listCaseAlerts)
	s.add(route{Method: http.MethodPost, Path: "/v1/cases/:uuid/alerts", Tag: tag, Summary: "Add alerts to a case",
		Description: "1..500 distinct alert uuids, all or none: an alert of another case is 409 ALERT_IN_OTHER_CASE naming it, unless move is true. An alert already in the case is no change. Raises case.alert_added per alert that joins.",
		Scopes:      write, Body: addCaseAlertsRequest{}, Response: caseAlertsAddedResponse{}, Errors: []int{http.StatusNotFound, http.StatusConflict}}, s.addCaseAlerts)
	s.add(route{Method: http.MethodDelete, Path: "/v1/cases/:uuid/alerts/:alert_uuid", Tag: tag, Summary: "Remove an alert from a case",
		Description: "404 when the alert is not in the case.", Scopes: write, Status: http.StatusNoContent}, s.removeCaseAlert)
	if s.deps.Comments == nil || s.deps.Timeline == nil {
		return
	}
	s.add(route{Method: http.MethodPost, Path: "/v1/cases/:uuid/comments", Tag: tag, Summary: "Comment on a case",
		Description: "Markdown, 1..20 000 characters, stored exactly as sent (NUL, lone surrogates and invalid UTF-8 are 422). The author is the calling key. Raises case.updated.",
		Scopes:      write, Body: commentRequest{}, Response: commentResponse{}, Status: http.StatusCreated}, s.createCaseComment)
	s.add(route{Method: http.MethodGet, Path: "/v1/cases/:uuid/comments", Tag: tag, Summary: "List a case's comments",
		Description: "Oldest first (the case's own; its alerts' comments are on its timeline).", Scopes: read, Query: PageQuery{},
		Response: commentResponse{}, List: true}, s.listCaseComments)
	s.add(route{Method: http.MethodPatch, Path: "/v1/cases/:uuid/comments/:comment_uuid", Tag: tag, Summary: "Edit a case comment",
		Description: "Only the key that wrote it (403 NOT_COMMENT_AUTHOR); the previous body stays in the case's activity (comment_edited).",
		Scopes:      write, Body: commentRequest{}, Response: commentResponse{}}, s.editCaseComment)
	s.add(route{Method: http.MethodDelete, Path: "/v1/cases/:uuid/comments/:comment_uuid", Tag: tag, Summary: "Delete a case comment",
		Description: "The key that wrote it, or an admin key (403 NOT_COMMENT_AUTHOR otherwise); the body stays in the case's activity (comment_deleted).",
		Scopes:      write, Status: http.StatusNoContent}, s.deleteCaseComment)
	s.add(route{Method: http.MethodGet, Path: "/v1/cases/:uuid/timeline", Tag: tag, Summary: "A case's timeline",
		Description: "One list, oldest first: the case's activity and comments merged with every item of its alerts' timelines. summary holds text people, agents and sources wrote: show it as text.",
		Scopes:      read, Query: PageQuery{}, Response: timelineItemResponse{}, List: true}, s.caseTimeline)
}

// Responses.

type caseResponse struct {
	UUID                uuid.UUID                 `json:"uuid"`
	CaseNumber          string                    `json:"case_number" doc:"CASE-<n>, a per-installation sequence."`
	Title               string                    `json:"title" doc:"Written by people or agents: show it as text."`
	Description         *string                   `json:"description" doc:"Written by people or agents: show it as text."`
	Severity            string                    `json:"severity" enum:"$severity" doc:"severity_override when set, else the worst severity of its alerts (Pending when it has none)."`
	SeverityOverride    *string                   `json:"severity_override" enum:"$severity" doc:"The severity set by hand; null: derived from its alerts."`
	Status              string                    `json:"status" enum:"$case_status"`
	Assignee            *string                   `json:"assignee"`
	AssignedAt          *time.Time                `json:"assigned_at"`
	CloseClassification *string                   `json:"close_classification" enum:"$close_classification"`
	Tags                []string                  `json:"tags"`
	AlertCount          int                       `json:"alert_count"`
	Malice              string                    `json:"malice" enum:"$malice" doc:"The worst effective malice of its alerts (Pending when it has none)."`
	Indicators          *[]store.CaseIndicatorRow `json:"indicators,omitempty" doc:"The single case only: the distinct indicators of its alerts, worst malice first, at most 500; alert_count is how many of its alerts carry each."`
	CreatedAt           time.Time                 `json:"created_at"`
	UpdatedAt           time.Time                 `json:"updated_at"`
	ClosedAt            *time.Time                `json:"closed_at"`
}

func toCaseResponse(c store.Case) caseResponse {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	return caseResponse{UUID: c.UUID, CaseNumber: c.Number(), Title: c.Title, Description: c.Description, Severity: c.EffectiveSeverity,
		SeverityOverride: c.Severity, Status: c.Status, Assignee: c.Assignee, AssignedAt: utcPtr(c.AssignedAt),
		CloseClassification: c.CloseClassification, Tags: tags, AlertCount: c.AlertCount, Malice: c.Malice,
		CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), ClosedAt: utcPtr(c.ClosedAt)}
}

func toCaseDetailResponse(d cases.Detail) caseResponse {
	r := toCaseResponse(d.Case)
	inds := d.Indicators
	if inds == nil {
		inds = []store.CaseIndicatorRow{}
	}
	r.Indicators = &inds
	return r
}

// List.

type listCasesQuery struct {
	PageQuery
	Status    []string `query:"status" enum:"$case_status" doc:"Comma-separated; any of."`
	Severity  []string `query:"severity" enum:"$severity" doc:"Comma-separated; any of (the case's severity)."`
	Assignee  []string `query:"assignee" maxLength:"200" doc:"Comma-separated handles; any of. none = unassigned."`
	Q         string   `query:"q" maxLength:"500" doc:"Case-insensitive substring of the title or description, or a case number (CASE-12)."`
	SortBy    string   `query:"sort_by" enum:"$case_sort" default:"updated_at"`
	SortOrder string   `query:"sort_order" enum:"asc,desc" default:"desc"`
}

func (q listCasesQuery) filter() cases.Filter {
	f := cases.Filter{Statuses: q.Status, Severities: q.Severity, Query: q.Q, SortBy: q.SortBy, SortDesc: q.SortOrder == "desc",
		Page: q.storePage()}
	f.Assignees, f.Unassigned = alerts.AssigneeFilter(q.Assignee)
	return f
}

func (s *Server) listCases(c *fiber.Ctx) error {
	var q listCasesQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.Cases.List(c.UserContext(), q.filter())
	if err != nil {
		return inQuery(err)
	}
	return respondList(c, mapSlice(rows, toCaseResponse), total, q.PageQuery)
}

// inQuery moves the locations of a domain service's validation errors under "query".
func inQuery(err error) error {
	var verrs validate.Errors
	if errors.As(err, &verrs) {
		var out validate.Errors
		out.Merge([]any{"query"}, verrs)
		return out
	}
	return err
}

// Create.

type createCaseRequest struct {
	Title       string      `json:"title" required:"true" minLength:"1" maxLength:"500" doc:"Not only white space; trimmed."`
	Description *string     `json:"description" maxLength:"50000"`
	Severity    *string     `json:"severity" enum:"$severity" doc:"Set by hand; absent or null: derived from its alerts."`
	Assignee    *string     `json:"assignee" doc:"A person's handle (1..200 characters, trimmed; not \"none\")."`
	Tags        []string    `json:"tags" maxItems:"50" doc:"Each 1..100 characters; blank and repeated tags are dropped."`
	AlertUUIDs  []uuid.UUID `json:"alert_uuids" maxItems:"500" doc:"Alerts that join the case at once (1..500 distinct)."`
	Move        bool        `json:"move" doc:"Alerts of other cases leave them for this one (else 409 ALERT_IN_OTHER_CASE)."`
}

func (r createCaseRequest) create() cases.Create {
	return cases.Create{Title: r.Title, Description: r.Description, Severity: r.Severity, Assignee: r.Assignee, Tags: r.Tags,
		AlertUUIDs: r.AlertUUIDs, Move: r.Move}
}

// Validate applies the case rules that need no stored data (cases.Create.Validate).
func (r createCaseRequest) Validate() validate.Errors { return r.create().Validate() }

func (s *Server) createCase(c *fiber.Ctx) error {
	var req createCaseRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	created, err := s.deps.Cases.Create(ctx, req.create(), s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Alert")
	}
	d, err := s.deps.Cases.Get(ctx, created.UUID)
	if err != nil {
		return err
	}
	return respond(c, http.StatusCreated, toCaseDetailResponse(d))
}

func (s *Server) getCase(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	d, err := s.deps.Cases.Get(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Case")
	}
	return respond(c, http.StatusOK, toCaseDetailResponse(d))
}

// PATCH.

type patchCaseRequest struct {
	Title               *string            `json:"title" minLength:"1" maxLength:"500"`
	Description         *string            `json:"description" maxLength:"50000" doc:"\"\" clears it."`
	Severity            *string            `json:"severity" enum:"$severity" doc:"Sets severity_override."`
	ResetSeverity       bool               `json:"reset_severity" doc:"true clears severity_override: the severity is derived from its alerts again."`
	Status              *string            `json:"status" enum:"$case_status"`
	CloseClassification *string            `json:"close_classification" enum:"$close_classification"`
	Assignee            *string            `json:"assignee" doc:"A person's handle; \"\" unassigns; null leaves it."`
	Tags                Optional[[]string] `json:"tags" maxItems:"50" maxLength:"100" doc:"Replaces the list (blank and repeated tags are dropped)."`
	CloseAlerts         bool               `json:"close_alerts" doc:"With status Closed: close every alert of the case that is not Closed with the same classification."`
}

func (r patchCaseRequest) patch() cases.Patch {
	p := cases.Patch{Title: r.Title, Description: r.Description, Severity: r.Severity, ResetSeverity: r.ResetSeverity, Status: r.Status,
		CloseClassification: r.CloseClassification, Assignee: r.Assignee, CloseAlerts: r.CloseAlerts}
	if r.Tags.Set && !r.Tags.Null {
		p.Tags = &r.Tags.Value
	}
	return p
}

// Validate checks the rules that do not need the stored case (cases.Patch.Validate).
func (r patchCaseRequest) Validate() validate.Errors { return r.patch().Validate() }

type patchCaseMeta struct {
	ClosedAlerts *bulkAlertsResponse `json:"closed_alerts,omitempty" doc:"With close_alerts: one result per alert the close reached (as POST /v1/alerts/bulk)."`
}

func (s *Server) patchCase(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req patchCaseRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	p, err := s.deps.Cases.Patch(ctx, id, req.patch(), s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Case")
	}
	d, err := s.deps.Cases.Get(ctx, id)
	if err != nil {
		return notFoundAs(err, "Case")
	}
	var meta patchCaseMeta
	if p.ClosedAlerts != nil {
		r := s.bulkResponse(ctx, *p.ClosedAlerts)
		meta.ClosedAlerts = &r
	}
	return respondMeta(c, http.StatusOK, toCaseDetailResponse(d), meta)
}

// bulkResponse answers a bulk alert change's outcome, one result per alert.
func (s *Server) bulkResponse(ctx context.Context, done alerts.Bulked) bulkAlertsResponse {
	out := bulkAlertsResponse{Results: make([]bulkResult, len(done.Items)), Succeeded: done.Succeeded, Failed: done.Failed}
	for i, it := range done.Items {
		out.Results[i] = bulkResult{AlertUUID: it.AlertUUID, OK: it.Err == nil}
		if it.Err != nil {
			item := errcode.ItemOf(it.Err, "Alert")
			if item.Internal {
				s.log.ErrorContext(ctx, "bulk alert change", "alert_uuid", it.AlertUUID, "error", it.Err)
			}
			out.Results[i].Error = &bulkError{Code: item.Code, Message: item.Message, Detail: item.Fields}
		}
	}
	return out
}

func (s *Server) deleteCase(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.deps.Cases.Delete(c.UserContext(), id, s.actor(c)); err != nil {
		return notFoundAs(err, "Case")
	}
	return c.SendStatus(http.StatusNoContent)
}

// Alerts of a case.

func (s *Server) listCaseAlerts(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.deps.Cases.Exists(ctx, id); err != nil {
		return notFoundAs(err, "Case")
	}
	out, total, err := s.alertSummaries(ctx, store.AlertFilter{CaseUUID: &id, SortBy: "occurred_at", SortDesc: true, Page: q.storePage()})
	if err != nil {
		return err
	}
	return respondList(c, out, total, q)
}

type addCaseAlertsRequest struct {
	AlertUUIDs []uuid.UUID `json:"alert_uuids" required:"true" minItems:"1" maxItems:"500"`
	Move       bool        `json:"move" doc:"Alerts of other cases leave them for this one (else 409 ALERT_IN_OTHER_CASE)."`
}

// Validate checks the list (cases.ValidateAlertList).
func (r addCaseAlertsRequest) Validate() validate.Errors {
	return cases.ValidateAlertList("alert_uuids", r.AlertUUIDs)
}

type caseAlertsAddedResponse struct {
	Case   caseResponse `json:"case"`
	Joined []uuid.UUID  `json:"joined" doc:"The alerts that joined (those already in the case are not listed)."`
}

func (s *Server) addCaseAlerts(c *fiber.Ctx) error {
	id, pathErr := pathUUID(c, "uuid")
	var req addCaseAlertsRequest
	bodyErr := bindBody(c, &req)
	if err := joinRequestErrors(pathErr, bodyErr); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.deps.Cases.Exists(ctx, id); err != nil {
		return notFoundAs(err, "Case")
	}
	added, err := s.deps.Cases.AddAlerts(ctx, id, req.AlertUUIDs, req.Move, s.actor(c))
	if err != nil {
		return notFoundAs(inBody(err), "Alert")
	}
	joined := added.Joined
	if joined == nil {
		joined = []uuid.UUID{}
	}
	return respond(c, http.StatusOK, caseAlertsAddedResponse{Case: toCaseResponse(added.Case), Joined: joined})
}

func (s *Server) removeCaseAlert(c *fiber.Ctx) error {
	id, errA := pathUUID(c, "uuid")
	alertID, errB := pathUUID(c, "alert_uuid")
	if err := joinRequestErrors(errA, errB); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.deps.Cases.Exists(ctx, id); err != nil {
		return notFoundAs(err, "Case")
	}
	if err := s.deps.Cases.RemoveAlert(ctx, id, alertID, s.actor(c)); err != nil {
		return notFoundAs(err, "Alert in this case")
	}
	return c.SendStatus(http.StatusNoContent)
}

// Comments and timeline.

func (s *Server) createCaseComment(c *fiber.Ctx) error {
	return s.postComment(c, store.CaseCommentSubject, "Case")
}

func (s *Server) listCaseComments(c *fiber.Ctx) error {
	return s.commentsOf(c, store.CaseCommentSubject, "Case")
}

func (s *Server) editCaseComment(c *fiber.Ctx) error {
	return s.patchComment(c, store.CaseCommentSubject, "Case")
}

func (s *Server) deleteCaseComment(c *fiber.Ctx) error {
	return s.removeComment(c, store.CaseCommentSubject, "Case")
}

func (s *Server) caseTimeline(c *fiber.Ctx) error {
	return s.timelineOf(c, s.deps.Timeline.Case, "Case")
}
