package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// The package's tests share one database: every fixture here is isolated by a source_name unique to
// the test or by a window years away from the other tests' rows (which are created "now").

func newMetricsServer(t *testing.T, env map[string]string) *testServer {
	t.Helper()
	return newTestServer(t, func(_ *Config, d *Deps) {
		st := testStore(t)
		d.Metrics, d.DetectionRules = st, st
		d.Enrichment.Env = store.MapEnv(env)
	})
}

// metricsAlertRow is an alerts row with every timestamp the metrics read.
type metricsAlertRow struct {
	bun.BaseModel `bun:"table:alerts"`

	UUID                uuid.UUID  `bun:"uuid,pk,type:uuid"`
	Title               string     `bun:"title"`
	Severity            string     `bun:"severity"`
	Status              string     `bun:"status"`
	SourceName          string     `bun:"source_name"`
	OccurredAt          time.Time  `bun:"occurred_at"`
	IngestedAt          time.Time  `bun:"ingested_at"`
	CreatedAt           time.Time  `bun:"created_at"`
	AcknowledgedAt      *time.Time `bun:"acknowledged_at"`
	TriagedAt           *time.Time `bun:"triaged_at"`
	ClosedAt            *time.Time `bun:"closed_at"`
	EnrichedAt          *time.Time `bun:"enriched_at"`
	CloseClassification *string    `bun:"close_classification"`
	DetectionRuleID     *int64     `bun:"detection_rule_id"`
}

// alertAt describes an alert by offsets from the moment Vigil ingested (and created) it.
type alertAt struct {
	severity, status string
	occurred         time.Time
	detect           time.Duration  // created − occurred
	ack, triage      *time.Duration // after ingestion
	closeAfter       *time.Duration
	enrich           *time.Duration
	classification   string
	rule             *int64
}

func insertMetricsAlert(t *testing.T, st *store.Store, source string, a alertAt) uuid.UUID {
	t.Helper()
	created := a.occurred.Add(a.detect)
	after := func(d *time.Duration) *time.Time {
		if d == nil {
			return nil
		}
		v := created.Add(*d)
		return &v
	}
	row := metricsAlertRow{UUID: uuid.New(), Title: "metrics alert", Severity: a.severity, Status: a.status, SourceName: source,
		OccurredAt: a.occurred, IngestedAt: created, CreatedAt: created, AcknowledgedAt: after(a.ack), TriagedAt: after(a.triage),
		ClosedAt: after(a.closeAfter), EnrichedAt: after(a.enrich), DetectionRuleID: a.rule}
	if a.classification != "" {
		row.CloseClassification = &a.classification
	}
	_, err := st.DB().NewInsert().Model(&row).Exec(context.Background())
	require.NoError(t, err)
	return row.UUID
}

func dur(d time.Duration) *time.Duration { return &d }

func windowQuery(from, to time.Time) string {
	return "from_time=" + url.QueryEscape(from.Format(time.RFC3339)) + "&to_time=" + url.QueryEscape(to.Format(time.RFC3339))
}

func getData(t *testing.T, ts *testServer, key, path string) map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodGet, path, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

func obj(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }

func TestMetricsAlerts(t *testing.T) {
	ts := newMetricsServer(t, nil)
	ctx := context.Background()
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	source := "metrics-test-" + uuid.NewString()[:8]

	r1 := store.DetectionRule{Name: "metrics rule one " + source, IsActive: true}
	_, err := ts.Store.CreateDetectionRule(ctx, &r1)
	require.NoError(t, err)
	r2 := store.DetectionRule{Name: "metrics rule two " + source, IsActive: true}
	_, err = ts.Store.CreateDetectionRule(ctx, &r2)
	require.NoError(t, err)

	t0 := time.Date(2011, 6, 1, 0, 0, 0, 0, time.UTC)
	fpLogic, fpData, tp := "False Positive - Incorrect Detection Logic", "False Positive - Inaccurate Data", "True Positive - Suspicious Activity"
	day, hour := 24*time.Hour, time.Hour
	fixture := []alertAt{
		// Day 0: an open alert received 60 s after it happened; one triaged 10 min after ingestion.
		{severity: "High", status: "Open", occurred: t0.Add(hour), detect: 60 * time.Second},
		{severity: "High", status: "Triaging", occurred: t0.Add(2 * hour), detect: 120 * time.Second, ack: dur(10 * time.Minute),
			triage: dur(10 * time.Minute)},
		// Day 1: three closed alerts of rule one (two false positives), closed 1 h, 2 h, 3 h after ingestion.
		{severity: "Low", status: "Closed", occurred: t0.Add(day), detect: 30 * time.Second, ack: dur(20 * time.Minute),
			closeAfter: dur(hour), enrich: dur(5 * time.Second), classification: fpLogic, rule: &r1.ID},
		{severity: "Critical", status: "Closed", occurred: t0.Add(day + 3*hour), detect: 30 * time.Second, ack: dur(30 * time.Minute),
			closeAfter: dur(2 * hour), enrich: dur(15 * time.Second), classification: fpData, rule: &r1.ID},
		{severity: "Critical", status: "Closed", occurred: t0.Add(day + 6*hour), ack: dur(0), closeAfter: dur(3 * hour),
			enrich: dur(25 * time.Second), classification: tp, rule: &r1.ID},
		// Day 2: a duplicate of rule two closed after 4 h; an escalated alert acknowledged after 40 min.
		{severity: "Medium", status: "Closed", occurred: t0.Add(2 * day), ack: dur(0), closeAfter: dur(4 * hour),
			classification: "Duplicate", rule: &r2.ID},
		{severity: "Medium", status: "Escalated", occurred: t0.Add(2*day + 12*hour), ack: dur(40 * time.Minute)},
	}
	var ids []uuid.UUID
	for _, a := range fixture {
		ids = append(ids, insertMetricsAlert(t, ts.Store, source, a))
	}
	// Outside: created before the window, created exactly at its (exclusive) end, and another source.
	insertMetricsAlert(t, ts.Store, source, alertAt{severity: "Low", status: "Open", occurred: t0.Add(-hour)})
	insertMetricsAlert(t, ts.Store, source, alertAt{severity: "Low", status: "Open", occurred: t0.Add(4 * day)})
	insertMetricsAlert(t, ts.Store, source+"-other", alertAt{severity: "Low", status: "Closed", occurred: t0.Add(hour),
		closeAfter: dur(hour), classification: tp})

	// Indicators: alert 0 has one enriched; alert 1 one enriched and one not; alert 2 one enriched.
	enriched := func(ind store.Indicator) {
		_, err := ts.Store.DB().NewUpdate().Table("indicators").Set("is_enriched = true").Where("uuid = ?", ind.UUID).Exec(ctx)
		require.NoError(t, err)
	}
	okDomain := linkIndicator(t, ts.Store, ids[0], "domain", "ok."+source+".example")
	enriched(okDomain)
	linkIndicator(t, ts.Store, ids[1], "domain", "ok."+source+".example")
	linkIndicator(t, ts.Store, ids[1], "domain", "pending."+source+".example")
	enriched(linkIndicator(t, ts.Store, ids[2], "domain", "other."+source+".example"))

	base := "/v1/metrics/alerts?source_name=" + source + "&"
	m := getData(t, ts, reader, base+windowQuery(t0, t0.Add(4*day)))
	require.Equal(t, "2011-06-01T00:00:00Z", m["from_time"])
	require.Equal(t, "2011-06-05T00:00:00Z", m["to_time"])
	require.Equal(t, "day", m["bucket"])
	require.EqualValues(t, 7, m["total_alerts"])
	require.Equal(t, map[string]any{"Open": 1.0, "Triaging": 1.0, "Escalated": 1.0, "Closed": 4.0}, m["alerts_by_status"])
	require.Equal(t, map[string]any{"Pending": 0.0, "Informational": 0.0, "Low": 1.0, "Medium": 2.0, "High": 2.0, "Critical": 2.0},
		m["alerts_by_severity"])
	require.Equal(t, map[string]any{source: 7.0}, m["alerts_by_source"])
	require.Equal(t, map[string]any{"Pending": 0.0, "Informational": 0.0, "Low": 0.0, "Medium": 1.0, "High": 2.0, "Critical": 0.0},
		m["active_alerts_by_severity"])
	require.EqualValues(t, 4, m["closed_alerts"])
	// 2 of the 4 closed alerts are False Positive…, 1 True Positive….
	require.InDelta(t, 0.5, m["false_positive_rate"], 1e-9)
	require.InDelta(t, 0.25, m["true_positive_rate"], 1e-9)
	require.Equal(t, []any{
		map[string]any{"start": "2011-06-01T00:00:00Z", "count": 2.0}, map[string]any{"start": "2011-06-02T00:00:00Z", "count": 3.0},
		map[string]any{"start": "2011-06-03T00:00:00Z", "count": 2.0}, map[string]any{"start": "2011-06-04T00:00:00Z", "count": 0.0},
	}, m["alerts_over_time"])
	requireTiming := func(name string, mean, p50, p90 float64) {
		t.Helper()
		tm := obj(m, name)
		require.InDelta(t, mean, tm["mean_seconds"], 1e-6, name)
		require.InDelta(t, p50, tm["p50_seconds"], 1e-6, name)
		require.InDelta(t, p90, tm["p90_seconds"], 1e-6, name)
	}
	// Detect: 60, 120, 30, 30, 0, 0, 0 s → mean 240/7; sorted 0 0 0 30 30 60 120: p50 30, p90 at rank 5.4 → 60 + 0.4·60.
	requireTiming("time_to_detect", 240.0/7, 30, 84)
	// Acknowledge (6 acknowledged): 600, 1200, 1800, 0, 0, 2400 → mean 1000; sorted 0 0 600 1200 1800 2400:
	// p50 at rank 2.5 → 900, p90 at rank 4.5 → 2100 (MTTA).
	requireTiming("time_to_acknowledge", 1000, 900, 2100)
	requireTiming("time_to_triage", 600, 600, 600)
	// Close (4 closed): 1 h, 2 h, 3 h, 4 h → mean 9000; p50 at rank 1.5 → 9000; p90 at rank 2.7 → 10800 + 0.7·3600 = 13320 (MTTC).
	requireTiming("time_to_close", 9000, 9000, 13320)
	// Enrich: 5, 15, 25 s → mean 15, p50 15, p90 at rank 1.8 → 15 + 0.8·10 = 23.
	requireTiming("time_to_enrich", 15, 15, 23)
	// Coverage: 3 alerts have indicators; alerts 0 and 2 have every one enriched → 2/3.
	cov := obj(m, "enrichment_coverage")
	require.EqualValues(t, 3, cov["alerts_with_indicators"])
	require.EqualValues(t, 2, cov["fully_enriched_alerts"])
	require.InDelta(t, 2.0/3, cov["coverage"], 1e-9)
	// Rule one: 3 alerts, all closed, 2 false positives; rule two: 1 closed duplicate.
	top := m["top_detection_rules"].([]any)
	require.Len(t, top, 2)
	first, second := top[0].(map[string]any), top[1].(map[string]any)
	require.Equal(t, r1.UUID.String(), first["uuid"])
	require.Equal(t, r1.Name, first["name"])
	require.EqualValues(t, 3, first["alert_count"])
	require.EqualValues(t, 3, first["closed_alerts"])
	require.InDelta(t, 2.0/3, first["false_positive_rate"], 1e-9)
	require.Equal(t, r2.UUID.String(), second["uuid"])
	require.InDelta(t, 0.0, second["false_positive_rate"], 1e-9)

	t.Run("filters", func(t *testing.T) {
		m := getData(t, ts, reader, base+"severity=Critical,Low&"+windowQuery(t0, t0.Add(4*day)))
		require.EqualValues(t, 3, m["total_alerts"])
		require.InDelta(t, 2.0/3, m["false_positive_rate"], 1e-9)
		m = getData(t, ts, reader, base+"detection_rule_uuid="+r2.UUID.String()+"&"+windowQuery(t0, t0.Add(4*day)))
		require.EqualValues(t, 1, m["total_alerts"])
		require.InDelta(t, 0.0, m["false_positive_rate"], 1e-9)
		m = getData(t, ts, reader, base+"detection_rule_uuid="+uuid.NewString()+"&"+windowQuery(t0, t0.Add(4*day)))
		require.EqualValues(t, 0, m["total_alerts"])
		// Hostile text is a value, never SQL.
		m = getData(t, ts, reader, "/v1/metrics/alerts?source_name="+url.QueryEscape(source+"' OR '1'='1")+"&"+windowQuery(t0, t0.Add(4*day)))
		require.EqualValues(t, 0, m["total_alerts"])
	})

	t.Run("one alert, hourly", func(t *testing.T) {
		m := getData(t, ts, reader, base+windowQuery(t0, t0.Add(2*hour)))
		require.Equal(t, "hour", m["bucket"])
		require.EqualValues(t, 1, m["total_alerts"])
		require.Equal(t, []any{
			map[string]any{"start": "2011-06-01T00:00:00Z", "count": 0.0}, map[string]any{"start": "2011-06-01T01:00:00Z", "count": 1.0},
		}, m["alerts_over_time"])
		require.Equal(t, map[string]any{"mean_seconds": 60.0, "p50_seconds": 60.0, "p90_seconds": 60.0}, m["time_to_detect"])
		require.Equal(t, map[string]any{"mean_seconds": nil, "p50_seconds": nil, "p90_seconds": nil}, m["time_to_acknowledge"])
		require.Nil(t, m["false_positive_rate"])
		require.InDelta(t, 1.0, obj(m, "enrichment_coverage")["coverage"], 1e-9)
		require.Empty(t, m["top_detection_rules"])
	})

	t.Run("empty window", func(t *testing.T) {
		from := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
		m := getData(t, ts, reader, base+windowQuery(from, from.Add(3*day)))
		require.EqualValues(t, 0, m["total_alerts"])
		require.EqualValues(t, 0, m["closed_alerts"])
		require.Nil(t, m["false_positive_rate"])
		require.Nil(t, m["true_positive_rate"])
		for _, name := range []string{"time_to_detect", "time_to_acknowledge", "time_to_triage", "time_to_close", "time_to_enrich"} {
			require.Equal(t, map[string]any{"mean_seconds": nil, "p50_seconds": nil, "p90_seconds": nil}, m[name], name)
		}
		require.Equal(t, map[string]any{"alerts_with_indicators": 0.0, "fully_enriched_alerts": 0.0, "coverage": nil}, m["enrichment_coverage"])
		require.Equal(t, map[string]any{}, m["alerts_by_source"])
		require.Equal(t, []any{}, m["top_detection_rules"])
		require.Len(t, m["alerts_over_time"], 3)
		for _, b := range m["alerts_over_time"].([]any) {
			require.EqualValues(t, 0, b.(map[string]any)["count"])
		}
	})

	t.Run("default window is the last 30 days", func(t *testing.T) {
		recent := insertMetricsAlert(t, ts.Store, source, alertAt{severity: "High", status: "Open", occurred: time.Now().Add(-time.Hour)})
		t.Cleanup(func() {
			_, err := ts.Store.DB().NewDelete().Table("alerts").Where("uuid = ?", recent).Exec(ctx)
			require.NoError(t, err)
		})
		before := time.Now().UTC()
		m := getData(t, ts, reader, "/v1/metrics/alerts?source_name="+source)
		to, err := time.Parse(time.RFC3339Nano, m["to_time"].(string))
		require.NoError(t, err)
		from, err := time.Parse(time.RFC3339Nano, m["from_time"].(string))
		require.NoError(t, err)
		require.False(t, to.Before(before.Add(-time.Second)))
		require.Equal(t, 30*day, to.Sub(from))
		require.Equal(t, "day", m["bucket"])
		require.EqualValues(t, 1, m["total_alerts"])
		require.Len(t, m["alerts_over_time"], 31) // the window touches 31 UTC days
	})
}

func TestMetricsValidation(t *testing.T) {
	ts := newMetricsServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	for _, path := range []string{"/v1/metrics/alerts", "/v1/metrics/workflows", "/v1/metrics/summary"} {
		for _, tc := range []struct{ query, want string }{
			{"from_time=yesterday", "query.from_time"},
			{"to_time=2026-11-01T00:00:00", "query.to_time"}, // no offset
			{"from_time=2026-11-02T00:00:00Z&to_time=2026-11-01T00:00:00Z", "query.from_time"},
			{"from_time=2026-11-01T00:00:00Z&to_time=2026-11-01T00:00:00Z", "query.from_time"},
			{"from_time=2024-01-01T00:00:00Z&to_time=2026-01-01T00:00:00Z", "query.from_time"}, // > 366 days
		} {
			r := ts.do(t, http.MethodGet, path+"?"+tc.query, admin, nil)
			require.Equal(t, []string{tc.want}, uniqueLocs(requireValidation(t, r)), path+"?"+tc.query)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"severity=High,Bogus", "query.severity.1"},
		{"severity=high", "query.severity.0"},
		{"detection_rule_uuid=not-a-uuid", "query.detection_rule_uuid"},
		{"detection_rule_uuid=1", "query.detection_rule_uuid"},
		{"source_name=a%00b", "query.source_name"},
		{"source_name=%ff%fe", "query.source_name"},
		{"source_name=" + strings.Repeat("a", 101), "query.source_name"},
	} {
		r := ts.do(t, http.MethodGet, "/v1/metrics/alerts?"+tc.query, admin, nil)
		require.Equal(t, []string{tc.want}, uniqueLocs(requireValidation(t, r)), tc.query)
	}
	// Every field error at once.
	r := ts.do(t, http.MethodGet, "/v1/metrics/alerts?from_time=x&severity=Bogus&detection_rule_uuid=y", admin, nil)
	require.ElementsMatch(t, []string{"query.from_time", "query.severity.0", "query.detection_rule_uuid"}, uniqueLocs(requireValidation(t, r)))
}

func TestMetricsScopes(t *testing.T) {
	ts := newMetricsServer(t, nil)
	alertsRead := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	workflowsRead := mustKey(t, ts.Store, auth.ScopeWorkflowsRead)
	for _, tc := range []struct {
		path, key, scope string
	}{
		{"/v1/metrics/alerts", workflowsRead, auth.ScopeAlertsRead},
		{"/v1/metrics/summary", workflowsRead, auth.ScopeAlertsRead},
		{"/v1/metrics/workflows", alertsRead, auth.ScopeWorkflowsRead},
	} {
		m := requireError(t, ts.do(t, http.MethodGet, tc.path, tc.key, nil), http.StatusForbidden, "FORBIDDEN")
		require.Equal(t, []any{tc.scope}, obj(obj(m, "error"), "details")["required_scopes"], tc.path)
		requireError(t, ts.do(t, http.MethodGet, tc.path, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/metrics/alerts", alertsRead, nil).Status)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/metrics/summary", alertsRead, nil).Status)
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, "/v1/metrics/workflows", workflowsRead, nil).Status)
}

// workflowFixture inserts workflows, runs, approval requests and decisions directly.
type workflowFixture struct {
	t  *testing.T
	st *store.Store
}

func (f workflowFixture) workflow(name string, savedMinutes *int) uuid.UUID {
	f.t.Helper()
	var id uuid.UUID
	err := f.st.DB().NewRaw(`INSERT INTO workflows (name, steps, time_saved_minutes, state) VALUES (?, '[]', ?, 'active') RETURNING uuid`,
		name, savedMinutes).Scan(context.Background(), &id)
	require.NoError(f.t, err)
	return id
}

func (f workflowFixture) run(wf uuid.UUID, status, trigger string, created time.Time) uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	_, err := f.st.DB().ExecContext(context.Background(), `INSERT INTO workflow_runs (uuid, workflow_uuid, workflow_version, status, trigger_source,
		indicator_type, indicator_value, temporal_workflow_id, created_at, updated_at) VALUES (?, ?, 1, ?, ?, 'ip', '192.0.2.1', ?, ?, ?)`,
		id, wf, status, trigger, "workflow-run-"+id.String(), created, created)
	require.NoError(f.t, err)
	return id
}

// approval records a request for run created at created; each decision is an offset after it.
func (f workflowFixture) approval(wf, run uuid.UUID, trigger, status string, created, expires time.Time, decisions ...time.Duration) {
	f.t.Helper()
	ctx := context.Background()
	id := uuid.New()
	_, err := f.st.DB().ExecContext(ctx, `INSERT INTO workflow_approval_requests (uuid, workflow_uuid, workflow_name, run_uuid, trigger_source,
		indicator_type, indicator_value, risk_level, status, required_approvals, expires_at, created_at, updated_at)
		VALUES (?, ?, 'wf', ?, ?, 'ip', '192.0.2.1', 'high', ?, ?, ?, ?, ?)`, id, wf, run, trigger, status, max(1, len(decisions)), expires, created, created)
	require.NoError(f.t, err)
	decision := "approved"
	if status == "rejected" {
		decision = "rejected"
	}
	for i, d := range decisions {
		_, err := f.st.DB().ExecContext(ctx, `INSERT INTO workflow_approval_decisions (approval_uuid, identity, responder_id, decision, decided_at)
			VALUES (?, ?, 'analyst', ?, ?)`, id, "key:"+uuid.NewString(), decision, created.Add(d))
		require.NoError(f.t, err, i)
	}
}

func TestMetricsWorkflows(t *testing.T) {
	ts := newMetricsServer(t, nil)
	reader := mustKey(t, ts.Store, auth.ScopeWorkflowsRead)
	f := workflowFixture{t: t, st: ts.Store}
	suffix := uuid.NewString()[:8]
	thirty, ten := 30, 10
	wfA := f.workflow("metrics A "+suffix, &thirty)
	wfB := f.workflow("metrics B "+suffix, &ten)
	wfC := f.workflow("metrics C "+suffix, nil)

	t0 := time.Date(2012, 3, 1, 0, 0, 0, 0, time.UTC)
	day, hour := 24*time.Hour, time.Hour
	far := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	// A: 3 succeeded (2 human on day 0, 1 agent on day 1), 1 failed (agent, day 1).
	a1 := f.run(wfA, "succeeded", "human", t0.Add(hour))
	f.run(wfA, "succeeded", "human", t0.Add(2*hour))
	a3 := f.run(wfA, "succeeded", "agent", t0.Add(day+hour))
	f.run(wfA, "failed", "agent", t0.Add(day+2*hour))
	// B (day 2): succeeded (agent), timed_out (human), rejected (agent), pending_approval (agent).
	f.run(wfB, "succeeded", "agent", t0.Add(2*day+hour))
	f.run(wfB, "timed_out", "human", t0.Add(2*day+2*hour))
	b3 := f.run(wfB, "rejected", "agent", t0.Add(2*day+3*hour))
	b4 := f.run(wfB, "pending_approval", "agent", t0.Add(2*day+4*hour))
	// C (day 1): succeeded (human, no time_saved_minutes), cancelled (human).
	f.run(wfC, "succeeded", "human", t0.Add(day+3*hour))
	c2 := f.run(wfC, "cancelled", "human", t0.Add(day+4*hour))
	// Outside the window.
	f.run(wfA, "succeeded", "human", t0.Add(-hour))
	f.run(wfA, "succeeded", "human", t0.Add(3*day))

	// Approvals: approved after 5 min; approved by two responders, the second after 15 min; rejected after
	// 10 min; pending; pending but past expires_at (so expired).
	f.approval(wfA, a1, "human", "approved", t0.Add(hour), far, 5*time.Minute)
	f.approval(wfA, a3, "agent", "approved", t0.Add(day+hour), far, time.Minute, 15*time.Minute)
	f.approval(wfB, b3, "agent", "rejected", t0.Add(2*day+3*hour), far, 10*time.Minute)
	f.approval(wfB, b4, "agent", "pending", t0.Add(2*day+4*hour), far)
	f.approval(wfC, c2, "human", "pending", t0.Add(day+4*hour), t0.Add(day+5*hour))

	m := getData(t, ts, reader, "/v1/metrics/workflows?"+windowQuery(t0, t0.Add(3*day)))
	require.Equal(t, "day", m["bucket"])
	require.EqualValues(t, 10, m["total_runs"])
	require.Equal(t, map[string]any{"queued": 0.0, "pending_approval": 1.0, "running": 0.0, "succeeded": 5.0, "failed": 1.0,
		"timed_out": 1.0, "rejected": 1.0, "expired": 0.0, "cancelled": 1.0}, m["runs_by_status"])
	require.Equal(t, map[string]any{"human": 5.0, "agent": 5.0}, m["runs_by_trigger_source"])
	// 5 succeeded of the 7 that executed to an end (5 succeeded + 1 failed + 1 timed out).
	require.InDelta(t, 5.0/7, m["success_rate"], 1e-9)
	// 3 × 30 min (A) + 1 × 10 min (B) + 1 × unset (C) = 100 min.
	require.InDelta(t, 100.0/60, m["time_saved_hours"], 1e-9)
	require.Equal(t, []any{
		map[string]any{"start": "2012-03-01T00:00:00Z", "count": 2.0}, map[string]any{"start": "2012-03-02T00:00:00Z", "count": 4.0},
		map[string]any{"start": "2012-03-03T00:00:00Z", "count": 4.0},
	}, m["runs_over_time"])
	most := m["most_executed"].([]any)
	require.Len(t, most, 3)
	require.Equal(t, map[string]any{"workflow_uuid": wfA.String(), "name": "metrics A " + suffix, "run_count": 4.0, "succeeded_runs": 3.0,
		"time_saved_hours": 1.5}, most[0])
	require.Equal(t, wfB.String(), most[1].(map[string]any)["workflow_uuid"]) // 4 runs, tie broken by name
	require.Equal(t, wfC.String(), most[2].(map[string]any)["workflow_uuid"])
	require.EqualValues(t, 0, most[2].(map[string]any)["time_saved_hours"])

	ap := obj(m, "approvals")
	require.EqualValues(t, 5, ap["total"])
	require.EqualValues(t, 1, ap["pending"])
	require.EqualValues(t, 2, ap["approved"])
	require.EqualValues(t, 1, ap["rejected"])
	require.EqualValues(t, 1, ap["expired"])
	require.EqualValues(t, 0, ap["cancelled"])
	// Decided requests answered after 300, 900 (the quorum-completing decision) and 600 s → median 600.
	require.InDelta(t, 600.0, ap["median_response_seconds"], 1e-6)
	require.Equal(t, map[string]any{
		"human": map[string]any{"pending": 0.0, "approved": 1.0, "rejected": 0.0, "expired": 1.0, "cancelled": 0.0},
		"agent": map[string]any{"pending": 1.0, "approved": 1.0, "rejected": 1.0, "expired": 0.0, "cancelled": 0.0},
	}, ap["by_trigger_source"])

	t.Run("one run, hourly", func(t *testing.T) {
		m := getData(t, ts, reader, "/v1/metrics/workflows?"+windowQuery(t0, t0.Add(90*time.Minute)))
		require.Equal(t, "hour", m["bucket"])
		require.EqualValues(t, 1, m["total_runs"])
		require.InDelta(t, 1.0, m["success_rate"], 1e-9)
		require.InDelta(t, 0.5, m["time_saved_hours"], 1e-9)
		require.Equal(t, []any{
			map[string]any{"start": "2012-03-01T00:00:00Z", "count": 0.0}, map[string]any{"start": "2012-03-01T01:00:00Z", "count": 1.0},
		}, m["runs_over_time"])
		require.InDelta(t, 300.0, obj(m, "approvals")["median_response_seconds"], 1e-6)
	})

	t.Run("empty window", func(t *testing.T) {
		m := getData(t, ts, reader, "/v1/metrics/workflows?"+windowQuery(far, far.Add(day)))
		require.EqualValues(t, 0, m["total_runs"])
		require.Nil(t, m["success_rate"])
		require.EqualValues(t, 0, m["time_saved_hours"])
		require.Equal(t, []any{}, m["most_executed"])
		require.Len(t, m["runs_over_time"], 24)
		ap := obj(m, "approvals")
		require.EqualValues(t, 0, ap["total"])
		require.Nil(t, ap["median_response_seconds"])
	})
}

func TestMetricsSummary(t *testing.T) {
	ts := newMetricsServer(t, map[string]string{"METRICS_TEST_TOKEN": "set"})
	ctx := context.Background()
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	t0 := time.Date(2013, 5, 1, 0, 0, 0, 0, time.UTC)
	window := windowQuery(t0, t0.Add(7*24*time.Hour))
	source := "metrics-summary-" + uuid.NewString()[:8]

	before := getData(t, ts, reader, "/v1/metrics/summary?"+window)
	require.Equal(t, map[string]any{"total": 0.0, "open": 0.0, "mtta_seconds": nil, "mttc_seconds": nil, "false_positive_rate": nil,
		"open_by_severity": map[string]any{"Pending": 0.0, "Informational": 0.0, "Low": 0.0, "Medium": 0.0, "High": 0.0, "Critical": 0.0}},
		before["alerts"])
	require.Equal(t, map[string]any{"runs": 0.0, "success_rate": nil, "time_saved_hours": 0.0}, before["workflows"])
	require.Equal(t, map[string]any{"pending": 0.0}, before["approvals"])

	// Alerts: a false positive acknowledged after 60 s and closed after 600 s, a true positive
	// acknowledged after 120 s and closed after 1200 s, an open High one.
	insertMetricsAlert(t, ts.Store, source, alertAt{severity: "Low", status: "Closed", occurred: t0.Add(time.Hour), ack: dur(time.Minute),
		closeAfter: dur(10 * time.Minute), classification: "False Positive - Inaccurate Data"})
	insertMetricsAlert(t, ts.Store, source, alertAt{severity: "Low", status: "Closed", occurred: t0.Add(2 * time.Hour),
		ack: dur(2 * time.Minute), closeAfter: dur(20 * time.Minute), classification: "True Positive - Suspicious Activity"})
	insertMetricsAlert(t, ts.Store, source, alertAt{severity: "High", status: "Open", occurred: t0.Add(3 * time.Hour)})
	// Runs: 2 succeeded and 1 failed of a workflow saving 30 minutes; one awaiting approval.
	f := workflowFixture{t: t, st: ts.Store}
	thirty := 30
	wf := f.workflow("metrics summary "+source, &thirty)
	f.run(wf, "succeeded", "human", t0.Add(time.Hour))
	f.run(wf, "succeeded", "agent", t0.Add(2*time.Hour))
	f.run(wf, "failed", "agent", t0.Add(3*time.Hour))
	pending := f.run(wf, "pending_approval", "agent", t0.Add(4*time.Hour))
	f.approval(wf, pending, "agent", "pending", t0.Add(4*time.Hour), time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))

	// Providers: one needing no credentials, one with its environment variable set, one missing its
	// credentials, one inactive.
	providers := []store.EnrichmentProvider{
		{ProviderName: "metrics_none_" + source[16:], IsActive: true, AuthType: store.AuthNone},
		{ProviderName: "metrics_env_" + source[16:], IsActive: true, AuthType: store.AuthBearer,
			EnvVarMapping: map[string]string{"token": "METRICS_TEST_TOKEN"}},
		{ProviderName: "metrics_nocreds_" + source[16:], IsActive: true, AuthType: store.AuthBearer,
			EnvVarMapping: map[string]string{"token": "METRICS_TEST_UNSET"}},
		{ProviderName: "metrics_off_" + source[16:], IsActive: false, AuthType: store.AuthNone},
	}
	for i := range providers {
		providers[i].DisplayName, providers[i].HTTPConfig = providers[i].ProviderName, map[string]any{"steps": []any{}}
		require.NoError(t, ts.Store.CreateProvider(ctx, &providers[i]))
		id := providers[i].UUID
		t.Cleanup(func() { require.NoError(t, ts.Store.DeleteProvider(ctx, id)) })
	}

	m := getData(t, ts, reader, "/v1/metrics/summary?"+window)
	require.Equal(t, "2013-05-01T00:00:00Z", m["from_time"])
	alerts := obj(m, "alerts")
	require.EqualValues(t, 3, alerts["total"])
	require.EqualValues(t, 1, alerts["open"])
	require.Equal(t, map[string]any{"Pending": 0.0, "Informational": 0.0, "Low": 0.0, "Medium": 0.0, "High": 1.0, "Critical": 0.0},
		alerts["open_by_severity"])
	require.InDelta(t, 90.0, alerts["mtta_seconds"], 1e-6)  // (60 + 120) / 2
	require.InDelta(t, 900.0, alerts["mttc_seconds"], 1e-6) // (600 + 1200) / 2
	require.InDelta(t, 0.5, alerts["false_positive_rate"], 1e-9)
	wfs := obj(m, "workflows")
	require.EqualValues(t, 4, wfs["runs"])
	require.InDelta(t, 2.0/3, wfs["success_rate"], 1e-9)
	require.InDelta(t, 1.0, wfs["time_saved_hours"], 1e-9)
	require.Equal(t, map[string]any{"pending": 1.0}, m["approvals"])
	// Providers are counted now (not windowed), over the whole table: compare with before.
	pb, pa := obj(before, "enrichment_providers"), obj(m, "enrichment_providers")
	require.EqualValues(t, pb["total"].(float64)+4, pa["total"])
	require.EqualValues(t, pb["active"].(float64)+3, pa["active"])
	require.EqualValues(t, pb["configured"].(float64)+2, pa["configured"])

	// The same figures as the alerts route over the same window (the summary reads the daily roll-up,
	// the alerts route the alerts).
	sameAsAlertsRoute := func(window string) map[string]any {
		t.Helper()
		alerts := obj(getData(t, ts, reader, "/v1/metrics/summary?"+window), "alerts")
		full := getData(t, ts, reader, "/v1/metrics/alerts?source_name="+source+"&"+window)
		require.Equal(t, full["total_alerts"], alerts["total"])
		require.Equal(t, full["active_alerts_by_severity"], alerts["open_by_severity"])
		require.InDelta(t, obj(full, "time_to_acknowledge")["mean_seconds"], alerts["mtta_seconds"], 1e-9)
		require.InDelta(t, obj(full, "time_to_close")["mean_seconds"], alerts["mttc_seconds"], 1e-9)
		require.Equal(t, full["false_positive_rate"], alerts["false_positive_rate"])
		return alerts
	}
	sameAsAlertsRoute(window)
	// A window that is not whole days: its ends are counted from the alerts, its middle from the roll-up.
	edgy := windowQuery(t0.Add(90*time.Minute), t0.Add(6*24*time.Hour+time.Hour))
	a := sameAsAlertsRoute(edgy)
	require.EqualValues(t, 2, a["total"])
	require.InDelta(t, 120.0, a["mtta_seconds"], 1e-6)

	// The roll-up follows changes: close the open alert as a false positive after 1 h (acknowledged
	// after 30 s), then delete the true positive.
	_, err := ts.Store.DB().NewUpdate().Table("alerts").
		Set("status = 'Closed', close_classification = 'False Positive - Incorrect Detection Logic'").
		Set("acknowledged_at = ingested_at + interval '30 seconds', closed_at = ingested_at + interval '1 hour'").
		Where("source_name = ? AND status = 'Open'", source).Exec(ctx)
	require.NoError(t, err)
	a = sameAsAlertsRoute(window)
	require.EqualValues(t, 0, a["open"])
	require.InDelta(t, 70.0, a["mtta_seconds"], 1e-6)         // (60 + 120 + 30) / 3
	require.InDelta(t, 1800.0, a["mttc_seconds"], 1e-6)       // (600 + 1200 + 3600) / 3
	require.InDelta(t, 2.0/3, a["false_positive_rate"], 1e-9) // 2 of 3 closed
	_, err = ts.Store.DB().NewDelete().Table("alerts").Where("source_name = ? AND close_classification LIKE 'True%'", source).Exec(ctx)
	require.NoError(t, err)
	a = sameAsAlertsRoute(window)
	require.EqualValues(t, 2, a["total"])
	require.InDelta(t, 1.0, a["false_positive_rate"], 1e-9)
	sameAsAlertsRoute(edgy)
}
