package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func (s *Server) workflowRunRoutes() {
	read, exec := []string{auth.ScopeWorkflowsRead}, []string{auth.ScopeWorkflowsExecute}
	const tag = "Workflow runs"
	s.add(route{Method: http.MethodGet, Path: "/v1/workflows/:uuid/runs", Tag: tag, Summary: "List a workflow's runs",
		Description: "Newest first.", Scopes: read, Query: listRunsQuery{}, Response: workflowRunResponse{}, List: true}, s.listWorkflowRunsOf)
	s.add(route{Method: http.MethodGet, Path: "/v1/workflow-runs", Tag: tag, Summary: "List workflow runs",
		Description: "Newest first.", Scopes: read, Query: listAllRunsQuery{}, Response: workflowRunResponse{}, List: true}, s.listWorkflowRuns)
	s.add(route{Method: http.MethodGet, Path: "/v1/workflow-runs/:uuid", Tag: tag, Summary: "Get a workflow run",
		Scopes: read, Response: workflowRunResponse{}}, s.getWorkflowRun)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflow-runs/:uuid/cancel", Tag: tag, Summary: "Cancel a workflow run",
		Description: "Cancels a queued, waiting or running run (a running run stops before its next step); its pending approval request is cancelled. 409 RUN_NOT_CANCELLABLE for a run that already ended.",
		Scopes:      exec, Response: workflowRunResponse{}, Errors: []int{http.StatusConflict}}, s.cancelWorkflowRun)
}

type workflowRunResponse struct {
	UUID                uuid.UUID       `json:"uuid"`
	WorkflowUUID        uuid.UUID       `json:"workflow_uuid"`
	WorkflowVersion     int             `json:"workflow_version"`
	Status              string          `json:"status" enum:"$run_status"`
	TriggerSource       string          `json:"trigger_source" enum:"$trigger_source"`
	TriggerKeyPrefix    *string         `json:"trigger_key_prefix"`
	Reason              *string         `json:"reason"`
	Confidence          *float64        `json:"confidence"`
	IndicatorType       string          `json:"indicator_type"`
	IndicatorValue      string          `json:"indicator_value"`
	AlertUUID           *uuid.UUID      `json:"alert_uuid"`
	ApprovalRequestUUID *uuid.UUID      `json:"approval_request_uuid"`
	Steps               json.RawMessage `json:"steps" doc:"Per-step records in the seed §2.7 step shape, secrets masked."`
	Result              json.RawMessage `json:"result"`
	Error               *string         `json:"error"`
	AttemptCount        int             `json:"attempt_count"`
	DurationMS          *int64          `json:"duration_ms"`
	StartedAt           *time.Time      `json:"started_at"`
	CompletedAt         *time.Time      `json:"completed_at"`
	CreatedAt           time.Time       `json:"created_at"`
	UpdatedAt           time.Time       `json:"updated_at"`
	TemporalWorkflowID  string          `json:"temporal_workflow_id"`
}

func toRunResponse(r store.WorkflowRun) workflowRunResponse {
	steps := r.Steps
	if len(steps) == 0 {
		steps = json.RawMessage("[]")
	}
	result := r.Result
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	return workflowRunResponse{UUID: r.UUID, WorkflowUUID: r.WorkflowUUID, WorkflowVersion: r.WorkflowVersion, Status: r.Status,
		TriggerSource: r.TriggerSource, TriggerKeyPrefix: r.TriggerKeyPrefix, Reason: r.Reason, Confidence: r.Confidence,
		IndicatorType: r.IndicatorType, IndicatorValue: r.IndicatorValue, AlertUUID: r.AlertUUID, ApprovalRequestUUID: r.ApprovalRequestUUID,
		Steps: steps, Result: result, Error: r.Error, AttemptCount: r.AttemptCount, DurationMS: r.DurationMS,
		StartedAt: utcPtr(r.StartedAt), CompletedAt: utcPtr(r.CompletedAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		TemporalWorkflowID: r.TemporalWorkflowID}
}

type listRunsQuery struct {
	PageQuery
	Status        []string `query:"status" enum:"$run_status" doc:"Comma-separated."`
	TriggerSource []string `query:"trigger_source" enum:"$trigger_source" doc:"Comma-separated."`
}

type listAllRunsQuery struct {
	listRunsQuery
	WorkflowUUID *uuid.UUID `query:"workflow_uuid"`
}

func (s *Server) listWorkflowRunsOf(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q listRunsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := s.deps.Workflows.GetWorkflow(c.UserContext(), id); err != nil {
		return notFoundAs(err, "Workflow")
	}
	return s.listRuns(c, store.WorkflowRunFilter{WorkflowUUID: &id, Statuses: q.Status, TriggerSources: q.TriggerSource, Page: q.storePage()}, q.PageQuery)
}

func (s *Server) listWorkflowRuns(c *fiber.Ctx) error {
	var q listAllRunsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	return s.listRuns(c, store.WorkflowRunFilter{WorkflowUUID: q.WorkflowUUID, Statuses: q.Status, TriggerSources: q.TriggerSource, Page: q.storePage()}, q.PageQuery)
}

func (s *Server) listRuns(c *fiber.Ctx, f store.WorkflowRunFilter, p PageQuery) error {
	runs, total, err := s.deps.Workflows.ListWorkflowRuns(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := mapSlice(runs, toRunResponse)
	return respondList(c, out, total, p)
}

func (s *Server) getWorkflowRun(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	r, err := s.deps.Workflows.GetWorkflowRun(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Workflow run")
	}
	return respond(c, http.StatusOK, toRunResponse(r))
}

func (s *Server) cancelWorkflowRun(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	r, err := s.responses.CancelRun(c.UserContext(), id)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, toRunResponse(r))
}
