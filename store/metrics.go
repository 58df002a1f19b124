package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// The metrics' building blocks: the window, the alert filter, the close outcomes (false/true
// positive rates), the alert timings (MTTA, MTTC, …) and the zero-filled time series. Every metric
// route (global and per detection rule) builds its SQL from these, so each figure has one definition.

// Bounds of a metrics window.
const (
	DefaultMetricsRange = 30 * 24 * time.Hour  // window when from_time is not given
	MaxMetricsRange     = 366 * 24 * time.Hour // longest [from, to) window
	hourlyMetricsRange  = 48 * time.Hour       // windows up to this long are bucketed per hour
	TopMetricsLimit     = 10                   // rows of every "top …" list
)

// MetricsWindow is the half-open interval [From, To) a metric covers.
type MetricsWindow struct {
	From time.Time
	To   time.Time
}

// NewMetricsWindow resolves the defaults (To = now, From = To − DefaultMetricsRange) and reports
// whether the window is usable: From before To and at most MaxMetricsRange long (ok false otherwise,
// with the window still filled in so the caller can show it).
func NewMetricsWindow(from, to *time.Time, now time.Time) (w MetricsWindow, ok bool) {
	w.To = now.UTC()
	if to != nil {
		w.To = to.UTC()
	}
	w.From = w.To.Add(-DefaultMetricsRange)
	if from != nil {
		w.From = from.UTC()
	}
	return w, w.check() == nil
}

func (w MetricsWindow) check() error {
	if !w.To.After(w.From) || w.To.Sub(w.From) > MaxMetricsRange {
		return fmt.Errorf("metrics window %s..%s is empty or longer than %s", w.From, w.To, MaxMetricsRange)
	}
	return nil
}

// split divides w into its whole UTC days (days, possibly empty) and the two partial ends before
// and after them (possibly empty); together they cover w exactly once.
func (w MetricsWindow) split() (days MetricsWindow, edges [2]MetricsWindow) {
	first := w.From.Truncate(24 * time.Hour)
	if first.Before(w.From) {
		first = first.Add(24 * time.Hour)
	}
	last := w.To.Truncate(24 * time.Hour)
	if !first.Before(last) { // no whole day: the window is one edge
		return MetricsWindow{From: first, To: first}, [2]MetricsWindow{w, {From: w.To, To: w.To}}
	}
	return MetricsWindow{From: first, To: last}, [2]MetricsWindow{{From: w.From, To: first}, {From: last, To: w.To}}
}

// Bucket is the time-series granularity of the window: "hour" up to 48 hours, else "day" (UTC).
func (w MetricsWindow) Bucket() string {
	if w.To.Sub(w.From) <= hourlyMetricsRange {
		return "hour"
	}
	return "day"
}

// TimeBucket is the number of rows whose timestamp falls in [Start, Start + one bucket).
type TimeBucket struct {
	Start time.Time `bun:"start"` // UTC
	Count int       `bun:"count"`
}

// timeSeries counts the rows of "from" (a FROM clause aliasing its table, e.g. "alerts AS a") whose
// column falls in each bucket ("hour" or "day", UTC) of w, zeros included (generate_series), where
// "where" (with its args) holds.
func timeSeries(ctx context.Context, db bun.IDB, w MetricsWindow, bucket, from, column, where string, args ...any) ([]TimeBucket, error) {
	if bucket != "hour" && bucket != "day" {
		return nil, fmt.Errorf("time series: unknown bucket %q", bucket)
	}
	q := `
		SELECT s.t AT TIME ZONE 'UTC' AS start, coalesce(c.n, 0) AS count
		FROM generate_series(date_trunc('` + bucket + `', ?::timestamptz AT TIME ZONE 'UTC'),
		                     (?::timestamptz - interval '1 microsecond') AT TIME ZONE 'UTC', interval '1 ` + bucket + `') AS s(t)
		LEFT JOIN (
			SELECT date_trunc('` + bucket + `', ` + column + ` AT TIME ZONE 'UTC') AS t, count(*) AS n
			FROM ` + from + `
			WHERE ` + where + `
			GROUP BY 1
		) c ON c.t = s.t
		ORDER BY s.t`
	out := []TimeBucket{}
	all := append([]any{w.From, w.To}, args...)
	if err := db.NewRaw(q, all...).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("time series per %s: %w", bucket, mapErr(err))
	}
	for i := range out {
		out[i].Start = out[i].Start.UTC()
	}
	return out, nil
}

// alertScope selects the alerts a metric covers; its SQL uses the alias a for alerts.
type alertScope struct {
	Column          string // the timestamp the window applies to: created_at (global), occurred_at (rule)
	Window          MetricsWindow
	SourceName      *string
	Severities      []string
	DetectionRuleID *int64
	RuleUUID        *uuid.UUID
}

func (sc alertScope) where() (string, []any) {
	conds := []string{"a." + sc.Column + " >= ?", "a." + sc.Column + " < ?"}
	args := []any{sc.Window.From, sc.Window.To}
	if sc.SourceName != nil {
		conds, args = append(conds, "a.source_name = ?"), append(args, *sc.SourceName)
	}
	if len(sc.Severities) > 0 {
		conds, args = append(conds, "a.severity IN (?)"), append(args, bun.List(sc.Severities))
	}
	if sc.DetectionRuleID != nil {
		conds, args = append(conds, "a.detection_rule_id = ?"), append(args, *sc.DetectionRuleID)
	}
	if sc.RuleUUID != nil {
		conds, args = append(conds, "a.detection_rule_id = (SELECT id FROM detection_rules WHERE uuid = ?)"), append(args, *sc.RuleUUID)
	}
	return strings.Join(conds, " AND "), args
}

// outcomeColumns counts closed alerts and those closed as false / true positives: alert_outcome,
// a SQL function of the alert_metrics_daily migration, is the one definition (the classification
// starts with "False Positive" / "True Positive"); Outcomes.Rates divides them.
const outcomeColumns = `count(alert_outcome(a.status, a.close_classification)) AS closed,
	count(*) FILTER (WHERE alert_outcome(a.status, a.close_classification) = 'false_positive') AS fp,
	count(*) FILTER (WHERE alert_outcome(a.status, a.close_classification) = 'true_positive') AS tp`

// Outcomes are the close outcomes of a set of alerts (outcomeColumns).
type Outcomes struct {
	Closed int `bun:"closed"`
	FP     int `bun:"fp"`
	TP     int `bun:"tp"`
}

// Rates are the false- and true-positive rates over closed alerts; nil when none is closed (0 would
// claim a measured rate).
func (o Outcomes) Rates() (fp, tp *float64) {
	if o.Closed == 0 {
		return nil, nil
	}
	f, t := float64(o.FP)/float64(o.Closed), float64(o.TP)/float64(o.Closed)
	return &f, &t
}

// alertTiming is one duration the metrics report: seconds from one alert timestamp to another
// (elapsed_seconds, a SQL function of the alert_metrics_daily migration: negative differences from
// clock skew count as 0), over the alerts where both are set and cond holds. The acknowledge and
// close timings are rolled up by that migration's alert_metrics_daily_add too.
type alertTiming struct {
	name       string
	start, end string // columns of alerts
	cond       string // extra filter, if any
}

// acknowledgeTiming and closeTiming are the two timings the summary also reads from the roll-up.
func acknowledgeTiming() alertTiming {
	return alertTiming{name: "acknowledge", start: "ingested_at", end: "acknowledged_at"}
}

func closeTiming() alertTiming {
	return alertTiming{name: "close", start: "ingested_at", end: "closed_at", cond: "a.status = 'Closed'"}
}

// alertTimings are the durations reported, in this order.
func alertTimings() []alertTiming {
	return []alertTiming{
		{name: "detect", start: "occurred_at", end: "created_at"},
		acknowledgeTiming(),
		{name: "triage", start: "ingested_at", end: "triaged_at"},
		closeTiming(),
		{name: "enrich", start: "ingested_at", end: "enriched_at"},
	}
}

// seconds is the SQL of t's duration in seconds and the filter of the alerts it applies to.
func (t alertTiming) seconds() (expr, filter string) {
	expr = fmt.Sprintf("elapsed_seconds(a.%s, a.%s)", t.start, t.end)
	filter = expr + " IS NOT NULL"
	if t.cond != "" {
		filter += " AND " + t.cond
	}
	return expr, filter
}

// timingColumns selects <name>_mean for each timing, and <name>_pct ({p50, p90}) too with percentiles.
func timingColumns(percentiles bool, names ...string) string {
	var cols []string
	for _, t := range alertTimings() {
		if !containsName(names, t.name) {
			continue
		}
		expr, filter := t.seconds()
		cols = append(cols, fmt.Sprintf("avg(%s) FILTER (WHERE %s) AS %s_mean", expr, filter, t.name))
		if percentiles { // one call, one sort: two percentile_cont calls sort twice
			cols = append(cols, fmt.Sprintf("percentile_cont(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY %s) FILTER (WHERE %s) AS %s_pct",
				expr, filter, t.name))
		}
	}
	return strings.Join(cols, ",\n\t")
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// Timing is a duration's mean and percentiles in seconds; nil when no alert qualifies.
type Timing struct {
	Mean *float64
	P50  *float64
	P90  *float64
}

// timingRow receives timingColumns.
type timingRow struct {
	DetectMean      sql.NullFloat64 `bun:"detect_mean"`
	DetectPct       []float64       `bun:"detect_pct,array"`
	AcknowledgeMean sql.NullFloat64 `bun:"acknowledge_mean"`
	AcknowledgePct  []float64       `bun:"acknowledge_pct,array"`
	TriageMean      sql.NullFloat64 `bun:"triage_mean"`
	TriagePct       []float64       `bun:"triage_pct,array"`
	CloseMean       sql.NullFloat64 `bun:"close_mean"`
	ClosePct        []float64       `bun:"close_pct,array"`
	EnrichMean      sql.NullFloat64 `bun:"enrich_mean"`
	EnrichPct       []float64       `bun:"enrich_pct,array"`
}

func nullable(f sql.NullFloat64) *float64 {
	if !f.Valid {
		return nil
	}
	v := f.Float64
	return &v
}

// timingOf builds a Timing from a mean and the {p50, p90} array (NULL, so empty, when no row qualified).
func timingOf(mean sql.NullFloat64, pct []float64) Timing {
	t := Timing{Mean: nullable(mean)}
	if len(pct) == 2 {
		t.P50, t.P90 = &pct[0], &pct[1]
	}
	return t
}

// AlertTimings are the alert durations (alertTimings) in seconds.
type AlertTimings struct {
	Detect      Timing // created_at − occurred_at, every alert
	Acknowledge Timing // acknowledged_at − ingested_at, acknowledged alerts
	Triage      Timing // triaged_at − ingested_at, alerts that entered Triaging
	Close       Timing // closed_at − ingested_at, Closed alerts
	Enrich      Timing // enriched_at − ingested_at, alerts whose pipeline finished
}

func (r timingRow) timings() AlertTimings {
	return AlertTimings{
		Detect:      timingOf(r.DetectMean, r.DetectPct),
		Acknowledge: timingOf(r.AcknowledgeMean, r.AcknowledgePct),
		Triage:      timingOf(r.TriageMean, r.TriagePct),
		Close:       timingOf(r.CloseMean, r.ClosePct),
		Enrich:      timingOf(r.EnrichMean, r.EnrichPct),
	}
}

// readSnapshot runs fn in one read-only, repeatable-read transaction, so a metric's numbers agree.
func (s *Store) readSnapshot(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, fn)
}
