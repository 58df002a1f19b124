package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// graphSiblings is how many other alerts per indicator the relationship graph draws.
const graphSiblings = 5

// stepRecord is one provider's result for one indicator: the enrichment step's record.
type stepRecord struct {
	Provider, Status, Malice, Error, At string
	DurationMS                          int64
	CacheHit, NotFound                  bool
	Extracted                           []string // "field: value", sorted
}

type indicatorRow struct {
	UUID                uuid.UUID
	Type, Value, Malice string
	Overridden          bool
	Steps               []stepRecord
	Fitting             int         // how many active workflows fit it (responses.Launcher)
	Internal            string      // why it is an internal address ("" when not: responses.InternalAddress)
	Origins             []originRow // which pass found it for this alert, and where (origins.go)
	Excludable          bool        // "Never an indicator" can take its value (a host, a domain, an IP)
}

type activityRow struct{ At, Type, Actor, Prefix string }

type contextDoc struct {
	Title, Type string
	Global      bool
	Version     int
	HTML        template.HTML // rendered markdown, sanitised (markdown.go)
}

type findingRow struct {
	Agent, Summary, Confidence, Action, At string
}

// alert shows one alert: fields, indicators with each provider's step record, rule, context documents,
// findings, activity, the relationship graph, and the actions the key's scopes allow.
func (c *Console) alert(ctx *fiber.Ctx) error {
	return c.alertPage(ctx, http.StatusOK, "")
}

func (c *Console) notFound(ctx *fiber.Ctx, what string) error {
	return c.render(ctx, http.StatusNotFound, "login", c.base(ctx, "Not found", "No such "+what+"."))
}

func (c *Console) alertPage(ctx *fiber.Ctx, status int, errText string) error {
	return c.alertPageWith(ctx, status, errText, "")
}

// alertPageWith is the alert page with a refusal (errText) or a status line (notice).
func (c *Console) alertPageWith(ctx *fiber.Ctx, status int, errText, notice string) error {
	id, err := uuid.Parse(ctx.Params("uuid"))
	if err != nil {
		return c.notFound(ctx, "alert")
	}
	uctx := ctx.UserContext()
	a, err := c.deps.Store.GetAlert(uctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ctx, "alert")
	}
	if err != nil {
		return err
	}
	d, err := c.deps.Store.AlertDetail(uctx, a)
	if err != nil {
		return err
	}
	inds := make([]indicatorRow, len(d.Indicators))
	for i, ind := range d.Indicators {
		inds[i] = indicatorRow{UUID: ind.UUID, Type: ind.Type, Value: ind.Value, Malice: ind.Malice, Overridden: ind.MaliceOverriddenAt != nil,
			Steps: stepRecords(ind.EnrichmentResults), Origins: origins(ind.ExtractedBy), Excludable: excludable(ind.Value)}
	}
	evs, _, err := c.deps.Store.ListActivity(uctx, store.ActivityFilter{AlertUUID: &a.UUID, Page: store.Page{Number: 1, Size: 50}})
	if err != nil {
		return err
	}
	acts := make([]activityRow, len(evs))
	for i, e := range evs {
		acts[i] = activityRow{At: e.CreatedAt.UTC().Format("2006-01-02 15:04:05"), Type: e.EventType, Actor: e.ActorType}
		if e.ActorKeyPrefix != nil {
			acts[i].Prefix = *e.ActorKeyPrefix
		}
	}
	docs := make([]contextDoc, len(d.ContextDocuments))
	for i, doc := range d.ContextDocuments {
		docs[i] = contextDoc{Title: doc.Title, Type: doc.DocumentType, Global: doc.IsGlobal, Version: doc.Version, HTML: c.renderMarkdown(doc.Content)}
	}
	finds := make([]findingRow, len(d.Findings))
	for i, f := range d.Findings {
		finds[i] = findingRow{Agent: f.AgentName, Summary: f.Summary, Confidence: deref(f.Confidence), Action: deref(f.RecommendedAction),
			At: f.PostedAt.UTC().Format("2006-01-02 15:04")}
	}
	sibs, err := c.deps.Store.SiblingAlerts(uctx, a.UUID, graphSiblings)
	if err != nil {
		return err
	}
	base := c.base(ctx, a.Title, errText)
	base.Notice = notice
	notes, err := c.notes(ctx, a.UUID)
	if err != nil {
		return err
	}
	w := whoOf(ctx)
	canRun := w.p.Has(auth.ScopeWorkflowsExecute) && c.deps.Runs != nil
	if canRun {
		launches, err := c.deps.Runs.Launcher(uctx, responses.ActorOf(w.p, store.ActorConsole), d.Indicators)
		if err != nil {
			return err
		}
		for i, l := range launches {
			inds[i].Fitting, inds[i].Internal = len(l.Choices), l.Internal
		}
	} else {
		for i, ind := range d.Indicators {
			inds[i].Internal = responses.InternalAddress(ind.Type, ind.Value)
		}
	}
	raw := rawEvent(a)
	data := struct {
		page
		A                                       store.Alert
		Malice, Occurred, Description, Temporal string
		Override                                string
		Rule                                    *store.DetectionRule
		Indicators                              []indicatorRow
		Docs                                    []contextDoc
		Findings                                []findingRow
		Activity                                []activityRow
		Graph                                   graph
		Statuses, Classifications, MaliceLevels []string
		CanRun                                  bool
		CanConfigure                            bool // an admin session with the configuration owners wired: the per-indicator actions
		Raw                                     rawView
		Notes                                   alertNotes // comments and the timeline (comments.go)
	}{page: base, A: a, Malice: a.EffectiveMalice, Occurred: a.OccurredAt.UTC().Format(time.RFC1123),
		Description: deref(a.Description), Temporal: c.deps.Temporal.Link(ids.Alert(a.UUID)), Override: deref(a.MaliceOverride),
		Rule: d.DetectionRule, Indicators: inds, Docs: docs, Findings: finds, Activity: acts, Graph: layoutGraph(a, d.Indicators, sibs),
		Statuses: store.AlertStatuses(), Classifications: store.CloseClassifications(), MaliceLevels: indicators.MaliceNames(),
		CanRun: canRun, Raw: raw, Notes: notes,
		CanConfigure: w.p.Has(auth.ScopeAdmin) && c.deps.Exclusions != nil && c.deps.Mappings != nil}
	return c.render(ctx, status, "alert", data)
}

// stepRecords decodes an indicator's enrichment_results (enrichment.Answer per provider), by provider.
func stepRecords(results map[string]any) []stepRecord {
	out := make([]stepRecord, 0, len(results))
	for provider, v := range results {
		m, _ := v.(map[string]any)
		r, err := enrichment.AnswerFromMap(m)
		if err != nil {
			out = append(out, stepRecord{Provider: provider, Status: "unreadable"})
			continue
		}
		s := stepRecord{Provider: provider, Status: r.Status, Malice: r.Malice, Error: r.ErrorMessage, DurationMS: r.DurationMS,
			CacheHit: r.CacheHit, NotFound: r.NotFound}
		if r.EnrichedAt != nil {
			s.At = r.EnrichedAt.UTC().Format("2006-01-02 15:04:05")
		}
		for k, v := range r.Extracted {
			s.Extracted = append(s.Extracted, k+": "+shortValue(v))
		}
		sort.Strings(s.Extracted)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}

// shortValue shows an extracted value in a table cell, cut at 200 characters.
func shortValue(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case nil:
		s = "—"
	default:
		s = strings.TrimSpace(strings.ReplaceAll(fmtJSON(x), "\n", " "))
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// refusal says why a rule refused a console action: the status and code come from the one error
// table (errcode), the sentence is the console's own where the contract's speaks to an API client
// ("" for an error that is not a refusal: an internal one, or an outage the console answers 500).
func refusal(err error) (string, int) {
	f, ok := errcode.Of(err)
	if !ok || f.Status == http.StatusUnauthorized {
		return "", 0
	}
	switch f.Code {
	case "VALIDATION_ERROR":
		msgs := make([]string, len(f.Fields))
		for i, fe := range f.Fields {
			msgs[i] = fe.Msg
		}
		return strings.Join(msgs, " "), f.Status
	case "NOT_FOUND":
		if f.Subject == "" {
			return "Not found.", f.Status
		}
		return "No such " + strings.ToLower(f.Subject) + ".", f.Status
	case "WORKFLOW_NOT_ACTIVE":
		return "That workflow is " + fmt.Sprint(f.Details["state"]) + ", not active.", f.Status
	case "APPROVAL_ALREADY_DECIDED":
		return "This request was already decided.", f.Status
	case "APPROVAL_EXPIRED":
		return "This request has expired.", f.Status
	case "SELF_APPROVAL_FORBIDDEN":
		return "A key may not approve a run it triggered.", f.Status
	}
	return f.Message, f.Status
}

// alertAction answers an alert form: back to the page on success, the page with the rule's refusal
// otherwise.
func (c *Console) alertAction(ctx *fiber.Ctx, id uuid.UUID, err error, next string) error {
	if err != nil {
		msg, status := refusal(err)
		if msg == "" {
			return err
		}
		if status == http.StatusNotFound && errors.Is(err, store.ErrNotFound) {
			return c.notFound(ctx, "alert")
		}
		return c.alertPage(ctx, status, msg)
	}
	if next == "" {
		next = "/console/alerts/" + id.String()
	}
	return ctx.Redirect(next, http.StatusSeeOther)
}

func formUUID(ctx *fiber.Ctx) (uuid.UUID, bool) {
	id, err := uuid.Parse(ctx.Params("uuid"))
	return id, err == nil
}

// setStatus applies the status form through the alert rules (transitions, close classification).
func (c *Console) setStatus(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	status, class := ctx.FormValue("status"), ctx.FormValue("close_classification")
	p := alerts.Patch{Status: &status}
	if class != "" {
		p.CloseClassification = &class
	}
	_, err := c.deps.Alerts.Patch(ctx.UserContext(), id, p, c.actor(ctx, whoOf(ctx).p))
	return c.alertAction(ctx, id, err, "")
}

// assign sets the alert's assignee (PATCH's assignee): "Assign to me" posts to=me and takes the
// signed-in key's name; otherwise the assignee field ("" unassigns).
func (c *Console) assign(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	w := whoOf(ctx)
	who := ctx.FormValue("assignee")
	if ctx.FormValue("to") == "me" {
		who = w.p.Name
	}
	_, err := c.deps.Alerts.Patch(ctx.UserContext(), id, alerts.Patch{Assignee: &who}, w.p.Actor(store.ActorConsole))
	return c.alertAction(ctx, id, err, "")
}

// setMalice sets or clears the analyst's malice override (PATCH's malice_override and
// reset_malice_override).
func (c *Console) setMalice(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	var p alerts.Patch
	if m := ctx.FormValue("malice"); m == "" {
		p.ResetMaliceOverride = true
	} else {
		p.MaliceOverride = &m
	}
	_, err := c.deps.Alerts.Patch(ctx.UserContext(), id, p, c.actor(ctx, whoOf(ctx).p))
	return c.alertAction(ctx, id, err, "")
}

// addFinding appends a finding (POST /v1/alerts/{uuid}/findings), signed with the key's name.
func (c *Console) addFinding(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	w := whoOf(ctx)
	f := alerts.NewFinding{AgentName: w.p.Name, Summary: strings.TrimSpace(ctx.FormValue("summary"))}
	if v := ctx.FormValue("confidence"); v != "" {
		f.Confidence = &v
	}
	if v := strings.TrimSpace(ctx.FormValue("recommended_action")); v != "" {
		f.RecommendedAction = &v
	}
	_, err := c.deps.Alerts.AddFinding(ctx.UserContext(), id, f, c.actor(ctx, w.p))
	return c.alertAction(ctx, id, err, "")
}

// runWorkflow executes an applicable workflow against one of the alert's indicators
// (POST /v1/workflows/{uuid}/execute with alert_uuid), then shows the run.
func (c *Console) runWorkflow(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	wfText, indText, _ := strings.Cut(ctx.FormValue("run"), "|")
	wf, err1 := uuid.Parse(wfText)
	indID, err2 := uuid.Parse(indText)
	if err1 != nil || err2 != nil {
		return c.alertPage(ctx, http.StatusUnprocessableEntity, "Choose a workflow to run.")
	}
	uctx := ctx.UserContext()
	inds, err := c.deps.Store.AlertIndicators(uctx, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(inds, func(ind store.Indicator) bool { return ind.UUID == indID })
	if i < 0 {
		return c.alertPage(ctx, http.StatusUnprocessableEntity, "That indicator is not on this alert.")
	}
	req := responses.ExecuteRequest{WorkflowUUID: wf, IndicatorType: inds[i].Type, IndicatorValue: inds[i].Value, AlertUUID: &id}
	if r := strings.TrimSpace(ctx.FormValue("reason")); r != "" {
		if !plainText(r, 5000) {
			return c.alertPage(ctx, http.StatusUnprocessableEntity, "The reason is too long or contains a NUL character.")
		}
		req.Reason = &r
	}
	ex, err := c.deps.Runs.Execute(uctx, responses.ActorOf(whoOf(ctx).p, store.ActorConsole), req)
	if err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	return ctx.Redirect("/console/runs/"+ex.Run.UUID.String(), http.StatusSeeOther)
}
