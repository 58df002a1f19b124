package console

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/store"
)

// CaseService applies the case rules (cases.Service), as REST and MCP call them.
type CaseService interface {
	List(ctx context.Context, f cases.Filter) ([]store.Case, int, error)
	Get(ctx context.Context, id uuid.UUID) (cases.Detail, error)
	Create(ctx context.Context, in cases.Create, actor store.Actor) (store.Case, error)
	Patch(ctx context.Context, id uuid.UUID, p cases.Patch, actor store.Actor) (cases.Patched, error)
	AddAlerts(ctx context.Context, id uuid.UUID, ids []uuid.UUID, move bool, actor store.Actor) (store.CaseAdded, error)
	RemoveAlert(ctx context.Context, id, alertID uuid.UUID, actor store.Actor) error
}

// CaseTimelineService reads a case's merged timeline (timeline.Service): its own activity and
// comments with its alerts' items.
type CaseTimelineService interface {
	Case(ctx context.Context, id uuid.UUID, p store.Page) ([]timeline.Item, int, error)
}

// casePageSize is the case list's page length; caseAlerts how many alerts the case page lists (the
// API pages the rest); openCasesOffered how many open cases "Add to case" offers.
const (
	casePageSize     = 50
	caseAlerts       = 500
	openCasesOffered = 100
	// pickShown is how many of the picked alerts the chooser names (it takes up to cases.MaxAlerts).
	pickShown = 50
)

// caseQuery is the case list's form: the filters and sorts of GET /v1/cases, kept as typed.
type caseQuery struct {
	Statuses, Severities []string
	Assignee, Text       string
	Sort, Order          string
	Page                 int
	Filter               cases.Filter
	Ignored              []string
}

// parseCases reads the case list's query string as GET /v1/cases reads its own; a value the case
// rules refuse (cases.ValidateFilter) is left out of the filter and named, as on the queue.
func parseCases(ctx *fiber.Ctx) caseQuery {
	var q caseQuery
	f := &q.Filter
	q.Statuses = known(multi(ctx, "status"), store.CaseStatuses(), "status", &q.Ignored)
	q.Severities = known(multi(ctx, "severity"), severity.Names(), "severity", &q.Ignored)
	f.Statuses, f.Severities = q.Statuses, q.Severities
	if q.Assignee = strings.TrimSpace(ctx.Query("assignee")); q.Assignee != "" {
		if !plainText(q.Assignee, alerts.MaxAssigneeLength) {
			q.Assignee = ""
			q.Ignored = append(q.Ignored, "assignee")
		} else {
			f.Assignees, f.Unassigned = alerts.AssigneeFilter([]string{q.Assignee})
		}
	}
	if q.Text = strings.TrimSpace(ctx.Query("q")); !plainText(q.Text, 500) {
		q.Text = ""
		q.Ignored = append(q.Ignored, "search")
	}
	f.Query = q.Text
	if q.Sort = ctx.Query("sort_by"); !slices.Contains(store.CaseSortFields(), q.Sort) {
		if q.Sort != "" {
			q.Ignored = append(q.Ignored, "sort")
		}
		q.Sort = "updated_at"
	}
	if q.Order = ctx.Query("sort_order"); q.Order != "asc" {
		q.Order = "desc"
	}
	f.SortBy, f.SortDesc = q.Sort, q.Order == "desc"
	for _, e := range cases.ValidateFilter(*f) { // what the rules still refuse (hostile text) is left out too
		if len(e.Loc) > 0 && e.Loc[0] == "q" {
			q.Text, f.Query = "", ""
			q.Ignored = append(q.Ignored, "search")
		}
	}
	q.Page, _ = strconv.Atoi(ctx.Query("page"))
	q.Page = max(1, min(q.Page, 1_000_000))
	f.Page = store.Page{Number: q.Page, Size: casePageSize}
	slices.Sort(q.Ignored)
	q.Ignored = slices.Compact(q.Ignored)
	return q
}

// link is the case list at page n with the given sort, every filter kept.
func (q caseQuery) link(n int, sortBy, order string) string {
	v := url.Values{}
	for _, s := range q.Statuses {
		v.Add("status", s)
	}
	for _, s := range q.Severities {
		v.Add("severity", s)
	}
	if q.Assignee != "" {
		v.Set("assignee", q.Assignee)
	}
	if q.Text != "" {
		v.Set("q", q.Text)
	}
	if sortBy != "updated_at" || order != "desc" {
		v.Set("sort_by", sortBy)
		v.Set("sort_order", order)
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if s := v.Encode(); s != "" {
		return "/console/cases?" + s
	}
	return "/console/cases"
}

type caseRow struct {
	UUID                                    uuid.UUID
	Number, Title, Severity, Status, Malice string
	Classification, Assignee, Updated       string
	Alerts                                  int
	Tags                                    []string
}

func toCaseRow(c store.Case) caseRow {
	return caseRow{UUID: c.UUID, Number: c.Number(), Title: c.Title, Severity: c.EffectiveSeverity, Status: c.Status, Malice: c.Malice,
		Classification: deref(c.CloseClassification), Assignee: deref(c.Assignee), Updated: c.UpdatedAt.UTC().Format("2006-01-02 15:04"),
		Alerts: c.AlertCount, Tags: c.Tags}
}

// caseList lists cases with the filters and sorts of GET /v1/cases, 50 a page.
func (c *Console) caseList(ctx *fiber.Ctx) error {
	q := parseCases(ctx)
	rows, total, err := c.deps.Cases.List(ctx.UserContext(), q.Filter)
	if err != nil {
		return err
	}
	out := make([]caseRow, len(rows))
	for i, r := range rows {
		out[i] = toCaseRow(r)
	}
	headers := map[string]sortHeader{}
	for _, field := range store.CaseSortFields() {
		h := sortHeader{Label: strings.ReplaceAll(field, "_", " ")}
		order := "desc" // newest, worst, latest first
		if field == "status" {
			order = "asc"
		}
		if field == q.Sort {
			h.Mark = map[string]string{"asc": "▲", "desc": "▼"}[q.Order]
			order = map[string]string{"asc": "desc", "desc": "asc"}[q.Order]
		}
		h.Link = q.link(1, field, order)
		headers[field] = h
	}
	pages := int(math.Ceil(float64(total) / casePageSize))
	base := c.base(ctx, "Cases", "")
	data := struct {
		page
		Q                    caseQuery
		Statuses, Severities []string
		Rows                 []caseRow
		Total, Pages         int
		Prev, Next, Mine     string
		Sort                 map[string]sortHeader
	}{page: base, Q: q, Statuses: store.CaseStatuses(), Severities: severity.Names(), Rows: out, Total: total, Pages: pages, Sort: headers}
	if mine := myAlertsLink(base.KeyName); mine != "" {
		data.Mine = "/console/cases" + strings.TrimPrefix(mine, "/console/")
	}
	if q.Page > 1 {
		data.Prev = q.link(q.Page-1, q.Sort, q.Order)
	}
	if q.Page < pages {
		data.Next = q.link(q.Page+1, q.Sort, q.Order)
	}
	return c.render(ctx, http.StatusOK, "cases", data)
}

type caseAlertRow struct {
	UUID                                                      uuid.UUID
	Title, Severity, Status, Classification, Malice, Assignee string
	Occurred                                                  string
}

type caseIndicatorRow struct{ Type, Value, Malice string }

// casePage shows one case: its fields, its alerts (malice, status), its indicators (each a pivot
// of the queue), comments, the merged timeline, and the actions the key's scopes allow.
func (c *Console) casePage(ctx *fiber.Ctx) error { return c.caseView(ctx, http.StatusOK, "") }

func (c *Console) caseView(ctx *fiber.Ctx, status int, errText string) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "case")
	}
	uctx := ctx.UserContext()
	d, err := c.deps.Cases.Get(uctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ctx, "case")
	}
	if err != nil {
		return err
	}
	cs := d.Case
	rows, total, err := c.deps.Store.ListAlerts(uctx, store.AlertFilter{CaseUUID: &cs.UUID, SortBy: "occurred_at", SortDesc: true,
		Page: store.Page{Number: 1, Size: caseAlerts}})
	if err != nil {
		return err
	}
	var open int
	list := make([]caseAlertRow, len(rows))
	for i, a := range rows {
		list[i] = caseAlertRow{UUID: a.UUID, Title: a.Title, Severity: a.Severity, Status: a.Status, Classification: deref(a.CloseClassification),
			Malice: a.EffectiveMalice, Assignee: deref(a.Assignee),
			Occurred: a.OccurredAt.UTC().Format("2006-01-02 15:04")}
		if a.Status != store.StatusClosed {
			open++
		}
	}
	inds := make([]caseIndicatorRow, len(d.Indicators))
	for i, ind := range d.Indicators {
		inds[i] = caseIndicatorRow{Type: ind.Type, Value: ind.Value, Malice: ind.Malice}
	}
	var notes alertNotes
	if c.deps.Comments != nil && c.deps.Timeline != nil { // the alert page's condition: the comment forms are registered
		var tl func(context.Context, uuid.UUID, store.Page) ([]timeline.Item, int, error)
		if c.deps.CaseTimeline != nil {
			tl = c.deps.CaseTimeline.Case
		}
		if notes, err = c.notesOf(ctx, store.CaseCommentSubject(cs.UUID), "cases", tl); err != nil {
			return err
		}
	}
	var moves []string // the status form: where the graph lets the case go, Closed apart (its own form)
	canClose := false
	for _, to := range cases.Transitions(cs.Status) {
		if to == store.CaseClosed {
			canClose = true
		} else {
			moves = append(moves, to)
		}
	}
	const when = "2006-01-02 15:04:05"
	data := struct {
		page
		C                                        store.Case
		Number, Classification, Assignee, Malice string
		Description, Created, Updated, Closed    string
		AlertCount, AlertsMore, OpenAlerts       int
		Alerts                                   []caseAlertRow
		Indicators                               []caseIndicatorRow
		Moves, Classifications                   []string
		CanClose                                 bool
		Notes                                    alertNotes
	}{page: c.base(ctx, cs.Number()+" "+cs.Title, errText), C: cs, Number: cs.Number(), Classification: deref(cs.CloseClassification),
		Assignee: deref(cs.Assignee), Malice: cs.Malice, Description: deref(cs.Description), Created: cs.CreatedAt.UTC().Format(when),
		Updated: cs.UpdatedAt.UTC().Format(when), AlertCount: cs.AlertCount, AlertsMore: total - len(rows), OpenAlerts: open,
		Alerts: list, Indicators: inds, Moves: moves, Classifications: store.CloseClassifications(), CanClose: canClose, Notes: notes}
	if cs.ClosedAt != nil {
		data.Closed = cs.ClosedAt.UTC().Format(when)
	}
	return c.render(ctx, status, "case", data)
}

// caseAction answers a case form: back to the case page on success, the page with the rule's
// refusal otherwise.
func (c *Console) caseAction(ctx *fiber.Ctx, id uuid.UUID, err error, next string) error {
	if err != nil {
		msg, status := refusal(err)
		if msg == "" {
			return err
		}
		if status == http.StatusNotFound && errors.Is(err, store.ErrNotFound) {
			return c.notFound(ctx, "case")
		}
		return c.caseView(ctx, status, msg)
	}
	if next == "" {
		next = "/console/cases/" + id.String()
	}
	return ctx.Redirect(next, http.StatusSeeOther)
}

// caseAssign sets the case's assignee: "Assign to me" (to=me) takes the signed-in key's name, the
// field another handle, "" unassigns.
func (c *Console) caseAssign(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "case")
	}
	w := whoOf(ctx)
	who := ctx.FormValue("assignee")
	if ctx.FormValue("to") == "me" {
		who = w.p.Name
	}
	_, err := c.deps.Cases.Patch(ctx.UserContext(), id, cases.Patch{Assignee: &who}, c.actor(ctx, w.p))
	return c.caseAction(ctx, id, err, "")
}

// caseStatus moves the case through its status graph; a close takes the classification and, with
// close_alerts, closes every open alert of the case through the alert rules. When some of the
// alerts refuse, the page says which and why.
func (c *Console) caseStatus(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "case")
	}
	var p cases.Patch
	if st := ctx.FormValue("status"); st != "" {
		p.Status = &st
	}
	if class := ctx.FormValue("close_classification"); class != "" {
		p.CloseClassification = &class
	}
	switch ctx.FormValue("close_alerts") {
	case "":
	case "true", "on":
		p.CloseAlerts = true
	default:
		return c.caseView(ctx, http.StatusUnprocessableEntity, "“close its alerts too” is a checkbox: ticked or not.")
	}
	done, err := c.deps.Cases.Patch(ctx.UserContext(), id, p, c.actor(ctx, whoOf(ctx).p))
	if err == nil && done.ClosedAlerts != nil && done.ClosedAlerts.Failed > 0 {
		var why []string
		for _, it := range done.ClosedAlerts.Items {
			if it.Err != nil {
				item := errcode.ItemOf(it.Err, "Alert")
				if item.Internal {
					c.deps.Log.ErrorContext(ctx.UserContext(), "console case close: alert", "alert_uuid", it.AlertUUID, "error", it.Err)
				}
				why = append(why, it.AlertUUID.String()+": "+item.Message)
			}
		}
		return c.caseView(ctx, http.StatusOK, "The case is closed; "+strconv.Itoa(done.ClosedAlerts.Failed)+
			" of its alerts were not: "+strings.Join(why, "; "))
	}
	return c.caseAction(ctx, id, err, "")
}

// caseRemoveAlert takes one alert out of the case.
func (c *Console) caseRemoveAlert(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	alertID, err := uuid.Parse(ctx.Params("alert"))
	if !ok || err != nil {
		return c.notFound(ctx, "case alert")
	}
	err = c.deps.Cases.RemoveAlert(ctx.UserContext(), id, alertID, c.actor(ctx, whoOf(ctx).p))
	return c.caseAction(ctx, id, err, "/console/cases/"+id.String()+"#case-alerts")
}

// picked reads the alerts a form names: the ticked rows (alert_uuid) or, with apply_to=page, every
// row of the queue's page (page_alert_uuid); malformed values are counted, not used.
func picked(ctx *fiber.Ctx) (ids []uuid.UUID, bad int) {
	field := "alert_uuid"
	if ctx.FormValue("apply_to") == "page" {
		field = "page_alert_uuid"
	}
	for _, v := range formMulti(ctx, field) {
		id, err := uuid.Parse(v)
		if err != nil || len(v) != 36 {
			bad++
			continue
		}
		ids = append(ids, id)
	}
	return ids, bad
}

// consoleBack is where a "back" link may lead: a console page, never another site.
func consoleBack(back string) string {
	if !strings.HasPrefix(back, "/console/") || strings.HasPrefix(back, "/console//") || strings.ContainsAny(back, "\\\r\n") {
		return "/console/"
	}
	return back
}

type pickedAlert struct {
	UUID                    uuid.UUID
	Title, Severity, Status string
	Case                    *uuid.UUID
}

type openCase struct {
	UUID                  uuid.UUID
	Number, Title, Status string
	Alerts                int
}

// moveOffer is the confirmation an ALERT_IN_OTHER_CASE refusal turns into: the same request again
// with move.
type moveOffer struct {
	Message, Number, Action string
	Fields                  [][2]string // the new case's fields, posted again
}

// pickData is the "Add to case" page.
type pickData struct {
	page
	IDs                      []uuid.UUID // every picked alert (the forms post them on)
	Picked                   []pickedAlert
	More                     int // picked alerts not named
	Open                     []openCase
	OpenMore                 bool
	Severities               []string
	NewTitle, Back           string
	NewDescription           string
	TitleMax, DescriptionMax int
	Move                     *moveOffer
	NewOnly                  bool // "New case from selection…": no list of open cases
}

// pickPage renders the chooser for ids: the alerts (up to pickShown named), the open cases to add
// them to, a new case's form; with move, the confirmation to move them.
func (c *Console) pickPage(ctx *fiber.Ctx, status int, ids []uuid.UUID, errText string, move *moveOffer) error {
	uctx := ctx.UserContext()
	data := pickData{page: c.base(ctx, "Add to case", errText), Severities: severity.Names(), Back: consoleBack(ctx.FormValue("back")),
		TitleMax: cases.MaxTitleLength, DescriptionMax: cases.MaxDescriptionLength, Move: move, IDs: ids}
	for _, id := range ids[:min(len(ids), pickShown)] {
		a, err := c.deps.Store.GetAlert(uctx, id)
		if errors.Is(err, store.ErrNotFound) {
			data.Picked = append(data.Picked, pickedAlert{UUID: id, Title: "(no such alert)"})
			continue
		}
		if err != nil {
			return err
		}
		data.Picked = append(data.Picked, pickedAlert{UUID: a.UUID, Title: a.Title, Severity: a.Severity, Status: a.Status, Case: a.CaseUUID})
		if data.NewTitle == "" {
			data.NewTitle = a.Title
		}
	}
	data.More = len(ids) - len(data.Picked)
	if t := ctx.FormValue("title"); t != "" {
		data.NewTitle = t // a refused create keeps what was typed
	}
	data.NewDescription = ctx.FormValue("description")
	data.NewOnly = ctx.FormValue("action") == "case-new"
	if move == nil && !data.NewOnly {
		open, total, err := c.deps.Cases.List(uctx, cases.Filter{Statuses: []string{store.CaseOpen, store.CaseInvestigating},
			SortBy: "updated_at", SortDesc: true, Page: store.Page{Number: 1, Size: openCasesOffered}})
		if err != nil {
			return err
		}
		for _, oc := range open {
			data.Open = append(data.Open, openCase{UUID: oc.UUID, Number: oc.Number(), Title: oc.Title, Status: oc.Status, Alerts: oc.AlertCount})
		}
		data.OpenMore = total > len(open)
	}
	return c.render(ctx, status, "case_pick", data)
}

// noneSelected is the chooser's answer to a form that names no usable alert.
func (c *Console) noneSelected(ctx *fiber.Ctx) error {
	return c.pickPage(ctx, http.StatusUnprocessableEntity, nil,
		"No alert was selected: tick the alerts to put in a case, or choose “every alert on this page”.", nil)
}

// casePick is "Add to case…" and "New case from selection…" from the queue's multi-select and from
// the alert page: the picked alerts, the open cases to add them to, and a new case's form.
func (c *Console) casePick(ctx *fiber.Ctx) error {
	ids, _ := picked(ctx)
	if len(ids) == 0 {
		return c.noneSelected(ctx)
	}
	if len(ids) > cases.MaxAlerts {
		return c.pickPage(ctx, http.StatusUnprocessableEntity, nil, "At most "+strconv.Itoa(cases.MaxAlerts)+" alerts go into a case at once.", nil)
	}
	return c.pickPage(ctx, http.StatusOK, ids, "", nil)
}

// formMove reads the move confirmation: "true" or nothing.
func formMove(ctx *fiber.Ctx) (bool, bool) {
	switch ctx.FormValue("move") {
	case "":
		return false, true
	case "true":
		return true, true
	}
	return false, false
}

// caseAdd adds the picked alerts to a case (POST /v1/cases/{uuid}/alerts): the case of the path, or
// of the chooser's case_uuid field. An alert in another case is refused (ALERT_IN_OTHER_CASE) and
// the page asks whether to move it; the confirmation posts again with move=true.
func (c *Console) caseAdd(ctx *fiber.Ctx) error {
	raw := ctx.Params("uuid")
	if raw == "" {
		raw = ctx.FormValue("case_uuid")
	}
	id, err := uuid.Parse(raw)
	ids, _ := picked(ctx)
	if err != nil || len(raw) != 36 {
		return c.pickPage(ctx, http.StatusUnprocessableEntity, ids, "Choose the case to add the alerts to.", nil)
	}
	move, ok := formMove(ctx)
	if !ok {
		return c.pickPage(ctx, http.StatusUnprocessableEntity, ids, "“move” is a confirmation: true or nothing.", nil)
	}
	if len(ids) == 0 {
		return c.noneSelected(ctx)
	}
	_, err = c.deps.Cases.AddAlerts(ctx.UserContext(), id, ids, move, c.actor(ctx, whoOf(ctx).p))
	if err != nil {
		return c.pickRefusal(ctx, ids, err, id, nil)
	}
	return ctx.Redirect("/console/cases/"+id.String()+"#case-alerts", http.StatusSeeOther)
}

// caseCreate creates a case from the chooser's form (POST /v1/cases with alert_uuids): title,
// severity (blank: derived from the alerts), description. An alert in another case asks first, as
// for adding.
func (c *Console) caseCreate(ctx *fiber.Ctx) error {
	ids, bad := picked(ctx)
	if len(ids) == 0 && bad > 0 {
		return c.noneSelected(ctx)
	}
	move, ok := formMove(ctx)
	if !ok {
		return c.pickPage(ctx, http.StatusUnprocessableEntity, ids, "“move” is a confirmation: true or nothing.", nil)
	}
	in := cases.Create{Title: ctx.FormValue("title"), AlertUUIDs: ids, Move: move}
	fields := [][2]string{{"title", in.Title}}
	if s := ctx.FormValue("severity"); s != "" {
		in.Severity = &s
		fields = append(fields, [2]string{"severity", s})
	}
	if d := ctx.FormValue("description"); d != "" {
		in.Description = &d
		fields = append(fields, [2]string{"description", d})
	}
	cs, err := c.deps.Cases.Create(ctx.UserContext(), in, c.actor(ctx, whoOf(ctx).p))
	if err != nil {
		return c.pickRefusal(ctx, ids, err, uuid.Nil, fields)
	}
	return ctx.Redirect("/console/cases/"+cs.UUID.String(), http.StatusSeeOther)
}

// pickRefusal answers a refused add or create on the chooser: ALERT_IN_OTHER_CASE becomes the
// question whether to move (target uuid.Nil: the new case of fields), anything else the rule's words.
func (c *Console) pickRefusal(ctx *fiber.Ctx, ids []uuid.UUID, err error, target uuid.UUID, fields [][2]string) error {
	var other *cases.AlertInOtherCaseError
	if errors.As(err, &other) {
		uctx := ctx.UserContext()
		offer := &moveOffer{Fields: fields, Action: "/console/cases", Number: "a new case"}
		if target != uuid.Nil {
			offer.Action = "/console/cases/" + target.String() + "/alerts"
			if t, err := c.deps.Cases.Get(uctx, target); err == nil {
				offer.Number = t.Case.Number()
			}
		}
		what, where := "Alert "+other.AlertUUID.String(), "another case"
		if a, err := c.deps.Store.GetAlert(uctx, other.AlertUUID); err == nil {
			what = "Alert “" + a.Title + "”"
		}
		if o, err := c.deps.Cases.Get(uctx, other.CaseUUID); err == nil {
			where = o.Case.Number() + " “" + o.Case.Title + "”"
		}
		offer.Message = what + " is already in " + where + ". Move it (and any other selected alert that is in another case) to " +
			offer.Number + "?"
		return c.pickPage(ctx, http.StatusConflict, ids, "", offer)
	}
	msg, status := refusal(err)
	if msg == "" {
		return err
	}
	if status == http.StatusNotFound && target != uuid.Nil {
		if _, gerr := c.deps.Cases.Get(ctx.UserContext(), target); errors.Is(gerr, store.ErrNotFound) {
			msg = "No such case."
		} else {
			msg = "One of the selected alerts does not exist."
		}
	}
	return c.pickPage(ctx, status, ids, msg, nil)
}

// registerCases mounts the case pages and forms (when the case service is wired).
func (c *Console) registerCases(g fiber.Router) {
	if c.deps.Cases == nil {
		return
	}
	read, write := c.need(auth.ScopeAlertsRead), c.need(cases.WriteScopes...) // case writes need alerts:read too (R4-3)
	g.Get("/cases", c.session, read, c.caseList)
	g.Post("/cases", c.session, c.csrf, write, c.caseCreate)
	g.Post("/cases/pick", c.session, c.csrf, write, c.casePick)
	g.Post("/cases/add", c.session, c.csrf, write, c.caseAdd)
	g.Get("/cases/:uuid", c.session, read, c.casePage)
	g.Post("/cases/:uuid/alerts", c.session, c.csrf, write, c.caseAdd)
	g.Post("/cases/:uuid/alerts/:alert/remove", c.session, c.csrf, write, c.caseRemoveAlert)
	g.Post("/cases/:uuid/assign", c.session, c.csrf, write, c.caseAssign)
	g.Post("/cases/:uuid/status", c.session, c.csrf, write, c.caseStatus)
}
