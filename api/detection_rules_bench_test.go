package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// BenchmarkDetectionRuleMetrics measures GET /v1/detection-rules/{uuid}/metrics (default 30-day
// window) for a rule with 10 000 alerts spread over 30 days, a third of them closed, each linked to
// 3 of 500 indicators; 20 000 alerts of other rules share the table.
func BenchmarkDetectionRuleMetrics(b *testing.B) {
	ts := newTestServer(b, func(_ *Config, d *Deps) {
		st := testStore(b)
		d.DetectionRules, d.ContextDocuments = st, st
	})
	ctx := context.Background()
	rule := store.DetectionRule{Name: "busy rule", IsActive: true}
	_, err := ts.Store.CreateDetectionRule(ctx, &rule)
	require.NoError(b, err)
	other := store.DetectionRule{Name: "other rule", IsActive: true}
	_, err = ts.Store.CreateDetectionRule(ctx, &other)
	require.NoError(b, err)
	_, err = ts.Store.DB().ExecContext(ctx, `
		INSERT INTO indicators (type, value)
		SELECT 'ip', '10.9.' || (g / 250) || '.' || (g % 250) FROM generate_series(0, 499) g
		ON CONFLICT DO NOTHING`)
	require.NoError(b, err)
	_, err = ts.Store.DB().ExecContext(ctx, `
		INSERT INTO alerts (title, severity, status, source_name, occurred_at, ingested_at, acknowledged_at, closed_at,
		                    close_classification, detection_rule_id)
		SELECT 'bench ' || g,
		       (ARRAY['Low','Medium','High','Critical'])[1 + g % 4],
		       CASE WHEN g % 3 = 0 THEN 'Closed' WHEN g % 3 = 1 THEN 'Triaging' ELSE 'Open' END,
		       'generic',
		       now() - (g % 29 || ' days')::interval - (g % 1440 || ' minutes')::interval,
		       now() - (g % 29 || ' days')::interval - (g % 1440 || ' minutes')::interval,
		       CASE WHEN g % 3 <> 2 THEN now() - (g % 29 || ' days')::interval END,
		       CASE WHEN g % 3 = 0 THEN now() - (g % 29 || ' days')::interval + interval '1 hour' END,
		       CASE WHEN g % 3 = 0 THEN (ARRAY['False Positive - Inaccurate Data','True Positive - Suspicious Activity','Duplicate'])[1 + g % 3] END,
		       CASE WHEN g < 10000 THEN ? ELSE ? END
		FROM generate_series(0, 29999) g`, rule.ID, other.ID)
	require.NoError(b, err)
	_, err = ts.Store.DB().ExecContext(ctx, `
		INSERT INTO alert_indicators (alert_uuid, indicator_uuid)
		SELECT a.uuid, i.uuid
		FROM (SELECT uuid, row_number() OVER () AS n FROM alerts WHERE detection_rule_id = ?) a
		JOIN (SELECT uuid, row_number() OVER (ORDER BY value) - 1 AS k FROM indicators WHERE value LIKE '10.9.%') i
		  ON i.k IN (a.n % 500, (a.n * 7) % 500, (a.n * 13) % 500)
		ON CONFLICT DO NOTHING`, rule.ID)
	require.NoError(b, err)
	_, err = ts.Store.DB().ExecContext(ctx, "ANALYZE alerts; ANALYZE alert_indicators")
	require.NoError(b, err)
	key := mustKey(b, ts.Store, auth.ScopeAlertsRead)
	benchGet(b, key, ts.URL+"/v1/detection-rules/"+rule.UUID.String()+"/metrics")
}
