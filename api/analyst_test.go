package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// listUUIDs lists alerts with the query and returns their uuids (and the total).
func listUUIDs(t *testing.T, ts *testServer, key, query string) ([]string, int) {
	t.Helper()
	r := ts.do(t, http.MethodGet, "/v1/alerts?"+query, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	body := r.JSON(t)
	var out []string
	for _, a := range body["data"].([]any) {
		out = append(out, a.(map[string]any)["uuid"].(string))
	}
	return out, int(body["meta"].(map[string]any)["total"].(float64))
}

func TestAssignee_PatchActivityAndScopes(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	id := newAlert(t, ts, key, "")

	a := alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"assignee": " maria.ortiz "}))
	require.Equal(t, "maria.ortiz", a["assignee"])
	require.NotNil(t, a["assigned_at"])
	ev := eventsOf(t, ts, id, "alert_assigned")
	require.Len(t, ev, 1)
	require.Equal(t, map[string]any{"from": nil, "to": "maria.ortiz"}, ev[0]["references"])
	require.Equal(t, key[:8], ev[0]["actor_key_prefix"])

	// null and absent leave it; the detail shows it.
	a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, `{"assignee": null, "severity": "Low"}`))
	require.Equal(t, "maria.ortiz", a["assignee"])
	a = alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil))
	require.Equal(t, "maria.ortiz", a["assignee"])

	// Reassign, then "" unassigns.
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"assignee": "sam.lee"}))
	a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"assignee": ""}))
	require.Nil(t, a["assignee"])
	require.Nil(t, a["assigned_at"])
	ev = eventsOf(t, ts, id, "alert_assigned")
	require.Len(t, ev, 3)
	require.Equal(t, map[string]any{"from": "maria.ortiz", "to": "sam.lee"}, ev[1]["references"])
	require.Equal(t, map[string]any{"from": "sam.lee", "to": nil}, ev[2]["references"])

	// A read-only key cannot assign.
	requireError(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, reader, map[string]any{"assignee": "x"}), http.StatusForbidden, "FORBIDDEN")

	// Hostile, malformed, oversized and wrong-type assignees: 422 at body.assignee, nothing written.
	for name, body := range map[string]string{
		"number":    `{"assignee": 42}`,
		"object":    `{"assignee": {"name": "x"}}`,
		"list":      `{"assignee": ["x"]}`,
		"blank":     `{"assignee": "   "}`,
		"NUL":       `{"assignee": "a\u0000b"}`,
		"control":   `{"assignee": "a\u001bb"}`,
		"oversized": `{"assignee": "` + strings.Repeat("x", 201) + `"}`,
		"reserved":  `{"assignee": "NONE"}`,
	} {
		d := requireValidation(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, body))
		require.Contains(t, locs(d), "body.assignee", name)
	}
	require.Len(t, eventsOf(t, ts, id, "alert_assigned"), 3)
	// Script is text, stored as sent.
	a = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"assignee": "<script>alert(1)</script>"}))
	require.Equal(t, "<script>alert(1)</script>", a["assignee"])
}

func TestListAlerts_AnalystFilters(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead, auth.ScopeEnrichmentsRead)
	tag := "f29-" + uuid.NewString()[:8]
	mk := func(extra string) string { return newAlert(t, ts, key, `,"tags":["`+tag+`"]`+extra) }
	a1 := mk(`,"description":"beacon to LockBit panel"`)
	a2 := mk("")
	a3 := mk("")
	a4 := mk("")
	within := "tags=" + tag + "&"

	// assignee (multi, none).
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a1, key, map[string]any{"assignee": "maria"}))
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a2, key, map[string]any{"assignee": "sam"}))
	got, _ := listUUIDs(t, ts, key, within+"assignee=maria")
	require.ElementsMatch(t, []string{a1}, got)
	got, _ = listUUIDs(t, ts, key, within+"assignee=maria,sam")
	require.ElementsMatch(t, []string{a1, a2}, got)
	got, total := listUUIDs(t, ts, key, within+"assignee=none")
	require.ElementsMatch(t, []string{a3, a4}, got)
	require.Equal(t, 2, total)
	got, _ = listUUIDs(t, ts, key, within+"assignee=None,maria")
	require.ElementsMatch(t, []string{a1, a3, a4}, got)

	// q over title and description.
	got, _ = listUUIDs(t, ts, key, within+"q=lockbit")
	require.Equal(t, []string{a1}, got)

	// indicator: normalized as ingest (case, spaces), any type or narrowed.
	hash := strings.Repeat("ab", 32)
	link := func(id string, inds ...map[string]any) []any {
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/indicators?enrich=false", key, map[string]any{"indicators": inds})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		return r.JSON(t)["data"].(map[string]any)["indicators"].([]any)
	}
	inds := link(a1, map[string]any{"value": hash}, map[string]any{"value": "c2.evil-" + tag + ".example"})
	link(a2, map[string]any{"value": hash})
	link(a3, map[string]any{"value": "198.51.100.7"})
	got, _ = listUUIDs(t, ts, key, within+"indicator="+strings.ToUpper(hash))
	require.ElementsMatch(t, []string{a1, a2}, got)
	got, _ = listUUIDs(t, ts, key, within+"indicator="+url.QueryEscape("  C2.EVIL-"+strings.ToUpper(tag)+".example "))
	require.ElementsMatch(t, []string{a1}, got)
	got, _ = listUUIDs(t, ts, key, within+"indicator=198.51.100.7&indicator_type=ip")
	require.ElementsMatch(t, []string{a3}, got)
	requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts?"+within+"indicator=198.51.100.7&indicator_type=domain", key, nil))
	got, _ = listUUIDs(t, ts, key, within+"indicator=198.51.100.7&indicator_type=account")
	require.Empty(t, got, "a valid value under another type matches nothing")
	got, _ = listUUIDs(t, ts, key, within+"indicator=203.0.113.99")
	require.Empty(t, got)

	// malice: computed (override, else worst indicator).
	var hashUUID string
	for _, i := range inds {
		if m := i.(map[string]any); m["value"] == hash {
			hashUUID = m["uuid"].(string)
		}
	}
	r := ts.do(t, http.MethodPatch, "/v1/indicators/"+hashUUID, key, map[string]any{"malice": "Malicious"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a4, key, map[string]any{"malice_override": "Suspicious"}))
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a2, key, map[string]any{"malice_override": "Benign"}))
	got, _ = listUUIDs(t, ts, key, within+"malice=Malicious")
	require.ElementsMatch(t, []string{a1}, got)
	got, _ = listUUIDs(t, ts, key, within+"malice=Suspicious,Benign")
	require.ElementsMatch(t, []string{a4, a2}, got)
	got, _ = listUUIDs(t, ts, key, within+"malice=Pending")
	require.ElementsMatch(t, []string{a3}, got)

	// close_classification (multi).
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a3, key, map[string]any{"status": "Closed", "close_classification": "Duplicate"}))
	alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+a4, key, map[string]any{"status": "Closed", "close_classification": "False Positive - Inaccurate Data"}))
	got, _ = listUUIDs(t, ts, key, within+"close_classification=Duplicate")
	require.Equal(t, []string{a3}, got)
	got, _ = listUUIDs(t, ts, key, within+"close_classification="+url.QueryEscape("Duplicate,False Positive - Inaccurate Data"))
	require.ElementsMatch(t, []string{a3, a4}, got)

	// Combined.
	got, _ = listUUIDs(t, ts, key, within+"assignee=maria&malice=Malicious&indicator="+hash+"&q=beacon")
	require.Equal(t, []string{a1}, got)

	// Hostile, malformed, oversized, wrong-type values: 422 naming the parameter, never 5xx.
	for q, loc := range map[string]string{
		"indicator=a%00b":                                "query.indicator",
		"indicator=" + strings.Repeat("a", 2049):         "query.indicator",
		"indicator=not-an-ip&indicator_type=ip":          "query.indicator",
		"indicator=1.2.3.4&indicator_type=bogus":         "query.indicator_type",
		"indicator_type=ip":                              "query.indicator_type",
		"malice=Evil":                                    "query.malice",
		"malice=Malicious,%27%3B%20DROP%20TABLE":         "query.malice",
		"close_classification=Oops":                      "query.close_classification",
		"assignee=a%00b":                                 "query.assignee",
		"assignee=" + strings.Repeat("a", 201):           "query.assignee",
		"q=" + strings.Repeat("a", 501):                  "query.q",
		"q=%00":                                          "query.q",
		"indicator=%27%20OR%201%3D1--&indicator_type=ip": "query.indicator",
	} {
		r := ts.do(t, http.MethodGet, "/v1/alerts?"+q, key, nil)
		d := requireValidation(t, r)
		require.True(t, slices.ContainsFunc(locs(d), func(l string) bool { return l == loc || strings.HasPrefix(l, loc+".") }),
			"%s: %v", q, locs(d))
	}
	// SQL-looking text is data.
	got, _ = listUUIDs(t, ts, key, within+"q="+url.QueryEscape("%' OR 1=1 --")+"&assignee="+url.QueryEscape("' OR ''='"))
	require.Empty(t, got)
}

func TestBulkAlerts_500With3BrokenTransitions(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	ctx := context.Background()
	ids := make([]string, 500)
	for i := range ids {
		res, err := ts.Store.Ingest(ctx, store.IngestAlert{Title: fmt.Sprintf("bulk %d %s", i, t.Name()), Severity: "Low",
			SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`),
			ActorType: store.ActorAPI}, time.Hour)
		require.NoError(t, err)
		ids[i] = res.AlertUUID.String()
	}
	broken := []int{7, 250, 499}
	for _, i := range broken {
		setAlert(t, ts, ids[i], "status = 'Closed', close_classification = 'Duplicate', closed_at = now()")
	}
	body := map[string]any{"alert_uuids": ids, "patch": map[string]any{"status": "Triaging", "assignee": "maria",
		"tags_add": []string{"fp-sweep"}, "severity": "Medium"}}

	requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", reader, body), http.StatusForbidden, "FORBIDDEN")

	start := time.Now()
	r := ts.do(t, http.MethodPost, "/v1/alerts/bulk", key, body)
	elapsed := time.Since(start)
	t.Logf("bulk of 500: %s", elapsed)
	d := alertData(t, r)
	require.EqualValues(t, 497, d["succeeded"])
	require.EqualValues(t, 3, d["failed"])
	results := d["results"].([]any)
	require.Len(t, results, 500)
	for i, res := range results {
		m := res.(map[string]any)
		require.Equal(t, ids[i], m["alert_uuid"], "results keep the request's order")
		isBroken := i == broken[0] || i == broken[1] || i == broken[2]
		require.Equal(t, !isBroken, m["ok"], i)
		if isBroken {
			e := m["error"].(map[string]any)
			require.Equal(t, "INVALID_TRANSITION", e["code"])
			require.Contains(t, e["message"], "Closed to Triaging")
			require.Empty(t, eventsOf(t, ts, ids[i], "alert_assigned"), "a refused alert changes nothing")
			continue
		}
		require.Nil(t, m["error"])
	}
	// Each change in activity: one status, assignment, tags and severity event per alert that moved.
	for _, typ := range []string{"alert_status_updated", "alert_assigned", "alert_tags_updated", "alert_severity_updated"} {
		n, err := ts.Store.DB().NewSelect().Table("activity_events").Where("event_type = ? AND alert_uuid IN (?)", typ, bun.List(ids)).Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 497, n, typ)
	}
	got, total := listUUIDs(t, ts, key, "assignee=maria&tags=fp-sweep&page_size=1")
	require.Len(t, got, 1)
	require.Equal(t, 497, total)

	// Missing alerts are per-alert NOT_FOUND; the others still go.
	missing := uuid.NewString()
	d = alertData(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", key, map[string]any{"alert_uuids": []string{missing, ids[0]},
		"patch": map[string]any{"tags_remove": []string{"fp-sweep"}}}))
	require.EqualValues(t, 1, d["succeeded"])
	e := d["results"].([]any)[0].(map[string]any)["error"].(map[string]any)
	require.Equal(t, "NOT_FOUND", e["code"])
	require.Equal(t, "Alert not found.", e["message"])
}

func TestBulkAlerts_MalformedAndHostile(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	id := newAlert(t, ts, key, "")
	many := make([]string, 501)
	for i := range many {
		many[i] = uuid.NewString()
	}
	for name, tc := range map[string]struct {
		body string
		loc  string
	}{
		"no alerts":        {`{"alert_uuids": [], "patch": {"severity": "Low"}}`, "body.alert_uuids"},
		"501 alerts":       {fmt.Sprintf(`{"alert_uuids": ["%s"], "patch": {"severity": "Low"}}`, strings.Join(many, `","`)), "body.alert_uuids"},
		"bad uuid":         {`{"alert_uuids": ["nope"], "patch": {"severity": "Low"}}`, "body.alert_uuids.0"},
		"uuids as string":  {`{"alert_uuids": "` + id + `", "patch": {"severity": "Low"}}`, "body.alert_uuids"},
		"repeated":         {`{"alert_uuids": ["` + id + `","` + id + `"], "patch": {"severity": "Low"}}`, "body.alert_uuids.1"},
		"no patch":         {`{"alert_uuids": ["` + id + `"]}`, "body.patch"},
		"empty patch":      {`{"alert_uuids": ["` + id + `"], "patch": {}}`, "body.patch"},
		"patch as list":    {`{"alert_uuids": ["` + id + `"], "patch": []}`, "body.patch"},
		"unknown field":    {`{"alert_uuids": ["` + id + `"], "patch": {"title": "x"}}`, "body.patch.title"},
		"bad status":       {`{"alert_uuids": ["` + id + `"], "patch": {"status": "Done"}}`, "body.patch.status"},
		"close no reason":  {`{"alert_uuids": ["` + id + `"], "patch": {"status": "Closed"}}`, "body.patch.close_classification"},
		"NUL tag":          {`{"alert_uuids": ["` + id + `"], "patch": {"tags_add": ["a\u0000"]}}`, "body.patch.tags_add.0"},
		"long tag":         {`{"alert_uuids": ["` + id + `"], "patch": {"tags_add": ["` + strings.Repeat("t", 101) + `"]}}`, "body.patch.tags_add.0"},
		"tag not a string": {`{"alert_uuids": ["` + id + `"], "patch": {"tags_remove": [1]}}`, "body.patch.tags_remove.0"},
		"bad assignee":     {`{"alert_uuids": ["` + id + `"], "patch": {"assignee": "none"}}`, "body.patch.assignee"},
		"bad malice":       {`{"alert_uuids": ["` + id + `"], "patch": {"malice_override": "Evil"}}`, "body.patch.malice_override"},
	} {
		d := requireValidation(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", key, tc.body))
		require.Contains(t, locs(d), tc.loc, name)
	}
	requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", key, `{"alert_uuids": [`), http.StatusBadRequest, "INVALID_JSON")
	requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", "", `{}`), http.StatusUnauthorized, "UNAUTHORIZED")
	a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil))
	require.Empty(t, a["tags"], "nothing was changed by a refused request")
}

func TestBulkAlerts_BodyLimit(t *testing.T) {
	ts := newAlertServer(t, func(cfg *Config, _ *Deps) { cfg.MaxRequestBodyMB = 1 })
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite)
	big := `{"alert_uuids": [], "patch": {"assignee": "` + strings.Repeat("a", 2<<20) + `"}}`
	requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/bulk", key, big), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
}

func TestAlertDetail_SeverityUnmapped(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	ingest := func(sev string) map[string]any {
		d := ingestData(t, ts.do(t, http.MethodPost, "/v1/ingest/generic", key,
			fmt.Sprintf(`{"title":"sev %s %s","severity":%q}`, sev, uuid.NewString(), sev)))
		return alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+d["alert_uuid"].(string), key, nil))
	}
	a := ingest("P1")
	require.Equal(t, "Critical", a["severity"])
	require.Equal(t, "P1", a["source_severity"])
	require.Equal(t, false, a["severity_unmapped"])
	a = ingest("Ultraviolet")
	require.Equal(t, "Pending", a["severity"])
	require.Equal(t, "Ultraviolet", a["source_severity"])
	require.Equal(t, true, a["severity_unmapped"])
}
