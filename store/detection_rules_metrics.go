package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Enumerations the metrics report every value of (zero counts included).
func alertStatuses() []string { return []string{"Open", "Triaging", "Escalated", "Closed"} }

func alertSeverities() []string {
	return []string{"Pending", "Informational", "Low", "Medium", "High", "Critical"}
}

func closeClassifications() []string {
	return []string{
		"True Positive - Suspicious Activity", "Benign Positive - Suspicious but Expected",
		"False Positive - Incorrect Detection Logic", "False Positive - Inaccurate Data",
		"Undetermined", "Duplicate", "Not Applicable",
	}
}

// Bounds of DetectionRuleMetrics.
const (
	TopIndicatorsLimit = 10                   // indicators ranked
	MaxMetricsRange    = 366 * 24 * time.Hour // longest [from, to) window
)

// DetectionRuleMetrics describes a rule's alerts whose occurred_at falls in [From, To).
type DetectionRuleMetrics struct {
	From                 time.Time
	To                   time.Time
	TotalAlerts          int
	ActiveAlerts         int // not Closed
	ClosedAlerts         int
	ByStatus             map[string]int // every AlertStatus
	BySeverity           map[string]int // every AlertSeverity
	CloseClassifications map[string]int // every AlertCloseClassification, over closed alerts
	FalsePositiveRate    *float64       // "False Positive…" closes / closed alerts; nil with no closed alert
	TruePositiveRate     *float64       // "True Positive…" closes / closed alerts; nil with no closed alert
	AlertsOverTime       []DayCount     // one entry per UTC day from From's day to To's, zeros included
	MTTASeconds          *float64       // mean acknowledged_at − ingested_at over acknowledged alerts
	MTTCSeconds          *float64       // mean closed_at − ingested_at over closed alerts
	TopIndicators        []IndicatorCount
}

// DayCount is the number of alerts that occurred on one UTC day.
type DayCount struct {
	Date  time.Time // midnight UTC
	Count int
}

// IndicatorCount is an indicator and how many of the rule's alerts carry it.
type IndicatorCount struct {
	UUID       uuid.UUID `bun:"uuid"`
	Type       string    `bun:"type"`
	Value      string    `bun:"value"`
	Malice     string    `bun:"malice"`
	AlertCount int       `bun:"alert_count"`
}

// DetectionRuleMetrics computes the metrics of rule ruleID over [from, to) in one read-only,
// repeatable-read snapshot so the numbers agree with each other.
func (s *Store) DetectionRuleMetrics(ctx context.Context, ruleID int64, from, to time.Time) (DetectionRuleMetrics, error) {
	m := DetectionRuleMetrics{From: from.UTC(), To: to.UTC(),
		ByStatus: zeroCounts(alertStatuses()), BySeverity: zeroCounts(alertSeverities()),
		CloseClassifications: zeroCounts(closeClassifications()), AlertsOverTime: []DayCount{}, TopIndicators: []IndicatorCount{}}
	if !to.After(from) || to.Sub(from) > MaxMetricsRange {
		return DetectionRuleMetrics{}, fmt.Errorf("detection rule #%d metrics: window %s..%s is empty or longer than %s", ruleID, from, to, MaxMetricsRange)
	}
	opts := &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	err := s.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
		var agg struct {
			Total  int             `bun:"total"`
			Active int             `bun:"active"`
			Closed int             `bun:"closed"`
			FP     int             `bun:"fp"`
			TP     int             `bun:"tp"`
			MTTA   sql.NullFloat64 `bun:"mtta"`
			MTTC   sql.NullFloat64 `bun:"mttc"`
		}
		err := tx.NewRaw(`
			SELECT count(*) AS total,
			       count(*) FILTER (WHERE status <> 'Closed') AS active,
			       count(*) FILTER (WHERE status = 'Closed') AS closed,
			       count(*) FILTER (WHERE status = 'Closed' AND close_classification LIKE 'False Positive%') AS fp,
			       count(*) FILTER (WHERE status = 'Closed' AND close_classification LIKE 'True Positive%') AS tp,
			       avg(greatest(0, extract(epoch FROM acknowledged_at - ingested_at))) FILTER (WHERE acknowledged_at IS NOT NULL) AS mtta,
			       avg(greatest(0, extract(epoch FROM closed_at - ingested_at))) FILTER (WHERE status = 'Closed' AND closed_at IS NOT NULL) AS mttc
			FROM alerts
			WHERE detection_rule_id = ? AND occurred_at >= ? AND occurred_at < ?`, ruleID, from, to).Scan(ctx, &agg)
		if err != nil {
			return fmt.Errorf("aggregate: %w", mapErr(err))
		}
		m.TotalAlerts, m.ActiveAlerts, m.ClosedAlerts = agg.Total, agg.Active, agg.Closed
		if agg.Closed > 0 {
			fp, tp := float64(agg.FP)/float64(agg.Closed), float64(agg.TP)/float64(agg.Closed)
			m.FalsePositiveRate, m.TruePositiveRate = &fp, &tp
		}
		if agg.MTTA.Valid {
			m.MTTASeconds = &agg.MTTA.Float64
		}
		if agg.MTTC.Valid {
			m.MTTCSeconds = &agg.MTTC.Float64
		}

		var groups []struct {
			Status         string  `bun:"status"`
			Severity       string  `bun:"severity"`
			Classification *string `bun:"close_classification"`
			N              int     `bun:"n"`
		}
		err = tx.NewRaw(`
			SELECT status, severity, close_classification, count(*) AS n
			FROM alerts
			WHERE detection_rule_id = ? AND occurred_at >= ? AND occurred_at < ?
			GROUP BY 1, 2, 3`, ruleID, from, to).Scan(ctx, &groups)
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

		var days []struct {
			Day time.Time `bun:"day"`
			N   int       `bun:"n"`
		}
		err = tx.NewRaw(`
			SELECT date_trunc('day', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, count(*) AS n
			FROM alerts
			WHERE detection_rule_id = ? AND occurred_at >= ? AND occurred_at < ?
			GROUP BY 1 ORDER BY 1`, ruleID, from, to).Scan(ctx, &days)
		if err != nil {
			return fmt.Errorf("alerts per day: %w", mapErr(err))
		}
		perDay := make(map[time.Time]int, len(days))
		for _, d := range days {
			perDay[d.Day.UTC()] = d.N
		}
		last := m.To.Add(-time.Microsecond)
		for day := m.From.Truncate(24 * time.Hour); !day.After(last); day = day.Add(24 * time.Hour) {
			m.AlertsOverTime = append(m.AlertsOverTime, DayCount{Date: day, Count: perDay[day]})
		}

		err = tx.NewRaw(`
			SELECT i.uuid, i.type, i.value, i.malice, count(*) AS alert_count
			FROM alert_indicators ai
			JOIN alerts a ON a.uuid = ai.alert_uuid
			JOIN indicators i ON i.uuid = ai.indicator_uuid
			WHERE a.detection_rule_id = ? AND a.occurred_at >= ? AND a.occurred_at < ?
			GROUP BY i.uuid
			ORDER BY alert_count DESC, i.type, i.value
			LIMIT ?`, ruleID, from, to, TopIndicatorsLimit).Scan(ctx, &m.TopIndicators)
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
