package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// Alert is one alert (SEED-SPEC §2.1). Malice is not stored: it is computed at read time from the
// override and the linked indicators.
type Alert struct {
	bun.BaseModel `bun:"table:alerts"`

	UUID                 uuid.UUID        `bun:"uuid,pk,type:uuid"`
	Title                string           `bun:"title"`
	Severity             string           `bun:"severity"`
	Status               string           `bun:"status"`
	EnrichmentStatus     string           `bun:"enrichment_status"`
	SourceName           string           `bun:"source_name"`
	OccurredAt           time.Time        `bun:"occurred_at"`
	IngestedAt           time.Time        `bun:"ingested_at"`
	EnrichedAt           *time.Time       `bun:"enriched_at"`
	IsEnriched           bool             `bun:"is_enriched"`
	Fingerprint          *string          `bun:"fingerprint"`
	CloseClassification  *string          `bun:"close_classification"`
	AcknowledgedAt       *time.Time       `bun:"acknowledged_at"`
	TriagedAt            *time.Time       `bun:"triaged_at"`
	ClosedAt             *time.Time       `bun:"closed_at"`
	Tags                 []string         `bun:"tags,array"`
	DetectionRuleID      *int64           `bun:"detection_rule_id"`
	Description          *string          `bun:"description"`
	DuplicateCount       int              `bun:"duplicate_count"`
	LastSeenAt           *time.Time       `bun:"last_seen_at"`
	RawPayload           map[string]any   `bun:"raw_payload,type:jsonb"`
	Normalized           NormalizedRecord `bun:"normalized,type:jsonb"`
	MaliceOverride       *string          `bun:"malice_override"`
	MaliceOverrideSource *string          `bun:"malice_override_source"`
	MaliceOverrideAt     *time.Time       `bun:"malice_override_at"`
	// EffectiveMalice is the alert's malice (API.md §3): the override, else the worst malice of its
	// linked indicators, else Pending. Postgres computes it (the stored generated column
	// effective_malice over malice_override and indicator_malice, migration 20261126080000): it is
	// read with the alert, never written (skipupdate; alerts are inserted by SQL naming their
	// columns), and every door answers it as read; indicators.AlertMalice is the same rule in Go,
	// held to the column by TestMaliceFilterAgreesWithAlertMalice.
	EffectiveMalice string `bun:"effective_malice,skipupdate"`
	// Assignee is the handle of the person who owns the alert (nil: unassigned) and AssignedAt when
	// it was set (API.md §13).
	Assignee   *string    `bun:"assignee"`
	AssignedAt *time.Time `bun:"assigned_at"`
	// CaseUUID is the case the alert belongs to (API.md §14), at most one; written only by
	// joinCase, the pipeline's finish (grouping), RemoveAlertFromCase and the case's deletion.
	CaseUUID *uuid.UUID `bun:"case_uuid,type:uuid"`
	// InputSanitized: hostile characters of the payload were replaced at ingest; OriginalBody holds
	// the payload as received (nil otherwise).
	InputSanitized bool      `bun:"input_sanitized"`
	OriginalBody   []byte    `bun:"original_body"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
}

// NormalizedRecord is what the source plugin made of an alert's payload, kept in alerts.normalized
// so the pipeline never re-parses the raw payload for it.
type NormalizedRecord struct {
	Fields         map[string]any  `json:"fields"`             // normalized fields read by pass-2 mappings
	RuleRef        *RuleReference  `json:"rule_ref,omitempty"` // nil: the payload names no rule
	Indicators     []IndicatorPair `json:"indicators"`         // pass-1 candidates, not yet normalized
	SourceSeverity string          `json:"source_severity,omitempty"`
	// SeverityUnmapped: SourceSeverity is a value no severity mapping knows (the alert is Pending
	// for that reason, not because the source gave none).
	SeverityUnmapped bool `json:"severity_unmapped,omitempty"`
	// NormalizationNotes lists the fallbacks the source plugin used and the payload fields it ignored
	// (API.md §2), and the pipeline's own notes (e.g. the indicator cap), appended in that order.
	NormalizationNotes []Note `json:"normalization_notes,omitempty"`
}

// Note is one normalization note: the alert field or payload path, and what happened to it.
type Note struct {
	Field string `json:"field"`
	Note  string `json:"note"`
}

// RuleReference names the source system's detection rule.
type RuleReference struct {
	SourceRuleID string `json:"source_rule_id"`
	Name         string `json:"name,omitempty"`
}

// IndicatorPair is an indicator candidate by type and value.
type IndicatorPair struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// AlertStatuses returns every alert status in the order the API documents them (the API's enum and
// the metrics' zero-filled counts read this list).
func AlertStatuses() []string {
	return []string{StatusOpen, StatusTriaging, StatusEscalated, StatusClosed}
}

// EnrichmentStatuses returns every alert enrichment_status.
func EnrichmentStatuses() []string {
	return []string{EnrichmentPending, EnrichmentEnriched, EnrichmentFailed}
}

// CloseClassifications returns every close_classification value (seed §2.10).
func CloseClassifications() []string {
	return []string{
		"True Positive - Suspicious Activity",
		"Benign Positive - Suspicious but Expected",
		"False Positive - Incorrect Detection Logic",
		"False Positive - Inaccurate Data",
		"Undetermined",
		"Duplicate",
		"Not Applicable",
	}
}

// Alert statuses, enrichment statuses and outbox kinds.
const (
	StatusOpen      = "Open"
	StatusTriaging  = "Triaging"
	StatusEscalated = "Escalated"
	StatusClosed    = "Closed"

	EnrichmentPending  = "Pending"
	EnrichmentEnriched = "Enriched"
	EnrichmentFailed   = "Failed"

	// OutboxPipeline starts an alert's first pipeline run: a finished run is never started again.
	OutboxPipeline = "pipeline"
	// OutboxRerun re-runs the pipeline of an alert whose previous run finished (POST .../enrich).
	OutboxRerun = "rerun"
)

// OutboxChannel is the LISTEN/NOTIFY channel an ingest notifies after committing an outbox row.
const OutboxChannel = "vigil_alert_outbox"

// FreedChannel is the LISTEN/NOTIFY channel a finished pipeline notifies: a place in flight is free.
// A channel of its own, so the dispatcher does not count finishes as alerts arriving (its pacing
// would take a draining backlog for a busy API and pause it).
const FreedChannel = "vigil_alert_outbox_freed"

// GetAlert loads one alert with its raw payload.
func (s *Store) GetAlert(ctx context.Context, id uuid.UUID) (Alert, error) {
	var a Alert
	if err := s.db.NewSelect().Model(&a).Where("uuid = ?", id).Scan(ctx); err != nil {
		return Alert{}, fmt.Errorf("get alert %s: %w", id, mapErr(err))
	}
	return a, nil
}

// GetAlerts loads the alerts ids with their raw payloads in one statement, by uuid; an alert that is
// gone is absent.
func (s *Store) GetAlerts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]Alert, error) {
	out := make(map[uuid.UUID]Alert, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var as []Alert
	if err := s.db.NewSelect().Model(&as).Where("uuid IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get %d alerts: %w", len(ids), mapErr(err))
	}
	for _, a := range as {
		out[a.UUID] = a
	}
	return out, nil
}

// AlertExists reports whether the alert exists (ErrNotFound otherwise).
func (s *Store) AlertExists(ctx context.Context, id uuid.UUID) error {
	ok, err := s.db.NewSelect().Model((*Alert)(nil)).Where("uuid = ?", id).Exists(ctx)
	if err != nil {
		return fmt.Errorf("alert %s exists: %w", id, mapErr(err))
	}
	if !ok {
		return fmt.Errorf("alert %s: %w", id, ErrNotFound)
	}
	return nil
}

// AlertFilter narrows ListAlerts. Empty lists and nil pointers do not filter.
type AlertFilter struct {
	Statuses           []string
	Severities         []string
	SourceNames        []string
	EnrichmentStatuses []string
	IsEnriched         *bool
	DetectionRuleUUID  *uuid.UUID
	From, To           *time.Time // occurred_at bounds, inclusive
	Tags               []string   // the alert has all of them
	Query              string     // case-insensitive substring of the title or the description
	// Assignees: any of these handles; Unassigned adds the alerts without one (API.md §13 "none").
	Assignees  []string
	Unassigned bool
	// Indicators: the alert is linked to any of these (type, normalized value) pairs. IndicatorFilter
	// set with no pair matches nothing (a value no type accepts).
	Indicators      []IndicatorKey
	IndicatorFilter bool
	// Malices: the effective malice (override, else the worst linked indicator's) is any of these.
	Malices              []string
	CloseClassifications []string
	// CaseUUID: the alerts of this case (API.md §13 case_uuid).
	CaseUUID *uuid.UUID
	SortBy   string // title, status, severity, source_name, occurred_at, created_at, or AlertSortTriage
	SortDesc bool
	Page     Page
}

// alertSortColumns maps the API's sort_by values to SQL. Severity sorts by rank, not by name.
var alertSortColumns = map[string]string{
	"title":       "lower(title)",
	"status":      "array_position(ARRAY['Open','Triaging','Escalated','Closed'], status)",
	"severity":    "array_position(ARRAY['Pending','Informational','Low','Medium','High','Critical'], severity)",
	"source_name": "source_name",
	"occurred_at": "occurred_at",
	"created_at":  "created_at",
}

// AlertSortTriage is the console's triage-first order (docs/CONSOLE.md): open alerts (status other
// than Closed) first, unassigned first, severity worst first, oldest (created_at) first. Ascending is
// that order, descending its reverse. It is not one of AlertSortFields (the REST and MCP contract's
// sort_by values); the index alerts_triage_idx (migration 20261127060000) serves it.
const AlertSortTriage = "triage"

// triageOrder is AlertSortTriage's ORDER BY, column by column, in its ascending sense; each
// expression is alerts_triage_idx's, so page 1 is an index walk.
var triageOrder = []struct {
	expr string
	desc bool
}{
	{"(status = 'Closed')", false},
	{"(assignee_key <> '')", false},
	{alertSortColumns["severity"], true},
	{"created_at", false},
	{"uuid", false},
}

// AlertSortFields lists the accepted AlertFilter.SortBy values.
func AlertSortFields() []string {
	return []string{"title", "status", "severity", "source_name", "occurred_at", "created_at"}
}

// ListAlerts returns one page of alert summaries (no raw payload, no normalized output) and the total.
// The page and the exact total are read at the same time, each bounded (boundedRead).
func (s *Store) ListAlerts(ctx context.Context, f AlertFilter) ([]Alert, int, error) {
	var out []Alert
	var total int
	if f.Query != "" {
		// A search whose matches are few (most are) is answered whole by one scan of them.
		found := false
		err := s.boundedRead(ctx, func(ctx context.Context, db bun.IDB) error {
			page, n, ok, err := alertSearchFew(ctx, db, f, s.searchCap)
			if err != nil {
				return fmt.Errorf("search alerts: %w", mapErr(err))
			}
			out, total, found = page, n, ok
			return nil
		})
		if err != nil || found {
			return out, total, err
		}
	}
	err := s.boundedRead(ctx, func(ctx context.Context, db bun.IDB) error {
		page, err := alertListPage(ctx, db, f)
		if err != nil {
			return fmt.Errorf("list alerts: %w", mapErr(err))
		}
		out = page
		return nil
	}, func(ctx context.Context, db bun.IDB) error {
		var none []Alert
		n, err := alertListQuery(db, f, &none).Count(ctx)
		if err != nil {
			return fmt.Errorf("count alerts: %w", mapErr(err))
		}
		total = int(n)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// searchMatchCap is how many matches of a `q` search alertSearchFew reads at most. Past it (by the
// planner's estimate, or found) the walk of queryWindow alerts finds the page (at 100 000 alerts,
// 10 000 matches spread over them put 200 in the window) and the exact count costs what reading
// every match would; below it reading every match once saves the walk, the index route and a second
// scan for the count. The planner's estimate of a substring's matches is coarse (1 020 to 3 040 for
// the same 2 002 matches, from one ANALYZE to the next), so the cap stands well above the shapes it
// is for: a console search in triage order that the walk answers badly (docs/PERFORMANCE.md).
const searchMatchCap int64 = 10000

// queryWindow is how many alerts, in the list's order and under its other filters, a `q` search
// reads before it falls back to finding every match first (alertListPage); at least this many, and
// queryWindowPerRow per row up to the page's end.
const (
	queryWindow       int64 = 2000
	queryWindowPerRow int64 = 40
)

// searchKeys are a `q` search's building blocks over the list's order: keyed selects uuid and the
// order's keys (k0, k1, …) of its candidates; pageOf picks the page's uuids (as column) from a
// relation of them in the list's order; read reads the alerts of those uuids in that order.
type searchKeys struct {
	db    bun.IDB
	f     AlertFilter
	order []orderTerm
}

func (k searchKeys) keyed(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Column("uuid")
	for i, t := range k.order {
		q = q.ColumnExpr(t.expr + " AS k" + strconv.Itoa(i))
	}
	return q
}

func (k searchKeys) pageOf(column, from string, args ...any) *bun.SelectQuery {
	q := k.db.NewSelect().TableExpr(from, args...).ColumnExpr(column)
	for i, t := range k.order {
		q = q.OrderExpr("k" + strconv.Itoa(i) + t.dir)
	}
	return q.Limit(k.f.Page.Limit()).Offset(k.f.Page.Offset())
}

func (k searchKeys) read(ctx context.Context, ids any) ([]Alert, error) {
	var page []Alert
	err := alertListQuery(k.db, k.f, &page).Where("alert.uuid IN (?)", ids).Limit(k.f.Page.Limit()).Scan(ctx)
	return page, err
}

// alertSearchFew answers a `q` search whose matches (under f's other filters) number at most limit:
// one scan through the trigram indexes reads at most limit+1 of them, and from those the exact total
// and the page's uuids; then the page's alerts. ok is false, and nothing else is set, when there are
// more: then the total costs a count of every match and the page a walk of the order, which
// alertListPage and ListAlerts' count do. `q=seeded alert 99` (1 111 of 100 000 alerts) cost a walk of
// 2 000 alerts, then every match through the indexes, beside a count of them: three scans, p99 51 ms
// on a quiet machine; this is one, p99 27 ms (docs/PERFORMANCE.md). The scan is tried only when
// Postgres's estimate of the matches (its planner's, from the column statistics: 1 020 for those
// 1 111, 10 110 for 11 111) is within limit, so a common search does not pay for it.
func alertSearchFew(ctx context.Context, db bun.IDB, f AlertFilter, limit int64) (page []Alert, total int, ok bool, err error) {
	k := searchKeys{db: db, f: f, order: alertOrder(f)}
	matches := alertConditions(k.keyed(db.NewSelect().TableExpr("alerts")), f)
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var raw []byte
	if err := db.NewRaw("EXPLAIN (FORMAT JSON) ?", matches).Scan(ctx, &raw); err != nil {
		return nil, 0, false, fmt.Errorf("estimate matches: %w", err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		return nil, 0, false, fmt.Errorf("estimate matches: unexpected plan %.200q: %v", raw, err)
	}
	if plan[0].Plan.Rows > float64(limit) {
		return nil, 0, false, nil
	}
	var n int64
	var ids []string
	err = db.NewSelect().WithQuery(bun.NewWithQuery("matches", matches.Limit(limit+1)).Materialized()).
		ColumnExpr("(SELECT count(*) FROM matches)").
		ColumnExpr("ARRAY(?)", k.pageOf("uuid::text", "matches")).
		Scan(ctx, &n, pgdialectArray(&ids))
	if err != nil || n > limit {
		return nil, 0, false, err
	}
	if len(ids) > 0 {
		if page, err = k.read(ctx, bun.List(ids)); err != nil {
			return nil, 0, false, err
		}
	}
	return page, int(n), true, nil
}

// alertListPage reads one page of ListAlerts. Without `q` it is alertListQuery with the page's limit
// and offset: every other filter has an index in the list's order. With `q` (a search alertSearchFew
// found too common to read whole), Postgres has two plans and cannot tell which is cheap: walk the
// order checking each alert's text (cheap when the matches are spread through the order, thousands of
// rows when they are not), or find every match through the trigram indexes and sort them. Its estimate
// of a substring's frequency cannot tell them apart, so the page asks both in turn: the first
// queryWindow alerts in the list's order (a walk that can stop), and only when they hold fewer matches
// than the page needs, every match through the indexes, then the page's uuids, then those alerts. Both
// answers are the same rows in the same order.
func alertListPage(ctx context.Context, db bun.IDB, f AlertFilter) ([]Alert, error) {
	limit, offset := f.Page.Limit(), f.Page.Offset()
	var out []Alert
	if f.Query == "" {
		err := alertListQuery(db, f, &out).Limit(limit).Offset(offset).Scan(ctx)
		return out, err
	}
	k := searchKeys{db: db, f: f, order: alertOrder(f)}
	rest := f
	rest.Query = ""
	window := max(queryWindow, queryWindowPerRow*(offset+limit))
	walk := orderAlerts(alertConditions(k.keyed(db.NewSelect().TableExpr("alerts").Column("title", "description")), rest), rest).Limit(window)
	// A subquery, not a CTE: its order is the page's, so the scan stops at the page's last match.
	page, err := k.read(ctx, matchQuery(k.pageOf("uuid", "(?) AS walk", walk), f.Query))
	if err != nil || int64(len(page)) == limit {
		return page, err
	}
	// Fewer than a page in the window: every match through the indexes, then sorted (materialized:
	// never a walk of the order).
	matches := alertConditions(k.keyed(db.NewSelect().TableExpr("alerts")), f)
	return k.read(ctx, k.pageOf("uuid", "matches").WithQuery(bun.NewWithQuery("matches", matches).Materialized()))
}

// alertListQuery is ListAlerts' statement over f: its conditions and its order, no page.
func alertListQuery(db bun.IDB, f AlertFilter, out *[]Alert) *bun.SelectQuery {
	q := db.NewSelect().Model(out).ExcludeColumn("raw_payload", "normalized", "original_body")
	return orderAlerts(alertConditions(q, f), f)
}

// orderTerm is one term of the list's ORDER BY: an expression and " ASC" or " DESC".
type orderTerm struct{ expr, dir string }

// alertOrder is the list's ORDER BY, term by term; the last term is uuid, so the order is total.
func alertOrder(f AlertFilter) []orderTerm {
	if f.SortBy == AlertSortTriage {
		terms := make([]orderTerm, 0, len(triageOrder))
		for _, o := range triageOrder {
			dir := " ASC"
			if o.desc != f.SortDesc {
				dir = " DESC"
			}
			terms = append(terms, orderTerm{o.expr, dir})
		}
		return terms
	}
	col, ok := alertSortColumns[f.SortBy]
	if !ok {
		col = "occurred_at"
	}
	dir := " ASC"
	if f.SortDesc {
		dir = " DESC"
	}
	return []orderTerm{{col, dir}, {"uuid", dir}}
}

func orderAlerts(q *bun.SelectQuery, f AlertFilter) *bun.SelectQuery {
	for _, t := range alertOrder(f) {
		q = q.OrderExpr(t.expr + t.dir)
	}
	return q
}

// matchQuery narrows q to alerts whose title or description contains text, case-insensitively.
func matchQuery(q *bun.SelectQuery, text string) *bun.SelectQuery {
	pat := "%" + escapeLike(strings.ToLower(text)) + "%"
	return q.Where("(lower(title) LIKE ? ESCAPE '\\' OR lower(description) LIKE ? ESCAPE '\\')", pat, pat)
}

// alertConditions adds f's filters (not its order or page) to q, in bare column names.
func alertConditions(q *bun.SelectQuery, f AlertFilter) *bun.SelectQuery {
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if len(f.Severities) > 0 {
		q = q.Where("severity IN (?)", bun.List(f.Severities))
	}
	if len(f.SourceNames) > 0 {
		q = q.Where("source_name IN (?)", bun.List(f.SourceNames))
	}
	if len(f.EnrichmentStatuses) > 0 {
		q = q.Where("enrichment_status IN (?)", bun.List(f.EnrichmentStatuses))
	}
	if f.IsEnriched != nil {
		q = q.Where("is_enriched = ?", *f.IsEnriched)
	}
	if f.DetectionRuleUUID != nil {
		q = q.Where("detection_rule_id = (SELECT id FROM detection_rules WHERE uuid = ?)", *f.DetectionRuleUUID)
	}
	if f.From != nil {
		q = q.Where("occurred_at >= ?", *f.From)
	}
	if f.To != nil {
		q = q.Where("occurred_at <= ?", *f.To)
	}
	if len(f.Tags) > 0 {
		q = q.Where("tags @> ?", pgdialectArray(f.Tags))
	}
	if f.Query != "" {
		q = matchQuery(q, f.Query)
	}
	if len(f.Assignees) > 0 || f.Unassigned {
		// assignee_key is coalesce(assignee, ''): one IN over a plain column, so the count is an
		// index-only scan (migration 20261126080000); '' stands for "unassigned" only.
		keys := make([]string, 0, len(f.Assignees)+1)
		for _, a := range f.Assignees {
			if a != "" {
				keys = append(keys, a)
			}
		}
		if f.Unassigned {
			keys = append(keys, "")
		}
		if len(keys) == 0 {
			q = q.Where("false")
		} else {
			q = q.Where("assignee_key IN (?)", bun.List(keys))
		}
	}
	if len(f.CloseClassifications) > 0 {
		q = q.Where("close_classification IN (?)", bun.List(f.CloseClassifications))
	}
	if f.CaseUUID != nil {
		q = q.Where("case_uuid = ?", *f.CaseUUID)
	}
	if f.IndicatorFilter {
		if len(f.Indicators) == 0 {
			q = q.Where("false")
		} else {
			types, values := make([]string, len(f.Indicators)), make([]string, len(f.Indicators))
			for i, k := range f.Indicators {
				types[i], values[i] = k.Type, k.Value
			}
			q = q.Where(`uuid IN (SELECT ai.alert_uuid FROM alert_indicators AS ai
				WHERE ai.indicator_uuid IN (SELECT i.uuid FROM indicators AS i
					JOIN unnest(?::text[], ?::text[]) AS k (type, value) ON i.type = k.type AND i.value = k.value))`,
				pgdialectArray(types), pgdialectArray(values))
		}
	}
	if len(f.Malices) > 0 {
		q = q.Where(maliceFilter(f.Malices))
	}
	return q
}

// maliceFilter is the SQL condition "the alert's effective malice is one of levels" (API.md §3: the
// override, else the worst malice of the linked indicators, else Pending; indicators.AlertMalice is
// the rule, and TestMaliceFilterAgreesWithAlertMalice holds this condition to it). The worst linked
// malice is kept on the alert (indicator_malice, refreshIndicatorMalice) and the effective malice is
// a stored generated column over it and the override (effective_malice, migration 20261126080000),
// so the condition is one IN over an indexed column and its count an index-only scan.
func maliceFilter(levels []string) string {
	var names []string
	for _, name := range levels {
		if l, err := indicators.ParseMalice(name); err == nil { // the doors validate; an unknown level matches nothing
			names = append(names, "'"+string(l)+"'")
		}
	}
	if len(names) == 0 {
		return "false"
	}
	return "effective_malice IN (" + strings.Join(names, ", ") + ")"
}

// refreshIndicatorMalice recomputes indicator_malice (the worst Benign < Suspicious < Malicious of
// the linked indicators, NULL when none) of the alerts linked to any of the indicators, in tx, the
// transaction that changed their links or malice. The alerts are locked in uuid order first, so two
// transactions refreshing overlapping alerts cannot deadlock; only alerts whose value changes are
// written.
func refreshIndicatorMalice(ctx context.Context, tx bun.IDB, indicatorIDs []uuid.UUID) error {
	if len(indicatorIDs) == 0 {
		return nil
	}
	_, err := tx.NewRaw(`WITH locked AS (
			SELECT uuid FROM alerts WHERE uuid IN (SELECT alert_uuid FROM alert_indicators WHERE indicator_uuid = ANY(?::uuid[]))
			ORDER BY uuid FOR NO KEY UPDATE
		), worst AS (
			SELECT l.uuid, (SELECT (ARRAY['Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Benign', 'Suspicious', 'Malicious'], i.malice))]
				FROM alert_indicators AS ai JOIN indicators AS i ON i.uuid = ai.indicator_uuid
				WHERE ai.alert_uuid = l.uuid) AS worst
			FROM locked AS l
		)
		UPDATE alerts AS a SET indicator_malice = w.worst FROM worst AS w
		WHERE a.uuid = w.uuid AND a.indicator_malice IS DISTINCT FROM w.worst`, pgdialectArray(indicatorIDs)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("refresh indicator malice of the alerts of %d indicators: %w", len(indicatorIDs), mapErr(err))
	}
	return nil
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// AlertChange is what a PatchAlert callback decides: the columns to write, the activity events to
// record and, when the change is one agents hear of, the facts of the alert.updated event to raise.
type AlertChange struct {
	Columns []string
	Events  []ActivityEvent
	Updated map[string]any
}

// PatchAlert loads the alert under a row lock, lets decide compute the change on it, and writes the
// columns and events in the same transaction. decide's error aborts the patch unchanged.
func (s *Store) PatchAlert(ctx context.Context, id uuid.UUID, decide func(a *Alert, now time.Time) (AlertChange, error)) (Alert, error) {
	var a Alert
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(&a).Where("uuid = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock alert %s: %w", id, mapErr(err))
		}
		now := s.Now()
		ch, err := decide(&a, now)
		if err != nil {
			return err
		}
		if len(ch.Columns) > 0 {
			a.UpdatedAt = now
			// effective_malice is returned: Postgres recomputes it when the override changes.
			if _, err := tx.NewUpdate().Model(&a).Column(append(ch.Columns, "updated_at")...).WherePK().
				Returning("effective_malice").Exec(ctx); err != nil {
				return fmt.Errorf("update alert %s: %w", id, mapErr(err))
			}
		}
		// The events in one statement (a bulk change runs this per alert).
		if len(ch.Events) > 0 {
			events := make([]ActivityEvent, len(ch.Events))
			for i, e := range ch.Events {
				e.UUID, e.AlertUUID, e.CreatedAt = uuid.New(), &a.UUID, now
				if e.References == nil {
					e.References = map[string]any{}
				}
				events[i] = e
			}
			if _, err := tx.NewInsert().Model(&events).Exec(ctx); err != nil {
				return fmt.Errorf("record %d activity events of alert %s: %w", len(events), id, mapErr(err))
			}
		}
		if ch.Updated != nil {
			if _, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventAlertUpdated, AlertUUID: &a.UUID}, ch.Updated); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Alert{}, err
	}
	return a, nil
}

// DeleteAlert removes the alert, its links, findings, fingerprint and pending outbox rows, recording
// the deletion in the audit trail by actor in the same transaction (action deleted, the alert's title
// and source): its activity goes with it, so the trail is all that is left of it (security review
// round 4, R4-10).
func (s *Store) DeleteAlert(ctx context.Context, id uuid.UUID, actor Actor) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var gone []struct {
			Title      string `bun:"title"`
			SourceName string `bun:"source_name"`
			Status     string `bun:"status"`
		}
		err := tx.NewDelete().Model((*Alert)(nil)).Where("uuid = ?", id).Returning("title, source_name, status").Scan(ctx, &gone)
		if err != nil {
			return fmt.Errorf("delete alert %s: %w", id, mapErr(err))
		}
		if len(gone) == 0 {
			return fmt.Errorf("delete alert %s: %w", id, ErrNotFound)
		}
		e := actor.AuditEvent(AuditDeleted, "alert", &id, gone[0].Title, map[string]AuditChange{
			"source_name": {From: gone[0].SourceName}, "status": {From: gone[0].Status}})
		if err := s.AppendAuditEvent(ctx, tx, e); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Table("alert_outbox").Where("alert_uuid = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("delete outbox rows of alert %s: %w", id, mapErr(err))
		}
		return nil
	})
}

// AlertIndicators returns the indicators linked to an alert, ordered by type and value.
func (s *Store) AlertIndicators(ctx context.Context, alertID uuid.UUID) ([]Indicator, error) {
	byAlert, err := s.alertsIndicators(ctx, []uuid.UUID{alertID})
	if err != nil {
		return nil, err
	}
	return append([]Indicator{}, byAlert[alertID]...), nil
}

// alertsIndicators returns the indicators linked to each alert of ids (AlertIndicators), in one
// statement; an alert without indicators is absent.
func (s *Store) alertsIndicators(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]Indicator, error) {
	var rows []struct {
		Indicator   `bun:",extend"`
		AlertUUID   uuid.UUID           `bun:"alert_uuid,scanonly"`
		ExtractedBy []indicators.Origin `bun:"extracted_by,scanonly,type:jsonb"`
	}
	err := s.db.NewSelect().Model(&rows).ColumnExpr("indicator.*, ai.alert_uuid, ai.extracted_by").
		Join("JOIN alert_indicators AS ai ON ai.indicator_uuid = indicator.uuid").
		Where("ai.alert_uuid IN (?)", bun.List(ids)).OrderExpr("indicator.type, indicator.value").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("indicators of %d alerts: %w", len(ids), mapErr(err))
	}
	out := make(map[uuid.UUID][]Indicator, len(ids))
	for _, r := range rows {
		r.Indicator.ExtractedBy = r.ExtractedBy
		out[r.AlertUUID] = append(out[r.AlertUUID], r.Indicator)
	}
	return out, nil
}

// AlertVerdictInputs returns what the alert's effective malice is computed from, in one query: its
// analyst override (nil when none) and the malice of each linked indicator. ErrNotFound when the
// alert does not exist.
func (s *Store) AlertVerdictInputs(ctx context.Context, alertID uuid.UUID) (*string, []string, error) {
	var row struct {
		Override *string  `bun:"malice_override"`
		Malices  []string `bun:"malices,array"`
	}
	err := s.db.NewRaw(`SELECT a.malice_override,
			coalesce((SELECT array_agg(i.malice ORDER BY i.type, i.value) FROM alert_indicators AS ai
				JOIN indicators AS i ON i.uuid = ai.indicator_uuid WHERE ai.alert_uuid = a.uuid), '{}') AS malices
		FROM alerts AS a WHERE a.uuid = ?`, alertID).Scan(ctx, &row)
	if err != nil {
		return nil, nil, fmt.Errorf("verdict inputs of alert %s: %w", alertID, mapErr(err))
	}
	return row.Override, row.Malices, nil
}

// LinkIndicators upserts keys globally and links them to the alert, in one transaction, returning
// the indicators in input order and how many links are new. Idempotent. ErrNotFound when the alert
// does not exist.
func (s *Store) LinkIndicators(ctx context.Context, alertID uuid.UUID, keys []IndicatorKey, source string) ([]Indicator, int, error) {
	l, err := s.LinkExtraction(ctx, alertID, ExtractionLinks{Keys: keys}, source, "", nil)
	return l.Indicators, l.NewLinks, err
}

// Linked is what LinkExtraction committed.
type Linked struct {
	Indicators []Indicator // in input order
	NewLinks   int
	RuleUUID   uuid.UUID // uuid.Nil without a rule reference
}

// ExtractionLinks is what the pipeline links to an alert: the indicators, where extraction found
// each (parallel to Keys; nil or a nil element stores NULL) and notes for the alert.
type ExtractionLinks struct {
	Keys        []IndicatorKey
	ExtractedBy [][]indicators.Origin
	// Notes are appended to the alert's normalized.normalization_notes, each once: a note already
	// there (the same field and text) is not added again (a retry or a re-run adds nothing).
	Notes []Note
}

// LinkExtraction is the pipeline's link step in one transaction (one commit): the indicators as in
// LinkIndicators (a new link records its extracted_by; an existing link is not rewritten), the notes
// and, when rule is set, the alert's detection rule, found by (sourceName, rule.SourceRuleID) or
// created as a stub named rule.Name. Idempotent; concurrent calls create one stub (the unique index
// on the source reference). ErrNotFound when the alert does not exist.
func (s *Store) LinkExtraction(ctx context.Context, alertID uuid.UUID, links ExtractionLinks, source, sourceName string, rule *RuleReference) (Linked, error) {
	var l Linked
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if l.Indicators, l.NewLinks, err = s.lockAndLinkIndicators(ctx, tx, alertID, links.Keys, source, links.ExtractedBy); err != nil {
			return err
		}
		if err := addNormalizationNotes(ctx, tx, alertID, links.Notes); err != nil {
			return err
		}
		if rule == nil || rule.SourceRuleID == "" {
			return nil
		}
		l.RuleUUID, err = s.associateRule(ctx, tx, alertID, sourceName, *rule)
		return err
	})
	if err != nil {
		return Linked{}, err
	}
	return l, nil
}

// lockAndLinkIndicators takes a share lock on the alert, which keeps it from being deleted under the
// links (the FK would catch it, as a less readable error), and links keys (linkIndicators).
// ErrNotFound when the alert does not exist. FOR SHARE rather than KEY SHARE: it also waits for, and
// holds off, a change of the alert's case (joinCase locks the alert FOR NO KEY UPDATE, the finish
// FOR UPDATE), so the new links take the case the alert is in when they commit
// (alert_indicators.case_uuid, the grouping lookup's copy: migration 20261127020000).
func (s *Store) lockAndLinkIndicators(ctx context.Context, tx bun.Tx, alertID uuid.UUID, keys []IndicatorKey, source string, origins [][]indicators.Origin) ([]Indicator, int, error) {
	var one int
	if err := tx.NewSelect().Model((*Alert)(nil)).ColumnExpr("1").Where("uuid = ?", alertID).For("SHARE").Scan(ctx, &one); err != nil {
		return nil, 0, fmt.Errorf("alert %s: %w", alertID, mapErr(err))
	}
	return s.linkIndicators(ctx, tx, alertID, keys, source, origins)
}

func (s *Store) linkIndicators(ctx context.Context, tx bun.Tx, alertID uuid.UUID, keys []IndicatorKey, source string, origins [][]indicators.Origin) ([]Indicator, int, error) {
	inds, err := s.UpsertIndicators(ctx, tx, keys)
	if err != nil || len(inds) == 0 {
		return inds, 0, err
	}
	ids := make([]uuid.UUID, len(inds))
	by := make([]string, len(inds)) // "" stores NULL
	for i, ind := range inds {
		ids[i] = ind.UUID
		if i < len(origins) && len(origins[i]) > 0 {
			b, err := json.Marshal(origins[i])
			if err != nil {
				return nil, 0, fmt.Errorf("encode extracted_by: %w", err)
			}
			by[i] = string(b)
		}
	}
	res, err := tx.NewRaw(`INSERT INTO alert_indicators (alert_uuid, indicator_uuid, source, extracted_by)
		SELECT ?, u, ?, NULLIF(e, '')::jsonb FROM unnest(?::uuid[], ?::text[]) AS t(u, e) ORDER BY u
		ON CONFLICT (alert_uuid, indicator_uuid) DO NOTHING`, alertID, source, pgdialectArray(ids), pgdialectArray(by)).Exec(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("link %d indicators to alert %s: %w", len(ids), alertID, mapErr(err))
	}
	n, _ := res.RowsAffected()
	if n > 0 && hasVerdict(inds) {
		// Only this alert gained links: refresh it alone (its other alerts' links did not change).
		if _, err := tx.NewRaw(`UPDATE alerts AS a SET indicator_malice = w.worst
			FROM (SELECT (ARRAY['Benign', 'Suspicious', 'Malicious'])[max(array_position(ARRAY['Benign', 'Suspicious', 'Malicious'], i.malice))] AS worst
				FROM alert_indicators AS ai JOIN indicators AS i ON i.uuid = ai.indicator_uuid WHERE ai.alert_uuid = ?0) AS w
			WHERE a.uuid = ?0 AND a.indicator_malice IS DISTINCT FROM w.worst`, alertID).Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("refresh indicator malice of alert %s: %w", alertID, mapErr(err))
		}
	}
	return inds, int(n), nil
}

// addNormalizationNotes appends notes to the alert's normalized.normalization_notes (created when
// absent), skipping a note already there (the same field and text): the plugin's notes on a field and
// the pipeline's on the same field stand side by side, and a retry or a re-run adds none twice.
func addNormalizationNotes(ctx context.Context, tx bun.Tx, alertID uuid.UUID, notes []Note) error {
	for _, n := range notes {
		note, err := json.Marshal([]Note{n})
		if err != nil {
			return fmt.Errorf("encode normalization note: %w", err)
		}
		_, err = tx.NewRaw(`UPDATE alerts SET normalized = jsonb_set(coalesce(normalized, '{}'), '{normalization_notes}',
				coalesce(normalized->'normalization_notes', '[]') || ?::jsonb)
			WHERE uuid = ? AND NOT coalesce(normalized->'normalization_notes', '[]') @> ?::jsonb`,
			string(note), alertID, string(note)).Exec(ctx)
		if err != nil {
			return fmt.Errorf("add normalization note to alert %s: %w", alertID, mapErr(err))
		}
	}
	return nil
}

// hasVerdict reports whether any of inds is above Pending (only then can a new link change an
// alert's worst indicator malice).
func hasVerdict(inds []Indicator) bool {
	for _, ind := range inds {
		if indicators.MaliceLevel(ind.Malice).Rank() > 0 {
			return true
		}
	}
	return false
}

// associateRule links the alert to its source rule, creating the stub when there is none. The rule
// is read first and inserted only when missing, so alerts of one rule neither write nor lock its row.
func (s *Store) associateRule(ctx context.Context, tx bun.Tx, alertID uuid.UUID, sourceName string, ref RuleReference) (uuid.UUID, error) {
	name := ref.Name
	if name == "" {
		name = ref.SourceRuleID
	}
	if len([]rune(name)) > 500 {
		name = string([]rune(name)[:500])
	}
	var rule struct {
		ID   int64     `bun:"id"`
		UUID uuid.UUID `bun:"uuid"`
		New  bool      `bun:"created"`
	}
	// A stub inserted concurrently is invisible to this statement's snapshot and makes the insert do
	// nothing: the next attempt (a new snapshot) finds it.
	for range 3 {
		err := tx.NewRaw(`WITH found AS (
				SELECT id, uuid FROM detection_rules WHERE source_name = ?0 AND source_rule_id = ?1
			), stub AS (
				INSERT INTO detection_rules (name, source_rule_id, source_name, is_stub, created_by)
				SELECT ?2, ?1, ?0, true, 'pipeline' WHERE NOT EXISTS (SELECT 1 FROM found)
				ON CONFLICT (source_name, source_rule_id) WHERE source_name IS NOT NULL AND source_rule_id IS NOT NULL
				DO NOTHING
				RETURNING id, uuid
			)
			SELECT id, uuid, false AS created FROM found UNION ALL SELECT id, uuid, true FROM stub`, sourceName, ref.SourceRuleID, name).Scan(ctx, &rule)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return uuid.Nil, fmt.Errorf("find or create rule %s/%s: %w", sourceName, ref.SourceRuleID, mapErr(err))
		}
		if rule.New { // a configuration row the pipeline made: in the audit trail like any other (R4-10)
			id := rule.UUID
			e := Actor{Type: ActorWorkflow}.AuditEvent(AuditCreated, "detection_rule", &id, name, map[string]AuditChange{
				"name": {To: name}, "source_rule_id": {To: ref.SourceRuleID}, "source_name": {To: sourceName},
				"is_stub": {To: true}, "created_by": {To: "pipeline"}})
			if err := s.AppendAuditEvent(ctx, tx, e); err != nil {
				return uuid.Nil, err
			}
		}
		_, err = tx.NewRaw(`UPDATE alerts SET detection_rule_id = ?, updated_at = now()
			WHERE uuid = ? AND detection_rule_id IS DISTINCT FROM ?`, rule.ID, alertID, rule.ID).Exec(ctx)
		if err != nil {
			return uuid.Nil, fmt.Errorf("associate rule %s/%s with alert %s: %w", sourceName, ref.SourceRuleID, alertID, mapErr(err))
		}
		return rule.UUID, nil
	}
	return uuid.Nil, fmt.Errorf("find or create rule %s/%s: %w", sourceName, ref.SourceRuleID, ErrConflict)
}

// FinishedEnrichment is what a pipeline's finish recorded: when the alert was ingested (its 202) and
// when its enrichment finished, whether this was the alert's first finish (not a re-run's, nor a
// retried finish's) and the case the finish grouped the alert into (uuid.Nil: none).
type FinishedEnrichment struct {
	IngestedAt  time.Time
	EnrichedAt  time.Time
	First       bool
	GroupedInto uuid.UUID
}

// FinishEnrichment sets the alert's enrichment status (Enriched or Failed), enriched_at and
// is_enriched, parks it for the providers that failed (circuits.go "Parking"), records event and raises
// alert.enriched once per runID (a retried activity records nothing twice) and deletes the alert's
// started outbox entries, in one transaction. With group (cases.Grouping.Decide: the rule is
// domain/cases') the same transaction asks it, with the alert's row locked, which case the alert
// joins, and records that join (grouping.go); a finish whose run is recorded already does not ask
// (a retried finish after its commit groups nothing twice), nor does one without group. It returns
// ErrNotFound when the alert is gone.
// FinishEvent builds a finish's activity event from the alert's verdict inputs (its malice override
// and its indicators' malices, ordered by type and value), read in the finish's transaction.
type FinishEvent func(override *string, malices []string) ActivityEvent

func (s *Store) FinishEnrichment(ctx context.Context, alertID uuid.UUID, status, runID string, failed []string, event FinishEvent, group GroupFunc) (FinishedEnrichment, error) {
	var freed int64
	var raised bool // alert.enriched recorded: the start outbox is woken after the commit
	var fin FinishedEnrichment
	if failed == nil {
		failed = []string{}
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := s.Now()
		fin = FinishedEnrichment{EnrichedAt: now}
		// One statement: the alert locked and parked for the providers that failed (circuits.go
		// "Parking": a provider that answered this time unparks it); both park parts read old, so they
		// run under the alert's row lock. The alert is marked finished later, in the statement that
		// frees its outbox entries, once the grouping lookup has told which case (if any) it joins:
		// one new version of the alert row either way (the alerts table has two dozen indexes, and a
		// second update would write every one of them again).
		err := tx.NewRaw(`WITH old AS (SELECT uuid, ingested_at, enriched_at FROM alerts WHERE uuid = ?1 FOR UPDATE),
			unparked AS (DELETE FROM enrichment_parked WHERE alert_uuid = (SELECT uuid FROM old) AND provider_name <> ALL (?0::text[]) RETURNING 1),
			parked AS (INSERT INTO enrichment_parked AS p (provider_name, alert_uuid)
				SELECT f, old.uuid FROM unnest(?0::text[]) AS f, old
				ON CONFLICT (provider_name, alert_uuid) DO UPDATE SET
					reruns = p.reruns + (p.rerun_at IS NOT NULL)::int, rerun_at = NULL, parked_at = now() RETURNING 1)
			SELECT ingested_at, enriched_at IS NULL FROM old`,
			pgdialectArray(failed), alertID).Scan(ctx, &fin.IngestedAt, &fin.First)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("finish enrichment of alert %s: %w", alertID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("finish enrichment of alert %s: %w", alertID, mapErr(err))
		}
		// The pipeline's outbox entries are done, freeing their places in flight: the started ones and
		// every first-run entry. A run can end before the claim transaction that started it commits
		// (a re-run whose indicators are all cached takes milliseconds): its entry is then locked by
		// that claim and not yet started in this transaction's snapshot, so a delete matching started
		// rows would miss it and the entry would hold its place until the recheck. Locking the alert's
		// entries first waits for such a claim; the delete, a statement of its own, then sees the
		// entry started. A re-run asked for meanwhile (not started) still waits, to run after this one.
		// The same statement reads the alert's verdict inputs (what event is built from), asks whether
		// this run's event is recorded already (either finish event: a retried activity after its
		// commit records nothing twice; its snapshot follows the alert's row lock above, so a
		// concurrent attempt's commit is seen) and whether any agent subscribes to alert.enriched.
		var locked int
		var exists, subscribed bool
		var override *string
		var malices []string
		ga := GroupingAlert{UUID: alertID}
		if err := tx.NewRaw(`SELECT (SELECT count(*) FROM (SELECT id FROM alert_outbox WHERE alert_uuid = ?0 FOR UPDATE) AS l),
				EXISTS (SELECT 1 FROM activity_events WHERE alert_uuid = ?0 AND event_type IN ('alert_enriched', 'alert_enrichment_failed')
					AND "references"->>'run_id' = ?1),
				`+strings.Replace(agentsSubscribedSQL, "?", "?2", 1)+`,
				o.malice_override, o.case_uuid IS NOT NULL, o.source_name,
				coalesce((SELECT array_agg(i.malice ORDER BY i.type, i.value) FROM alert_indicators AS ai
					JOIN indicators AS i ON i.uuid = ai.indicator_uuid WHERE ai.alert_uuid = ?0), '{}')
				FROM (SELECT malice_override, case_uuid, source_name FROM alerts WHERE uuid = ?0) AS o`,
			alertID, runID, EventAlertEnriched).Scan(ctx, &locked, &exists, &subscribed, &override, &ga.InCase, &ga.SourceName,
			pgdialectArray(&malices)); err != nil {
			return fmt.Errorf("lock outbox entries of alert %s: %w", alertID, mapErr(err))
		}
		ga.Malices = malices
		ev := event(override, malices)
		var join *caseJoin // the case the alert joins; nil: none
		if !exists && group != nil {
			if join, err = s.group(ctx, tx, ga, now, group); err != nil {
				return err
			}
		}
		var caseArg *uuid.UUID // nil: the alert's case stays as it is
		if join != nil {
			caseArg = &join.kase.UUID
		}
		// The alert marked finished (and put into the case it joins: the case's aggregates and
		// updated_at and the links' copy follow by trigger) and, when the alert had entries, those
		// entries deleted.
		res, err := tx.NewRaw(`WITH marked AS (UPDATE alerts SET enrichment_status = ?0, is_enriched = ?1, enriched_at = ?2,
				updated_at = ?2, case_uuid = coalesce(?3::uuid, case_uuid) WHERE uuid = ?4 RETURNING 1)
			DELETE FROM alert_outbox WHERE ?5 AND alert_uuid = ?4 AND (started_at IS NOT NULL OR kind = ?6)`,
			status, status == EnrichmentEnriched, now, caseArg, alertID, locked > 0, OutboxPipeline).Exec(ctx)
		if err != nil {
			return fmt.Errorf("mark alert %s finished: %w", alertID, mapErr(err))
		}
		freed, _ = res.RowsAffected()
		if exists {
			return nil
		}
		if ev.References == nil {
			ev.References = map[string]any{}
		}
		ev.References["run_id"] = runID
		ev.AlertUUID = &alertID
		events := []ActivityEvent{ev}
		if join != nil {
			// The rest of the join's record (caseJoin): its alert_grouped event inserted with the
			// finish's own, case.alert_added after alert.enriched.
			events = append(events, join.events()...)
		}
		if err := s.recordActivities(ctx, tx, events); err != nil {
			return err
		}
		if subscribed {
			if err := s.recordSubscribedAgentEvent(ctx, tx, &AgentEvent{Event: EventAlertEnriched, AlertUUID: &alertID},
				map[string]any{"enrichment_status": status, "temporal_run_id": runID}); err != nil {
				return err
			}
			raised = true
		}
		if join == nil {
			return nil
		}
		if err := s.raiseJoin(ctx, tx, *join); err != nil {
			return fmt.Errorf("group alert %s into case %s: %w", alertID, join.kase.UUID, err)
		}
		fin.GroupedInto = join.kase.UUID
		return nil
	})
	if err != nil {
		return FinishedEnrichment{}, err
	}
	if freed > 0 {
		s.freedWake.wake() // a place in flight is free: the dispatcher may start a waiting entry
	}
	if raised {
		s.startWake.wake() // alert.enriched's delivery may start (recordSubscribedAgentEvent)
	}
	return fin, nil
}

// Finding is an agent's append-only note on an alert.
type Finding struct {
	bun.BaseModel `bun:"table:alert_findings"`

	ID                uuid.UUID      `bun:"id,pk,type:uuid"`
	AlertUUID         uuid.UUID      `bun:"alert_uuid,type:uuid"`
	AgentName         string         `bun:"agent_name"`
	Summary           string         `bun:"summary"`
	Confidence        *string        `bun:"confidence"`
	RecommendedAction *string        `bun:"recommended_action"`
	Evidence          map[string]any `bun:"evidence,type:jsonb"`
	ActorKeyPrefix    *string        `bun:"actor_key_prefix"`
	PostedAt          time.Time      `bun:"posted_at"`
}

// CreateFinding appends f to its alert, records an agent_finding_posted event and raises
// alert.finding_added, in one transaction.
func (s *Store) CreateFinding(ctx context.Context, f *Finding, actorType string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if f.ID == uuid.Nil {
			f.ID = uuid.New()
		}
		f.PostedAt = s.Now()
		if _, err := tx.NewInsert().Model(f).Exec(ctx); err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("alert %s: %w", f.AlertUUID, ErrNotFound)
			}
			return fmt.Errorf("insert finding: %w", mapErr(err))
		}
		if err := s.RecordActivity(ctx, tx, &ActivityEvent{EventType: "agent_finding_posted", ActorType: actorType,
			ActorKeyPrefix: f.ActorKeyPrefix, AlertUUID: &f.AlertUUID,
			References: map[string]any{"finding_id": f.ID.String(), "agent_name": f.AgentName}}); err != nil {
			return err
		}
		_, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventAlertFindingAdded, AlertUUID: &f.AlertUUID},
			map[string]any{"finding": map[string]any{"id": f.ID, "agent_name": f.AgentName, "summary": f.Summary,
				"confidence": f.Confidence, "recommended_action": f.RecommendedAction, "evidence": f.Evidence, "posted_at": f.PostedAt}})
		return err
	})
}

// ListFindings returns an alert's findings, oldest first (at most maxFindings).
func (s *Store) ListFindings(ctx context.Context, alertID uuid.UUID) ([]Finding, error) {
	byAlert, err := s.alertsFindings(ctx, []uuid.UUID{alertID})
	if err != nil {
		return nil, err
	}
	return append([]Finding{}, byAlert[alertID]...), nil
}

// maxFindings bounds the findings read of one alert.
const maxFindings = 10_000

// alertsFindings returns each alert's findings (ListFindings) in one statement; an alert without
// findings is absent.
func (s *Store) alertsFindings(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]Finding, error) {
	var rows []Finding
	err := s.db.NewRaw(`SELECT f.* FROM unnest(?::uuid[]) AS a(uuid)
		CROSS JOIN LATERAL (SELECT * FROM alert_findings WHERE alert_uuid = a.uuid ORDER BY posted_at ASC, id ASC LIMIT ?) AS f`,
		pgdialectArray(ids), maxFindings).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("findings of %d alerts: %w", len(ids), mapErr(err))
	}
	out := make(map[uuid.UUID][]Finding, len(ids))
	for _, f := range rows {
		out[f.AlertUUID] = append(out[f.AlertUUID], f)
	}
	return out, nil
}

// Sibling is another alert sharing an indicator (relationship graph).
type Sibling struct {
	IndicatorUUID uuid.UUID `bun:"indicator_uuid"`
	AlertUUID     uuid.UUID `bun:"alert_uuid"`
	Title         string    `bun:"title"`
	Severity      string    `bun:"severity"`
	Status        string    `bun:"status"`
	SourceName    string    `bun:"source_name"`
	OccurredAt    time.Time `bun:"occurred_at"`
}

// SiblingAlerts returns, for each indicator of the alert, up to limit other alerts linked to it,
// newest first.
func (s *Store) SiblingAlerts(ctx context.Context, alertID uuid.UUID, limit int) ([]Sibling, error) {
	var out []Sibling
	err := s.db.NewRaw(`SELECT mine.indicator_uuid, o.uuid AS alert_uuid, o.title, o.severity, o.status, o.source_name, o.occurred_at
		FROM alert_indicators AS mine
		CROSS JOIN LATERAL (
			SELECT a.uuid, a.title, a.severity, a.status, a.source_name, a.occurred_at
			FROM alert_indicators AS other JOIN alerts AS a ON a.uuid = other.alert_uuid
			WHERE other.indicator_uuid = mine.indicator_uuid AND other.alert_uuid <> mine.alert_uuid
			ORDER BY a.occurred_at DESC, a.uuid DESC LIMIT ?
		) AS o
		WHERE mine.alert_uuid = ?
		ORDER BY mine.indicator_uuid, o.occurred_at DESC, o.uuid DESC`, limit, alertID).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("sibling alerts of %s: %w", alertID, mapErr(err))
	}
	return out, nil
}

func isForeignKeyViolation(err error) bool {
	var pgErr interface{ Field(byte) string }
	return errors.As(err, &pgErr) && pgErr.Field('C') == "23503"
}
