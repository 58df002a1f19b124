package console

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/store"
)

// queuePageSize is the queue's page length.
const queuePageSize = 50

// formTime is the layout of a datetime-local input; the console reads and shows times in UTC.
const formTime = "2006-01-02T15:04"

// queueQuery is the queue's form: every filter and sort of GET /v1/alerts. Values are kept as the
// analyst typed them (to refill the form); Filter is what ListAlerts gets.
type queueQuery struct {
	Statuses, Severities, Enrichment []string
	Malices, Closures                []string
	Sources, Tags, Rule, From, To    string
	Enriched, Text, Sort, Order      string
	Assignee                         string // as typed: handles, comma-separated; "none" = unassigned
	Indicator, IndicatorType         string // the indicator pivot (explicit, or recognised in the search box)
	// Pivoted: the search box held an indicator value (kit/indicators inference), searched as
	// one; TextOnly (text=1) searches it as text instead.
	Pivoted, TextOnly bool
	Page              int
	Filter            store.AlertFilter
	Ignored           []string // filter values refused, named for the analyst
}

// multi reads a repeated or comma-separated parameter.
func multi(ctx *fiber.Ctx, name string) []string {
	var out []string
	for _, b := range ctx.Context().QueryArgs().PeekMulti(name) {
		for _, v := range strings.Split(string(b), ",") {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// known keeps the values in vocabulary and names the others in ignored.
func known(values, vocabulary []string, name string, ignored *[]string) []string {
	var out []string
	for _, v := range values {
		if slices.Contains(vocabulary, v) {
			out = append(out, v)
		} else {
			*ignored = append(*ignored, name)
		}
	}
	return out
}

// plainText refuses text the database cannot hold or the REST route would refuse (NUL, over max runes).
func plainText(s string, maxRunes int) bool {
	return strings.IndexByte(s, 0) < 0 && len([]rune(s)) <= maxRunes
}

// parseQueue reads the queue's query string the way GET /v1/alerts reads its own: a value outside its
// vocabulary, a malformed time or uuid, or over-long text is left out of the filter and named in
// Ignored (a form should not fail on one bad field).
func parseQueue(ctx *fiber.Ctx) queueQuery {
	var q queueQuery
	f := &q.Filter
	q.Statuses = known(multi(ctx, "status"), store.AlertStatuses(), "status", &q.Ignored)
	q.Severities = known(multi(ctx, "severity"), severity.Names(), "severity", &q.Ignored)
	q.Enrichment = known(multi(ctx, "enrichment_status"), store.EnrichmentStatuses(), "enrichment status", &q.Ignored)
	f.Statuses, f.Severities, f.EnrichmentStatuses = q.Statuses, q.Severities, q.Enrichment
	texts := func(name, label string, maxItem int) ([]string, string) {
		vals := multi(ctx, name)
		for _, v := range vals {
			if !plainText(v, maxItem) || len(vals) > 50 {
				q.Ignored = append(q.Ignored, label)
				return nil, ""
			}
		}
		return vals, strings.Join(vals, ", ")
	}
	f.SourceNames, q.Sources = texts("source_name", "source", 100)
	f.Tags, q.Tags = texts("tags", "tags", 100)
	q.Malices = known(multi(ctx, "malice"), indicators.MaliceNames(), "malice", &q.Ignored)
	q.Closures = known(multi(ctx, "close_classification"), store.CloseClassifications(), "close classification", &q.Ignored)
	f.Malices, f.CloseClassifications = q.Malices, q.Closures
	var handles []string
	handles, q.Assignee = texts("assignee", "assignee", alerts.MaxAssigneeLength)
	f.Assignees, f.Unassigned = alerts.AssigneeFilter(handles)
	switch q.Enriched = ctx.Query("is_enriched"); q.Enriched {
	case "true", "false":
		b := q.Enriched == "true"
		f.IsEnriched = &b
	case "":
	default:
		q.Enriched = ""
		q.Ignored = append(q.Ignored, "enriched")
	}
	if q.Rule = strings.TrimSpace(ctx.Query("detection_rule_uuid")); q.Rule != "" {
		if id, err := uuid.Parse(q.Rule); err == nil && len(q.Rule) == 36 {
			f.DetectionRuleUUID = &id
		} else {
			q.Rule = ""
			q.Ignored = append(q.Ignored, "detection rule")
		}
	}
	when := func(name, label string) (*time.Time, string) {
		v := strings.TrimSpace(ctx.Query(name))
		if v == "" {
			return nil, ""
		}
		t, err := time.Parse(formTime, v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				q.Ignored = append(q.Ignored, label)
				return nil, ""
			}
		}
		t = t.UTC()
		return &t, t.Format(formTime)
	}
	f.From, q.From = when("from_time", "from")
	f.To, q.To = when("to_time", "to")
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		f.From, f.To, q.From, q.To = nil, nil, "", ""
		q.Ignored = append(q.Ignored, "time range (to before from)")
	}
	if q.Text = strings.TrimSpace(ctx.Query("q")); !plainText(q.Text, 500) {
		q.Text = ""
		q.Ignored = append(q.Ignored, "search")
	}
	f.Query = q.Text
	q.TextOnly = ctx.Query("text") == "1"
	q.Indicator, q.IndicatorType = strings.TrimSpace(ctx.Query("indicator")), strings.TrimSpace(ctx.Query("indicator_type"))
	if q.Indicator == "" && q.Text != "" && !q.TextOnly {
		// The search box pivots: an IP, domain, hash, URL or email finds the alerts carrying it.
		if t, ok := indicators.Infer(q.Text); ok {
			q.Indicator, q.IndicatorType, q.Pivoted = q.Text, string(t), true
			f.Query = ""
		}
	}
	if q.Indicator != "" {
		keys, errs := alerts.IndicatorFilter(q.Indicator, q.IndicatorType)
		if len(errs) > 0 {
			q.Ignored = append(q.Ignored, "indicator")
			q.Indicator, q.IndicatorType, q.Pivoted = "", "", false
			f.Query = q.Text
		} else {
			f.Indicators, f.IndicatorFilter = keys, true
		}
	}
	if q.Sort = ctx.Query("sort_by"); !slices.Contains(queueSortKeys(), q.Sort) {
		if q.Sort != "" {
			q.Ignored = append(q.Ignored, "sort")
		}
		q.Sort = store.AlertSortTriage
	}
	switch q.Order = ctx.Query("sort_order"); {
	case q.Order == "asc" || q.Order == "desc":
	case q.Sort == store.AlertSortTriage:
		q.Order = "asc" // the triage order itself
	default:
		q.Order = "desc"
	}
	f.SortBy, f.SortDesc = q.Sort, q.Order == "desc"
	q.Page, _ = strconv.Atoi(ctx.Query("page"))
	q.Page = max(1, min(q.Page, 1_000_000))
	f.Page = store.Page{Number: q.Page, Size: queuePageSize}
	slices.Sort(q.Ignored)
	q.Ignored = slices.Compact(q.Ignored)
	return q
}

// values is the query string of q at page n with the given sort (links keep every filter).
func (q queueQuery) values(n int, sortBy, order string) url.Values {
	v := url.Values{}
	add := func(k string, vals ...string) {
		for _, s := range vals {
			if s != "" {
				v.Add(k, s)
			}
		}
	}
	add("status", q.Statuses...)
	add("severity", q.Severities...)
	add("enrichment_status", q.Enrichment...)
	add("source_name", q.Filter.SourceNames...)
	add("tags", q.Filter.Tags...)
	add("is_enriched", q.Enriched)
	add("detection_rule_uuid", q.Rule)
	add("from_time", q.From)
	add("to_time", q.To)
	add("q", q.Text)
	add("malice", q.Malices...)
	add("close_classification", q.Closures...)
	add("assignee", q.Filter.Assignees...)
	if q.Filter.Unassigned {
		add("assignee", alerts.Unassigned)
	}
	if !q.Pivoted { // a pivot comes back from q itself
		add("indicator", q.Indicator)
		add("indicator_type", q.IndicatorType)
	}
	if q.TextOnly {
		add("text", "1")
	}
	if sortBy != store.AlertSortTriage || order != "asc" { // the default: triage order
		add("sort_by", sortBy)
		add("sort_order", order)
	}
	if n > 1 {
		add("page", strconv.Itoa(n))
	}
	return v
}

func (q queueQuery) link(n int, sortBy, order string) string {
	if s := q.values(n, sortBy, order).Encode(); s != "" {
		return "/console/?" + s
	}
	return "/console/"
}

// queueSortKeys are the queue's sorts: the triage order (the default), then GET /v1/alerts' own.
func queueSortKeys() []string {
	return append([]string{store.AlertSortTriage}, store.AlertSortFields()...)
}

type queueRow struct {
	UUID                                              uuid.UUID
	Title, Severity, Status, Malice, Source, Occurred string
	Enrichment, Assignee                              string
	Tags                                              []string
	// Age is how long ago Vigil received the alert (created_at), Changed how long ago it last changed
	// (updated_at); Created and Updated are the exact times (UTC) behind them.
	Age, Changed, Created, Updated string
}

// sortHeader is a column heading that sorts by its field (again: the other way). ARIA is the
// aria-sort value of the column the queue is sorted by ("" on the others).
type sortHeader struct {
	Label, Link, Mark, ARIA string
}

// ago is how long before now t was, as an analyst reads it at a glance: 45s, 12m, 5h 20m, 3d 4h.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(max(0, int(d.Seconds()))) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h " + strconv.Itoa(int(d.Minutes())%60) + "m"
	default:
		return strconv.Itoa(int(d.Hours())/24) + "d " + strconv.Itoa(int(d.Hours())%24) + "h"
	}
}

// queue lists alerts with every filter and sort of GET /v1/alerts. With partial=rows it answers only
// the table's rows (the live refresh of console.js).
func (c *Console) queue(ctx *fiber.Ctx) error {
	q := parseQueue(ctx)
	rows, total, err := c.deps.Store.ListAlerts(ctx.UserContext(), q.Filter)
	if err != nil {
		return err
	}
	out := make([]queueRow, len(rows))
	now := time.Now()
	for i, a := range rows {
		out[i] = queueRow{UUID: a.UUID, Title: a.Title, Severity: a.Severity, Status: a.Status,
			Malice: a.EffectiveMalice, Source: a.SourceName,
			Occurred: a.OccurredAt.UTC().Format("2006-01-02 15:04"), Enrichment: a.EnrichmentStatus, Tags: a.Tags,
			Assignee: deref(a.Assignee), Age: ago(now, a.CreatedAt), Changed: ago(now, a.UpdatedAt),
			Created: a.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), Updated: a.UpdatedAt.UTC().Format("2006-01-02 15:04:05 UTC")}
	}
	pages := int(math.Ceil(float64(total) / queuePageSize))
	headers := map[string]sortHeader{}
	for _, field := range queueSortKeys() {
		h := sortHeader{Label: strings.ReplaceAll(field, "_", " ")}
		order := "asc"
		if field == "occurred_at" || field == "created_at" || field == "severity" {
			order = "desc" // newest, worst first
		}
		if field == q.Sort {
			h.Mark = map[string]string{"asc": "▲", "desc": "▼"}[q.Order]
			h.ARIA = map[string]string{"asc": "ascending", "desc": "descending"}[q.Order]
			order = map[string]string{"asc": "desc", "desc": "asc"}[q.Order]
		}
		h.Link = q.link(1, field, order)
		headers[field] = h
	}
	base := c.base(ctx, "Alerts", "")
	if len(out) > 0 {
		base.SkipTo, base.SkipLabel = "#first-alert", "Skip to the first alert"
	}
	data := struct {
		page
		Q                                           queueQuery
		Statuses, Severities, Enrichments, SortKeys []string
		MaliceLevels, Classifications               []string
		Rows                                        []queueRow
		Total, Pages, RefreshMS                     int
		Prev, Next, Self, Mine, TextLink            string
		Sort                                        map[string]sortHeader
	}{page: base, Q: q, Statuses: store.AlertStatuses(), Severities: severity.Names(),
		Enrichments: store.EnrichmentStatuses(), SortKeys: queueSortKeys(), Rows: out, Total: total, Pages: pages,
		MaliceLevels: indicators.MaliceNames(), Classifications: store.CloseClassifications(),
		RefreshMS: int(c.deps.LiveRefresh.Milliseconds()),
		Self:      q.link(q.Page, q.Sort, q.Order), Sort: headers, Mine: myAlertsLink(base.KeyName)}
	if q.Pivoted {
		tq := q
		tq.Pivoted, tq.TextOnly, tq.Indicator, tq.IndicatorType = false, true, "", ""
		data.TextLink = tq.link(1, q.Sort, q.Order)
	}
	if q.Page > 1 {
		data.Prev = q.link(q.Page-1, q.Sort, q.Order)
	}
	if q.Page < pages {
		data.Next = q.link(q.Page+1, q.Sort, q.Order)
	}
	if ctx.Query("partial") == "rows" {
		ctx.Set("X-Vigil-Total", strconv.Itoa(total))
		return c.renderBlock(ctx, "queue", "rows", data)
	}
	return c.render(ctx, http.StatusOK, "queue", data)
}

// myAlertsLink is the one-click "My alerts" view: the queue filtered on the signed-in key's name,
// the handle "Assign to me" writes ("" when that name cannot be an assignee).
func myAlertsLink(name string) string {
	if len(alerts.ValidateAssignee("assignee", name)) > 0 || strings.TrimSpace(name) == "" {
		return ""
	}
	return "/console/?" + url.Values{"assignee": {strings.TrimSpace(name)}}.Encode()
}
