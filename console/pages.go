package console

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/alerts"
	"github.com/vigil-soc/vigil/responses"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/validate"
)

type indicatorRow struct {
	Type, Value, Malice string
	Verdicts            []string // "provider: verdict"
}

type activityRow struct{ At, Type, Actor string }

// alert shows one alert: fields, indicators with each provider's verdict, rule, findings, activity,
// and (with alerts:write) the status form.
func (c *Console) alert(ctx *fiber.Ctx) error {
	return c.alertPage(ctx, http.StatusOK, "")
}

func (c *Console) alertPage(ctx *fiber.Ctx, status int, errText string) error {
	id, err := uuid.Parse(ctx.Params("uuid"))
	if err != nil {
		return c.render(ctx, http.StatusNotFound, "login", c.base(ctx, "Not found", "No such alert."))
	}
	a, err := c.deps.Store.GetAlert(ctx.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return c.render(ctx, http.StatusNotFound, "login", c.base(ctx, "Not found", "No such alert."))
	}
	if err != nil {
		return err
	}
	d, err := c.deps.Store.AlertDetail(ctx.UserContext(), a)
	if err != nil {
		return err
	}
	inds := make([]indicatorRow, len(d.Indicators))
	for i, ind := range d.Indicators {
		row := indicatorRow{Type: ind.Type, Value: ind.Value, Malice: ind.Malice}
		for provider, r := range ind.EnrichmentResults {
			m, _ := r.(map[string]any)
			verdict, _ := m["malice"].(string)
			if st, _ := m["status"].(string); st != store.EnrichSuccess {
				verdict = st
			}
			row.Verdicts = append(row.Verdicts, provider+": "+verdict)
		}
		sort.Strings(row.Verdicts)
		inds[i] = row
	}
	evs, _, err := c.deps.Store.ListActivity(ctx.UserContext(), store.ActivityFilter{AlertUUID: &a.UUID, Page: store.Page{Number: 1, Size: 50}})
	if err != nil {
		return err
	}
	acts := make([]activityRow, len(evs))
	for i, e := range evs {
		acts[i] = activityRow{At: e.CreatedAt.UTC().Format("2006-01-02 15:04:05"), Type: e.EventType, Actor: e.ActorType}
	}
	desc := ""
	if a.Description != nil {
		desc = *a.Description
	}
	data := struct {
		page
		A                             store.Alert
		Malice, Occurred, Description string
		Rule                          *store.DetectionRule
		Indicators                    []indicatorRow
		Findings                      []store.Finding
		Activity                      []activityRow
		Statuses, Classifications     []string
	}{page: c.base(ctx, a.Title, errText), A: a, Malice: d.Malice, Occurred: a.OccurredAt.UTC().Format(time.RFC1123),
		Description: desc, Rule: d.DetectionRule, Indicators: inds, Findings: d.Findings, Activity: acts,
		Statuses: store.AlertStatuses(), Classifications: store.CloseClassifications()}
	return c.render(ctx, status, "alert", data)
}

// setStatus applies the status form through the alert rules (transitions, close classification),
// as the console actor.
func (c *Console) setStatus(ctx *fiber.Ctx) error {
	id, err := uuid.Parse(ctx.Params("uuid"))
	if err != nil {
		return c.render(ctx, http.StatusNotFound, "login", c.base(ctx, "Not found", "No such alert."))
	}
	status, class := ctx.FormValue("status"), ctx.FormValue("close_classification")
	p := alerts.Patch{Status: &status}
	if class != "" {
		p.CloseClassification = &class
	}
	_, err = c.deps.Alerts.Patch(ctx.UserContext(), id, p, whoOf(ctx).p.Actor(store.ActorConsole))
	var verrs validate.Errors
	switch {
	case errors.As(err, &verrs):
		msgs := make([]string, len(verrs))
		for i, fe := range verrs {
			msgs[i] = fe.Msg
		}
		return c.alertPage(ctx, http.StatusUnprocessableEntity, strings.Join(msgs, " "))
	case errors.Is(err, store.ErrNotFound):
		return c.render(ctx, http.StatusNotFound, "login", c.base(ctx, "Not found", "No such alert."))
	case err != nil:
		return err
	}
	return ctx.Redirect("/console/alerts/"+id.String(), http.StatusSeeOther)
}

type approvalRow struct {
	UUID                                                                                  uuid.UUID
	WorkflowName, RiskLevel, IndicatorType, IndicatorValue, TriggerSource, Prefix, Reason string
	Confidence, Expires, Left                                                             string
	Approved, Required                                                                    int
}

// approvals lists the pending requests with what a person needs to decide.
func (c *Console) approvals(ctx *fiber.Ctx) error {
	return c.approvalsPage(ctx, http.StatusOK, "")
}

func (c *Console) approvalsPage(ctx *fiber.Ctx, status int, errText string) error {
	rows, _, err := c.deps.Store.ListApprovals(ctx.UserContext(), store.ApprovalFilter{Statuses: []string{store.ApprovalPending},
		Page: store.Page{Number: 1, Size: 100}})
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]approvalRow, 0, len(rows))
	for _, a := range rows {
		if !now.Before(a.ExpiresAt) {
			continue
		}
		r := approvalRow{UUID: a.UUID, WorkflowName: a.WorkflowName, RiskLevel: a.RiskLevel, IndicatorType: a.IndicatorType,
			IndicatorValue: a.IndicatorValue, TriggerSource: a.TriggerSource, Confidence: "n/a", Required: a.RequiredApprovals,
			Expires: a.ExpiresAt.UTC().Format(time.RFC1123), Left: a.ExpiresAt.Sub(now).Round(time.Minute).String()}
		if a.TriggerKeyPrefix != nil {
			r.Prefix = *a.TriggerKeyPrefix
		}
		if a.Reason != nil {
			r.Reason = *a.Reason
		}
		if a.Confidence != nil {
			r.Confidence = strconv.FormatFloat(*a.Confidence, 'f', -1, 64)
		}
		for _, d := range a.Decisions {
			if d.Decision == store.ApprovalApproved {
				r.Approved++
			}
		}
		out = append(out, r)
	}
	return c.render(ctx, status, "approvals", struct {
		page
		Rows []approvalRow
	}{page: c.base(ctx, "Approvals", errText), Rows: out})
}

// decide approves or rejects through the approval rules (responses.Decide): agent keys cannot, a
// key cannot approve its own run, quorum counts distinct people.
func (c *Console) decide(ctx *fiber.Ctx) error {
	id, err := uuid.Parse(ctx.Params("uuid"))
	if err != nil {
		return c.approvalsPage(ctx, http.StatusNotFound, "No such approval request.")
	}
	decision := ctx.FormValue("decision")
	if decision != "approve" && decision != "reject" {
		return c.approvalsPage(ctx, http.StatusUnprocessableEntity, "Press Approve or Reject.")
	}
	var comment *string
	if s := strings.TrimSpace(ctx.FormValue("comment")); s != "" {
		if len([]rune(s)) > 5000 || strings.IndexByte(s, 0) >= 0 {
			return c.approvalsPage(ctx, http.StatusUnprocessableEntity, "The comment is too long or contains a NUL character.")
		}
		comment = &s
	}
	w := whoOf(ctx)
	who, err := responses.ByKey(responses.ActorOf(w.p, store.ActorConsole), nil)
	if err == nil {
		_, err = c.deps.Approvals.Decide(ctx.UserContext(), id, who, decision == "approve", comment)
	}
	if err != nil {
		msg, status := decisionRefusal(err)
		if msg == "" {
			return err
		}
		return c.approvalsPage(ctx, status, msg)
	}
	return ctx.Redirect("/console/approvals", http.StatusSeeOther)
}

// decisionRefusal says why the approval rules refused a decision, in the contract's terms ("" for
// an error that is not a refusal).
func decisionRefusal(err error) (string, int) {
	var nf *responses.NotFoundError
	switch {
	case errors.As(err, &nf):
		return "No such approval request.", http.StatusNotFound
	case errors.Is(err, responses.ErrAgentCannotApprove):
		return "Agent keys cannot approve or reject; a person must decide.", http.StatusForbidden
	case errors.Is(err, store.ErrSelfApproval):
		return "A key may not approve a run it triggered.", http.StatusForbidden
	case errors.Is(err, store.ErrApprovalDecided):
		return "This request was already decided.", http.StatusConflict
	case errors.Is(err, store.ErrApprovalExpired):
		return "This request has expired.", http.StatusConflict
	case errors.Is(err, store.ErrResponderVoted):
		return "You have already decided this request.", http.StatusConflict
	case errors.Is(err, store.ErrNotFound):
		return "No such approval request.", http.StatusNotFound
	}
	return "", 0
}
