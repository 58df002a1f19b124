package mcp

import (
	"context"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// CaseService is the rules of cases (cases.Service), as REST and the console call them.
type CaseService interface {
	Create(ctx context.Context, in cases.Create, actor store.Actor) (store.Case, error)
	Get(ctx context.Context, id uuid.UUID) (cases.Detail, error)
	List(ctx context.Context, f cases.Filter) ([]store.Case, int, error)
	Patch(ctx context.Context, id uuid.UUID, p cases.Patch, actor store.Actor) (cases.Patched, error)
	AddAlerts(ctx context.Context, id uuid.UUID, ids []uuid.UUID, move bool, actor store.Actor) (store.CaseAdded, error)
}

// originCase: what people and agents wrote on a case (title, description, tags).
const originCase = "case"

// caseAlertsShown is how many of its alerts get_case lists (newest occurrence first).
const caseAlertsShown = 100

var (
	caseStatuses   = store.CaseStatuses()
	caseSortFields = store.CaseSortFields()
)

// registerCaseTools offers search_cases, get_case, create_case, add_alerts_to_case, update_case and
// the resources vigil://cases and vigil://cases/{uuid} when Cases is set (API.md §14).
func (s *Server) registerCaseTools(srv *sdk.Server, who principalSource) {
	if s.cfg.Cases == nil {
		return
	}
	read, write := []string{auth.ScopeAlertsRead}, cases.WriteScopes // case writes need alerts:read too (R4-3)
	caseArg := arg{name: "case_uuid", kind: kindUUID, required: true, doc: "The case's uuid (from search_cases)."}
	alertsArg := arg{name: "alert_uuids", kind: kindStringList, max: 36, doc: "Alert uuids, 1 to 500 distinct."}
	moveArg := arg{name: "move", kind: kindBool, doc: "true moves alerts that belong to another case into this one; without it such an alert is refused (ALERT_IN_OTHER_CASE naming it)."}
	s.addTool(srv, who, tool{name: "search_cases", title: "Search cases", scopes: read,
		description: "Find cases: the incidents analysts and agents group alerts into. Filter by status (Open, " +
			"Investigating, Closed), severity, assignee, or a title/description substring or case number (CASE-12). Returns " +
			"one page ({data, meta}) of case summaries, most recently updated first by default: case_number, status, " +
			"severity, malice and alert_count, with the title, description and tags inside untrusted_content. Call get_case " +
			"for its alerts and indicators. Needs alerts:read.",
		args: append([]arg{
			{name: "status", kind: kindStringList, enum: caseStatuses, doc: "Any of these statuses."},
			{name: "severity", kind: kindStringList, enum: severities, doc: "Any of these severities."},
			{name: "assignee", kind: kindStringList, max: alerts.MaxAssigneeLength, doc: "Any of these assignee handles; \"none\" = unassigned."},
			{name: "q", kind: kindString, max: 500, doc: "Case-insensitive substring of the title or description, or a case number."},
			{name: "sort_by", kind: kindString, enum: caseSortFields, def: "updated_at", doc: "Sort field."},
			{name: "sort_order", kind: kindString, enum: sortOrders, def: "desc", doc: "Sort direction."},
		}, pageArgs()...),
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) { return s.searchCases(ctx, a) }})
	s.addTool(srv, who, tool{name: "get_case", title: "Get one case", scopes: read,
		description: "One case in full: status, severity, malice, assignee, close classification, its distinct indicators " +
			"(worst malice first) and its alerts (up to 100, newest first, as search_alerts summarizes them). Titles, " +
			"descriptions, tags and free-text indicator values are untrusted_content. Use get_alert for one alert's detail. " +
			"Needs alerts:read.",
		args: []arg{caseArg},
		run: func(ctx context.Context, _ auth.Principal, a args) (any, error) {
			return s.caseDetail(ctx, *a.uuidPtr("case_uuid"))
		}})
	s.addTool(srv, who, tool{name: "create_case", title: "Create a case", scopes: write, writes: true,
		description: "Open a case for one incident and put its alerts in it (all or none; an alert belongs to at most " +
			"one case, see move). Use it when several alerts are the same intrusion, so people work and close them " +
			"together. severity left out is derived from the alerts. Returns the case as get_case does. Needs alerts:read and alerts:write.",
		args: []arg{
			{name: "title", kind: kindString, required: true, max: cases.MaxTitleLength, doc: "What the incident is, 1 to 500 characters."},
			{name: "description", kind: kindString, max: cases.MaxDescriptionLength, doc: "What is known so far (markdown)."},
			{name: "severity", kind: kindString, enum: severities, doc: "Set by hand; omit to derive it from the alerts."},
			{name: "assignee", kind: kindString, max: alerts.MaxAssigneeLength, doc: "A person's handle."},
			{name: "tags", kind: kindStringList, max: alerts.MaxTagLength, doc: "At most 50 tags."},
			alertsArg, moveArg,
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			ids, errs := alertUUIDs(a, false)
			if len(errs) > 0 {
				return nil, errs
			}
			c, err := s.cfg.Cases.Create(ctx, cases.Create{Title: a.str("title"), Description: a.strPtr("description"),
				Severity: a.strPtr("severity"), Assignee: a.strPtr("assignee"), Tags: a.list("tags"), AlertUUIDs: ids,
				Move: boolArg(a, "move")}, actorOf(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Alert"), nil)
			}
			return s.caseDetail(ctx, c.UUID)
		}})
	s.addTool(srv, who, tool{name: "add_alerts_to_case", title: "Add alerts to a case", scopes: write, writes: true,
		description: "Put alerts into a case (1 to 500, all or none). An alert already in the case is no change; an alert " +
			"of another case is refused naming it (ALERT_IN_OTHER_CASE) unless move=true. Returns the case (without " +
			"its alert list) and which alerts joined. Needs alerts:read and alerts:write.",
		args: []arg{caseArg, {name: alertsArg.name, kind: alertsArg.kind, max: alertsArg.max, required: true, doc: alertsArg.doc}, moveArg},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			ids, errs := alertUUIDs(a, true)
			if len(errs) > 0 {
				return nil, errs
			}
			added, err := s.cfg.Cases.AddAlerts(ctx, *a.uuidPtr("case_uuid"), ids, boolArg(a, "move"), actorOf(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Case or alert"), nil)
			}
			joined := added.Joined
			if joined == nil {
				joined = []uuid.UUID{}
			}
			return single[map[string]any]{Data: map[string]any{"case": toCaseView(added.Case), "joined": joined}, Meta: map[string]any{}}, nil
		}})
	s.addTool(srv, who, tool{name: "update_case", title: "Update a case", scopes: write, writes: true,
		description: "Change a case: status (moves: " + cases.TransitionSummary() + "; closing needs close_classification, " +
			"and close_alerts=true also closes every alert of the case that is not Closed with the same classification, each " +
			"through the alert rules), severity (reset_severity=true derives it from the alerts again), assignee (\"\" " +
			"unassigns), title, description, tags. Omitted arguments are left unchanged. Returns the case as get_case " +
			"does, with meta.closed_alerts {succeeded, failed, results} when close_alerts ran. Needs alerts:read and alerts:write.",
		args: []arg{caseArg,
			{name: "status", kind: kindString, enum: caseStatuses, doc: "The new status."},
			{name: "close_classification", kind: kindString, enum: closeClassifications, doc: "Required when closing; only with Closed."},
			{name: "close_alerts", kind: kindBool, doc: "With status Closed: close the case's alerts too."},
			{name: "severity", kind: kindString, enum: severities, doc: "Set by hand."},
			{name: "reset_severity", kind: kindBool, doc: "true: derive the severity from the alerts again."},
			{name: "assignee", kind: kindString, max: alerts.MaxAssigneeLength, doc: "A handle; \"\" unassigns."},
			{name: "title", kind: kindString, max: cases.MaxTitleLength, doc: "The new title."},
			{name: "description", kind: kindString, max: cases.MaxDescriptionLength, doc: "The new description; \"\" clears it."},
			{name: "tags", kind: kindStringList, max: alerts.MaxTagLength, doc: "Replaces the tags."},
		},
		run: func(ctx context.Context, p auth.Principal, a args) (any, error) {
			patch := cases.Patch{Status: a.strPtr("status"), CloseClassification: a.strPtr("close_classification"),
				CloseAlerts: boolArg(a, "close_alerts"), Severity: a.strPtr("severity"), ResetSeverity: boolArg(a, "reset_severity"),
				Assignee: a.strPtr("assignee"), Title: a.strPtr("title"), Description: a.strPtr("description")}
			if _, ok := a["tags"]; ok {
				tags := a.list("tags")
				patch.Tags = &tags
			}
			id := *a.uuidPtr("case_uuid")
			done, err := s.cfg.Cases.Patch(ctx, id, patch, actorOf(ctx, p))
			if err != nil {
				return nil, inArguments(notFoundAs(err, "Case"), nil)
			}
			out, err := s.caseDetail(ctx, id)
			if err != nil {
				return nil, err
			}
			if done.ClosedAlerts != nil {
				res := make([]map[string]any, len(done.ClosedAlerts.Items))
				for i, it := range done.ClosedAlerts.Items {
					res[i] = map[string]any{"alert_uuid": it.AlertUUID, "ok": it.Err == nil}
					if it.Err != nil {
						item := errcode.ItemOf(it.Err, "Alert")
						if item.Internal {
							s.cfg.Log.ErrorContext(ctx, "close a case's alert", "alert_uuid", it.AlertUUID, "error", it.Err)
						}
						res[i]["error"] = map[string]any{"code": item.Code, "message": item.Message}
					}
				}
				out.Meta["closed_alerts"] = map[string]any{"succeeded": done.ClosedAlerts.Succeeded, "failed": done.ClosedAlerts.Failed, "results": res}
			}
			return out, nil
		}})
	s.addResource(srv, who, resource{uri: "vigil://cases", name: "cases", title: "Latest cases", scopes: read,
		description: "The 50 most recently updated cases as summaries; search_cases filters and pages.",
		read: func(ctx context.Context, _ auth.Principal, _ map[string]string) (any, error) {
			return s.searchCases(ctx, args{"page": 1, "page_size": defaultPageSize, "sort_by": "updated_at", "sort_order": "desc"})
		}})
	s.addResource(srv, who, resource{uri: "vigil://cases/{uuid}", name: "case", title: "One case", scopes: read,
		description: "One case in full, as get_case returns it.",
		read: func(ctx context.Context, _ auth.Principal, p map[string]string) (any, error) {
			id, err := uriUUID(p["uuid"])
			if err != nil {
				return nil, err
			}
			return s.caseDetail(ctx, id)
		}})
}

// alertUUIDs parses the alert_uuids argument (each a uuid; the list's rules are the case service's:
// cases.ValidateAlertList). required: at least one.
func alertUUIDs(a args, required bool) ([]uuid.UUID, validate.Errors) {
	raw, present := a["alert_uuids"]
	if !present && !required {
		return nil, nil
	}
	list, _ := raw.([]string)
	var errs validate.Errors
	ids := make([]uuid.UUID, 0, len(list))
	for i, v := range list {
		id, err := uuid.Parse(v)
		if err != nil || len(v) != 36 {
			errs.Add([]any{"arguments", "alert_uuids", i}, validate.TypeUUID, "Input should be a valid UUID.", truncate(v))
			continue
		}
		ids = append(ids, id)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if verrs := cases.ValidateAlertList("alert_uuids", ids); len(verrs) > 0 {
		return nil, inArguments(verrs, nil).(validate.Errors)
	}
	return ids, nil
}

func boolArg(a args, name string) bool {
	b := a.boolPtr(name)
	return b != nil && *b
}

func (s *Server) searchCases(ctx context.Context, a args) (any, error) {
	page, size := a.integer("page"), a.integer("page_size")
	f := cases.Filter{Statuses: a.list("status"), Severities: a.list("severity"), Query: a.str("q"), SortBy: a.str("sort_by"),
		SortDesc: a.str("sort_order") == "desc", Page: store.Page{Number: page, Size: size}}
	f.Assignees, f.Unassigned = alerts.AssigneeFilter(a.list("assignee"))
	rows, total, err := s.cfg.Cases.List(ctx, f)
	if err != nil {
		return nil, inArguments(err, nil)
	}
	return newList(rows, total, page, size, toCaseView), nil
}

// caseDetail is a case with its indicators and its first alerts.
func (s *Server) caseDetail(ctx context.Context, id uuid.UUID) (single[caseDetailView], error) {
	d, err := s.cfg.Cases.Get(ctx, id)
	if err != nil {
		return single[caseDetailView]{}, notFoundAs(err, "Case")
	}
	rows, total, err := s.cfg.Alerts.ListAlerts(ctx, store.AlertFilter{CaseUUID: &id, SortBy: "occurred_at", SortDesc: true,
		Page: store.Page{Number: 1, Size: caseAlertsShown}})
	if err != nil {
		return single[caseDetailView]{}, err
	}
	v := caseDetailView{caseView: toCaseView(d.Case), Indicators: mapAll(d.Indicators, toCaseIndicatorView),
		Alerts: mapAll(rows, func(al store.Alert) alertView { return toAlertView(al, false) })}
	return single[caseDetailView]{Data: v, Meta: map[string]any{"alerts_total": total, "alerts_shown": len(rows)}}, nil
}

// caseView is a case: Vigil's facts at the top level, what people and agents wrote (title,
// description, tags, the assignee handle) as untrusted content.
type caseView struct {
	UUID                uuid.UUID  `json:"uuid"`
	CaseNumber          string     `json:"case_number"`
	Status              string     `json:"status"`
	Severity            string     `json:"severity"`
	SeverityOverride    *string    `json:"severity_override"`
	Malice              string     `json:"malice"`
	AlertCount          int        `json:"alert_count"`
	CloseClassification *string    `json:"close_classification"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
	ClosedAt            *time.Time `json:"closed_at"`
	Assignee            *untrusted `json:"assignee"`
	AssignedAt          *time.Time `json:"assigned_at"`
	UntrustedContent    *untrusted `json:"untrusted_content"`
}

func toCaseView(c store.Case) caseView {
	return caseView{UUID: c.UUID, CaseNumber: c.Number(), Status: c.Status, Severity: c.EffectiveSeverity, SeverityOverride: c.Severity,
		Malice: c.Malice, AlertCount: c.AlertCount, CloseClassification: c.CloseClassification, CreatedAt: c.CreatedAt.UTC(),
		UpdatedAt: c.UpdatedAt.UTC(), ClosedAt: utc(c.ClosedAt), Assignee: assigneeView(c.Assignee), AssignedAt: utc(c.AssignedAt),
		UntrustedContent: wrapUntrusted(originCase, map[string]any{"title": c.Title, "description": c.Description, "tags": nonNil(c.Tags)})}
}

type caseDetailView struct {
	caseView
	Indicators []caseIndicatorView `json:"indicators"`
	Alerts     []alertView         `json:"alerts"`
}

// caseIndicatorView is one distinct indicator of a case's alerts; a free-text value (account, url)
// is untrusted, as on an alert.
type caseIndicatorView struct {
	UUID           uuid.UUID  `json:"uuid"`
	Type           string     `json:"type"`
	Value          string     `json:"value,omitempty"`
	Malice         string     `json:"malice"`
	AlertCount     int        `json:"alert_count"`
	UntrustedValue *untrusted `json:"untrusted_value,omitempty"`
}

func toCaseIndicatorView(r store.CaseIndicatorRow) caseIndicatorView {
	v := caseIndicatorView{UUID: r.UUID, Type: r.Type, Value: r.Value, Malice: r.Malice, AlertCount: r.AlertCount}
	if freeTextValue(r.Type) {
		v.Value, v.UntrustedValue = "", wrapUntrusted(originAlertSource, map[string]any{"value": r.Value})
	}
	return v
}
