package api

import (
	"bytes"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

func (s *Server) approvalRoutes() {
	scopes := []string{auth.ScopeApprovalsWrite}
	const tag = "Workflow approvals"
	s.add(route{Method: http.MethodGet, Path: "/v1/workflow-approvals", Tag: tag, Summary: "List approval requests",
		Description: "Newest first.", Scopes: scopes, Query: listApprovalsQuery{}, Response: approvalResponse{}, List: true}, s.listApprovals)
	s.add(route{Method: http.MethodGet, Path: "/v1/workflow-approvals/:uuid", Tag: tag, Summary: "Get an approval request",
		Scopes: scopes, Response: approvalResponse{}}, s.getApproval)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflow-approvals/:uuid/approve", Tag: tag, Summary: "Approve a request",
		Description: "Committed in Postgres, then signalled to the run. Only a pending, unexpired request: 409 APPROVAL_ALREADY_DECIDED / APPROVAL_EXPIRED. The key that triggered the run cannot approve it (403 SELF_APPROVAL_FORBIDDEN); agent keys cannot decide (403 AGENT_CANNOT_APPROVE). Each decision records the deciding key's prefix and name; required_approvals counts distinct humans (keys, Slack users, decide-page holders), never responder_id.",
		Scopes:      scopes, Body: approveRequest{}, Response: approvalResponse{}, Errors: []int{http.StatusConflict}}, s.approve)
	s.add(route{Method: http.MethodPost, Path: "/v1/workflow-approvals/:uuid/reject", Tag: tag, Summary: "Reject a request",
		Description: "One rejection rejects the request; the run ends rejected without sending a step. Agent keys cannot decide (403 AGENT_CANNOT_APPROVE).",
		Scopes:      scopes, Body: rejectRequest{}, Response: approvalResponse{}, Errors: []int{http.StatusConflict}}, s.reject)
	s.add(route{Method: http.MethodPost, Path: "/v1/approvals/callback/slack", Tag: tag, Summary: "Slack interaction callback",
		Description: "Public: authenticated by Slack's v0 request signature (SLACK_SIGNING_SECRET) within a 5-minute window. Decides as the Slack user.",
		Public:      true, Response: slackCallbackResponse{}, Errors: []int{http.StatusUnauthorized}}, s.slackCallback)
}

type approvalDecisionResponse struct {
	ResponderID  string    `json:"responder_id" doc:"Free text (default the key prefix); never counted by the quorum."`
	Decision     string    `json:"decision" enum:"approved,rejected"`
	Comment      *string   `json:"comment"`
	DecidedAt    time.Time `json:"decided_at"`
	KeyPrefix    *string   `json:"key_prefix" doc:"The deciding API key (null from Slack and the decide page)."`
	KeyName      *string   `json:"key_name"`
	VerifiedUser *string   `json:"verified_user" doc:"The Slack user (slack:<team>:<user>, verified by Slack's signature) or the decide-page token holder."`
}

type approvalResponse struct {
	UUID              uuid.UUID                  `json:"uuid"`
	WorkflowUUID      uuid.UUID                  `json:"workflow_uuid"`
	WorkflowName      string                     `json:"workflow_name"`
	RunUUID           uuid.UUID                  `json:"run_uuid"`
	TriggerSource     string                     `json:"trigger_source" enum:"$trigger_source"`
	TriggerKeyPrefix  *string                    `json:"trigger_key_prefix"`
	Reason            *string                    `json:"reason"`
	Confidence        *float64                   `json:"confidence"`
	IndicatorType     string                     `json:"indicator_type"`
	IndicatorValue    string                     `json:"indicator_value"`
	RiskLevel         string                     `json:"risk_level"`
	Status            string                     `json:"status" enum:"$approval_status"`
	RequiredApprovals int                        `json:"required_approvals"`
	Decisions         []approvalDecisionResponse `json:"decisions"`
	RejectionReason   *string                    `json:"rejection_reason"`
	ExpiresAt         time.Time                  `json:"expires_at"`
	NotifierType      string                     `json:"notifier_type" enum:"$approval_channel"`
	NotifierChannel   *string                    `json:"notifier_channel"`
	CreatedAt         time.Time                  `json:"created_at"`
	UpdatedAt         time.Time                  `json:"updated_at"`
}

func toApprovalResponse(a store.ApprovalRequest) approvalResponse {
	ds := make([]approvalDecisionResponse, len(a.Decisions))
	for i, d := range a.Decisions {
		ds[i] = approvalDecisionResponse{ResponderID: d.ResponderID, Decision: d.Decision, Comment: d.Comment, DecidedAt: d.DecidedAt.UTC(),
			KeyPrefix: d.KeyPrefix, KeyName: d.KeyName, VerifiedUser: d.VerifiedUser}
	}
	return approvalResponse{UUID: a.UUID, WorkflowUUID: a.WorkflowUUID, WorkflowName: a.WorkflowName, RunUUID: a.RunUUID,
		TriggerSource: a.TriggerSource, TriggerKeyPrefix: a.TriggerKeyPrefix, Reason: a.Reason, Confidence: a.Confidence,
		IndicatorType: a.IndicatorType, IndicatorValue: a.IndicatorValue, RiskLevel: a.RiskLevel, Status: a.Status,
		RequiredApprovals: a.RequiredApprovals, Decisions: ds, RejectionReason: a.RejectionReason, ExpiresAt: a.ExpiresAt.UTC(),
		NotifierType: a.NotifierType, NotifierChannel: a.NotifierChannel, CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

type listApprovalsQuery struct {
	PageQuery
	Status       []string   `query:"status" enum:"$approval_status" doc:"Comma-separated."`
	WorkflowUUID *uuid.UUID `query:"workflow_uuid"`
}

func (s *Server) listApprovals(c *fiber.Ctx) error {
	var q listApprovalsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	as, total, err := s.deps.Workflows.ListApprovals(c.UserContext(), store.ApprovalFilter{Statuses: q.Status, WorkflowUUID: q.WorkflowUUID, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(as, toApprovalResponse)
	return respondList(c, out, total, q.PageQuery)
}

func (s *Server) getApproval(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	a, err := s.deps.Workflows.GetApproval(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Approval request")
	}
	return respond(c, http.StatusOK, toApprovalResponse(a))
}

type approveRequest struct {
	ResponderID *string `json:"responder_id" minLength:"1" maxLength:"200" doc:"Shown in decisions; default the key prefix. The quorum counts distinct humans, not this label."`
	Comment     *string `json:"comment" maxLength:"5000"`
}

type rejectRequest struct {
	ResponderID *string `json:"responder_id" minLength:"1" maxLength:"200"`
	Reason      *string `json:"reason" maxLength:"5000" doc:"Stored as rejection_reason."`
}

// bindOptionalBody binds a body whose fields are all optional: an empty body is {}.
func bindOptionalBody(c *fiber.Ctx, dst any) error {
	if len(bytes.TrimSpace(c.Request().Body())) == 0 {
		return nil
	}
	return bindBody(c, dst)
}

func (s *Server) approve(c *fiber.Ctx) error {
	var req approveRequest
	if err := bindOptionalBody(c, &req); err != nil {
		return err
	}
	return s.decideByKey(c, true, req.ResponderID, req.Comment)
}

func (s *Server) reject(c *fiber.Ctx) error {
	var req rejectRequest
	if err := bindOptionalBody(c, &req); err != nil {
		return err
	}
	return s.decideByKey(c, false, req.ResponderID, req.Reason)
}

func (s *Server) decideByKey(c *fiber.Ctx, approve bool, responder, comment *string) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	who, err := responses.ByKey(responses.ActorOf(principal(c), responses.ActorAPI), responder)
	if err != nil {
		return responsesError(err)
	}
	a, err := s.responses.Decide(c.UserContext(), id, who, approve, comment)
	if err != nil {
		return responsesError(err)
	}
	return respond(c, http.StatusOK, toApprovalResponse(a))
}

// decisionError answers a decision's errors by the one error table (errcode); a request that is not
// there is the approval request.
func decisionError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("Approval request")
	}
	if f, ok := errcode.Of(err); ok {
		return faultError(f)
	}
	return err
}

type slackCallbackResponse struct {
	ResponseType    string `json:"response_type"`
	ReplaceOriginal bool   `json:"replace_original"`
	Text            string `json:"text"`
}

func (s *Server) slackCallback(c *fiber.Ctx) error {
	if s.cfg.SlackSigningSecret == "" {
		return NewError(http.StatusNotFound, "NOT_FOUND", "Slack approvals are not configured.")
	}
	body := c.Request().Body()
	err := approvals.VerifySlack(s.cfg.SlackSigningSecret, c.Get(approvals.SlackTimestampHeader), c.Get(approvals.SlackSignatureHeader), body, time.Now())
	if err != nil {
		code := "INVALID_SIGNATURE"
		if errors.Is(err, approvals.ErrSlackStale) {
			code = "STALE_REQUEST"
		}
		return NewError(http.StatusUnauthorized, code, "Slack request verification failed: "+err.Error()+".")
	}
	act, err := approvals.ParseSlackCallback(body)
	if err != nil {
		return NewError(http.StatusBadRequest, "INVALID_PAYLOAD", "Not a Vigil approval action.")
	}
	a, err := s.responses.Decide(c.UserContext(), act.ApprovalUUID, responses.BySlack(act.TeamID, act.UserID, act.UserName), act.Approve, nil)
	text := ""
	switch {
	case err == nil:
		text = "Recorded: " + map[bool]string{true: "approved", false: "rejected"}[act.Approve] + " by <@" + act.UserID + ">. Request is now " + a.Status + "."
	default:
		var apiErr *Error
		if !errors.As(decisionError(err), &apiErr) {
			return err
		}
		text = apiErr.Message
	}
	return c.Status(http.StatusOK).JSON(slackCallbackResponse{ResponseType: "ephemeral", Text: text})
}
