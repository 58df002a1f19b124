package console

import (
	"errors"
	"net/http"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/store"
)

// launch is the workflow launcher of one indicator of an alert (GET /console/alerts/{uuid}/launch):
// with indicator=<uuid> it lists the active workflows that fit the indicator (responses.Launcher),
// none chosen, each with its risk, gate and steps; with workflow=<uuid> too it is the confirm step
// (responses.Preview): the steps (method, host, path) that will run, the internal-address warning and
// the Run button, which posts to /run (responses.Execute, as REST's execute).
func (c *Console) launch(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
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
	data := struct {
		page
		A        store.Alert
		Launch   responses.Launch
		Confirm  bool
		Fallback bool // an error page without a launcher
	}{A: a}
	answer := func(status int, msg string) error {
		data.page = c.base(ctx, "Run a workflow · "+a.Title, msg)
		return c.render(ctx, status, "launch", data)
	}
	if c.deps.Runs == nil {
		data.Fallback = true
		return answer(http.StatusServiceUnavailable, "Workflows cannot be run from this console.")
	}
	indID, err := uuid.Parse(ctx.Query("indicator"))
	if err != nil {
		data.Fallback = true
		return answer(http.StatusUnprocessableEntity, "Choose an indicator of this alert.")
	}
	inds, err := c.deps.Store.AlertIndicators(uctx, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(inds, func(ind store.Indicator) bool { return ind.UUID == indID })
	if i < 0 {
		data.Fallback = true
		return answer(http.StatusUnprocessableEntity, "That indicator is not on this alert.")
	}
	actor := responses.ActorOf(whoOf(ctx).p, store.ActorConsole)
	list := func(status int, msg string) error {
		ls, err := c.deps.Runs.Launcher(uctx, actor, inds[i:i+1])
		if err != nil {
			return err
		}
		data.Launch, data.Confirm = ls[0], false
		return answer(status, msg)
	}
	wf := ctx.Query("workflow")
	if wf == "" {
		return list(http.StatusOK, "")
	}
	wfID, err := uuid.Parse(wf)
	if err != nil {
		return list(http.StatusUnprocessableEntity, "Choose one of the workflows listed.")
	}
	l, err := c.deps.Runs.Preview(uctx, actor, inds[i], wfID)
	if err != nil {
		msg, status := refusal(err)
		if msg == "" {
			return err
		}
		return list(status, msg)
	}
	data.Launch, data.Confirm = l, true
	return answer(http.StatusOK, "")
}
