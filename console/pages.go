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

// approvalCard is one pending request as the inbox shows it (responses.Card).
type approvalCard struct {
	responses.Card
	Reason, Prefix, Confidence, Expires, Left, Temporal, Refusal string
}

// approvals lists the pending requests, the soonest to expire first, with what a person needs to
// decide: the alert, the indicator's verdict, the steps that will run, the declared risk.
func (c *Console) approvals(ctx *fiber.Ctx) error {
	return c.approvalsPage(ctx, http.StatusOK, "")
}

func (c *Console) approvalsPage(ctx *fiber.Ctx, status int, errText string) error {
	w := whoOf(ctx)
	who, err := responses.ByKey(responses.ActorOf(w.p, store.ActorConsole), nil)
	if err != nil {
		who = responses.Decider{} // an agent key: may decide nothing (the cards say why)
	}
	now := time.Now()
	cards, err := c.deps.Approvals.Inbox(ctx.UserContext(), who, now)
	if err != nil {
		return err
	}
	out := make([]approvalCard, len(cards))
	for i, card := range cards {
		a := card.Request
		r := approvalCard{Card: card, Reason: deref(a.Reason), Prefix: deref(a.TriggerKeyPrefix), Confidence: "n/a",
			Expires: a.ExpiresAt.UTC().Format(time.RFC1123), Left: a.ExpiresAt.Sub(now).Round(time.Minute).String(),
			Temporal: c.deps.Temporal.Link(card.TemporalID)}
		if a.Confidence != nil {
			r.Confidence = strconv.FormatFloat(*a.Confidence, 'f', -1, 64)
		}
		if card.Refusal != nil {
			r.Refusal, _ = refusal(card.Refusal)
		}
		out[i] = r
	}
	return c.render(ctx, status, "approvals", struct {
		page
		Rows []approvalCard
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
