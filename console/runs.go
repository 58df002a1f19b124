package console

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
)

type runRow struct {
	UUID                                   uuid.UUID
	Workflow, Status, Trigger, Prefix      string
	IndicatorType, IndicatorValue, Created string
	Duration, TemporalID, TemporalLink     string
	AlertUUID                              *uuid.UUID
}

func runDuration(r store.WorkflowRun) string {
	if r.DurationMS == nil {
		return ""
	}
	return (time.Duration(*r.DurationMS) * time.Millisecond).String()
}

func toRunRow(r store.WorkflowRun, names map[uuid.UUID]string) runRow {
	name := names[r.WorkflowUUID]
	if name == "" {
		name = r.WorkflowUUID.String()
	}
	return runRow{UUID: r.UUID, Workflow: name, Status: r.Status, Trigger: r.TriggerSource, Prefix: deref(r.TriggerKeyPrefix),
		IndicatorType: r.IndicatorType, IndicatorValue: r.IndicatorValue, Created: r.CreatedAt.UTC().Format("2006-01-02 15:04:05"),
		Duration: runDuration(r), AlertUUID: r.AlertUUID, TemporalID: temporalID(r)}
}

// temporalID is the run's Temporal workflow id (set when the run is created).
func temporalID(r store.WorkflowRun) string {
	if r.TemporalWorkflowID != "" {
		return r.TemporalWorkflowID
	}
	return ids.WorkflowRun(r.UUID)
}

// runs lists workflow runs newest first with GET /v1/workflow-runs' filters (status, trigger source,
// workflow); values outside their vocabulary are ignored and named.
func (c *Console) runs(ctx *fiber.Ctx) error {
	var ignored []string
	statuses := known(multi(ctx, "status"), store.RunStatuses(), "status", &ignored)
	triggers := known(multi(ctx, "trigger_source"), []string{auth.KeyTypeHuman, auth.KeyTypeAgent}, "trigger source", &ignored)
	f := store.WorkflowRunFilter{Statuses: statuses, TriggerSources: triggers}
	wf := ctx.Query("workflow_uuid")
	if wf != "" {
		if id, err := uuid.Parse(wf); err == nil && len(wf) == 36 {
			f.WorkflowUUID = &id
		} else {
			wf = ""
			ignored = append(ignored, "workflow")
		}
	}
	pageNo, _ := strconv.Atoi(ctx.Query("page"))
	pageNo = max(1, min(pageNo, 1_000_000))
	f.Page = store.Page{Number: pageNo, Size: queuePageSize}
	uctx := ctx.UserContext()
	runs, total, err := c.deps.Store.ListWorkflowRuns(uctx, f)
	if err != nil {
		return err
	}
	wfIDs := make([]uuid.UUID, 0, len(runs))
	for _, r := range runs {
		if !slices.Contains(wfIDs, r.WorkflowUUID) {
			wfIDs = append(wfIDs, r.WorkflowUUID)
		}
	}
	names, err := c.deps.Store.WorkflowNames(uctx, wfIDs)
	if err != nil {
		return err
	}
	rows := make([]runRow, len(runs))
	for i, r := range runs {
		rows[i] = toRunRow(r, names)
	}
	for i := range rows {
		rows[i].TemporalLink = c.deps.Temporal.Link(rows[i].TemporalID)
	}
	pages := int(math.Ceil(float64(total) / queuePageSize))
	link := func(n int) string {
		v := url.Values{"page": {strconv.Itoa(n)}}
		for _, s := range statuses {
			v.Add("status", s)
		}
		for _, s := range triggers {
			v.Add("trigger_source", s)
		}
		if wf != "" {
			v.Set("workflow_uuid", wf)
		}
		return "/console/runs?" + v.Encode()
	}
	data := struct {
		page
		Statuses, Triggers, AllStatuses []string
		Workflow                        string
		Ignored                         []string
		Rows                            []runRow
		Total, Page, Pages              int
		Prev, Next                      string
	}{page: c.base(ctx, "Workflow runs", ""), Statuses: statuses, Triggers: triggers, AllStatuses: store.RunStatuses(), Workflow: wf,
		Ignored: ignored, Rows: rows, Total: total, Page: pageNo, Pages: pages}
	if pageNo > 1 {
		data.Prev = link(pageNo - 1)
	}
	if pageNo < pages {
		data.Next = link(pageNo + 1)
	}
	return c.render(ctx, http.StatusOK, "runs", data)
}

// stepRow is one step's record (seed §2.7 and its decisions), as an analyst reads it.
type stepRow struct {
	httpsteps.StepRecord
	Body      string    // the response body, pretty-printed (bodies are recorded in test mode only)
	WhenText  string    // the value its when gave, as JSON
	ResultOut string    // a code step's result, pretty-printed
	ItemText  string    // a for_each item, as JSON
	ItemRows  []stepRow // one per for_each item, in order
}

// toStepRow renders a record and, for a for_each step, its items.
func toStepRow(s httpsteps.StepRecord) stepRow {
	row := stepRow{StepRecord: s}
	if s.ResponseBody != nil {
		row.Body = fmtJSON(s.ResponseBody)
	}
	if s.WhenValue != nil {
		row.WhenText = compactJSON(s.WhenValue)
	}
	if s.Result != nil {
		row.ResultOut = fmtJSON(s.Result)
	}
	if s.Item != nil {
		row.ItemText = compactJSON(s.Item)
	}
	for _, it := range s.Items {
		row.ItemRows = append(row.ItemRows, toStepRow(it))
	}
	return row
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// run shows one run: every field, the per-step records and the link to its Temporal workflow.
func (c *Console) run(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "run")
	}
	uctx := ctx.UserContext()
	r, err := c.deps.Store.GetWorkflowRun(uctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ctx, "run")
	}
	if err != nil {
		return err
	}
	names, err := c.deps.Store.WorkflowNames(uctx, []uuid.UUID{r.WorkflowUUID})
	if err != nil {
		return err
	}
	var steps []stepRow
	var records []httpsteps.StepRecord
	if len(r.Steps) > 0 && json.Unmarshal(r.Steps, &records) == nil {
		for _, s := range records {
			steps = append(steps, toStepRow(s))
		}
	}
	result := ""
	if len(r.Result) > 0 && string(r.Result) != "null" {
		var v any
		if json.Unmarshal(r.Result, &v) == nil {
			result = fmtJSON(v)
		}
	}
	conf := ""
	if r.Confidence != nil {
		conf = strconv.FormatFloat(*r.Confidence, 'f', -1, 64)
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	var approval *store.ApprovalRequest
	var tally store.ApprovalTally
	var decisions []decisionRow
	if r.ApprovalRequestUUID != nil {
		a, err := c.deps.Store.GetApproval(uctx, *r.ApprovalRequestUUID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil {
			approval, tally = &a, a.Tally()
			for _, d := range a.Decisions {
				decisions = append(decisions, toDecisionRow(d))
			}
		}
	}
	data := struct {
		page
		Approval                          *store.ApprovalRequest
		Tally                             store.ApprovalTally // what counts toward the quorum
		ApprovalExpires, Rejection        string
		Decisions                         []decisionRow
		R                                 store.WorkflowRun
		Row                               runRow
		Reason, Confidence, Error, Result string
		Started, Completed, Temporal      string
		Steps                             []stepRow
		Final                             bool
	}{page: c.base(ctx, "Run "+r.UUID.String(), ""), R: r, Row: toRunRow(r, names), Reason: deref(r.Reason), Confidence: conf,
		Error: deref(r.Error), Result: result, Started: when(r.StartedAt), Completed: when(r.CompletedAt),
		Temporal: c.deps.Temporal.Link(temporalID(r)), Steps: steps, Final: store.RunFinal(r.Status),
		Approval: approval, Tally: tally, Decisions: decisions}
	if approval != nil {
		data.ApprovalExpires, data.Rejection = approval.ExpiresAt.UTC().Format("2006-01-02 15:04:05"), deref(approval.RejectionReason)
	}
	return c.render(ctx, http.StatusOK, "run", data)
}

// decisionRow is one decision on a run's approval request: who (the deciding key's name and prefix,
// or the verified Slack user or decide-page holder, and the free-text responder label), what, when,
// and the comment.
type decisionRow struct {
	Who, Via, Decision, At, Comment string
	Counted                         bool // counts toward the quorum (store.ApprovalDecision.Counts)
}

func toDecisionRow(d store.ApprovalDecision) decisionRow {
	row := decisionRow{Decision: d.Decision, At: d.DecidedAt.UTC().Format("2006-01-02 15:04:05"), Comment: deref(d.Comment), Counted: d.Counts()}
	switch {
	case d.KeyName != nil:
		row.Who, row.Via = *d.KeyName, "key "+deref(d.KeyPrefix)
	case d.VerifiedUser != nil:
		row.Who, row.Via = d.ResponderID, *d.VerifiedUser
	default:
		row.Who = d.ResponderID
	}
	if row.Via == "" && d.ResponderID != row.Who {
		row.Via = d.ResponderID
	}
	return row
}
