package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/store"
)

type tile struct{ Label, Value, Hint string }

// seconds shows a duration in seconds as an analyst reads it ("—" when nothing qualifies).
func seconds(s *float64) string {
	if s == nil {
		return "—"
	}
	return (time.Duration(*s) * time.Second).Round(time.Second).String()
}

func percent(r *float64) string {
	if r == nil {
		return "—"
	}
	return strconv.FormatFloat(*r*100, 'f', 1, 64) + " %"
}

// dashboard is the metrics routes' first screen over the last 30 days: GET /v1/metrics/summary's
// figures, alerts per day from the same daily roll-up, and with workflows:read the runs of
// GET /v1/metrics/workflows; charts drawn as SVG.
func (c *Console) dashboard(ctx *fiber.Ctx) error {
	uctx := ctx.UserContext()
	w, _ := store.NewMetricsWindow(nil, nil, time.Now())
	sum, err := c.deps.Store.MetricsSummary(uctx, w, c.deps.Env)
	if err != nil {
		return err
	}
	perDay, err := c.deps.Store.AlertsPerDay(uctx, w)
	if err != nil {
		return err
	}
	tiles := []tile{
		{"Alerts", strconv.Itoa(sum.Alerts), "created in 30 days"},
		{"Open", strconv.Itoa(sum.Open), "of those, not closed"},
		{"Mean time to acknowledge", seconds(sum.MTTASeconds), ""},
		{"Mean time to close", seconds(sum.MTTCSeconds), ""},
		{"False positives", percent(sum.FalsePositiveRate), "of closed alerts"},
		{"Approvals pending", strconv.Itoa(sum.ApprovalsPending), ""},
		{"Providers", strconv.Itoa(sum.Providers.Active) + " / " + strconv.Itoa(sum.Providers.Total), "active / all, " + strconv.Itoa(sum.Providers.Configured) + " configured"},
	}
	var sev []chartItem
	for _, s := range severity.Names() {
		sev = append(sev, chartItem{Label: s, Value: sum.OpenBySeverity[s], Class: "sev-" + s})
	}
	charts := []chart{columnChart("alerts-over-time", "Alerts per day, last 30 days", perDay, "day"),
		rowChart("open-by-severity", "Open alerts by severity", sev)}
	if whoOf(ctx).p.Has(auth.ScopeWorkflowsRead) {
		wm, err := c.deps.Store.WorkflowMetrics(uctx, w)
		if err != nil {
			return err
		}
		tiles = append(tiles, tile{"Workflow runs", strconv.Itoa(sum.Runs.Total), "success " + percent(sum.Runs.SuccessRate())},
			tile{"Time saved", strconv.FormatFloat(sum.Runs.TimeSavedHours(), 'f', 1, 64) + " h", "by succeeded runs"})
		charts = append(charts, columnChart("runs-over-time", "Workflow runs per "+wm.Bucket, wm.RunsOverTime, wm.Bucket))
	}
	return c.render(ctx, http.StatusOK, "dashboard", struct {
		page
		Tiles    []tile
		Charts   []chart
		From, To string
	}{page: c.base(ctx, "Dashboard", ""), Tiles: tiles, Charts: charts,
		From: w.From.Format("2006-01-02 15:04"), To: w.To.Format("2006-01-02 15:04 UTC")})
}
