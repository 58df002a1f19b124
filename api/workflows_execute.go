package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/validate"
)

// responsesError answers the errors of package responses (and the store errors it passes on) by
// the one error table (errcode); a secret that cannot be opened for a dry run is an internal error.
func responsesError(err error) error {
	var so *responses.SecretOpenError
	if errors.As(err, &so) {
		return fmt.Errorf("dry run: %w", err)
	}
	return decisionError(err)
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
	Status              string     `json:"status" enum:"$run_status" doc:"queued or pending_approval for a new run; a retried Idempotency-Key request shows the run's current status."`
	TriggerSource       string     `json:"trigger_source" enum:"$trigger_source"`
	ApprovalRequestUUID *uuid.UUID `json:"approval_request_uuid,omitempty"`
	ExpiresAt           *time.Time `json:"expires_at,omitempty"`
	WorkflowID          string     `json:"workflow_id" doc:"Temporal workflow id: workflow-run-<run_uuid>."`
}

func (s *Server) executeWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req executeWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	ex, err := s.responses.Execute(c.UserContext(), responses.ActorOf(principal(c), responses.ActorAPI), responses.ExecuteRequest{
		WorkflowUUID: id, IndicatorType: req.IndicatorType, IndicatorValue: req.IndicatorValue, AlertUUID: req.AlertUUID,
		Reason: req.Reason, Confidence: req.Confidence, IdempotencyKey: c.Get("Idempotency-Key")})
	if err != nil {
		return responsesError(err)
	}
	out := executeWorkflowResponse{RunUUID: ex.Run.UUID, Status: ex.Run.Status, TriggerSource: ex.Run.TriggerSource, WorkflowID: ex.Run.TemporalWorkflowID}
	if ex.Approval != nil {
		aid, exp := ex.Approval.UUID, ex.Approval.ExpiresAt.UTC()
		out.ApprovalRequestUUID, out.ExpiresAt = &aid, &exp
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

func (s *Server) testWorkflow(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req testWorkflowRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	mocks := make(map[string]responses.MockResponse, len(req.MockHTTPResponses))
	for name, m := range req.MockHTTPResponses {
		mocks[name] = responses.MockResponse(m)
	}
	res, err := s.responses.Test(c.UserContext(), responses.ActorOf(principal(c), responses.ActorAPI), responses.TestRequest{
		WorkflowUUID: id, IndicatorType: req.IndicatorType, IndicatorValue: req.IndicatorValue, AlertUUID: req.AlertUUID,
		Mocks: mocks, LiveHTTP: req.LiveHTTP})
	if err != nil {
		return responsesError(err)
	}
	return respond(c, http.StatusOK, testWorkflowResponse{Success: res.Result.Success, WorkflowName: res.WorkflowName,
		IndicatorType: req.IndicatorType, IndicatorValue: req.IndicatorValue, LiveHTTP: req.LiveHTTP, ErrorMessage: res.Result.Error,
		DurationMS: res.Result.DurationMS, Steps: res.Result.Steps})
}
