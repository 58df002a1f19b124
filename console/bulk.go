package console

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/store"
)

// bulkRow is one alert of a bulk change as the result page shows it.
type bulkRow struct {
	UUID, Code, Message string
}

// formMulti reads a repeated form field.
func formMulti(ctx *fiber.Ctx, name string) []string {
	var out []string
	for _, b := range ctx.Request().PostArgs().PeekMulti(name) {
		out = append(out, string(b))
	}
	return out
}

// bulk applies one change to the alerts picked on the queue (POST /v1/alerts/bulk's rules through
// alerts.Service.Bulk): the checked rows (alert_uuid), or every row of the page (apply_to=page,
// page_alert_uuid: how "select all on the page" works without script). action is status (with
// close_classification), assign-me (the key's name), assign (the assignee field), unassign or tags
// (tags_add, tags_remove: comma-separated). The answer is a page listing what changed and what
// each refused alert's rule said, with a link back to the queue as it was.
func (c *Console) bulk(ctx *fiber.Ctx) error {
	w := whoOf(ctx)
	back := consoleBack(ctx.FormValue("back"))
	ids, bad := picked(ctx)
	var p alerts.Patch
	switch ctx.FormValue("action") {
	case "status":
		st, class := ctx.FormValue("status"), ctx.FormValue("close_classification")
		p.Status = &st
		if class != "" {
			p.CloseClassification = &class
		}
	case "assign-me":
		p.Assignee = &w.p.Name
	case "assign":
		who := ctx.FormValue("assignee")
		if strings.TrimSpace(who) == "" {
			data := c.base(ctx, "Bulk change", "Type the handle to assign the alerts to (or use Unassign).")
			return c.render(ctx, http.StatusUnprocessableEntity, "bulk", struct {
				page
				Back                       string
				Succeeded, Failed, Skipped int
				Refused                    []bulkRow
			}{page: data, Back: back})
		}
		p.Assignee = &who
	case "unassign":
		none := ""
		p.Assignee = &none
	case "tags":
		p.TagsAdd, p.TagsRemove = splitTags(ctx.FormValue("tags_add")), splitTags(ctx.FormValue("tags_remove"))
	}
	data := struct {
		page
		Back                       string
		Succeeded, Failed, Skipped int
		Refused                    []bulkRow
	}{page: c.base(ctx, "Bulk change", ""), Back: back, Skipped: bad}
	if bad > 0 && len(ids) == 0 {
		data.Error = "No alert was selected."
		return c.render(ctx, http.StatusUnprocessableEntity, "bulk", data)
	}
	done, err := c.deps.Alerts.Bulk(ctx.UserContext(), ids, p, w.p.Actor(store.ActorConsole))
	if err != nil {
		msg, status := refusal(err)
		if msg == "" {
			return err
		}
		if len(ids) == 0 {
			msg = "No alert was selected: tick the alerts to change, or choose “every alert on this page”."
		}
		data.Error = msg
		return c.render(ctx, status, "bulk", data)
	}
	data.Succeeded, data.Failed = done.Succeeded, done.Failed
	for _, it := range done.Items {
		if it.Err == nil {
			continue
		}
		item := errcode.ItemOf(it.Err, "Alert")
		if item.Internal {
			c.deps.Log.ErrorContext(ctx.UserContext(), "console bulk change", "alert_uuid", it.AlertUUID, "error", it.Err)
		}
		data.Refused = append(data.Refused, bulkRow{UUID: it.AlertUUID.String(), Code: item.Code, Message: item.Message})
	}
	return c.render(ctx, http.StatusOK, "bulk", data)
}

// splitTags reads a comma-separated tag field (nil when blank).
func splitTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
