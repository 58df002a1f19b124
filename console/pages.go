package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

type approvalRow struct {
	UUID, Run                                                                             uuid.UUID
	Alert                                                                                 *uuid.UUID
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
	runIDs := make([]uuid.UUID, len(rows))
	for i, a := range rows {
		runIDs[i] = a.RunUUID
	}
	alertOf, err := c.deps.Store.RunAlerts(ctx.UserContext(), runIDs)
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]approvalRow, 0, len(rows))
	for _, a := range rows {
		if !now.Before(a.ExpiresAt) {
			continue
		}
		r := approvalRow{UUID: a.UUID, Run: a.RunUUID, WorkflowName: a.WorkflowName, RiskLevel: a.RiskLevel, IndicatorType: a.IndicatorType,
			IndicatorValue: a.IndicatorValue, TriggerSource: a.TriggerSource, Confidence: "n/a", Required: a.RequiredApprovals,
			Expires: a.ExpiresAt.UTC().Format(time.RFC1123), Left: a.ExpiresAt.Sub(now).Round(time.Minute).String()}
		if id, ok := alertOf[a.RunUUID]; ok {
			r.Alert = &id
		}
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
		msg, status := refusal(err)
		if msg == "" {
			return err
		}
		return c.approvalsPage(ctx, status, msg)
	}
	return ctx.Redirect("/console/approvals", http.StatusSeeOther)
}
