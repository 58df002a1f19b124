package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func TestDetectionRuleLifecycle(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)

	created := createRule(t, ts, admin, map[string]any{
		"name": "Suspicious PowerShell", "source_rule_id": "rule-" + uuid.NewString(), "source_name": "sentinel",
		"severity": "High", "mitre_tactics": []string{"TA0002", "TA0002", "TA0005"}, "mitre_techniques": []string{"T1059"},
		"mitre_subtechniques": []string{"T1059.001"}, "data_sources": []string{"SecurityEvent"}, "run_frequency": "5m",
		"documentation": "# Triage\nCheck the parent process.",
	})
	id := created["uuid"].(string)
	require.Equal(t, "Suspicious PowerShell", created["name"])
	require.Equal(t, "High", created["severity"])
	require.Equal(t, true, created["is_active"])
	require.Equal(t, []any{"TA0002", "TA0005"}, created["mitre_tactics"], "duplicates dropped, order kept")
	require.Equal(t, admin[:8], created["created_by"], "created_by defaults to the caller's key prefix")
	for _, k := range []string{"uuid", "name", "source_rule_id", "source_name", "severity", "is_active", "mitre_tactics",
		"mitre_techniques", "mitre_subtechniques", "data_sources", "run_frequency", "created_by", "documentation",
		"created_at", "updated_at"} {
		require.Contains(t, created, k)
	}
	require.NotContains(t, created, "id", "internal ids never appear")
	require.NotContains(t, created, "is_stub")

	// Minimal rule: lists are empty arrays, nullable fields null, explicit created_by kept.
	minimal := createRule(t, ts, admin, map[string]any{"name": "minimal", "created_by": "alice", "is_active": false})
	require.Equal(t, []any{}, minimal["mitre_tactics"])
	require.Equal(t, []any{}, minimal["data_sources"])
	require.Nil(t, minimal["severity"])
	require.Nil(t, minimal["source_name"])
	require.Equal(t, "alice", minimal["created_by"])
	require.Equal(t, false, minimal["is_active"])

	got := ts.do(t, http.MethodGet, "/v1/detection-rules/"+id, reader, nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	require.Equal(t, created, got.JSON(t)["data"])

	// GetDetectionRuleByID serves alert detail.
	byID, err := ts.Store.GetDetectionRuleByID(context.Background(), ruleID(t, ts.Store, id))
	require.NoError(t, err)
	require.Equal(t, id, byID.UUID.String())
	_, err = ts.Store.GetDetectionRuleByID(context.Background(), -1)
	require.ErrorIs(t, err, store.ErrNotFound)

	// PATCH: explicit null clears nullable fields, lists are replaced, absent fields stay.
	p := ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, admin,
		`{"severity": null, "documentation": null, "mitre_tactics": ["TA0001"], "is_active": false, "name": "Renamed"}`)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pd := p.JSON(t)["data"].(map[string]any)
	require.Nil(t, pd["severity"])
	require.Nil(t, pd["documentation"])
	require.Equal(t, []any{"TA0001"}, pd["mitre_tactics"])
	require.Equal(t, []any{"T1059"}, pd["mitre_techniques"])
	require.Equal(t, "Renamed", pd["name"])
	require.Equal(t, false, pd["is_active"])
	require.Equal(t, "5m", pd["run_frequency"])
	require.Equal(t, created["created_at"], pd["created_at"])
	require.NotEqual(t, created["updated_at"], pd["updated_at"])
	require.Equal(t, pd, ts.do(t, http.MethodGet, "/v1/detection-rules/"+id, reader, nil).JSON(t)["data"])

	// An empty PATCH changes nothing.
	e := ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, admin, `{}`)
	require.Equal(t, http.StatusOK, e.Status, string(e.Body))
	require.Equal(t, pd, e.JSON(t)["data"])

	// DELETE keeps the rule's alerts, with no rule.
	rid := ruleID(t, ts.Store, id)
	alert := insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &rid})
	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/detection-rules/"+id, admin, nil).Status)
	var left testAlertRow
	require.NoError(t, ts.Store.DB().NewSelect().Model(&left).Where("uuid = ?", alert.UUID).Scan(context.Background()))
	require.Nil(t, left.DetectionRuleID)
	requireError(t, ts.do(t, http.MethodGet, "/v1/detection-rules/"+id, reader, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/detection-rules/"+id, admin, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestDetectionRuleNotFoundAndBadPath(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	missing := uuid.NewString()
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/detection-rules/" + missing, ""},
		{http.MethodPatch, "/v1/detection-rules/" + missing, `{"name": "x"}`},
		{http.MethodDelete, "/v1/detection-rules/" + missing, ""},
		{http.MethodGet, "/v1/detection-rules/" + missing + "/metrics", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			m := requireError(t, ts.do(t, tc.method, tc.path, admin, body), http.StatusNotFound, "NOT_FOUND")
			require.Equal(t, "Detection rule not found.", m["error"].(map[string]any)["message"])
		})
	}
	for _, bad := range []string{"not-a-uuid", "1", "' OR 1=1 --", strings.Repeat("a", 300), uuid.NewString() + "0"} {
		for _, method := range []string{http.MethodGet, http.MethodPatch, http.MethodDelete} {
			var body any
			if method == http.MethodPatch {
				body = `{"name":"x"}`
			}
			r := ts.do(t, method, "/v1/detection-rules/"+url.PathEscape(bad), admin, body)
			require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, r)), "%s %q", method, bad)
		}
		r := ts.do(t, http.MethodGet, "/v1/detection-rules/"+url.PathEscape(bad)+"/metrics", admin, nil)
		require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, r)))
	}
}

func TestDetectionRuleScopes(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	id := createRule(t, ts, admin, map[string]any{"name": "scoped"})["uuid"].(string)
	writer := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	nobody := mustKey(t, ts.Store, auth.ScopeEnrichmentsRead)

	for _, path := range []string{"/v1/detection-rules", "/v1/detection-rules/" + id, "/v1/detection-rules/" + id + "/metrics"} {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, path, writer, nil).Status, path)
		requireError(t, ts.do(t, http.MethodGet, path, nobody, nil), http.StatusForbidden, "FORBIDDEN")
		requireError(t, ts.do(t, http.MethodGet, path, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	// Writes need admin, alerts:write is not enough.
	requireError(t, ts.do(t, http.MethodPost, "/v1/detection-rules", writer, `{"name": "x"}`), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, writer, `{"name": "x"}`), http.StatusForbidden, "FORBIDDEN")
	requireError(t, ts.do(t, http.MethodDelete, "/v1/detection-rules/"+id, writer, nil), http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, "scoped", ts.do(t, http.MethodGet, "/v1/detection-rules/"+id, writer, nil).JSON(t)["data"].(map[string]any)["name"])
}

func TestDetectionRuleDuplicates(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ref := "dup-" + uuid.NewString()
	first := createRule(t, ts, admin, map[string]any{"name": "first", "source_name": "splunk", "source_rule_id": ref})

	r := ts.do(t, http.MethodPost, "/v1/detection-rules", admin, map[string]any{"name": "second", "source_name": "splunk", "source_rule_id": ref})
	m := requireError(t, r, http.StatusConflict, "DUPLICATE_RULE")
	require.Equal(t, first["uuid"], m["error"].(map[string]any)["details"].(map[string]any)["existing_uuid"])

	// The same id in another source, or without a source, is a different rule.
	createRule(t, ts, admin, map[string]any{"name": "other source", "source_name": "elastic", "source_rule_id": ref})
	createRule(t, ts, admin, map[string]any{"name": "no source", "source_rule_id": ref})
	createRule(t, ts, admin, map[string]any{"name": "no source again", "source_rule_id": ref})

	// PATCH into a taken reference conflicts too.
	other := createRule(t, ts, admin, map[string]any{"name": "movable", "source_name": "splunk", "source_rule_id": ref + "-b"})
	p := ts.do(t, http.MethodPatch, "/v1/detection-rules/"+other["uuid"].(string), admin, map[string]any{"source_rule_id": ref})
	requireError(t, p, http.StatusConflict, "DUPLICATE_RULE")

	// A stub the pipeline created for an unknown reference is completed by POST, keeping uuid and alerts.
	stubRef := "stub-" + uuid.NewString()
	src := "sentinel"
	stub := store.DetectionRule{UUID: uuid.New(), Name: stubRef, SourceName: &src, SourceRuleID: &stubRef, IsActive: true, IsStub: true,
		MitreTactics: []string{}, MitreTechniques: []string{}, MitreSubtechniques: []string{}, DataSources: []string{},
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	_, err := ts.Store.DB().NewInsert().Model(&stub).Exec(context.Background())
	require.NoError(t, err)
	alert := insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &stub.ID})
	adopted := createRule(t, ts, admin, map[string]any{"name": "Documented rule", "source_name": "sentinel", "source_rule_id": stubRef,
		"severity": "Low", "documentation": "now documented"})
	require.Equal(t, stub.UUID.String(), adopted["uuid"])
	require.Equal(t, "Documented rule", adopted["name"])
	require.Equal(t, admin[:8], adopted["created_by"])
	got, err := ts.Store.GetDetectionRule(context.Background(), stub.UUID)
	require.NoError(t, err)
	require.False(t, got.IsStub)
	require.Equal(t, "now documented", *got.Documentation)
	var a testAlertRow
	require.NoError(t, ts.Store.DB().NewSelect().Model(&a).Where("uuid = ?", alert.UUID).Scan(context.Background()))
	require.Equal(t, stub.ID, *a.DetectionRuleID)
	// Once completed it is a real rule: a second POST conflicts.
	requireError(t, ts.do(t, http.MethodPost, "/v1/detection-rules", admin, map[string]any{"name": "again", "source_name": "sentinel",
		"source_rule_id": stubRef}), http.StatusConflict, "DUPLICATE_RULE")
}

func TestDetectionRuleValidation(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	long := func(n int) string { return strings.Repeat("x", n) }
	list := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`"T%d"`, i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"missing name", `{}`, []string{"body.name"}},
		{"null name", `{"name": null}`, []string{"body.name"}},
		{"empty name", `{"name": ""}`, []string{"body.name"}},
		{"blank name", `{"name": "  \t "}`, []string{"body.name"}},
		{"name too long", `{"name": "` + long(501) + `"}`, []string{"body.name"}},
		{"name wrong type", `{"name": 42}`, []string{"body.name"}},
		{"name with NUL", `{"name": "a\u0000b"}`, []string{"body.name"}},
		{"every field wrong at once", `{"name": ["x"], "source_rule_id": 5, "source_name": "", "severity": "Severe", "is_active": "yes",
			"mitre_tactics": "TA0001", "mitre_techniques": [1], "mitre_subtechniques": [""], "data_sources": {}, "run_frequency": false,
			"created_by": "", "documentation": 3}`,
			[]string{"body.name", "body.source_rule_id", "body.source_name", "body.severity", "body.is_active", "body.mitre_tactics",
				"body.mitre_techniques.0", "body.mitre_subtechniques.0", "body.data_sources", "body.run_frequency", "body.created_by",
				"body.documentation"}},
		{"too many tactics", `{"name": "x", "mitre_tactics": ` + list(51) + `}`, []string{"body.mitre_tactics"}},
		{"tactic too long", `{"name": "x", "mitre_tactics": ["` + long(101) + `"]}`, []string{"body.mitre_tactics.0"}},
		{"documentation too long", `{"name": "x", "documentation": "` + long(100001) + `"}`, []string{"body.documentation"}},
		{"NUL in list and text", `{"name": "x", "data_sources": ["ok", "b\u0000"], "documentation": "\u0000"}`,
			[]string{"body.data_sources.1", "body.documentation"}},
		{"unknown field", `{"name": "x", "id": 7}`, []string{"body.id"}},
		{"lowercase severity", `{"name": "x", "severity": "high"}`, []string{"body.severity"}},
		{"array body", `[{"name": "x"}]`, []string{"body"}},
		{"empty body", ``, []string{"body"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/detection-rules", admin, tc.body)
			require.ElementsMatch(t, tc.want, uniqueLocs(requireValidation(t, r)))
		})
	}
	t.Run("malformed json", func(t *testing.T) {
		requireError(t, ts.do(t, http.MethodPost, "/v1/detection-rules", admin, `{"name": "x"`), http.StatusBadRequest, "INVALID_JSON")
	})
	t.Run("wrong content type", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/detection-rules", admin, strings.NewReader(`name=x`), "Content-Type", "application/x-www-form-urlencoded")
		requireError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	})
	t.Run("hostile strings are stored verbatim", func(t *testing.T) {
		name := `'; DROP TABLE detection_rules; -- <script>alert(1)</script> %_\`
		d := createRule(t, ts, admin, map[string]any{"name": name, "source_name": "x' OR '1'='1", "mitre_tactics": []string{"' OR 1=1 --"}})
		require.Equal(t, name, d["name"])
		got := ts.do(t, http.MethodGet, "/v1/detection-rules/"+d["uuid"].(string), admin, nil).JSON(t)["data"].(map[string]any)
		require.Equal(t, name, got["name"])
		require.Equal(t, []any{"' OR 1=1 --"}, got["mitre_tactics"])
	})
	t.Run("patch", func(t *testing.T) {
		id := createRule(t, ts, admin, map[string]any{"name": "patchable"})["uuid"].(string)
		for _, tc := range []struct {
			name, body string
			want       []string
		}{
			{"created_by is not editable", `{"created_by": "mallory"}`, []string{"body.created_by"}},
			{"bad values", `{"name": "", "severity": "Bogus", "source_name": "", "documentation": "` + long(100001) + `"}`,
				[]string{"body.name", "body.severity", "body.source_name", "body.documentation"}},
			{"blank name", `{"name": "   "}`, []string{"body.name"}},
			{"NUL", `{"run_frequency": "\u0000"}`, []string{"body.run_frequency"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, admin, tc.body)
				require.ElementsMatch(t, tc.want, uniqueLocs(requireValidation(t, r)))
			})
		}
		requireError(t, ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, admin, `{`), http.StatusBadRequest, "INVALID_JSON")
		require.Equal(t, "patchable", ts.do(t, http.MethodGet, "/v1/detection-rules/"+id, admin, nil).JSON(t)["data"].(map[string]any)["name"])
		// null on a non-nullable field leaves it unchanged (as on alerts).
		r := ts.do(t, http.MethodPatch, "/v1/detection-rules/"+id, admin, `{"name": null, "is_active": null, "mitre_tactics": null}`)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		d := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "patchable", d["name"])
		require.Equal(t, true, d["is_active"])
		require.Equal(t, []any{}, d["mitre_tactics"])
	})
}

func TestDetectionRuleListFiltersAndSorts(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	mark := "m" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	src := func(s string) string { return s + "-" + mark }
	seed := []map[string]any{
		{"name": mark + " Charlie", "source_name": src("splunk"), "severity": "High", "mitre_tactics": []string{"TA0002"},
			"mitre_techniques": []string{"T1059"}},
		{"name": mark + " alpha", "source_name": src("sentinel"), "severity": "Low", "is_active": false,
			"mitre_subtechniques": []string{"T1059.001"}},
		{"name": mark + " Bravo 100%", "source_name": src("elastic"), "severity": "Critical", "mitre_tactics": []string{"TA0001", "TA0002"}},
		{"name": mark + " delta_x", "severity": "Informational"},
		{"name": mark + " echo", "source_name": src("splunk")},
	}
	var ids []string
	for _, b := range seed {
		ids = append(ids, createRule(t, ts, admin, b)["uuid"].(string))
		time.Sleep(2 * time.Millisecond) // distinct created_at
	}
	names := func(items []map[string]any) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = strings.TrimPrefix(it["name"].(string), mark+" ")
		}
		return out
	}
	list := func(query string) []map[string]any {
		return dataList(t, ts.do(t, http.MethodGet, "/v1/detection-rules?page_size=500&q="+mark+query, reader, nil))
	}
	cases := []struct {
		name, query string
		want        []string
	}{
		{"default: created_at desc", "", []string{"echo", "delta_x", "Bravo 100%", "alpha", "Charlie"}},
		{"created_at asc", "&sort_by=created_at&sort_order=asc", []string{"Charlie", "alpha", "Bravo 100%", "delta_x", "echo"}},
		{"name: asc by default, case-insensitive", "&sort_by=name", []string{"alpha", "Bravo 100%", "Charlie", "delta_x", "echo"}},
		{"name desc", "&sort_by=name&sort_order=desc", []string{"echo", "delta_x", "Charlie", "Bravo 100%", "alpha"}},
		{"severity: by rank, desc by default, null last", "&sort_by=severity", []string{"Bravo 100%", "Charlie", "alpha", "delta_x", "echo"}},
		{"severity asc, null last", "&sort_by=severity&sort_order=asc", []string{"delta_x", "alpha", "Charlie", "Bravo 100%", "echo"}},
		{"source_name asc, then name, null last", "&sort_by=source_name", []string{"Bravo 100%", "alpha", "Charlie", "echo", "delta_x"}},
		{"source_name desc, null last", "&sort_by=source_name&sort_order=desc", []string{"Charlie", "echo", "alpha", "Bravo 100%", "delta_x"}},
		{"source_name exact", "&sort_by=name&source_name=" + src("splunk"), []string{"Charlie", "echo"}},
		{"source_name no partial match", "&source_name=splunk", nil},
		{"severity multi", "&sort_by=name&severity=High,Low", []string{"alpha", "Charlie"}},
		{"severity repeated", "&sort_by=name&severity=High&severity=Critical", []string{"Bravo 100%", "Charlie"}},
		{"is_active false", "&is_active=false", []string{"alpha"}},
		{"is_active true", "&sort_by=name&is_active=true", []string{"Bravo 100%", "Charlie", "delta_x", "echo"}},
		{"q is case-insensitive", "%20CHARLIE", []string{"Charlie"}},
		{"q percent is literal", "%20Bravo%20100%25", []string{"Bravo 100%"}},
		{"q underscore is literal", "%20delta_", []string{"delta_x"}},
		{"mitre_tactic", "&sort_by=name&mitre_tactic=TA0002", []string{"Bravo 100%", "Charlie"}},
		{"mitre_tactic exact only", "&mitre_tactic=TA000", nil},
		{"mitre_technique matches techniques and subtechniques", "&sort_by=name&mitre_technique=T1059", []string{"Charlie"}},
		{"mitre_technique subtechnique", "&mitre_technique=T1059.001", []string{"alpha"}},
		{"combined filters", "&severity=High,Critical&mitre_tactic=TA0001&is_active=true", []string{"Bravo 100%"}},
		{"sql-ish q matches nothing", "%27%20OR%201%3D1%20--", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := names(list(tc.query))
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("pagination", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/detection-rules?sort_by=name&page_size=2&page=2&q="+mark, reader, nil)
		require.Equal(t, []string{"Charlie", "delta_x"}, names(dataList(t, r)))
		meta := r.JSON(t)["meta"].(map[string]any)
		require.EqualValues(t, 5, meta["total"])
		require.EqualValues(t, 3, meta["total_pages"])
		require.EqualValues(t, 2, meta["page"])
		require.EqualValues(t, 2, meta["page_size"])
		beyond := ts.do(t, http.MethodGet, "/v1/detection-rules?page_size=2&page=9&q="+mark, reader, nil)
		require.Empty(t, dataList(t, beyond))
		require.EqualValues(t, 5, beyond.JSON(t)["meta"].(map[string]any)["total"])
	})
	t.Run("bad query", func(t *testing.T) {
		for _, tc := range []struct{ query, want string }{
			{"severity=Severe", "query.severity.0"},
			{"severity=High,bogus", "query.severity.1"},
			{"sort_by=uuid", "query.sort_by"},
			{"sort_by=name;DROP", "query.sort_by"},
			{"sort_order=up", "query.sort_order"},
			{"is_active=maybe", "query.is_active"},
			{"page=0", "query.page"},
			{"page=x", "query.page"},
			{"page_size=501", "query.page_size"},
			{"q=" + strings.Repeat("a", 501), "query.q"},
			{"q=a%00b", "query.q"},
			{"q=%ff%fe", "query.q"},
			{"mitre_tactic=%00", "query.mitre_tactic"},
			{"mitre_technique=%c3%28", "query.mitre_technique"},
			{"source_name=%00", "query.source_name"},
		} {
			r := ts.do(t, http.MethodGet, "/v1/detection-rules?"+tc.query, reader, nil)
			require.Equal(t, []string{tc.want}, locs(requireValidation(t, r)), tc.query)
		}
	})
	require.Len(t, ids, 5)
}

func TestDetectionRuleMetrics(t *testing.T) {
	ts := newRulesServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	rule := createRule(t, ts, admin, map[string]any{"name": "metrics rule"})
	other := createRule(t, ts, admin, map[string]any{"name": "other rule"})
	rid, oid := ruleID(t, ts.Store, rule["uuid"].(string)), ruleID(t, ts.Store, other["uuid"].(string))

	day := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	at := func(d, h int) time.Time { return day.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour) }
	ptr := func(t time.Time) *time.Time { return &t }
	cls := func(s string) *string { return &s }
	fpLogic, fpData, tp := "False Positive - Incorrect Detection Logic", "False Positive - Inaccurate Data", "True Positive - Suspicious Activity"
	rows := []testAlertRow{
		// Day 0: an open alert and one acknowledged after 10 minutes (now Triaging).
		{Title: "a1", Severity: "High", OccurredAt: at(0, 1)},
		{Title: "a2", Severity: "High", Status: "Triaging", OccurredAt: at(0, 2), AcknowledgedAt: ptr(at(0, 2).Add(10 * time.Minute))},
		// Day 2: three closed alerts, acknowledged after 20 and 30 minutes, closed after 1 h, 2 h and 3 h.
		{Title: "a3", Severity: "Low", Status: "Closed", OccurredAt: at(2, 0), AcknowledgedAt: ptr(at(2, 0).Add(20 * time.Minute)),
			ClosedAt: ptr(at(2, 1)), CloseClassification: cls(fpLogic)},
		{Title: "a4", Severity: "Critical", Status: "Closed", OccurredAt: at(2, 3), AcknowledgedAt: ptr(at(2, 3).Add(30 * time.Minute)),
			ClosedAt: ptr(at(2, 5)), CloseClassification: cls(fpData)},
		{Title: "a5", Severity: "Critical", Status: "Closed", OccurredAt: at(2, 6), ClosedAt: ptr(at(2, 9)), CloseClassification: cls(tp),
			AcknowledgedAt: ptr(at(2, 6))},
		// Day 3: closed as Duplicate after 4 h, escalated one.
		{Title: "a6", Severity: "Medium", Status: "Closed", OccurredAt: at(3, 0), ClosedAt: ptr(at(3, 4)), CloseClassification: cls("Duplicate"),
			AcknowledgedAt: ptr(at(3, 0))},
		{Title: "a7", Severity: "Medium", Status: "Escalated", OccurredAt: at(3, 12)},
	}
	var alerts []testAlertRow
	for _, r := range rows {
		r.DetectionRuleID = &rid
		alerts = append(alerts, insertAlert(t, ts.Store, r))
	}
	// Outside the window, and another rule's alert inside it: both ignored.
	insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &rid, OccurredAt: at(-1, 0), Severity: "Pending"})
	insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &rid, OccurredAt: at(5, 0), Severity: "Pending"})
	insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &oid, OccurredAt: at(1, 0), Severity: "Pending"})
	// Indicators: 1.2.3.4 on three alerts, evil.example on two, a hash on one.
	ip := linkIndicator(t, ts.Store, alerts[0].UUID, "ip", "1.2.3.4")
	linkIndicator(t, ts.Store, alerts[1].UUID, "ip", "1.2.3.4")
	linkIndicator(t, ts.Store, alerts[2].UUID, "ip", "1.2.3.4")
	linkIndicator(t, ts.Store, alerts[3].UUID, "domain", "evil.example")
	linkIndicator(t, ts.Store, alerts[4].UUID, "domain", "evil.example")
	linkIndicator(t, ts.Store, alerts[5].UUID, "hash_md5", strings.Repeat("a", 32))

	path := "/v1/detection-rules/" + rule["uuid"].(string) + "/metrics?from_time=" + url.QueryEscape(at(0, 0).Format(time.RFC3339)) +
		"&to_time=" + url.QueryEscape(at(5, 0).Format(time.RFC3339))
	r := ts.do(t, http.MethodGet, path, reader, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.JSON(t)["data"].(map[string]any)
	require.Equal(t, rule["uuid"], m["detection_rule_uuid"])
	require.Equal(t, "2026-10-01T00:00:00Z", m["from_time"])
	require.Equal(t, "2026-10-06T00:00:00Z", m["to_time"])
	require.EqualValues(t, 7, m["total_alerts"])
	require.EqualValues(t, 3, m["active_alerts"])
	require.EqualValues(t, 4, m["closed_alerts"])
	require.Equal(t, map[string]any{"Open": 1.0, "Triaging": 1.0, "Escalated": 1.0, "Closed": 4.0}, m["alerts_by_status"])
	require.Equal(t, map[string]any{"Pending": 0.0, "Informational": 0.0, "Low": 1.0, "Medium": 2.0, "High": 2.0, "Critical": 2.0},
		m["alerts_by_severity"])
	require.InDelta(t, 0.5, m["false_positive_rate"], 1e-9)
	require.InDelta(t, 0.25, m["true_positive_rate"], 1e-9)
	require.Equal(t, map[string]any{tp: 1.0, fpLogic: 1.0, fpData: 1.0, "Duplicate": 1.0, "Undetermined": 0.0, "Not Applicable": 0.0,
		"Benign Positive - Suspicious but Expected": 0.0}, m["close_classifications"])
	require.Equal(t, []any{
		map[string]any{"date": "2026-10-01", "count": 2.0}, map[string]any{"date": "2026-10-02", "count": 0.0},
		map[string]any{"date": "2026-10-03", "count": 3.0}, map[string]any{"date": "2026-10-04", "count": 2.0},
		map[string]any{"date": "2026-10-05", "count": 0.0},
	}, m["alerts_over_time"])
	// MTTA over the 5 acknowledged alerts: (10 + 20 + 30 + 0 + 0) min / 5 = 12 min.
	require.InDelta(t, 720.0, m["mtta_seconds"], 1e-6)
	// MTTC over the 4 closed alerts: (1 + 2 + 3 + 4) h / 4 = 2.5 h.
	require.InDelta(t, 9000.0, m["mttc_seconds"], 1e-6)
	top := m["top_indicators"].([]any)
	require.Len(t, top, 3)
	first := top[0].(map[string]any)
	require.Equal(t, ip.UUID.String(), first["uuid"])
	require.Equal(t, "ip", first["type"])
	require.Equal(t, "1.2.3.4", first["value"])
	require.Equal(t, "Pending", first["malice"])
	require.EqualValues(t, 3, first["alert_count"])
	require.Equal(t, "evil.example", top[1].(map[string]any)["value"])
	require.EqualValues(t, 2, top[1].(map[string]any)["alert_count"])
	require.EqualValues(t, 1, top[2].(map[string]any)["alert_count"])

	t.Run("a rule with no alerts", func(t *testing.T) {
		empty := createRule(t, ts, admin, map[string]any{"name": "quiet rule"})
		r := ts.do(t, http.MethodGet, "/v1/detection-rules/"+empty["uuid"].(string)+"/metrics", reader, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		m := r.JSON(t)["data"].(map[string]any)
		require.EqualValues(t, 0, m["total_alerts"])
		require.Nil(t, m["false_positive_rate"])
		require.Nil(t, m["true_positive_rate"])
		require.Nil(t, m["mtta_seconds"])
		require.Nil(t, m["mttc_seconds"])
		require.Equal(t, []any{}, m["top_indicators"])
		// Default window: the last 30 days, one entry per UTC day it touches.
		from, err := time.Parse(time.RFC3339, m["from_time"].(string))
		require.NoError(t, err)
		to, err := time.Parse(time.RFC3339, m["to_time"].(string))
		require.NoError(t, err)
		require.Equal(t, 30*24*time.Hour, to.Sub(from))
		require.WithinDuration(t, time.Now(), to, time.Minute)
		require.Len(t, m["alerts_over_time"], 31)
	})
	t.Run("recent alerts count in the default window", func(t *testing.T) {
		recent := createRule(t, ts, admin, map[string]any{"name": "recent rule"})
		id := ruleID(t, ts.Store, recent["uuid"].(string))
		insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &id, OccurredAt: time.Now().Add(-time.Hour)})
		insertAlert(t, ts.Store, testAlertRow{DetectionRuleID: &id, OccurredAt: time.Now().Add(-40 * 24 * time.Hour)})
		m := ts.do(t, http.MethodGet, "/v1/detection-rules/"+recent["uuid"].(string)+"/metrics", reader, nil).JSON(t)["data"].(map[string]any)
		require.EqualValues(t, 1, m["total_alerts"])
		// Only to_time: from_time is 30 days before it.
		m = ts.do(t, http.MethodGet, "/v1/detection-rules/"+recent["uuid"].(string)+"/metrics?to_time="+
			url.QueryEscape(time.Now().Add(-35*24*time.Hour).Format(time.RFC3339)), reader, nil).JSON(t)["data"].(map[string]any)
		require.EqualValues(t, 1, m["total_alerts"])
	})
	t.Run("bad windows", func(t *testing.T) {
		base := "/v1/detection-rules/" + rule["uuid"].(string) + "/metrics?"
		for _, tc := range []struct{ query, want string }{
			{"from_time=2026-10-05T00:00:00Z&to_time=2026-10-01T00:00:00Z", "query.from_time"},
			{"from_time=2026-10-01T00:00:00Z&to_time=2026-10-01T00:00:00Z", "query.from_time"},
			{"from_time=2024-01-01T00:00:00Z&to_time=2026-10-01T00:00:00Z", "query.from_time"},
			{"from_time=2026-10-01", "query.from_time"},
			{"to_time=2026-10-01T00:00:00", "query.to_time"},
			{"to_time=yesterday", "query.to_time"},
			{"from_time=0001-01-01T00:00:00Z", "query.from_time"},
		} {
			r := ts.do(t, http.MethodGet, base+tc.query, reader, nil)
			require.Equal(t, []string{tc.want}, locs(requireValidation(t, r)), tc.query)
		}
	})
}
