package mcp

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// AlertService is the rules of working an alert (alerts.Service): the write tools call it, as the
// REST handlers do.
type AlertService interface {
	Patch(ctx context.Context, id uuid.UUID, p alerts.Patch, actor store.Actor) (store.Alert, error)
	AddFinding(ctx context.Context, alertID uuid.UUID, f alerts.NewFinding, actor store.Actor) (store.Finding, error)
	AddIndicators(ctx context.Context, alertID uuid.UUID, ins []alerts.NewIndicator, enrich *bool, actor store.Actor) (alerts.Added, error)
	SetIndicatorMalice(ctx context.Context, id uuid.UUID, level *string, actor store.Actor) (store.Indicator, error)
}

// WorkflowExecutor executes response workflows (responses.Service).
type WorkflowExecutor interface {
	Execute(ctx context.Context, actor responses.Actor, req responses.ExecuteRequest) (responses.Executed, error)
}

// Enumerations of the write tools, from their owners.
var (
	closeClassifications = store.CloseClassifications()
	maliceLevels         = indicators.MaliceNames()
	findingConfidences   = alerts.Confidences()
)

func (s *Server) registerWriteTools(srv *sdk.Server, who principalSource) {
	alertsWrite := []string{auth.ScopeAlertsWrite}
	actor := actorOf
	s.registerEnrichTool(srv, who)
	if s.cfg.Executor != nil {
		s.registerExecuteTool(srv, who)
	}
	if s.cfg.AlertService == nil {
		return
	}
	s.addTool(srv, who, tool{name: "update_alert_status", title: "Change an alert's status", scopes: alertsWrite, writes: true,
		description: "Move an alert through its workflow; the allowed moves are " + alerts.TransitionSummary() + " (staying " +
			"put is allowed). Closing needs close_classification (why: true/false/benign positive, duplicate, ...). A move " +
			"the transition rules forbid is refused with the allowed targets. Use it when your triage reaches a conclusion " +
			"a person asked you to record. Returns the alert as get_alert does. Needs alerts:write.",
		args: []arg{
			{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid."},
			{name: "status", kind: kindString, required: true, enum: alertStatuses, doc: "The new status."},
			{name: "close_classification", kind: kindString, enum: closeClassifications, doc: "Required when closing; only with Closed."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			id := *a.uuidPtr("alert_uuid")
			patch := alerts.Patch{Status: a.strPtr("status"), CloseClassification: a.strPtr("close_classification")}
			return s.patchAlert(ctx, id, patch, actor(ctx, p), nil)
		}})
	s.addTool(srv, who, tool{name: "assign_alert", title: "Assign an alert to a person", scopes: alertsWrite, writes: true,
		description: "Set who owns an alert (a person's handle such as maria.ortiz, 1 to 200 characters), or \"\" to " +
			"unassign it. Use it when you hand an alert to a person or a person asked you to take it off their queue; the " +
			"change is recorded as alert_assigned {from, to} and agents hear it as alert.updated. Returns the alert as " +
			"get_alert does. Needs alerts:write.",
		args: []arg{
			{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid."},
			{name: "assignee", kind: kindString, required: true, max: alerts.MaxAssigneeLength, doc: "The handle; \"\" unassigns."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			who := a.str("assignee")
			return s.patchAlert(ctx, *a.uuidPtr("alert_uuid"), alerts.Patch{Assignee: &who}, actor(ctx, p), nil)
		}})
	s.addTool(srv, who, tool{name: "update_alert_malice", title: "Override an alert's malice", scopes: alertsWrite, writes: true,
		description: "Set the alert's verdict (Malicious, Suspicious, Benign, Pending) over the one computed from its " +
			"indicators, or reset=true to go back to the computed one. An agent key's override is recorded as the agent's. " +
			"Use it when your analysis outweighs the enrichment verdicts. Returns the alert as get_alert does. Needs alerts:write.",
		args: []arg{
			{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid."},
			{name: "malice", kind: kindString, enum: maliceLevels, doc: "The verdict; omit with reset=true."},
			{name: "reset", kind: kindBool, doc: "true clears the override."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			reset := a.boolPtr("reset")
			patch := alerts.Patch{MaliceOverride: a.strPtr("malice"), ResetMaliceOverride: reset != nil && *reset}
			if patch.MaliceOverride == nil && !patch.ResetMaliceOverride {
				var errs validate.Errors
				errs.Add([]any{"arguments", "malice"}, validate.TypeMissing, "Give malice, or reset=true.", nil)
				return nil, errs
			}
			return s.patchAlert(ctx, *a.uuidPtr("alert_uuid"), patch, actor(ctx, p),
				map[any]any{"malice_override": "malice", "reset_malice_override": "reset"})
		}})
	s.addTool(srv, who, tool{name: "post_alert_finding", title: "Post a finding on an alert", scopes: alertsWrite, writes: true,
		description: "Append your analysis to an alert (append-only; people and other agents read it in get_alert): who you " +
			"are (agent_name), what you found (summary), how sure you are, what you recommend and the evidence as a JSON " +
			"object. Use it to leave your conclusions where analysts work. Returns the finding. Needs alerts:write.",
		args: []arg{
			{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid."},
			{name: "agent_name", kind: kindString, required: true, max: 200, doc: "Your name, as people should see it."},
			{name: "summary", kind: kindString, required: true, max: 50000, doc: "What you found."},
			{name: "confidence", kind: kindString, enum: findingConfidences, doc: "How sure you are."},
			{name: "recommended_action", kind: kindString, max: 10000, doc: "What a person should do next."},
			{name: "evidence", kind: kindObject, max: alerts.MaxEvidenceBytes, doc: "Supporting data, a JSON object of at most 64 KB."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			f, err := s.cfg.AlertService.AddFinding(ctx, *a.uuidPtr("alert_uuid"), alerts.NewFinding{AgentName: a.str("agent_name"),
				Summary: a.str("summary"), Confidence: a.strPtr("confidence"), RecommendedAction: a.strPtr("recommended_action"),
				Evidence: a.object("evidence")}, actor(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Alert"), nil)
			}
			return single[findingView]{Data: toFindingView(f), Meta: map[string]any{}}, nil
		}})
	s.addTool(srv, who, tool{name: "add_alert_indicators", title: "Add indicators to an alert", scopes: alertsWrite, writes: true,
		description: "Attach indicators of compromise you found (IPs, domains, URLs, hashes, emails, accounts, ...) to an " +
			"alert: each {value, type?} (the type is inferred when omitted), 1 to 100 of them; enrich=true queues their " +
			"enrichment with every configured provider (absent: enrich=" + strconv.FormatBool(alerts.EnrichAddedByDefault) + "). Existing indicators are linked, not duplicated. Returns the " +
			"indicators, how many links are new (added_count, as REST) and whether enrichment was queued (enrich_requested). Needs alerts:write.",
		args: []arg{
			{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid."},
			{name: "indicators", kind: kindObjectList, required: true, max: alerts.MaxAddIndicators, doc: "Objects {value, type?}."},
			{name: "enrich", kind: kindBool, def: alerts.EnrichAddedByDefault, doc: "Queue enrichment of the indicators."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			ins, errs := newIndicators(a.objects("indicators"))
			if len(errs) > 0 {
				return nil, errs
			}
			added, err := s.cfg.AlertService.AddIndicators(ctx, *a.uuidPtr("alert_uuid"), ins, a.boolPtr("enrich"), actor(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Alert"), nil)
			}
			return single[map[string]any]{Data: map[string]any{"indicators": mapAll(added.Indicators, toIndicatorView), "added_count": added.NewLinks,
				"enrich_requested": added.Enriched},
				Meta: map[string]any{}}, nil
		}})
	s.addTool(srv, who, tool{name: "update_indicator_malice", title: "Override an indicator's malice", scopes: alerts.IndicatorMaliceScopes, writes: true,
		description: "Set an indicator's verdict (sticky: enrichment no longer changes it), or omit malice to remove the " +
			"override and recompute it from the providers' results. It changes the computed malice of every alert the " +
			"indicator is on. Returns the indicator. Needs alerts:read and alerts:write.",
		args: []arg{
			{name: "indicator_uuid", kind: kindUUID, required: true, doc: "The indicator's uuid (from get_alert)."},
			{name: "malice", kind: kindString, enum: maliceLevels, doc: "The verdict; omit to remove the override."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			ind, err := s.cfg.AlertService.SetIndicatorMalice(ctx, *a.uuidPtr("indicator_uuid"), a.strPtr("malice"), actor(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Indicator"), nil)
			}
			return single[indicatorView]{Data: toIndicatorView(ind), Meta: map[string]any{}}, nil
		}})
}

func (s *Server) registerEnrichTool(srv *sdk.Server, who principalSource) {
	s.addTool(srv, who, tool{name: "enrich_indicator", title: "Enrich an indicator now", scopes: []string{auth.ScopeEnrichmentsRead}, writes: true,
		description: "Look a value up with every configured enrichment provider now (cached answers are reused): threat " +
			"intelligence verdicts and extracted fields per provider, and the worst verdict as malice. Use it for a value " +
			"that is not on an alert yet, or to refresh one. The providers' answers are untrusted_content. Needs enrichments:read.",
		args: []arg{
			{name: "indicator_type", kind: kindString, required: true, enum: indicators.TypeNames(), doc: "The value's type."},
			{name: "indicator_value", kind: kindString, required: true, max: 2048, doc: "The value."},
		},
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) {
			res, err := enrichment.OnDemand(ctx, s.cfg.Enricher, time.Now, a.str("indicator_type"), a.str("indicator_value"))
			var errs validate.Errors
			switch {
			case errors.As(err, &errs):
				return nil, inArguments(errs, map[any]any{"type": "indicator_type", "value": "indicator_value"})
			case err != nil:
				return nil, err
			}
			return single[enrichmentResultView]{Data: toEnrichmentResultView(res), Meta: map[string]any{}}, nil
		}})
}

func (s *Server) registerExecuteTool(srv *sdk.Server, who principalSource) {
	s.addTool(srv, who, tool{name: "execute_workflow", title: "Run a response workflow", scopes: []string{auth.ScopeWorkflowsExecute}, writes: true,
		description: "Run an active response workflow (from list_workflows) against one indicator, e.g. revoke an account's " +
			"sessions. An agent key must say why (reason) and how sure it is (confidence 0..1); depending on the " +
			"workflow's approval_mode the run waits for a person's approval (status pending_approval) or is queued at " +
			"once. Returns {run_uuid, status, trigger_source, approval_request_uuid?, expires_at?, workflow_id}; follow " +
			"it with get_workflow_run. Needs workflows:execute.",
		args: []arg{
			{name: "workflow_uuid", kind: kindUUID, required: true, doc: "The workflow's uuid."},
			{name: "indicator_type", kind: kindString, required: true, enum: indicators.TypeNames(), doc: "One of the workflow's indicator types."},
			{name: "indicator_value", kind: kindString, required: true, max: 2048, doc: "The value to act on."},
			{name: "alert_uuid", kind: kindUUID, doc: "The alert this run is about (required by alert workflows)."},
			{name: "reason", kind: kindString, max: 5000, doc: "Why; required for agent keys."},
			{name: "confidence", kind: kindNumber, min: 0, max: 1, doc: "How sure, 0..1; required for agent keys."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			who, caller := responses.ActorOf(p, store.ActorMCP), actorOf(ctx, p)
			who.ClientIP, who.RequestID, who.ClientRequestID = caller.ClientIP, caller.RequestID, caller.ClientRequestID
			ex, err := s.cfg.Executor.Execute(ctx, who, responses.ExecuteRequest{
				WorkflowUUID: *a.uuidPtr("workflow_uuid"), IndicatorType: a.str("indicator_type"), IndicatorValue: a.str("indicator_value"),
				AlertUUID: a.uuidPtr("alert_uuid"), Reason: a.strPtr("reason"), Confidence: a.numberPtr("confidence")})
			if err != nil {
				return nil, inArguments(err, nil)
			}
			return single[executionView]{Data: toExecutionView(ex), Meta: map[string]any{}}, nil
		}})
}

// patchAlert applies p through the alert rules and returns the alert as get_alert does; rename maps
// the service's field names to the tool's arguments.
func (s *Server) patchAlert(ctx context.Context, id uuid.UUID, p alerts.Patch, actor store.Actor, rename map[any]any) (any, error) {
	if _, err := s.cfg.AlertService.Patch(ctx, id, p, actor); err != nil {
		return nil, inArguments(notFoundAs(err, "Alert"), rename)
	}
	return s.alertDetail(ctx, id)
}

// newIndicators turns the indicators argument into the alert service's input; only the shape is
// checked here (value a string, type a string when given), the rules are the service's.
func newIndicators(items []map[string]any) ([]alerts.NewIndicator, validate.Errors) {
	var errs validate.Errors
	out := make([]alerts.NewIndicator, len(items))
	for i, item := range items {
		loc := []any{"arguments", "indicators", i}
		for k := range item {
			if k != "value" && k != "type" {
				errs.Add(append(loc, k), validate.TypeExtraForbidden, "Unknown field.", nil)
			}
		}
		v, ok := item["value"].(string)
		if !ok {
			errs.Add(append(loc, "value"), validate.TypeString, "Input should be a valid string.", nil)
		}
		out[i].Value = v
		if t, present := item["type"]; present && t != nil {
			ts, ok := t.(string)
			if !ok {
				errs.Add(append(loc, "type"), validate.TypeString, "Input should be a valid string.", nil)
			}
			out[i].Type = &ts
		}
	}
	return out, errs
}

// inArguments locates a domain service's validation errors among the tool's arguments: REST's
// "body" and "query" prefixes become "arguments", other locations are put under arguments, and a first
// element found in rename is renamed (a service field named differently from the tool's argument).
// Other errors pass.
func inArguments(err error, rename map[any]any) error {
	var errs validate.Errors
	if !errors.As(err, &errs) {
		return err
	}
	out := make(validate.Errors, 0, len(errs))
	for _, fe := range errs {
		loc := append([]any{}, fe.Loc...)
		if len(loc) > 0 && (loc[0] == "body" || loc[0] == "query") {
			loc = loc[1:]
		}
		if len(loc) > 0 {
			if to, ok := rename[loc[0]]; ok {
				loc[0] = to
			}
		}
		fe.Loc = append([]any{"arguments"}, loc...)
		out = append(out, fe)
	}
	return out
}

// enrichmentResultView is an on-demand enrichment: the normalized value, the worst verdict and the
// providers' answers as untrusted content.
type enrichmentResultView struct {
	Type             string     `json:"type"`
	Value            string     `json:"value"`
	Malice           string     `json:"malice"`
	EnrichedAt       time.Time  `json:"enriched_at"`
	UntrustedContent *untrusted `json:"untrusted_content"`
}

func toEnrichmentResultView(r enrichment.Result) enrichmentResultView {
	results := make(map[string]any, len(r.Results))
	for name, p := range r.Results {
		results[name] = map[string]any{"status": p.Status, "success": p.Success, "malice": p.Malice, "extracted": p.Extracted,
			"enriched_at": p.EnrichedAt, "error_message": p.ErrorMessage, "cache_hit": p.CacheHit}
	}
	return enrichmentResultView{Type: string(r.Type), Value: r.Value, Malice: r.Malice, EnrichedAt: r.EnrichedAt,
		UntrustedContent: wrapUntrusted(originProvider, map[string]any{"results": results})}
}

// executionView is what execute answers, as REST's 202 body.
type executionView struct {
	RunUUID             uuid.UUID  `json:"run_uuid"`
	Status              string     `json:"status"`
	TriggerSource       string     `json:"trigger_source"`
	ApprovalRequestUUID *uuid.UUID `json:"approval_request_uuid,omitempty"`
	ExpiresAt           *time.Time `json:"expires_at,omitempty"`
	WorkflowID          string     `json:"workflow_id"`
}

func toExecutionView(ex responses.Executed) executionView {
	v := executionView{RunUUID: ex.Run.UUID, Status: ex.Run.Status, TriggerSource: ex.Run.TriggerSource,
		ApprovalRequestUUID: ex.Run.ApprovalRequestUUID, WorkflowID: ex.Run.TemporalWorkflowID}
	if ex.Approval != nil {
		t := ex.Approval.ExpiresAt.UTC()
		v.ExpiresAt = &t
	}
	return v
}
