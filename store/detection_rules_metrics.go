package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/vigil-soc/vigil/kit/severity"
)

// TopIndicatorsLimit bounds DetectionRuleMetrics.TopIndicators.
const TopIndicatorsLimit = 10

// DetectionRuleMetrics describes a rule's alerts whose occurred_at falls in the window.
type DetectionRuleMetrics struct {
	Window               MetricsWindow
	TotalAlerts          int
	ActiveAlerts         int // not Closed (activeAlert)
	ClosedAlerts         int
	ByStatus             map[string]int // every AlertStatus
	BySeverity           map[string]int // every AlertSeverity
	CloseClassifications map[string]int // every AlertCloseClassification, over closed alerts
	FalsePositiveRate    *float64       // Outcomes.Rates
	TruePositiveRate     *float64       // Outcomes.Rates
	AlertsOverTime       []TimeBucket   // one entry per UTC day of the window, zeros included
	MTTASeconds          *float64       // mean of the acknowledge timing (alertTimings)
	MTTCSeconds          *float64       // mean of the close timing (alertTimings)
	TopIndicators        []IndicatorCount
}

// IndicatorCount is an indicator and how many of the rule's alerts carry it.
type IndicatorCount struct {
	UUID       uuid.UUID `bun:"uuid"`
	Type       string    `bun:"type"`
	Value      string    `bun:"value"`
	Malice     string    `bun:"malice"`
	AlertCount int       `bun:"alert_count"`
}

// DetectionRuleMetrics computes the metrics of rule ruleID over w (on occurred_at) in one read-only,
// repeatable-read snapshot so the numbers agree with each other. Rates, timings and the series come
// from the same building blocks as AlertMetrics (store/metrics.go).
func (s *Store) DetectionRuleMetrics(ctx context.Context, ruleID int64, w MetricsWindow) (DetectionRuleMetrics, error) {
	m := DetectionRuleMetrics{Window: w,
		ByStatus: zeroCounts(AlertStatuses()), BySeverity: zeroCounts(severity.Names()),
		CloseClassifications: zeroCounts(CloseClassifications()), AlertsOverTime: []TimeBucket{}, TopIndicators: []IndicatorCount{}}
	if err := w.check(); err != nil {
		return DetectionRuleMetrics{}, fmt.Errorf("detection rule #%d metrics: %w", ruleID, err)
	}
	where, args := alertScope{Column: "occurred_at", Window: w, DetectionRuleID: &ruleID}.where()
	err := s.readSnapshot(ctx, func(ctx context.Context, tx bun.Tx) error {
		var agg struct {
			Total  int `bun:"total"`
			Active int `bun:"active"`
			Outcomes
			timingRow
		}
		err := tx.NewRaw(`SELECT count(*) AS total, count(*) FILTER (WHERE `+activeAlert+`) AS active, `+outcomeColumns+`,
			`+timingColumns(false, "acknowledge", "close")+`
			FROM alerts AS a WHERE `+where, args...).Scan(ctx, &agg)
		if err != nil {
			return fmt.Errorf("aggregate: %w", mapErr(err))
		}
		m.TotalAlerts, m.ActiveAlerts, m.ClosedAlerts = agg.Total, agg.Active, agg.Closed
		m.FalsePositiveRate, m.TruePositiveRate = agg.Outcomes.Rates()
		t := agg.timingRow.timings()
		m.MTTASeconds, m.MTTCSeconds = t.Acknowledge.Mean, t.Close.Mean

		var groups []struct {
			Status         string  `bun:"status"`
			Severity       string  `bun:"severity"`
			Classification *string `bun:"close_classification"`
			N              int     `bun:"n"`
		}
		err = tx.NewRaw(`
			SELECT a.status, a.severity, a.close_classification, count(*) AS n
			FROM alerts AS a
			WHERE `+where+`
			GROUP BY 1, 2, 3`, args...).Scan(ctx, &groups)
		if err != nil {
			return fmt.Errorf("group by status and severity: %w", mapErr(err))
		}
		for _, g := range groups {
			m.ByStatus[g.Status] += g.N
			m.BySeverity[g.Severity] += g.N
			if g.Status == "Closed" && g.Classification != nil {
				m.CloseClassifications[*g.Classification] += g.N
			}
		}

		if m.AlertsOverTime, err = timeSeries(ctx, tx, w, "day", "alerts AS a", "a.occurred_at", where, args...); err != nil {
			return fmt.Errorf("alerts per day: %w", err)
		}

		err = tx.NewRaw(`
			SELECT i.uuid, i.type, i.value, i.malice, count(*) AS alert_count
			FROM alert_indicators ai
			JOIN alerts a ON a.uuid = ai.alert_uuid
			JOIN indicators i ON i.uuid = ai.indicator_uuid
			WHERE `+where+`
			GROUP BY i.uuid
			ORDER BY alert_count DESC, i.type, i.value
			LIMIT ?`, append(args, TopIndicatorsLimit)...).Scan(ctx, &m.TopIndicators)
		if err != nil {
			return fmt.Errorf("top indicators: %w", mapErr(err))
		}
		return nil
	})
	if err != nil {
		return DetectionRuleMetrics{}, fmt.Errorf("detection rule #%d metrics: %w", ruleID, err)
	}
	if m.TopIndicators == nil {
		m.TopIndicators = []IndicatorCount{}
	}
	return m, nil
}

func zeroCounts(keys []string) map[string]int {
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		out[k] = 0
	}
	return out
}
