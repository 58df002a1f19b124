package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/approvals"
	"github.com/vigil-soc/vigil/auth"
	"github.com/vigil-soc/vigil/httpsteps"
	"github.com/vigil-soc/vigil/indicators"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/validate"
)

// WorkflowRunStarter starts and signals the Temporal workflow of a run (temporal.RunStarter).
type WorkflowRunStarter interface {
	StartWorkflowRun(ctx context.Context, run store.WorkflowRun, workflowName string, gated bool, expiresAt time.Time) (string, error)
	SignalWorkflowRun(ctx context.Context, runID uuid.UUID) error
}

type executeWorkflowRequest struct {
	IndicatorType  string     `json:"indicator_type" required:"true" enum:"$indicator_type"`
	IndicatorValue string     `json:"indicator_value" required:"true" minLength:"1" maxLength:"2048"`
	AlertUUID      *uuid.UUID `json:"alert_uuid"`
	Reason         *string    `json:"reason" maxLength:"5000" doc:"Required (non-empty) for agent keys."`
	Confidence     *float64   `json:"confidence" minimum:"0" maximum:"1" doc:"Required for agent keys; 0..1."`
}

type executeWorkflowResponse struct {
	RunUUID             uuid.UUID  `json:"run_uuid"`
	Status              string     `json:"status" enum:"queued,pending_approval,running,succeeded,failed,timed_out,rejected,expired,cancelled" doc:"queued or pending_approval for a new run; a retried Idempotency-Key request shows the run's current status."`
	TriggerSource       string     `json:"trigger_source" enum:"human,agent"`
	ApprovalRequestUUID *uuid.UUID `json:"approval_request_uuid,omitempty"`
	ExpiresAt           *time.Time `json:"expires_at,omitempty"`
	WorkflowID          string     `json:"workflow_id" doc:"Temporal workflow id: workflow-run-<run_uuid>."`
}

const maxIdempotencyKeyLen = 200

func (s *Server) executeWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	p := principal(c)
	trigger := p.KeyType
	if trigger != auth.KeyTypeAgent {
		trigger = auth.KeyTypeHuman
	}
	var req executeWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	var errs validate.Errors
	if trigger == auth.KeyTypeAgent {
		if req.Reason == nil || strings.TrimSpace(*req.Reason) == "" {
			errs.Add([]any{"body", "reason"}, validate.TypeMissing, "Agent keys must give a non-empty reason.", nil)
		}
		if req.Confidence == nil {
			errs.Add([]any{"body", "confidence"}, validate.TypeMissing, "Agent keys must give a confidence between 0 and 1.", nil)
		}
	}
	idemKey := c.Get("Idempotency-Key")
	if len(idemKey) > maxIdempotencyKeyLen || strings.ContainsFunc(idemKey, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		errs.Add([]any{"header", "Idempotency-Key"}, validate.TypeValue, "Idempotency-Key must be 1..200 visible ASCII characters.", nil)
	}
	value, nerr := indicators.Normalize(indicators.Type(req.IndicatorType), req.IndicatorValue)
	if nerr != nil {
		errs.Add([]any{"body", "indicator_value"}, validate.TypeValue, "Not a valid "+req.IndicatorType+": "+nerr.Error(), validate.Truncate(req.IndicatorValue))
	}
	if err := errs.Err(); err != nil {
		return err
	}
	ctx := c.UserContext()
	if idemKey != "" {
		run, err := s.deps.Workflows.FindIdempotentRun(ctx, p.KeyUUID, id, idemKey)
		if err == nil {
			return s.respondExecuted(c, run)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	w, err := s.deps.Workflows.GetWorkflow(ctx, id)
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	if w.State != store.WorkflowStateActive {
		return NewError(http.StatusConflict, "WORKFLOW_NOT_ACTIVE", "Workflow is "+w.State+", not active.").WithDetails(map[string]any{"state": w.State})
	}
	if len(w.IndicatorTypes) > 0 && !slices.Contains(w.IndicatorTypes, req.IndicatorType) {
		var errs validate.Errors
		errs.AddCtx([]any{"body", "indicator_type"}, validate.TypeEnum, "This workflow accepts indicator types: "+strings.Join(w.IndicatorTypes, ", ")+".",
			req.IndicatorType, map[string]any{"expected": w.IndicatorTypes})
		return errs
	}
	if w.WorkflowType == "alert" && req.AlertUUID == nil {
		var errs validate.Errors
		errs.Add([]any{"body", "alert_uuid"}, validate.TypeMissing, "This workflow acts on an alert: alert_uuid is required.", nil)
		return errs
	}
	if req.AlertUUID != nil {
		if _, err := s.deps.Workflows.AlertTemplateValues(ctx, *req.AlertUUID); err != nil {
			return notFoundAs(err, "Alert")
		}
	}
	keyUUID, prefix := p.KeyUUID, p.KeyPrefix
	run := store.WorkflowRun{UUID: uuid.New(), WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunQueued,
		TriggerSource: trigger, TriggerKeyUUID: &keyUUID, TriggerKeyPrefix: &prefix, Reason: req.Reason, Confidence: req.Confidence,
		IndicatorType: req.IndicatorType, IndicatorValue: value, AlertUUID: req.AlertUUID}
	if idemKey != "" {
		run.IdempotencyKey = &idemKey
	}
	var approval *store.ApprovalRequest
	gated := approvals.Needed(w.ApprovalMode, trigger)
	if gated {
		run.Status = store.RunPendingApproval
		approval = &store.ApprovalRequest{UUID: uuid.New(), WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: trigger,
			TriggerKeyUUID: &keyUUID, TriggerKeyPrefix: &prefix, Reason: req.Reason, Confidence: req.Confidence,
			IndicatorType: req.IndicatorType, IndicatorValue: value, RiskLevel: w.RiskLevel, Status: store.ApprovalPending,
			RequiredApprovals: w.RequiredApprovals, ExpiresAt: approvals.ExpiresAt(time.Now(), w.ApprovalTimeoutSeconds),
			NotifierType: approvals.NotifierNone}
	}
	created, err := s.deps.Workflows.CreateWorkflowRun(ctx, &run, approval)
	if err != nil {
		return err
	}
	if !created {
		return s.respondExecuted(c, run)
	}
	var expires time.Time
	if approval != nil {
		expires = approval.ExpiresAt
	}
	if _, err := s.deps.RunStarter.StartWorkflowRun(ctx, run, w.Name, gated, expires); err != nil {
		s.log.ErrorContext(ctx, "start workflow run", "err", err, "run_uuid", run.UUID)
		if idemKey == "" {
			// Nobody can retry this run: end it so it does not sit queued forever.
			msg := "could not be started: Temporal unavailable"
			if _, _, ferr := s.deps.Workflows.FinishWorkflowRun(context.WithoutCancel(ctx), run.UUID, store.RunFailed, nil, &msg); ferr != nil {
				s.log.ErrorContext(ctx, "fail unstarted run", "err", ferr, "run_uuid", run.UUID)
			}
		}
		return NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "The workflow engine is unavailable; retry with the same Idempotency-Key.")
	}
	return s.respondExecutedWith(c, run, approval)
}

// respondExecuted answers a retried request: the run's workflow is (re)started so a request that
// failed after the insert still gets its run going; a started or closed one is left as it is.
func (s *Server) respondExecuted(c *fiber.Ctx, run store.WorkflowRun) error {
	ctx := c.UserContext()
	var approval *store.ApprovalRequest
	if run.ApprovalRequestUUID != nil {
		a, err := s.deps.Workflows.GetApproval(ctx, *run.ApprovalRequestUUID)
		if err != nil {
			return err
		}
		approval = &a
	}
	if run.Status == store.RunQueued || run.Status == store.RunPendingApproval {
		w, err := s.deps.Workflows.GetWorkflowVersion(ctx, run.WorkflowUUID, run.WorkflowVersion)
		if err != nil {
			return err
		}
		var expires time.Time
		if approval != nil {
			expires = approval.ExpiresAt
		}
		if _, err := s.deps.RunStarter.StartWorkflowRun(ctx, run, w.Name, approval != nil, expires); err != nil {
			s.log.ErrorContext(ctx, "restart workflow run", "err", err, "run_uuid", run.UUID)
			return NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "The workflow engine is unavailable; retry with the same Idempotency-Key.")
		}
	}
	return s.respondExecutedWith(c, run, approval)
}

func (s *Server) respondExecutedWith(c *fiber.Ctx, run store.WorkflowRun, approval *store.ApprovalRequest) error {
	out := executeWorkflowResponse{RunUUID: run.UUID, Status: run.Status, TriggerSource: run.TriggerSource, WorkflowID: run.TemporalWorkflowID}
	if approval != nil {
		id, exp := approval.UUID, approval.ExpiresAt.UTC()
		out.ApprovalRequestUUID, out.ExpiresAt = &id, &exp
	}
	return respond(c, http.StatusAccepted, out)
}

type mockHTTPResponse struct {
	StatusCode *int              `json:"status_code" minimum:"100" maximum:"599" doc:"Default: the step's first expected status."`
	Headers    map[string]string `json:"headers"`
	Body       any               `json:"body" doc:"JSON value (a string is sent as text)."`
}

type testWorkflowRequest struct {
	IndicatorType     string                      `json:"indicator_type" required:"true" enum:"$indicator_type"`
	IndicatorValue    string                      `json:"indicator_value" required:"true" minLength:"1" maxLength:"2048"`
	AlertUUID         *uuid.UUID                  `json:"alert_uuid"`
	MockHTTPResponses map[string]mockHTTPResponse `json:"mock_http_responses" doc:"By step name."`
	LiveHTTP          bool                        `json:"live_http" doc:"Send real requests (through the SSRF guard) instead of mocks."`
}

// Validate checks the mock responses (map values are not covered by the struct tags).
func (r testWorkflowRequest) Validate() validate.Errors {
	var errs validate.Errors
	if len(r.MockHTTPResponses) > httpsteps.MaxSteps {
		errs.Add([]any{"mock_http_responses"}, validate.TypeTooLong, "At most one mock per step.", len(r.MockHTTPResponses))
	}
	for name, m := range r.MockHTTPResponses {
		if m.StatusCode != nil && (*m.StatusCode < 100 || *m.StatusCode > 599) {
			errs.AddCtx([]any{"mock_http_responses", name, "status_code"}, validate.TypeValue, "status_code must be 100..599.", *m.StatusCode,
				map[string]any{"ge": 100, "le": 599})
		}
		if len(m.Headers) > httpsteps.MaxHeaders {
			errs.Add([]any{"mock_http_responses", name, "headers"}, validate.TypeTooLong, "Too many headers.", nil)
		}
	}
	return errs
}

type testWorkflowResponse struct {
	Success        bool                   `json:"success"`
	WorkflowName   string                 `json:"workflow_name"`
	IndicatorType  string                 `json:"indicator_type"`
	IndicatorValue string                 `json:"indicator_value"`
	LiveHTTP       bool                   `json:"live_http"`
	ErrorMessage   string                 `json:"error_message"`
	DurationMS     int64                  `json:"duration_ms"`
	Steps          []httpsteps.StepRecord `json:"steps"`
}

// mockDoer answers one step's request with its mock response.
type mockDoer struct{ resp mockHTTPResponse }

func (m mockDoer) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	switch b := m.resp.Body.(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		body, _ = json.Marshal(b)
	}
	h := http.Header{}
	for k, v := range m.resp.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" && m.resp.Body != nil {
		if _, isText := m.resp.Body.(string); !isText {
			h.Set("Content-Type", "application/json")
		}
	}
	return &http.Response{StatusCode: *m.resp.StatusCode, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req,
		ContentLength: int64(len(body))}, nil
}

func (s *Server) testWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req testWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	w, err := s.deps.Workflows.GetWorkflow(ctx, id)
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	raw, _ := json.Marshal(map[string]json.RawMessage{"steps": w.Steps})
	cfg, verrs := httpsteps.ParseConfig(raw)
	if len(verrs) > 0 {
		return NewError(http.StatusConflict, "WORKFLOW_INVALID", "The stored steps no longer parse.")
	}
	vars := map[string]any{"indicator": map[string]any{"type": req.IndicatorType, "value": strings.TrimSpace(req.IndicatorValue)}}
	if req.AlertUUID != nil {
		alert, err := s.deps.Workflows.AlertTemplateValues(ctx, *req.AlertUUID)
		if err != nil {
			return notFoundAs(err, "Alert")
		}
		vars["alert"] = alert
	}
	secrets, secretValues, err := s.openSecrets(ctx, workflowSecretNames(w.Steps))
	if err != nil {
		return err
	}
	vars["secrets"] = secrets
	stepVars := map[string]any{}
	vars["steps"] = stepVars
	masker := httpsteps.NewMasker(secretValues)
	out := testWorkflowResponse{Success: true, WorkflowName: w.Name, IndicatorType: req.IndicatorType, IndicatorValue: req.IndicatorValue,
		LiveHTTP: req.LiveHTTP, Steps: []httpsteps.StepRecord{}}
	start := time.Now()
	for i, st := range cfg.Steps {
		p, err := httpsteps.BuildRequest(cfg, i, vars)
		if err != nil {
			rec := httpsteps.FailedRecord(cfg, i, req.IndicatorValue, err)
			rec.Error = masker.String(rec.Error)
			rec.Skipped = st.Optional
			out.Steps = append(out.Steps, rec)
			if st.Optional {
				continue
			}
			out.Success, out.ErrorMessage = false, rec.Error
			break
		}
		var doer httpsteps.Doer
		if req.LiveHTTP {
			if s.deps.WorkflowStepClient == nil {
				return NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "Live HTTP is not available on this server.")
			}
			doer = s.deps.WorkflowStepClient
		} else {
			mock, ok := req.MockHTTPResponses[st.Name]
			if !ok || mock.StatusCode == nil {
				code := p.ExpectedStatus[0]
				mock.StatusCode = &code
			}
			doer = mockDoer{resp: mock}
		}
		res, err := httpsteps.NewRunner(doer).Do(ctx, p, secretValues...)
		if err != nil {
			if st.Optional {
				res.MarkSkipped(err)
				out.Steps = append(out.Steps, res.Record)
				continue
			}
			out.Steps = append(out.Steps, res.Record)
			out.Success, out.ErrorMessage = false, res.Record.Error
			break
		}
		out.Steps = append(out.Steps, res.Record)
		if res.NotFound {
			break
		}
		stepVars[st.Name] = res.Vars()
	}
	out.DurationMS = time.Since(start).Milliseconds()
	return respond(c, http.StatusOK, out)
}
