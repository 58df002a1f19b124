package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/vigil-soc/vigil/kit/severity"
)

func runStatuses() []string {
	return []string{RunQueued, RunPendingApproval, RunRunning, RunSucceeded, RunFailed, RunTimedOut, RunRejected, RunExpired, RunCancelled}
}

func approvalStatuses() []string {
	return []string{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired, ApprovalCancelled}
}

func triggerSources() []string { return []string{"human", "agent"} }

// RunCounts are the workflow runs created in a window.
type RunCounts struct {
	Total            int
	ByStatus         map[string]int // every run status
	ByTriggerSource  map[string]int // human, agent
	TimeSavedMinutes int64          // Σ over succeeded runs of their workflow's time_saved_minutes
}

// SuccessRate is succeeded ÷ (succeeded + failed + timed_out), the runs that executed to an end
// (rejected, expired and cancelled runs never ran their steps); nil when there is none.
func (r RunCounts) SuccessRate() *float64 {
	ended := r.ByStatus[RunSucceeded] + r.ByStatus[RunFailed] + r.ByStatus[RunTimedOut]
	if ended == 0 {
		return nil
	}
	v := float64(r.ByStatus[RunSucceeded]) / float64(ended)
	return &v
}

// TimeSavedHours is TimeSavedMinutes in hours.
func (r RunCounts) TimeSavedHours() float64 { return float64(r.TimeSavedMinutes) / 60 }

// runCounts counts the runs created in w by status and trigger source, with the time they saved.
func runCounts(ctx context.Context, db bun.IDB, w MetricsWindow) (RunCounts, error) {
	c := RunCounts{ByStatus: zeroCounts(runStatuses()), ByTriggerSource: zeroCounts(triggerSources())}
	var groups []struct {
		Status  string `bun:"status"`
		Trigger string `bun:"trigger_source"`
		N       int    `bun:"n"`
		Saved   int64  `bun:"saved"`
	}
	err := db.NewRaw(`SELECT r.status, r.trigger_source, count(*) AS n,
			coalesce(sum(coalesce(wf.time_saved_minutes, 0)) FILTER (WHERE r.status = ?), 0) AS saved
		FROM workflow_runs AS r JOIN workflows AS wf ON wf.uuid = r.workflow_uuid
		WHERE r.created_at >= ? AND r.created_at < ?
		GROUP BY 1, 2`, RunSucceeded, w.From, w.To).Scan(ctx, &groups)
	if err != nil {
		return RunCounts{}, fmt.Errorf("count runs: %w", mapErr(err))
	}
	for _, g := range groups {
		c.Total += g.N
		c.ByStatus[g.Status] += g.N
		c.ByTriggerSource[g.Trigger] += g.N
		c.TimeSavedMinutes += g.Saved
	}
	return c, nil
}

// ApprovalCounts are the approval requests created in a window, by effective status: a pending
// request past expires_at can no longer be decided (DecideApproval), so it counts as expired even
// before the run's timer has marked it.
type ApprovalCounts struct {
	Total                 int
	ByStatus              map[string]int            // every approval status
	ByTriggerSource       map[string]map[string]int // human, agent → every approval status
	MedianResponseSeconds *float64                  // medianApprovalResponse (WorkflowMetrics only)
}

// effectiveApprovalStatus is the SQL of a request's status as of ? (pending past expires_at: expired).
const effectiveApprovalStatus = `CASE WHEN q.status = 'pending' AND q.expires_at <= ? THEN 'expired' ELSE q.status END`

func approvalCounts(ctx context.Context, db bun.IDB, w MetricsWindow, now time.Time) (ApprovalCounts, error) {
	c := ApprovalCounts{ByStatus: zeroCounts(approvalStatuses()), ByTriggerSource: map[string]map[string]int{}}
	for _, t := range triggerSources() {
		c.ByTriggerSource[t] = zeroCounts(approvalStatuses())
	}
	var groups []struct {
		Trigger string `bun:"trigger_source"`
		Status  string `bun:"status"`
		N       int    `bun:"n"`
	}
	err := db.NewRaw(`SELECT q.trigger_source, `+effectiveApprovalStatus+` AS status, count(*) AS n
		FROM workflow_approval_requests AS q
		WHERE q.created_at >= ? AND q.created_at < ?
		GROUP BY 1, 2`, now, w.From, w.To).Scan(ctx, &groups)
	if err != nil {
		return ApprovalCounts{}, fmt.Errorf("count approval requests: %w", mapErr(err))
	}
	for _, g := range groups {
		c.Total += g.N
		c.ByStatus[g.Status] += g.N
		if c.ByTriggerSource[g.Trigger] == nil {
			c.ByTriggerSource[g.Trigger] = zeroCounts(approvalStatuses())
		}
		c.ByTriggerSource[g.Trigger][g.Status] += g.N
	}
	return c, nil
}

// medianApprovalResponse is the median seconds from the creation of the approval requests created in
// w to the decision that approved or rejected them; nil when none was decided.
func medianApprovalResponse(ctx context.Context, db bun.IDB, w MetricsWindow) (*float64, error) {
	// A decided request takes no more decisions, so its last decision is the one that decided it.
	var median sql.NullFloat64
	err := db.NewRaw(`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY elapsed_seconds(q.created_at, d.decided_at))
		FROM workflow_approval_requests AS q
		JOIN LATERAL (SELECT max(decided_at) AS decided_at FROM workflow_approval_decisions WHERE approval_uuid = q.uuid) AS d ON true
		WHERE q.created_at >= ? AND q.created_at < ? AND q.status IN (?, ?) AND d.decided_at IS NOT NULL`,
		w.From, w.To, ApprovalApproved, ApprovalRejected).Scan(ctx, &median)
	if err != nil {
		return nil, fmt.Errorf("median approval response: %w", mapErr(err))
	}
	return nullable(median), nil
}

// WorkflowRunCount is a workflow with its runs in a window.
type WorkflowRunCount struct {
	WorkflowUUID   uuid.UUID `bun:"workflow_uuid"`
	Name           string    `bun:"name"`
	RunCount       int       `bun:"run_count"`
	SucceededRuns  int       `bun:"succeeded_runs"`
	TimeSavedHours float64   `bun:"time_saved_hours"`
}

// WorkflowMetrics describes the workflow runs and approval requests created in a window.
type WorkflowMetrics struct {
	Window       MetricsWindow
	Bucket       string // of RunsOverTime
	Runs         RunCounts
	RunsOverTime []TimeBucket
	MostExecuted []WorkflowRunCount // up to TopMetricsLimit, most runs first
	Approvals    ApprovalCounts
}

// WorkflowMetrics computes every figure over w in one read-only, repeatable-read snapshot, in SQL.
func (s *Store) WorkflowMetrics(ctx context.Context, w MetricsWindow) (WorkflowMetrics, error) {
	if err := w.check(); err != nil {
		return WorkflowMetrics{}, fmt.Errorf("workflow metrics: %w", err)
	}
	m := WorkflowMetrics{Window: w, Bucket: w.Bucket(), MostExecuted: []WorkflowRunCount{}}
	now := s.Now()
	err := s.readSnapshot(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if m.Runs, err = runCounts(ctx, tx, w); err != nil {
			return err
		}
		if m.RunsOverTime, err = timeSeries(ctx, tx, w, m.Bucket, "workflow_runs AS r", "r.created_at",
			"r.created_at >= ? AND r.created_at < ?", w.From, w.To); err != nil {
			return fmt.Errorf("runs over time: %w", err)
		}
		err = tx.NewRaw(`SELECT wf.uuid AS workflow_uuid, wf.name, count(*) AS run_count,
				count(*) FILTER (WHERE r.status = ?) AS succeeded_runs,
				coalesce(wf.time_saved_minutes, 0) * count(*) FILTER (WHERE r.status = ?) / 60.0 AS time_saved_hours
			FROM workflow_runs AS r JOIN workflows AS wf ON wf.uuid = r.workflow_uuid
			WHERE r.created_at >= ? AND r.created_at < ?
			GROUP BY wf.uuid
			ORDER BY run_count DESC, wf.name, wf.uuid
			LIMIT ?`, RunSucceeded, RunSucceeded, w.From, w.To, TopMetricsLimit).Scan(ctx, &m.MostExecuted)
		if err != nil {
			return fmt.Errorf("most executed: %w", mapErr(err))
		}
		if m.Approvals, err = approvalCounts(ctx, tx, w, now); err != nil {
			return err
		}
		m.Approvals.MedianResponseSeconds, err = medianApprovalResponse(ctx, tx, w)
		return err
	})
	if err != nil {
		return WorkflowMetrics{}, fmt.Errorf("workflow metrics: %w", err)
	}
	return m, nil
}

// ProviderCounts are the enrichment providers by state (now, not windowed).
type ProviderCounts struct {
	Total      int
	Active     int
	Configured int // EnrichmentProvider.IsConfigured
}

// MetricsSummary is the dashboard's first screen over a window.
type MetricsSummary struct {
	Window            MetricsWindow
	Alerts            int            // created in the window
	Open              int            // of those, active (not Closed)
	OpenBySeverity    map[string]int // every severity
	MTTASeconds       *float64       // mean of the acknowledge timing
	MTTCSeconds       *float64       // mean of the close timing
	FalsePositiveRate *float64       // Outcomes.Rates
	Runs              RunCounts
	ApprovalsPending  int // effective status pending
	Providers         ProviderCounts
	Cases             CaseStats // open now by severity; closed in the window and their mean time to close
}

// MetricsSummary computes the summary over w with the same building blocks as AlertMetrics and
// WorkflowMetrics; its alert figures come from the daily roll-up (summaryAlerts). Whether a provider is configured depends on env (its credentials may come from
// environment variables), so that one figure is counted in Go over the providers table.
func (s *Store) MetricsSummary(ctx context.Context, w MetricsWindow, env Env) (MetricsSummary, error) {
	if err := w.check(); err != nil {
		return MetricsSummary{}, fmt.Errorf("metrics summary: %w", err)
	}
	m := MetricsSummary{Window: w, OpenBySeverity: zeroCounts(severity.Names())}
	now := s.Now()
	err := s.readSnapshot(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := summaryAlerts(ctx, tx, w, &m); err != nil {
			return err
		}
		var err error
		if m.Runs, err = runCounts(ctx, tx, w); err != nil {
			return err
		}
		approvals, err := approvalCounts(ctx, tx, w, now)
		if err != nil {
			return err
		}
		m.ApprovalsPending = approvals.ByStatus[ApprovalPending]
		m.Cases, err = caseStats(ctx, tx, w.From, w.To)
		return err
	})
	if err != nil {
		return MetricsSummary{}, fmt.Errorf("metrics summary: %w", err)
	}
	providers, _, err := s.ListProviders(ctx, ProviderFilter{})
	if err != nil {
		return MetricsSummary{}, fmt.Errorf("metrics summary: %w", err)
	}
	for _, p := range providers {
		m.Providers.Total++
		if p.IsActive {
			m.Providers.Active++
		}
		if p.IsConfigured(env) {
			m.Providers.Configured++
		}
	}
	return m, nil
}

// summaryAlerts fills the alert figures of m: the whole UTC days of w from alert_metrics_daily (kept
// by triggers on alerts), the partial days at its ends from the alerts themselves, with the same
// definitions (alert_is_active, alert_outcome, elapsed_seconds and the acknowledge and close timings).
func summaryAlerts(ctx context.Context, db bun.IDB, w MetricsWindow, m *MetricsSummary) error {
	days, edges := w.split()
	ackExpr, ackFilter := acknowledgeTiming().seconds()
	closeExpr, closeFilter := closeTiming().seconds()
	var rows []struct {
		Severity string  `bun:"severity"`
		Total    int     `bun:"total"`
		Active   int     `bun:"active"`
		Closed   int     `bun:"closed"`
		FP       int     `bun:"fp"`
		AckN     int     `bun:"ack_n"`
		AckSum   float64 `bun:"ack_sum"`
		CloseN   int     `bun:"close_n"`
		CloseSum float64 `bun:"close_sum"`
	}
	err := db.NewRaw(`
		SELECT severity, sum(alerts)::bigint AS total, sum(active)::bigint AS active, sum(closed)::bigint AS closed,
		       sum(false_positive)::bigint AS fp, sum(acknowledged)::bigint AS ack_n, sum(acknowledge_seconds)::float8 AS ack_sum,
		       sum(close_timed)::bigint AS close_n, sum(close_seconds)::float8 AS close_sum
		FROM alert_metrics_daily
		WHERE day >= ?::date AND day < ?::date
		GROUP BY severity
		UNION ALL
		SELECT a.severity, count(*), count(*) FILTER (WHERE `+activeAlert+`),
		       count(alert_outcome(a.status, a.close_classification)),
		       count(*) FILTER (WHERE alert_outcome(a.status, a.close_classification) = 'false_positive'),
		       count(*) FILTER (WHERE `+ackFilter+`), coalesce(sum(`+ackExpr+`) FILTER (WHERE `+ackFilter+`), 0),
		       count(*) FILTER (WHERE `+closeFilter+`), coalesce(sum(`+closeExpr+`) FILTER (WHERE `+closeFilter+`), 0)
		FROM alerts AS a
		WHERE (a.created_at >= ? AND a.created_at < ?) OR (a.created_at >= ? AND a.created_at < ?)
		GROUP BY a.severity`,
		days.From.Format(time.DateOnly), days.To.Format(time.DateOnly),
		edges[0].From, edges[0].To, edges[1].From, edges[1].To).Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("alerts of the summary: %w", mapErr(err))
	}
	var out Outcomes
	var ackN, closeN int
	var ackSum, closeSum float64
	for _, r := range rows {
		m.Alerts += r.Total
		m.Open += r.Active
		m.OpenBySeverity[r.Severity] += r.Active
		out.Closed += r.Closed
		out.FP += r.FP
		ackN, ackSum, closeN, closeSum = ackN+r.AckN, ackSum+r.AckSum, closeN+r.CloseN, closeSum+r.CloseSum
	}
	m.FalsePositiveRate, _ = out.Rates()
	if ackN > 0 {
		v := ackSum / float64(ackN)
		m.MTTASeconds = &v
	}
	if closeN > 0 {
		v := closeSum / float64(closeN)
		m.MTTCSeconds = &v
	}
	return nil
}

// AlertsPerDay counts the alerts created in each UTC day of w (zeros included), like AlertMetrics'
// AlertsOverTime but from the daily roll-up (alert_metrics_daily) for the whole days and the alerts
// themselves only for the partial days at the ends, so it stays cheap over any number of alerts.
func (s *Store) AlertsPerDay(ctx context.Context, w MetricsWindow) ([]TimeBucket, error) {
	if err := w.check(); err != nil {
		return nil, fmt.Errorf("alerts per day: %w", err)
	}
	days, edges := w.split()
	var rows []struct {
		Day   time.Time `bun:"day"`
		Count int       `bun:"count"`
	}
	err := s.db.NewRaw(`
		SELECT day::timestamp AS day, sum(n)::bigint AS count FROM (
		  SELECT day, sum(alerts) AS n FROM alert_metrics_daily WHERE day >= ?::date AND day < ?::date GROUP BY day
		  UNION ALL
		  SELECT (created_at AT TIME ZONE 'UTC')::date, count(*) FROM alerts
		  WHERE (created_at >= ? AND created_at < ?) OR (created_at >= ? AND created_at < ?)
		  GROUP BY 1) AS d
		GROUP BY day`,
		days.From.Format(time.DateOnly), days.To.Format(time.DateOnly),
		edges[0].From, edges[0].To, edges[1].From, edges[1].To).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("alerts per day: %w", mapErr(err))
	}
	counts := make(map[string]int, len(rows))
	for _, r := range rows {
		counts[r.Day.Format(time.DateOnly)] += r.Count
	}
	var out []TimeBucket
	for d := w.From.UTC().Truncate(24 * time.Hour); d.Before(w.To); d = d.Add(24 * time.Hour) {
		out = append(out, TimeBucket{Start: d, Count: counts[d.Format(time.DateOnly)]})
	}
	return out, nil
}
