package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// newAlert ingests a unique generic alert and returns its uuid.
func newAlert(t testing.TB, ts *testServer, key string, extra string) string {
	t.Helper()
	d := ingestData(t, ts.do(t, http.MethodPost, "/v1/ingest/generic", key, uniqueGeneric(t, extra)))
	require.Equal(t, "queued", d["status"])
	return d["alert_uuid"].(string)
}

func setAlert(t testing.TB, ts *testServer, id string, set string, args ...any) {
	t.Helper()
	_, err := ts.Store.DB().NewRaw("UPDATE alerts SET "+set+" WHERE uuid = ?", append(args, id)...).Exec(context.Background())
	require.NoError(t, err)
}

func alertData(t testing.TB, r response) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

func eventsOf(t testing.TB, ts *testServer, id, eventType string) []map[string]any {
	t.Helper()
	var out []map[string]any
	var rows []store.ActivityEvent
	require.NoError(t, ts.Store.DB().NewSelect().Model(&rows).Where("alert_uuid = ? AND event_type = ?", id, eventType).
		OrderExpr("created_at").Scan(context.Background()))
	for _, r := range rows {
		m := map[string]any{"actor_type": r.ActorType, "references": r.References}
		if r.ActorKeyPrefix != nil {
			m["actor_key_prefix"] = *r.ActorKeyPrefix
		}
		out = append(out, m)
	}
	return out
}

func TestPatchAlert_TransitionGraph(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	statuses := []string{"Open", "Triaging", "Escalated", "Closed"}
	allowed := map[string][]string{
		"Open": {"Triaging", "Escalated", "Closed"}, "Triaging": {"Escalated", "Closed"},
		"Escalated": {"Triaging", "Closed"}, "Closed": {"Open"},
	}
	for _, from := range statuses {
		for _, to := range statuses {
			t.Run(from+"→"+to, func(t *testing.T) {
				id := newAlert(t, ts, key, "")
				if from == "Closed" {
					setAlert(t, ts, id, "status = 'Closed', close_classification = 'Duplicate', closed_at = now()")
				} else {
					setAlert(t, ts, id, "status = ?", from)
				}
				body := map[string]any{"status": to}
				if to == "Closed" {
					body["close_classification"] = "Undetermined"
				}
				r := ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, body)
				switch {
				case from == to:
					a := alertData(t, r)
					require.Equal(t, from, a["status"])
					for _, typ := range []string{"alert_status_updated", "alert_closed", "alert_reopened"} {
						if !(from == "Closed" && typ == "alert_status_updated") { // reclassification of a closed alert
							require.Empty(t, eventsOf(t, ts, id, typ), "same status is a no-op: %s", typ)
						}
					}
				case slices.Contains(allowed[from], to):
					a := alertData(t, r)
					require.Equal(t, to, a["status"])
				default:
					d := requireValidation(t, r)
					require.Equal(t, "invalid_transition", d[0]["type"])
					require.Equal(t, []any{"body", "status"}, d[0]["loc"])
					ctx := d[0]["ctx"].(map[string]any)
					require.Equal(t, from, ctx["from"])
					require.Equal(t, to, ctx["to"])
					var got []string
					for _, x := range ctx["allowed"].([]any) {
						got = append(got, x.(string))
					}
					require.Equal(t, allowed[from], got)
					a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil))
					require.Equal(t, from, a["status"], "a refused move changes nothing")
				}
			})
		}
	}
}

func TestPatchAlert_Rules(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	prefix := key[:8]

	t.Run("closing needs a classification", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Closed"}))
		require.Contains(t, locs(d), "body.close_classification")
		d = requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Closed", "close_classification": "Maybe"}))
		require.Equal(t, "enum", d[0]["type"])
	})
	t.Run("classification only when closed", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"close_classification": "Duplicate"}))
		require.Contains(t, locs(d), "body.close_classification")
		d = requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Triaging", "close_classification": "Duplicate"}))
		require.Contains(t, locs(d), "body.close_classification")
	})
	t.Run("timestamps, reclassify, reopen", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		a := alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Triaging"}))
		ack, tri := a["acknowledged_at"], a["triaged_at"]
		require.NotNil(t, ack)
		require.NotNil(t, tri)
		require.Nil(t, a["closed_at"])
		alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Escalated"}))
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Triaging"}))
		require.Equal(t, ack, a["acknowledged_at"], "acknowledged_at is set once")
		require.Equal(t, tri, a["triaged_at"], "triaged_at is the first entry into Triaging")
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Closed", "close_classification": "False Positive - Inaccurate Data"}))
		require.Equal(t, "Closed", a["status"])
		require.Equal(t, "False Positive - Inaccurate Data", a["close_classification"])
		closed1 := a["closed_at"]
		require.NotNil(t, closed1)
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"close_classification": "Duplicate"}))
		require.Equal(t, "Duplicate", a["close_classification"], "a closed alert may be reclassified")
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Open"}))
		require.Nil(t, a["close_classification"])
		require.Nil(t, a["closed_at"])
		require.Equal(t, ack, a["acknowledged_at"])
		time.Sleep(2 * time.Millisecond)
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Closed", "close_classification": "Not Applicable"}))
		require.NotEqual(t, closed1, a["closed_at"], "closed_at is set each time")
		require.Len(t, eventsOf(t, ts, id, "alert_closed"), 2)
		require.Len(t, eventsOf(t, ts, id, "alert_reopened"), 1)
		st := eventsOf(t, ts, id, "alert_status_updated")
		require.Len(t, st, 4) // →Triaging, →Escalated, →Triaging, reclassification
		require.Equal(t, "api", st[0]["actor_type"])
		require.Equal(t, prefix, st[0]["actor_key_prefix"])
	})
	t.Run("severity and tags", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		a := alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"severity": "Low", "tags": []string{" b ", "a", "b"}}))
		require.Equal(t, "Low", a["severity"])
		require.Equal(t, []any{"b", "a"}, a["tags"])
		alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"severity": "Low", "tags": []string{"b", "a"}}))
		require.Len(t, eventsOf(t, ts, id, "alert_severity_updated"), 1, "an unchanged value writes no event")
		require.Len(t, eventsOf(t, ts, id, "alert_tags_updated"), 1)
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"tags": []string{}}))
		require.Equal(t, []any{}, a["tags"])
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"tags": []string{"ok", "  "}}))
		require.Contains(t, locs(d), "body.tags.1")
		many := make([]string, 51)
		for i := range many {
			many[i] = fmt.Sprint("t", i)
		}
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"tags": many}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"tags": []string{strings.Repeat("x", 101)}}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"tags": "a"}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"severity": "Severe"}))
	})
	t.Run("nulls leave fields unchanged", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"severity": "Critical", "tags": []string{"x"}}))
		a := alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, `{"status":null,"severity":null,"close_classification":null,"tags":null,"malice_override":null}`))
		require.Equal(t, "Critical", a["severity"])
		require.Equal(t, []any{"x"}, a["tags"])
		require.Equal(t, "Open", a["status"])
	})
	t.Run("malice override", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		a := alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"malice_override": "Suspicious"}))
		require.Equal(t, "Suspicious", a["malice"])
		require.Equal(t, "Suspicious", a["malice_override"])
		require.Equal(t, "analyst", a["malice_override_source"])
		require.NotNil(t, a["malice_override_at"])
		agent := mustKeyWith(t, ts.Store, func(k *store.APIKey) { k.KeyType = "agent" }, auth.ScopeAlertsWrite)
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, agent, map[string]any{"malice_override": "Malicious"}))
		require.Equal(t, "agent", a["malice_override_source"])
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, `{"reset_malice_override":null}`))
		require.Contains(t, locs(d), "body.reset_malice_override")
		d = requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"reset_malice_override": true, "malice_override": "Benign"}))
		require.Contains(t, locs(d), "body.reset_malice_override")
		a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"reset_malice_override": true}))
		require.Nil(t, a["malice_override"])
		require.Nil(t, a["malice_override_source"])
		require.Nil(t, a["malice_override_at"])
		require.Equal(t, "Pending", a["malice"])
		require.Len(t, eventsOf(t, ts, id, "alert_malice_updated"), 3)
	})
	t.Run("bad input", func(t *testing.T) {
		id := newAlert(t, ts, key, "")
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"bogus": 1}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": 3}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"status": "Bogus"}))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, `[]`))
		requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, nil))
		requireError(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, `{"status":`), 400, "INVALID_JSON")
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/not-a-uuid", key, map[string]any{}))
		require.Equal(t, []string{"path.uuid"}, locs(d))
		requireError(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+uuid.NewString(), key, map[string]any{"status": "Triaging"}), 404, "NOT_FOUND")
		requireError(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, mustKey(t, ts.Store, auth.ScopeAlertsRead), map[string]any{}), 403, "FORBIDDEN")
	})
}

func TestListAlerts_FiltersAndSorts(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	tag := "lt-" + uuid.NewString()[:8]
	ctx := context.Background()
	rule := store.DetectionRule{Name: "list rule " + tag, IsActive: true}
	_, err := ts.Store.CreateDetectionRule(ctx, &rule)
	require.NoError(t, err)

	type spec = listSpec
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	specs := []spec{
		{"Alpha phishing", "High", "Open", "generic", "Pending", base, []string{tag, "phish"}, true},
		{"bravo malware", "Low", "Triaging", "elastic", "Enriched", base.Add(time.Hour), []string{tag}, false},
		{"Charlie Phishing wave", "Critical", "Closed", "splunk", "Failed", base.Add(2 * time.Hour), []string{tag, "phish", "wave"}, false},
		{"delta_scan 100%", "Informational", "Escalated", "sentinel", "Enriched", base.Add(3 * time.Hour), []string{tag, "scan"}, true},
		{"echo", "Medium", "Open", "generic", "Pending", base.Add(4 * time.Hour), []string{tag}, false},
	}
	byTitle := map[string]string{}
	for _, s := range specs {
		id := newAlert(t, ts, key, "")
		setAlert(t, ts, id, "title = ?, severity = ?, status = ?, source_name = ?, enrichment_status = ?, is_enriched = ?, occurred_at = ?, tags = ?, detection_rule_id = ?",
			s.title, s.severity, s.status, s.source, s.enrichment, s.enrichment == "Enriched", s.occurred, pgdialect.Array(s.tags), ruleIDIf(s.rule, rule.ID))
		byTitle[s.title] = id
	}
	list := func(q string) []string {
		t.Helper()
		r := ts.do(t, http.MethodGet, "/v1/alerts?tags="+tag+"&page_size=500&"+q, key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		m := r.JSON(t)
		var titles []string
		for _, x := range m["data"].([]any) {
			a := x.(map[string]any)
			require.NotContains(t, a, "raw_payload")
			require.NotContains(t, a, "indicators")
			titles = append(titles, a["title"].(string))
		}
		require.Equal(t, float64(len(titles)), m["meta"].(map[string]any)["total"])
		return titles
	}
	set := func(titles ...string) []string { sort.Strings(titles); return titles }
	sorted := func(q string) []string { out := list(q); sort.Strings(out); return out }

	require.Equal(t, []string{"echo", "delta_scan 100%", "Charlie Phishing wave", "bravo malware", "Alpha phishing"}, list(""), "default occurred_at desc")
	filters := []struct {
		q    string
		want []string
	}{
		{"status=Open", set("Alpha phishing", "echo")},
		{"status=Open,Closed", set("Alpha phishing", "echo", "Charlie Phishing wave")},
		{"status=Open&status=Escalated", set("Alpha phishing", "echo", "delta_scan 100%")},
		{"severity=High,Critical", set("Alpha phishing", "Charlie Phishing wave")},
		{"source_name=generic", set("Alpha phishing", "echo")},
		{"source_name=splunk,sentinel", set("Charlie Phishing wave", "delta_scan 100%")},
		{"enrichment_status=Enriched", set("bravo malware", "delta_scan 100%")},
		{"enrichment_status=Failed,Pending", set("Alpha phishing", "Charlie Phishing wave", "echo")},
		{"is_enriched=true", set("bravo malware", "delta_scan 100%")},
		{"is_enriched=false", set("Alpha phishing", "Charlie Phishing wave", "echo")},
		{"detection_rule_uuid=" + rule.UUID.String(), set("Alpha phishing", "delta_scan 100%")},
		{"detection_rule_uuid=" + uuid.NewString(), nil},
		{"from_time=" + url.QueryEscape(base.Add(time.Hour).Format(time.RFC3339)), set("bravo malware", "Charlie Phishing wave", "delta_scan 100%", "echo")},
		{"to_time=" + url.QueryEscape(base.Add(time.Hour).Format(time.RFC3339)), set("Alpha phishing", "bravo malware")},
		{"from_time=" + url.QueryEscape(base.Add(2*time.Hour).Format(time.RFC3339)) + "&to_time=" + url.QueryEscape(base.Add(3*time.Hour).Add(-time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)), set("Charlie Phishing wave")},
		{"from_time=" + url.QueryEscape(base.Add(3*time.Hour).Format(time.RFC3339Nano)) + "&to_time=" + url.QueryEscape(base.Add(3*time.Hour).Format(time.RFC3339Nano)), set("delta_scan 100%")},
		{"tags=phish", set("Alpha phishing", "Charlie Phishing wave")},
		{"tags=phish&tags=wave", set("Charlie Phishing wave")},
		{"tags=phish,scan", nil},
		{"q=PHISH", set("Alpha phishing", "Charlie Phishing wave")},
		{"q=" + url.QueryEscape("100%"), set("delta_scan 100%")},
		{"q=" + url.QueryEscape("a_s"), set("delta_scan 100%")},
		{"q=%25", set("delta_scan 100%")},
		{"q=zzz", nil},
		{"status=Open&severity=Medium&source_name=generic", set("echo")},
	}
	for _, f := range filters {
		got := sorted(f.q)
		require.Equal(t, f.want, got, f.q)
	}
	sorts := []struct {
		q    string
		want []string
	}{
		{"sort_by=title&sort_order=asc", []string{"Alpha phishing", "bravo malware", "Charlie Phishing wave", "delta_scan 100%", "echo"}},
		{"sort_by=title&sort_order=desc", []string{"echo", "delta_scan 100%", "Charlie Phishing wave", "bravo malware", "Alpha phishing"}},
		{"sort_by=severity&sort_order=desc", []string{"Charlie Phishing wave", "Alpha phishing", "echo", "bravo malware", "delta_scan 100%"}},
		{"sort_by=severity&sort_order=asc", []string{"delta_scan 100%", "bravo malware", "echo", "Alpha phishing", "Charlie Phishing wave"}},
		{"sort_by=status&sort_order=asc", nil},
		{"sort_by=source_name&sort_order=asc", nil},
		{"sort_by=occurred_at&sort_order=asc", []string{"Alpha phishing", "bravo malware", "Charlie Phishing wave", "delta_scan 100%", "echo"}},
		{"sort_by=created_at&sort_order=asc", []string{"Alpha phishing", "bravo malware", "Charlie Phishing wave", "delta_scan 100%", "echo"}},
		{"sort_by=created_at&sort_order=desc", []string{"echo", "delta_scan 100%", "Charlie Phishing wave", "bravo malware", "Alpha phishing"}},
	}
	for _, s := range sorts {
		got := list(s.q)
		switch {
		case strings.Contains(s.q, "sort_by=status"):
			order := map[string]int{"Open": 0, "Triaging": 1, "Escalated": 2, "Closed": 3}
			require.True(t, sort.SliceIsSorted(got, func(i, j int) bool {
				return order[specOf(specs, got[i]).status] < order[specOf(specs, got[j]).status]
			}), "%v", got)
			require.Equal(t, "Closed", specOf(specs, got[4]).status)
		case strings.Contains(s.q, "sort_by=source_name"):
			var srcs []string
			for _, title := range got {
				srcs = append(srcs, specOf(specs, title).source)
			}
			require.Equal(t, []string{"elastic", "generic", "generic", "sentinel", "splunk"}, srcs)
		default:
			require.Equal(t, s.want, got, s.q)
		}
	}
	t.Run("pagination", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/alerts?tags="+tag+"&page_size=2&page=3&sort_by=occurred_at&sort_order=asc", key, nil)
		m := r.JSON(t)
		require.Len(t, m["data"], 1)
		require.Equal(t, map[string]any{"total": float64(5), "page": float64(3), "page_size": float64(2), "total_pages": float64(3)}, m["meta"])
	})
	t.Run("bad input", func(t *testing.T) {
		for q, loc := range map[string]string{
			"status=Bogus":                  "query.status",
			"status=Open,bogus":             "query.status",
			"severity=Huge":                 "query.severity",
			"enrichment_status=Done":        "query.enrichment_status",
			"is_enriched=maybe":             "query.is_enriched",
			"detection_rule_uuid=123":       "query.detection_rule_uuid",
			"from_time=2026-01-01T00:00:00": "query.from_time",
			"to_time=yesterday":             "query.to_time",
			"sort_by=uuid":                  "query.sort_by",
			"sort_order=up":                 "query.sort_order",
			"page=0":                        "query.page",
			"page_size=501":                 "query.page_size",
			"page_size=x":                   "query.page_size",
			"q=" + strings.Repeat("x", 501): "query.q",
			"q=a%00b":                       "query.q",
			"from_time=2026-01-02T00:00:00Z&to_time=2026-01-01T00:00:00Z": "query.to_time",
		} {
			d := requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts?"+q, key, nil))
			require.Contains(t, strings.Join(locs(d), " "), loc, q)
		}
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts", mustKey(t, ts.Store, auth.ScopeEnrichmentsRead), nil), 403, "FORBIDDEN")
	})
	t.Run("malice in summaries", func(t *testing.T) {
		id := byTitle["echo"]
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/indicators?enrich=false", key, map[string]any{"indicators": []map[string]any{{"value": "45.33.32.156"}}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		// The verdict is recorded as an enrichment records it (the store keeps the alert's effective
		// malice current in the same transaction; a raw UPDATE of the indicator would bypass that).
		var ind uuid.UUID
		require.NoError(t, ts.Store.DB().NewRaw("SELECT uuid FROM indicators WHERE type = 'ip' AND value = '45.33.32.156'").Scan(ctx, &ind))
		require.NoError(t, ts.Store.RecordEnrichment(ctx, nil, []store.IndicatorEnrichment{{IndicatorUUID: ind,
			Results: map[string]any{"p": map[string]any{"success": true, "malice": "Suspicious"}}}}))
		r = ts.do(t, http.MethodGet, "/v1/alerts?tags="+tag+"&q=echo", key, nil)
		require.Equal(t, "Suspicious", r.JSON(t)["data"].([]any)[0].(map[string]any)["malice"])
	})
}

type listSpec struct {
	title, severity, status, source, enrichment string
	occurred                                    time.Time
	tags                                        []string
	rule                                        bool
}

func specOf(specs []listSpec, title string) listSpec {
	for _, s := range specs {
		if s.title == title {
			return s
		}
	}
	return listSpec{}
}

func ruleIDIf(ok bool, id int64) *int64 {
	if !ok {
		return nil
	}
	return &id
}
