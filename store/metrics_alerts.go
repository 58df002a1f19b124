package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/vigil-soc/vigil/kit/severity"
)

// activeAlert is the condition of an active alert (any status but Closed): alert_is_active, a SQL
// function of the alert_metrics_daily migration, is the one definition.
const activeAlert = "alert_is_active(a.status)"

// AlertMetricsFilter selects the alerts of GET /v1/metrics/alerts: created_at in the window, and
// each filter that is set.
type AlertMetricsFilter struct {
	Window            MetricsWindow
	SourceName        *string
	Severities        []string // any of
	DetectionRuleUUID *uuid.UUID
}

// AlertMetrics describes the alerts created in a window.
type AlertMetrics struct {
	Window            MetricsWindow
	Bucket            string // of AlertsOverTime: hour or day
	Total             int
	ByStatus          map[string]int // every status, zeros included
	BySeverity        map[string]int // every severity, zeros included
	BySource          map[string]int // sources with alerts in the window
	ActiveBySeverity  map[string]int // not Closed, every severity
	Outcomes          Outcomes
	FalsePositiveRate *float64
	TruePositiveRate  *float64
	Timings           AlertTimings
	AlertsOverTime    []TimeBucket
	Enrichment        EnrichmentCoverage
	TopRules          []RuleOutcomes
}

// EnrichmentCoverage counts the alerts with at least one indicator and those whose every indicator
// is enriched; Coverage is their ratio (nil when no alert has an indicator).
type EnrichmentCoverage struct {
	AlertsWithIndicators int      `bun:"with_indicators"`
	FullyEnriched        int      `bun:"fully_enriched"`
	Coverage             *float64 `bun:"-"`
}

// RuleOutcomes is a detection rule's alerts in the window and how they were closed.
type RuleOutcomes struct {
	UUID   uuid.UUID `bun:"uuid"`
	Name   string    `bun:"name"`
	Alerts int       `bun:"alerts"`
	Outcomes
	FalsePositiveRate *float64 `bun:"-"`
}

// AlertMetrics computes every figure of f in one read-only, repeatable-read snapshot, in SQL.
func (s *Store) AlertMetrics(ctx context.Context, f AlertMetricsFilter) (AlertMetrics, error) {
	if err := f.Window.check(); err != nil {
		return AlertMetrics{}, fmt.Errorf("alert metrics: %w", err)
	}
	m := AlertMetrics{Window: f.Window, Bucket: f.Window.Bucket(), ByStatus: zeroCounts(AlertStatuses()),
		BySeverity: zeroCounts(severity.Names()), BySource: map[string]int{}, ActiveBySeverity: zeroCounts(severity.Names())}
	scope := alertScope{Column: "created_at", Window: f.Window, SourceName: f.SourceName, Severities: f.Severities, RuleUUID: f.DetectionRuleUUID}
	where, args := scope.where()
	err := s.readSnapshot(ctx, func(ctx context.Context, tx bun.Tx) error {
		var agg struct {
			Total int `bun:"total"`
			Outcomes
			timingRow
		}
		err := tx.NewRaw(`SELECT count(*) AS total, `+outcomeColumns+`, `+timingColumns(true, "detect", "acknowledge", "triage", "close", "enrich")+`
			FROM alerts AS a WHERE `+where, args...).Scan(ctx, &agg)
		if err != nil {
			return fmt.Errorf("aggregate: %w", mapErr(err))
		}
		m.Total, m.Outcomes, m.Timings = agg.Total, agg.Outcomes, agg.timingRow.timings()
		m.FalsePositiveRate, m.TruePositiveRate = agg.Outcomes.Rates()

		var groups []struct {
			Status   string `bun:"status"`
			Severity string `bun:"severity"`
			Source   string `bun:"source_name"`
			N        int    `bun:"n"`
			Active   int    `bun:"active"`
		}
		err = tx.NewRaw(`SELECT a.status, a.severity, a.source_name, count(*) AS n, count(*) FILTER (WHERE `+activeAlert+`) AS active
			FROM alerts AS a WHERE `+where+` GROUP BY 1, 2, 3`, args...).Scan(ctx, &groups)
		if err != nil {
			return fmt.Errorf("group by status, severity and source: %w", mapErr(err))
		}
		for _, g := range groups {
			m.ByStatus[g.Status] += g.N
			m.BySeverity[g.Severity] += g.N
			m.BySource[g.Source] += g.N
			m.ActiveBySeverity[g.Severity] += g.Active
		}

		if m.AlertsOverTime, err = timeSeries(ctx, tx, f.Window, m.Bucket, "alerts AS a", "a.created_at", where, args...); err != nil {
			return fmt.Errorf("alerts over time: %w", err)
		}

		err = tx.NewRaw(`SELECT count(*) AS with_indicators, count(*) FILTER (WHERE x.all_enriched) AS fully_enriched
			FROM (SELECT bool_and(i.is_enriched) AS all_enriched
			      FROM alerts AS a
			      JOIN alert_indicators AS ai ON ai.alert_uuid = a.uuid
			      JOIN indicators AS i ON i.uuid = ai.indicator_uuid
			      WHERE `+where+`
			      GROUP BY a.uuid) AS x`, args...).Scan(ctx, &m.Enrichment)
		if err != nil {
			return fmt.Errorf("enrichment coverage: %w", mapErr(err))
		}
		if m.Enrichment.AlertsWithIndicators > 0 {
			c := float64(m.Enrichment.FullyEnriched) / float64(m.Enrichment.AlertsWithIndicators)
			m.Enrichment.Coverage = &c
		}

		m.TopRules = []RuleOutcomes{}
		err = tx.NewRaw(`SELECT r.uuid, r.name, count(*) AS alerts, `+outcomeColumns+`
			FROM alerts AS a JOIN detection_rules AS r ON r.id = a.detection_rule_id
			WHERE `+where+`
			GROUP BY r.id
			ORDER BY alerts DESC, r.name, r.uuid
			LIMIT ?`, append(args, TopMetricsLimit)...).Scan(ctx, &m.TopRules)
		if err != nil {
			return fmt.Errorf("top detection rules: %w", mapErr(err))
		}
		for i := range m.TopRules {
			m.TopRules[i].FalsePositiveRate, _ = m.TopRules[i].Outcomes.Rates()
		}
		return nil
	})
	if err != nil {
		return AlertMetrics{}, fmt.Errorf("alert metrics: %w", err)
	}
	return m, nil
}
