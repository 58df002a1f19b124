package mcp

import (
	"context"
	"net/url"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Enumerations as on REST (API.md §3, §5, §8): the owner's list where one exports it.
var (
	alertStatuses     = store.AlertStatuses()
	severities        = severity.Names()
	enrichStatuses    = store.EnrichmentStatuses()
	workflowStates    = store.WorkflowStates()
	riskLevels        = responses.RiskLevels()
	sortOrders        = []string{"asc", "desc"}
	alertSortFields   = store.AlertSortFields()
	ruleSortFields    = []string{store.RuleSortName, store.RuleSortSourceName, "severity", "created_at"}
	workflowSortField = []string{"name", "state", "risk_level", "updated_at", "created_at"}
)

func (s *Server) registerTools(srv *sdk.Server, who principalSource) {
	alertsRead := []string{auth.ScopeAlertsRead}
	s.addTool(srv, who, tool{name: "search_alerts", title: "Search alerts", scopes: alertsRead,
		description: "Find security alerts. Use it first to see what is open, to find alerts by severity, status, source, " +
			"tag, detection rule, case, time window, assignee, computed malice, close classification, an indicator they carry " +
			"(every alert with this IP, hash, domain, ...) or a title/description substring. Returns one page of alert summaries " +
			"({data: [...], meta: {total, page, page_size, total_pages}}), newest occurred_at first by default; each " +
			"summary has uuid, status, severity, computed malice and the alert's title/description/tags inside " +
			"untrusted_content. Call get_alert with a uuid for indicators, rule, runbooks and findings. Needs alerts:read.",
		args: append([]arg{
			{name: "status", kind: kindStringList, enum: alertStatuses, doc: "Any of these statuses."},
			{name: "severity", kind: kindStringList, enum: severities, doc: "Any of these severities."},
			{name: "source_name", kind: kindStringList, max: 100, doc: "Any of these sources (sentinel, elastic, splunk, generic, ocsf, ...)."},
			{name: "enrichment_status", kind: kindStringList, enum: enrichStatuses, doc: "Any of these enrichment statuses."},
			{name: "is_enriched", kind: kindBool, doc: "Only enriched (true) or not yet enriched (false) alerts."},
			{name: "detection_rule_uuid", kind: kindUUID, doc: "Alerts of this detection rule."},
			{name: "from_time", kind: kindTime, doc: "occurred_at at or after this RFC 3339 time (with offset)."},
			{name: "to_time", kind: kindTime, doc: "occurred_at at or before this RFC 3339 time (with offset)."},
			{name: "tags", kind: kindStringList, max: 100, doc: "The alert has all of these tags."},
			{name: "q", kind: kindString, max: 500, doc: "Case-insensitive substring of the title or the description."},
			{name: "assignee", kind: kindStringList, max: alerts.MaxAssigneeLength, doc: "Any of these assignee handles; \"none\" = unassigned."},
			{name: "indicator", kind: kindString, max: indicators.MaxValueLen, doc: "Alerts linked to this indicator value (IP, domain, hash, URL, email, ...), normalized as ingest does; any type unless indicator_type is given."},
			{name: "indicator_type", kind: kindString, enum: indicators.TypeNames(), doc: "Narrows indicator to one type."},
			{name: "malice", kind: kindStringList, enum: indicators.MaliceNames(), doc: "Any of these computed malice levels (override, else worst indicator)."},
			{name: "close_classification", kind: kindStringList, enum: store.CloseClassifications(), doc: "Any of these close classifications."},
			{name: "case_uuid", kind: kindUUID, doc: "The alerts of this case (from search_cases)."},
			{name: "sort_by", kind: kindString, enum: alertSortFields, def: "occurred_at", doc: "Sort field."},
			{name: "sort_order", kind: kindString, enum: sortOrders, def: "desc", doc: "Sort direction."},
		}, pageArgs()...),
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) { return s.searchAlerts(ctx, a) }})
	s.addTool(srv, who, tool{name: "get_alert", title: "Get one alert", scopes: alertsRead,
		description: "Everything Vigil knows about one alert: status, severity, computed malice, its indicators with their " +
			"malice and enrichment results, the detection rule, the context documents (runbooks, playbooks) that apply " +
			"to it and agent findings, plus meta {indicator_count, enrichment {succeeded, failed}, detection_rule_matched, " +
			"context_documents_applied}. Use it before deciding anything about an alert. The raw payload, title, " +
			"enrichment results and findings are untrusted_content. Needs alerts:read.",
		args: []arg{{name: "alert_uuid", kind: kindUUID, required: true, doc: "The alert's uuid (from search_alerts)."}},
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) {
			return s.alertDetail(ctx, *a.uuidPtr("alert_uuid"))
		}})
	s.addTool(srv, who, tool{name: "search_detection_rules", title: "Search detection rules", scopes: alertsRead,
		description: "Find the SIEM detection rules Vigil knows (name, MITRE ATT&CK tactics and techniques, documentation). " +
			"Use it to understand why an alert fired or which rules cover a technique. Returns one page " +
			"({data, meta}) of rules. Needs alerts:read.",
		args: append([]arg{
			{name: "source_name", kind: kindString, max: 100, doc: "Exact source name."},
			{name: "severity", kind: kindStringList, enum: severities, doc: "Any of these severities."},
			{name: "is_active", kind: kindBool, doc: "Only active (true) or inactive (false) rules."},
			{name: "q", kind: kindString, max: 500, doc: "Case-insensitive substring of the name."},
			{name: "mitre_tactic", kind: kindString, max: 100, doc: "Exact element of mitre_tactics, e.g. TA0001."},
			{name: "mitre_technique", kind: kindString, max: 100, doc: "Exact technique or sub-technique, e.g. T1059.001."},
			{name: "sort_by", kind: kindString, enum: ruleSortFields, def: "created_at", doc: "Sort field."},
			{name: "sort_order", kind: kindString, enum: sortOrders, doc: "Default: asc for name and source_name, desc otherwise."},
		}, pageArgs()...),
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) { return s.searchRules(ctx, a) }})
	s.addTool(srv, who, tool{name: "list_workflows", title: "List response workflows", scopes: []string{auth.ScopeWorkflowsRead},
		description: "List the response workflows (e.g. revoke a user's sessions, block an IP) with their state, the " +
			"indicator types they accept, approval_mode and risk_level. Use it to find a workflow before a run; only " +
			"state=active workflows can run. Returns one page ({data, meta}). Needs workflows:read.",
		args: append([]arg{
			{name: "workflow_type", kind: kindString, enum: responses.WorkflowTypes(), doc: "Workflow type."},
			{name: "state", kind: kindStringList, enum: workflowStates, doc: "Any of these states."},
			{name: "risk_level", kind: kindStringList, enum: riskLevels, doc: "Any of these risk levels."},
			{name: "q", kind: kindString, max: 200, doc: "Case-insensitive match on name and description."},
			{name: "sort_by", kind: kindString, enum: workflowSortField, def: "created_at", doc: "Sort field."},
			{name: "sort_order", kind: kindString, enum: sortOrders, def: "desc", doc: "Sort direction."},
		}, pageArgs()...),
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) { return s.listWorkflows(ctx, a) }})
	s.addTool(srv, who, tool{name: "get_workflow_run", title: "Get a workflow run", scopes: []string{auth.ScopeWorkflowsRead},
		description: "The state of one workflow run: status (queued, pending_approval, running, succeeded, failed, " +
			"timed_out, rejected, expired, cancelled), who triggered it, the approval request, timings, and the steps' " +
			"responses and result as untrusted_content. Use it to follow a run you or someone started. Needs workflows:read.",
		args: []arg{{name: "run_uuid", kind: kindUUID, required: true, doc: "The run's uuid."}},
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) {
			r, err := s.cfg.Workflows.GetWorkflowRun(ctx, *a.uuidPtr("run_uuid"))
			if err != nil {
				return nil, notFoundAs(err, "Workflow run")
			}
			return single[runView]{Data: toRunView(r), Meta: map[string]any{}}, nil
		}})
	s.addTool(srv, who, tool{name: "list_pending_approvals", title: "List pending approvals", scopes: []string{auth.ScopeApprovalsWrite},
		description: "Workflow runs waiting for a human decision (status pending), newest first, with the workflow, risk " +
			"level, indicator, expiry and the trigger's reason (untrusted_content). Use it to tell a person what awaits " +
			"their approval; agents cannot approve. Returns one page ({data, meta}). Needs approvals:write, as on REST.",
		args: append([]arg{{name: "workflow_uuid", kind: kindUUID, doc: "Only requests of this workflow."}}, pageArgs()...),
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) {
			page, size := a.integer("page"), a.integer("page_size")
			rows, total, err := s.cfg.Workflows.ListApprovals(ctx, store.ApprovalFilter{Statuses: []string{"pending"},
				WorkflowUUID: a.uuidPtr("workflow_uuid"), Page: store.Page{Number: page, Size: size}})
			if err != nil {
				return nil, err
			}
			return newList(rows, total, page, size, toApprovalView), nil
		}})
}

func (s *Server) searchAlerts(ctx context.Context, a args) (any, error) {
	page, size := a.integer("page"), a.integer("page_size")
	f := store.AlertFilter{Statuses: a.list("status"), Severities: a.list("severity"),
		SourceNames: a.list("source_name"), EnrichmentStatuses: a.list("enrichment_status"), IsEnriched: a.boolPtr("is_enriched"),
		DetectionRuleUUID: a.uuidPtr("detection_rule_uuid"), From: a.timePtr("from_time"), To: a.timePtr("to_time"),
		Tags: a.list("tags"), Query: a.str("q"), Malices: a.list("malice"), CloseClassifications: a.list("close_classification"),
		CaseUUID: a.uuidPtr("case_uuid"), SortBy: a.str("sort_by"), SortDesc: a.str("sort_order") == "desc", Page: store.Page{Number: page, Size: size}}
	f.Assignees, f.Unassigned = alerts.AssigneeFilter(a.list("assignee"))
	if v := a.str("indicator"); v != "" {
		keys, errs := alerts.IndicatorFilter(v, a.str("indicator_type"))
		if len(errs) > 0 {
			return nil, inArguments(errs, nil)
		}
		f.Indicators, f.IndicatorFilter = keys, true
	} else if a.str("indicator_type") != "" {
		var errs validate.Errors
		errs.Add([]any{"arguments", "indicator_type"}, validate.TypeValue, "indicator_type narrows indicator: give indicator too.", a.str("indicator_type"))
		return nil, errs
	}
	rows, total, err := s.cfg.Alerts.ListAlerts(ctx, f)
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, size, func(al store.Alert) alertView { return toAlertView(al, false) }), nil
}

func (s *Server) alertDetail(ctx context.Context, id uuid.UUID) (any, error) {
	al, err := s.cfg.Alerts.GetAlert(ctx, id)
	if err != nil {
		return nil, notFoundAs(err, "Alert")
	}
	d, err := s.cfg.Alerts.AlertDetail(ctx, al)
	if err != nil {
		return nil, err
	}
	return toAlertDetail(d, time.Now()), nil
}

func (s *Server) searchRules(ctx context.Context, a args) (any, error) {
	page, size := a.integer("page"), a.integer("page_size")
	sortBy := a.str("sort_by")
	desc := sortBy != store.RuleSortName && sortBy != store.RuleSortSourceName
	if o := a.str("sort_order"); o != "" {
		desc = o == "desc"
	}
	rows, total, err := s.cfg.DetectionRules.ListDetectionRules(ctx, store.DetectionRuleFilter{SourceName: a.strPtr("source_name"),
		Severities: a.list("severity"), IsActive: a.boolPtr("is_active"), Q: a.str("q"), MitreTactic: a.str("mitre_tactic"),
		MitreTechnique: a.str("mitre_technique"), SortBy: sortBy, Desc: desc, Page: store.Page{Number: page, Size: size}})
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, size, toDetectionRuleView), nil
}

func (s *Server) listWorkflows(ctx context.Context, a args) (any, error) {
	page, size := a.integer("page"), a.integer("page_size")
	rows, total, err := s.cfg.Workflows.ListWorkflows(ctx, store.WorkflowFilter{WorkflowType: a.str("workflow_type"),
		States: a.list("state"), RiskLevels: a.list("risk_level"), Q: a.str("q"), SortBy: a.str("sort_by"),
		Desc: a.str("sort_order") == "desc", Page: store.Page{Number: page, Size: size}})
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, size, toWorkflowView), nil
}

// Resources. Lists return their first page (use the tools for filters and further pages).

func (s *Server) registerResources(srv *sdk.Server, who principalSource) {
	alertsRead := []string{auth.ScopeAlertsRead}
	first := args{"page": 1, "page_size": defaultPageSize, "sort_by": "occurred_at", "sort_order": "desc"}
	s.addResource(srv, who, resource{uri: "vigil://alerts", name: "alerts", title: "Latest alerts", scopes: alertsRead,
		description: "The 50 most recent alerts (by occurred_at) as summaries; search_alerts filters and pages.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			return s.searchAlerts(ctx, first)
		}})
	s.addResource(srv, who, resource{uri: "vigil://alerts/{uuid}", name: "alert", title: "One alert", scopes: alertsRead,
		description: "One alert in full, as get_alert returns it.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			id, err := uriUUID(p["uuid"])
			if err != nil {
				return nil, err
			}
			return s.alertDetail(ctx, id)
		}})
	s.addResource(srv, who, resource{uri: "vigil://alerts/{uuid}/context", name: "alert-context", title: "An alert's context documents", scopes: alertsRead,
		description: "The context documents (runbooks, IR plans, SOPs) that apply to the alert: global first, then targeted.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			id, err := uriUUID(p["uuid"])
			if err != nil {
				return nil, err
			}
			subj, err := s.cfg.AlertContext.AlertSubject(ctx, id)
			if err != nil {
				return nil, notFoundAs(err, "Alert")
			}
			docs, err := s.cfg.AlertContext.ApplicableContextDocuments(ctx, subj)
			if err != nil {
				return nil, err
			}
			return single[[]contextDocumentView]{Data: mapAll(docs, toContextDocumentView), Meta: map[string]any{"total": len(docs)}}, nil
		}})
	s.addResource(srv, who, resource{uri: "vigil://alerts/{uuid}/activity", name: "alert-activity", title: "An alert's activity", scopes: alertsRead,
		description: "The alert's activity trail (status changes, findings, enrichment), newest first, first 50 events.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			id, err := uriUUID(p["uuid"])
			if err != nil {
				return nil, err
			}
			if err := s.cfg.AlertActivity.AlertExists(ctx, id); err != nil {
				return nil, notFoundAs(err, "Alert")
			}
			rows, total, err := s.cfg.AlertActivity.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, Page: store.Page{Number: 1, Size: defaultPageSize}})
			if err != nil {
				return nil, err
			}
			return newList(rows, total, 1, defaultPageSize, toActivityView), nil
		}})
	s.addResource(srv, who, resource{uri: "vigil://detection-rules", name: "detection-rules", title: "Detection rules", scopes: alertsRead,
		description: "The 50 newest detection rules; search_detection_rules filters and pages.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			return s.searchRules(ctx, args{"page": 1, "page_size": defaultPageSize, "sort_by": "created_at"})
		}})
	s.addResource(srv, who, resource{uri: "vigil://detection-rules/{uuid}", name: "detection-rule", title: "One detection rule", scopes: alertsRead,
		description: "One detection rule with its MITRE mapping and documentation.",
		read:        byUUID("Detection rule", s.cfg.DetectionRules.GetDetectionRule, toDetectionRuleView)})
	s.addResource(srv, who, resource{uri: "vigil://context-documents", name: "context-documents", title: "Context documents", scopes: alertsRead,
		description: "The 50 most recently updated context documents (runbooks, IR plans, SOPs, playbooks), without content.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			rows, total, err := s.cfg.Documents.ListContextDocuments(ctx, store.ContextDocumentFilter{SortBy: store.DocSortUpdatedAt, Desc: true,
				Page: store.Page{Number: 1, Size: defaultPageSize}})
			if err != nil {
				return nil, err
			}
			return newList(rows, total, 1, defaultPageSize, toContextDocumentSummary), nil
		}})
	s.addResource(srv, who, resource{uri: "vigil://context-documents/{uuid}", name: "context-document", title: "One context document", scopes: alertsRead,
		description: "One context document with its content (markdown).",
		read:        byUUID("Context document", s.cfg.Documents.GetContextDocument, toContextDocumentView)})
	s.addResource(srv, who, resource{uri: "vigil://enrichments/{type}/{value}", name: "enrichment", title: "An indicator's enrichment",
		scopes: []string{auth.ScopeEnrichmentsRead},
		description: "One indicator (type ip, domain, hash_md5, hash_sha1, hash_sha256, url, email or account; the value " +
			"percent-encoded: every character outside A-Z a-z 0-9 - . _ ~) with malice, every provider's full result including raw_response " +
			"(untrusted_content) and the number of alerts it appears in.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			return s.enrichment(ctx, p["type"], p["value"])
		}})
	workflowsRead := []string{auth.ScopeWorkflowsRead}
	s.addResource(srv, who, resource{uri: "vigil://workflows", name: "workflows", title: "Response workflows", scopes: workflowsRead,
		description: "The 50 newest workflows; list_workflows filters and pages.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			return s.listWorkflows(ctx, args{"page": 1, "page_size": defaultPageSize, "sort_by": "created_at", "sort_order": "desc"})
		}})
	s.addResource(srv, who, resource{uri: "vigil://workflows/{uuid}", name: "workflow", title: "One workflow", scopes: workflowsRead,
		description: "One workflow with its documentation, approval mode and risk level (its HTTP steps are not shown).",
		read: byUUID("Workflow", s.cfg.Workflows.GetWorkflow, func(w store.Workflow) workflowView {
			v := toWorkflowView(w)
			v.UntrustedContent = wrapUntrusted(originWorkflowDefinition, map[string]any{"description": w.Description, "documentation": w.Documentation})
			return v
		})})
}

// enrichment reads one indicator by (type, value), the value normalized as REST's exact search does.
func (s *Server) enrichment(ctx context.Context, typ, rawValue string) (any, error) {
	var errs validate.Errors
	value, err := url.PathUnescape(rawValue)
	if err != nil {
		errs.Add([]any{"uri", "value"}, validate.TypeValue, "The value is not valid percent-encoding.", truncate(rawValue))
		return nil, errs
	}
	t := indicators.Type(typ)
	if !t.Valid() {
		errs.AddCtx([]any{"uri", "type"}, validate.TypeEnum, "Unknown indicator type.", truncate(typ), map[string]any{"expected": indicators.Types()})
		return nil, errs
	}
	normalized, err := indicators.Normalize(t, value)
	if err != nil {
		errs.AddCtx([]any{"uri", "value"}, validate.TypeValue, err.Error(), truncate(value), map[string]any{"type": typ})
		return nil, errs
	}
	rows, _, err := s.cfg.Indicators.ListIndicators(ctx, store.IndicatorFilter{Types: []string{typ}, Value: normalized, Page: store.Page{Number: 1, Size: 1}})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fault{errcode.NotFound("Indicator")}
	}
	n, err := s.cfg.Indicators.IndicatorAlertCount(ctx, rows[0].UUID)
	if err != nil {
		return nil, err
	}
	return single[enrichmentView]{Data: enrichmentView{indicatorView: indicatorViewWith(rows[0], rows[0].EnrichmentResults), AlertCount: n},
		Meta: map[string]any{}}, nil
}

// byUUID reads one record by the {uuid} of its resource URI and renders it as {data, meta}.
func byUUID[T, V any](what string, get func(context.Context, uuid.UUID) (T, error), view func(T) V) func(context.Context, auth.Principal, map[string]string) (any, error) {
	return func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
		id, err := uriUUID(p["uuid"])
		if err != nil {
			return nil, err
		}
		rec, err := get(ctx, id)
		if err != nil {
			return nil, notFoundAs(err, what)
		}
		return single[V]{Data: view(rec), Meta: map[string]any{}}, nil
	}
}

// uriUUID parses the {uuid} of a resource URI (422-style error when malformed, as a REST path is).
func uriUUID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		var errs validate.Errors
		errs.Add([]any{"uri", "uuid"}, validate.TypeUUID, "Input should be a valid UUID.", truncate(s))
		return uuid.UUID{}, errs
	}
	return id, nil
}
