package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// WorkflowStore is what the workflow, run, approval and secret routes read; their changes go
// through responses.Service.
type WorkflowStore interface {
	GetWorkflow(ctx context.Context, id uuid.UUID) (store.Workflow, error)
	ListWorkflows(ctx context.Context, f store.WorkflowFilter) ([]store.Workflow, int, error)
	ListWorkflowVersions(ctx context.Context, id uuid.UUID, p store.Page) ([]store.WorkflowVersion, int, error)
	GetWorkflowVersion(ctx context.Context, id uuid.UUID, version int) (store.WorkflowDefinition, error)

	GetWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	ListWorkflowRuns(ctx context.Context, f store.WorkflowRunFilter) ([]store.WorkflowRun, int, error)

	GetApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
	ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.ApprovalRequest, int, error)

	ListWorkflowSecrets(ctx context.Context, p store.Page) ([]store.WorkflowSecret, int, error)
}

func (s *Server) workflowRoutes() {
	read, write, exec := []string{auth.ScopeWorkflowsRead}, []string{auth.ScopeWorkflowsWrite}, []string{auth.ScopeWorkflowsExecute}
	const tag = "Workflows"
	s.add(route{Method: http.MethodGet, Path: "/v1/workflows", Tag: tag, Summary: "List workflows",
		Scopes: read, Query: listWorkflowsQuery{}, Response: workflowResponse{}, List: true}, s.listWorkflows)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflows", Tag: tag, Summary: "Create a workflow",
		Description: "Steps use the enrichment-provider step format with templates over indicator.*, alert.*, secrets.<NAME> and steps.<name>.*; a bad step is named in the 422 (loc body.steps[i]...). A step sending what an earlier step received in exchange for a secret, or a secret named with approval_mode never, needs admin (403).",
		Scopes:      write, Body: createWorkflowRequest{}, Response: workflowResponse{}, Status: http.StatusCreated, Errors: []int{http.StatusForbidden}}, s.createWorkflow)
	s.add(route{Method: http.MethodGet, Path: "/v1/workflows/:uuid", Tag: tag, Summary: "Get a workflow",
		Scopes: read, Response: workflowResponse{}}, s.getWorkflow)
	s.add(route{Method: http.MethodPatch, Path: "/v1/workflows/:uuid", Tag: tag, Summary: "Update a workflow",
		Description: "A change to the definition bumps version and keeps the previous one; state-only changes do not. Lowering approval_mode or required_approvals, and the definitions create needs admin for, need admin (403). System workflows accept only state changes: active needs their secrets (409 WORKFLOW_NOT_CONFIGURED), anything else switches them off until switched on again.",
		Scopes:      write, Body: updateWorkflowRequest{}, Response: workflowResponse{}, Errors: []int{http.StatusForbidden}}, s.updateWorkflow)
	s.add(route{Method: http.MethodDelete, Path: "/v1/workflows/:uuid", Tag: tag, Summary: "Delete a workflow",
		Description: "Runs and versions stay for audit. System workflows cannot be deleted (403).",
		Scopes:      write, Status: http.StatusNoContent, Errors: []int{http.StatusForbidden}}, s.deleteWorkflow)
	s.add(route{Method: http.MethodGet, Path: "/v1/workflows/:uuid/versions", Tag: tag, Summary: "List a workflow's versions",
		Description: "Newest first; each holds the definition as it was.", Scopes: read, Query: PageQuery{}, Response: workflowVersionResponse{}, List: true}, s.listWorkflowVersions)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflows/:uuid/execute", Tag: tag, Summary: "Execute a workflow",
		Description: "trigger_source comes from the key's key_type. Agent keys must send reason and confidence. An Idempotency-Key header returns the same run for a retried request. The run, its approval request and its start are committed together; the request never waits on Temporal (the worker's dispatcher starts the run).",
		Scopes:      exec, Body: executeWorkflowRequest{}, Response: executeWorkflowResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusConflict, http.StatusServiceUnavailable}}, s.executeWorkflow)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflows/:uuid/test", Tag: tag, Summary: "Dry-run a workflow",
		Description: "Steps are resolved and shown (secrets masked). HTTP is answered by mock_http_responses (by step name; default: the step's first expected status with an empty body) unless live_http is true. No run row, no gate. live_http sends real requests with the workflow's secrets: admin only (403 FORBIDDEN, required_scopes [admin]) and recorded as activity workflow.tested_live with the key prefix.",
		Scopes:      exec, Body: testWorkflowRequest{}, Response: testWorkflowResponse{}}, s.testWorkflow)
	s.workflowSecretRoutes()
	s.workflowRunRoutes()
	s.approvalRoutes()
	s.decideRoutes()
}

type retryPolicy struct {
	MaxAttempts            int `json:"max_attempts" required:"true" minimum:"1" maximum:"20"`
	InitialIntervalSeconds int `json:"initial_interval_seconds" required:"true" minimum:"1" maximum:"3600"`
}

type workflowResponse struct {
	UUID                   uuid.UUID       `json:"uuid"`
	Name                   string          `json:"name"`
	Description            *string         `json:"description"`
	Documentation          *string         `json:"documentation"`
	WorkflowType           string          `json:"workflow_type" enum:"$workflow_type"`
	IndicatorTypes         []string        `json:"indicator_types"`
	State                  string          `json:"state" enum:"$workflow_state"`
	Steps                  json.RawMessage `json:"steps"`
	TimeoutSeconds         int             `json:"timeout_seconds"`
	RetryPolicy            retryPolicy     `json:"retry_policy"`
	ApprovalMode           string          `json:"approval_mode" enum:"$approval_mode"`
	ApprovalTimeoutSeconds int             `json:"approval_timeout_seconds"`
	ApprovalChannel        *string         `json:"approval_channel"`
	RequiredApprovals      int             `json:"required_approvals"`
	RiskLevel              string          `json:"risk_level" enum:"$risk_level"`
	Tags                   []string        `json:"tags"`
	TimeSavedMinutes       *int            `json:"time_saved_minutes"`
	IsSystem               bool            `json:"is_system"`
	RequiredSecrets        []string        `json:"required_secrets" doc:"Secrets the workflow names ({{secrets.NAME}})."`
	Version                int             `json:"version"`
	CreatedAt              time.Time       `json:"created_at"`
	UpdatedAt              time.Time       `json:"updated_at"`
}

func toWorkflowResponse(w store.Workflow) workflowResponse {
	return workflowResponse{UUID: w.UUID, Name: w.Name, Description: w.Description, Documentation: w.Documentation,
		WorkflowType: w.WorkflowType, IndicatorTypes: nonNil(w.IndicatorTypes), State: w.State, Steps: w.Steps,
		TimeoutSeconds: w.TimeoutSeconds, RetryPolicy: retryPolicy{MaxAttempts: w.RetryMaxAttempts, InitialIntervalSeconds: w.RetryInitialIntervalSeconds},
		ApprovalMode: w.ApprovalMode, ApprovalTimeoutSeconds: w.ApprovalTimeoutSeconds, ApprovalChannel: w.ApprovalChannel,
		RequiredApprovals: w.RequiredApprovals, RiskLevel: w.RiskLevel, Tags: nonNil(w.Tags), TimeSavedMinutes: w.TimeSavedMinutes,
		IsSystem: w.IsSystem, RequiredSecrets: workflowSecretNames(w.Steps), Version: w.Version, CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC()}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// createWorkflowRequest is a new workflow definition.
type createWorkflowRequest struct {
	Name                   string          `json:"name" required:"true" minLength:"1" maxLength:"200"`
	Description            *string         `json:"description" maxLength:"5000"`
	Documentation          *string         `json:"documentation" maxLength:"100000"`
	WorkflowType           *string         `json:"workflow_type" enum:"$workflow_type" doc:"Default indicator."`
	IndicatorTypes         []string        `json:"indicator_types" maxItems:"8" enum:"$indicator_type" doc:"Indicator types the workflow accepts; empty: every type."`
	State                  *string         `json:"state" enum:"$workflow_state" doc:"Default draft."`
	Steps                  json.RawMessage `json:"steps" required:"true" doc:"List of steps: HTTP steps (provider step format) and kind code steps (Starlark main(ctx)); any step may carry when and for_each (CEL). Checked at save: 422 naming the step and the line and column (docs/WORKFLOWS.md)."`
	TimeoutSeconds         *int            `json:"timeout_seconds" minimum:"1" maximum:"86400" doc:"Whole-run timeout, default 300."`
	RetryPolicy            *retryPolicy    `json:"retry_policy" doc:"Per-step retries; default {max_attempts: 3, initial_interval_seconds: 1}."`
	ApprovalMode           *string         `json:"approval_mode" enum:"$approval_mode" doc:"Default always."`
	ApprovalTimeoutSeconds *int            `json:"approval_timeout_seconds" minimum:"1" maximum:"604800" doc:"Default 3600."`
	ApprovalChannel        *string         `json:"approval_channel" maxLength:"200" doc:"Overrides the notifier's default channel (Slack channel id)."`
	RequiredApprovals      *int            `json:"required_approvals" minimum:"1" maximum:"10" doc:"Distinct responders needed, default 1."`
	RiskLevel              *string         `json:"risk_level" enum:"$risk_level" doc:"Default medium."`
	Tags                   []string        `json:"tags" maxItems:"50" maxLength:"100"`
	TimeSavedMinutes       *int            `json:"time_saved_minutes" minimum:"0" maximum:"100000"`
}

// Validate checks the steps (responses.ValidateSteps), naming the bad step.
func (r createWorkflowRequest) Validate() validate.Errors {
	return responses.ValidateSteps(r.Steps)
}

// definitionError maps the errors of saving a workflow definition (responses.CreateWorkflow,
// UpdateWorkflow, DeleteWorkflow) to the contract's codes.
func definitionError(err error) error {
	var he *responses.SecretHostError
	var verrs validate.Errors
	switch {
	case errors.As(err, &he):
		return NewError(http.StatusUnprocessableEntity, httpsteps.CodeSecretHostNotAllowed,
			"Step "+strconv.Itoa(he.StepIndex)+" ("+he.StepName+") would send secret "+he.Secret+" (or what a step received for it) to "+he.Host+
				", which is not in its allowed_hosts; an admin sets them with PUT /v1/workflow-secrets/"+he.Secret+".").
			WithDetails(map[string]any{"step_index": he.StepIndex, "step_name": he.StepName, "secret": he.Secret, "host": he.Host})
	case errors.As(err, &verrs):
		return inBody(verrs)
	}
	return responsesError(err)
}

func workflowSecretNames(steps json.RawMessage) []string { return responses.WorkflowSecretNames(steps) }

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	out, _ := json.Marshal(v)
	return out
}

func (s *Server) createWorkflow(c *fiber.Ctx) error {
	var req createWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	rp := derefOr(req.RetryPolicy, retryPolicy{MaxAttempts: 3, InitialIntervalSeconds: 1})
	w := store.Workflow{Name: req.Name, Description: req.Description, Documentation: req.Documentation,
		WorkflowType: derefOr(req.WorkflowType, "indicator"), IndicatorTypes: req.IndicatorTypes, State: derefOr(req.State, store.WorkflowStateDraft),
		Steps: compactJSON(req.Steps), TimeoutSeconds: derefOr(req.TimeoutSeconds, 300), RetryMaxAttempts: rp.MaxAttempts,
		RetryInitialIntervalSeconds: rp.InitialIntervalSeconds, ApprovalMode: derefOr(req.ApprovalMode, store.ApprovalModeAlways),
		ApprovalTimeoutSeconds: derefOr(req.ApprovalTimeoutSeconds, 3600), ApprovalChannel: req.ApprovalChannel,
		RequiredApprovals: derefOr(req.RequiredApprovals, 1), RiskLevel: derefOr(req.RiskLevel, "medium"), Tags: req.Tags,
		TimeSavedMinutes: req.TimeSavedMinutes}
	if err := s.responses.CreateWorkflow(c.UserContext(), s.responsesActor(c), &w); err != nil {
		return definitionError(err)
	}
	return respond(c, http.StatusCreated, toWorkflowResponse(w))
}

func (s *Server) getWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	w, err := s.deps.Workflows.GetWorkflow(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	return respond(c, http.StatusOK, toWorkflowResponse(w))
}

type listWorkflowsQuery struct {
	PageQuery
	WorkflowType string   `query:"workflow_type" enum:"$workflow_type"`
	State        []string `query:"state" enum:"$workflow_state" doc:"Comma-separated."`
	RiskLevel    []string `query:"risk_level" enum:"$risk_level" doc:"Comma-separated."`
	Q            string   `query:"q" maxLength:"200" doc:"Case-insensitive match on name and description."`
	SortBy       string   `query:"sort_by" enum:"name,state,risk_level,updated_at,created_at" default:"created_at"`
	SortOrder    string   `query:"sort_order" enum:"asc,desc" default:"desc"`
}

func (s *Server) listWorkflows(c *fiber.Ctx) error {
	var q listWorkflowsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ws, total, err := s.deps.Workflows.ListWorkflows(c.UserContext(), store.WorkflowFilter{WorkflowType: q.WorkflowType, States: q.State,
		RiskLevels: q.RiskLevel, Q: q.Q, SortBy: q.SortBy, Desc: q.SortOrder == "desc", Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(ws, toWorkflowResponse)
	return respondList(c, out, total, q.PageQuery)
}

type updateWorkflowRequest struct {
	Name                   *string          `json:"name" minLength:"1" maxLength:"200"`
	Description            Optional[string] `json:"description" maxLength:"5000"`
	Documentation          Optional[string] `json:"documentation" maxLength:"100000"`
	WorkflowType           *string          `json:"workflow_type" enum:"$workflow_type"`
	IndicatorTypes         []string         `json:"indicator_types" maxItems:"8" enum:"$indicator_type"`
	State                  *string          `json:"state" enum:"$workflow_state"`
	Steps                  json.RawMessage  `json:"steps"`
	TimeoutSeconds         *int             `json:"timeout_seconds" minimum:"1" maximum:"86400"`
	RetryPolicy            *retryPolicy     `json:"retry_policy"`
	ApprovalMode           *string          `json:"approval_mode" enum:"$approval_mode"`
	ApprovalTimeoutSeconds *int             `json:"approval_timeout_seconds" minimum:"1" maximum:"604800"`
	ApprovalChannel        Optional[string] `json:"approval_channel" maxLength:"200"`
	RequiredApprovals      *int             `json:"required_approvals" minimum:"1" maximum:"10"`
	RiskLevel              *string          `json:"risk_level" enum:"$risk_level"`
	Tags                   []string         `json:"tags" maxItems:"50" maxLength:"100"`
	TimeSavedMinutes       Optional[int]    `json:"time_saved_minutes" minimum:"0" maximum:"100000"`
}

// Validate checks new steps like create does.
func (r updateWorkflowRequest) Validate() validate.Errors {
	if r.Steps == nil {
		return nil
	}
	return responses.ValidateSteps(r.Steps)
}

func (s *Server) updateWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	w, err := s.responses.UpdateWorkflow(c.UserContext(), s.responsesActor(c), id, func(d *store.WorkflowDefinition) {
		if req.Name != nil {
			d.Name = *req.Name
		}
		if req.Description.Set {
			d.Description = optionalPtr(req.Description)
		}
		if req.Documentation.Set {
			d.Documentation = optionalPtr(req.Documentation)
		}
		if req.WorkflowType != nil {
			d.WorkflowType = *req.WorkflowType
		}
		if req.IndicatorTypes != nil {
			d.IndicatorTypes = req.IndicatorTypes
		}
		if req.Steps != nil {
			d.Steps = compactJSON(req.Steps)
		}
		if req.TimeoutSeconds != nil {
			d.TimeoutSeconds = *req.TimeoutSeconds
		}
		if req.RetryPolicy != nil {
			d.RetryMaxAttempts, d.RetryInitialIntervalSeconds = req.RetryPolicy.MaxAttempts, req.RetryPolicy.InitialIntervalSeconds
		}
		if req.ApprovalMode != nil {
			d.ApprovalMode = *req.ApprovalMode
		}
		if req.ApprovalTimeoutSeconds != nil {
			d.ApprovalTimeoutSeconds = *req.ApprovalTimeoutSeconds
		}
		if req.ApprovalChannel.Set {
			d.ApprovalChannel = optionalPtr(req.ApprovalChannel)
		}
		if req.RequiredApprovals != nil {
			d.RequiredApprovals = *req.RequiredApprovals
		}
		if req.RiskLevel != nil {
			d.RiskLevel = *req.RiskLevel
		}
		if req.Tags != nil {
			d.Tags = req.Tags
		}
		if req.TimeSavedMinutes.Set {
			d.TimeSavedMinutes = optionalPtr(req.TimeSavedMinutes)
		}
	}, req.State)
	if err != nil {
		return definitionError(err)
	}
	return respond(c, http.StatusOK, toWorkflowResponse(w))
}

func optionalPtr[T any](o Optional[T]) *T {
	if o.Null {
		return nil
	}
	v := o.Value
	return &v
}

func (s *Server) deleteWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.responses.DeleteWorkflow(c.UserContext(), s.responsesActor(c), id); err != nil {
		return definitionError(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type workflowVersionResponse struct {
	Version    int             `json:"version"`
	Definition json.RawMessage `json:"definition"`
	CreatedAt  time.Time       `json:"created_at"`
}

func (s *Server) listWorkflowVersions(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := s.deps.Workflows.GetWorkflow(ctx, id); err != nil {
		return notFoundAs(err, "Workflow")
	}
	vs, total, err := s.deps.Workflows.ListWorkflowVersions(ctx, id, q.storePage())
	if err != nil {
		return err
	}
	out := make([]workflowVersionResponse, len(vs))
	for i, v := range vs {
		out[i] = workflowVersionResponse{Version: v.Version, Definition: v.Definition, CreatedAt: v.CreatedAt.UTC()}
	}
	return respondList(c, out, total, q)
}
