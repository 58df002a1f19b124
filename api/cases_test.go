package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// caseAlerts ingests n alerts straight through the ingest statement and returns their uuids.
func caseAlerts(t *testing.T, ts *testServer, n int, sev string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		res, err := ts.Store.Ingest(context.Background(), store.IngestAlert{Title: fmt.Sprintf("case alert %d %s", i, t.Name()), Severity: sev,
			SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`),
			ActorType: store.ActorAPI}, time.Hour)
		require.NoError(t, err)
		ids[i] = res.AlertUUID.String()
	}
	return ids
}

func caseData(t testing.TB, r response, status int) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	return r.JSON(t)["data"].(map[string]any)
}

// caseEventCount counts the activity events of type typ on the alerts ids.
func caseEventCount(t *testing.T, ts *testServer, typ string, ids []string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		n += len(eventsOf(t, ts, id, typ))
	}
	return n
}

// The walk through REST: a case from 3 alerts, one moved to another case (409 without move),
// the case closed with its alerts (each closed with the classification, one activity event per
// alert change), and a read-only key that can read every case route and change none.
func TestCases_CreateMoveCloseAndScopes(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	reader := mustKey(t, ts.Store, auth.ScopeAlertsRead)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ids := caseAlerts(t, ts, 3, "Medium")
	setAlert(t, ts, ids[1], "severity = 'High'")

	c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": "LockBit on FIN-WS-07",
		"description": "three sources, one intrusion", "alert_uuids": ids, "tags": []string{"lockbit"}}), http.StatusCreated)
	caseID := c["uuid"].(string)
	require.Regexp(t, `^CASE-\d+$`, c["case_number"])
	require.Equal(t, "Open", c["status"])
	require.EqualValues(t, 3, c["alert_count"])
	require.Equal(t, "High", c["severity"], "derived: the worst of its alerts")
	require.Nil(t, c["severity_override"])
	require.Equal(t, "Pending", c["malice"])
	require.Equal(t, []any{}, c["indicators"])
	for _, id := range ids {
		a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, reader, nil))
		require.Equal(t, caseID, a["case_uuid"])
	}
	got, total := listUUIDs(t, ts, reader, "case_uuid="+caseID)
	require.Equal(t, 3, total)
	require.ElementsMatch(t, ids, got)

	// Moving one alert to another case: 409 naming it without move, 200 with.
	other := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": "Second incident"}), http.StatusCreated)
	otherID := other["uuid"].(string)
	e := requireError(t, ts.do(t, http.MethodPost, "/v1/cases/"+otherID+"/alerts", key, map[string]any{"alert_uuids": []string{ids[2]}}),
		http.StatusConflict, "ALERT_IN_OTHER_CASE")["error"].(map[string]any)
	require.Equal(t, map[string]any{"alert_uuid": ids[2], "case_uuid": caseID}, e["details"])
	require.Contains(t, e["message"], ids[2])
	moved := caseData(t, ts.do(t, http.MethodPost, "/v1/cases/"+otherID+"/alerts", key, map[string]any{"alert_uuids": []string{ids[2]}, "move": true}), http.StatusOK)
	require.Equal(t, []any{ids[2]}, moved["joined"])
	require.EqualValues(t, 1, moved["case"].(map[string]any)["alert_count"])
	c = caseData(t, ts.do(t, http.MethodGet, "/v1/cases/"+caseID, reader, nil), http.StatusOK)
	require.EqualValues(t, 2, c["alert_count"])
	require.Len(t, eventsOf(t, ts, ids[2], store.EventAlertRemovedFromCase), 1)
	require.Len(t, eventsOf(t, ts, ids[2], store.EventAlertAddedToCase), 2)

	// The graph: Open→Closed is refused; close needs a classification.
	r := ts.do(t, http.MethodPatch, "/v1/cases/"+caseID, key, map[string]any{"status": "Closed", "close_classification": "Duplicate"})
	d := requireValidation(t, r)
	require.Equal(t, "invalid_transition", d[0]["type"])
	d = requireValidation(t, ts.do(t, http.MethodPatch, "/v1/cases/"+caseID, key, map[string]any{"status": "Investigating", "close_alerts": true}))
	require.Contains(t, locs(d), "body.close_alerts")
	caseData(t, ts.do(t, http.MethodPatch, "/v1/cases/"+caseID, key, map[string]any{"status": "Investigating", "assignee": "maria.ortiz"}), http.StatusOK)
	d = requireValidation(t, ts.do(t, http.MethodPatch, "/v1/cases/"+caseID, key, map[string]any{"status": "Closed"}))
	require.Contains(t, locs(d), "body.close_classification")

	// Close with its alerts.
	cls := "True Positive - Suspicious Activity"
	r = ts.do(t, http.MethodPatch, "/v1/cases/"+caseID, key, map[string]any{"status": "Closed", "close_classification": cls, "close_alerts": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	body := r.JSON(t)
	c = body["data"].(map[string]any)
	require.Equal(t, "Closed", c["status"])
	require.Equal(t, cls, c["close_classification"])
	require.NotNil(t, c["closed_at"])
	closed := body["meta"].(map[string]any)["closed_alerts"].(map[string]any)
	require.EqualValues(t, 2, closed["succeeded"])
	require.EqualValues(t, 0, closed["failed"])
	for _, id := range ids[:2] {
		a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, reader, nil))
		require.Equal(t, "Closed", a["status"])
		require.Equal(t, cls, a["close_classification"])
		ev := eventsOf(t, ts, id, "alert_closed")
		require.Len(t, ev, 1, "one activity event per alert change")
		require.Equal(t, key[:8], ev[0]["actor_key_prefix"])
	}
	a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+ids[2], reader, nil))
	require.Equal(t, "Open", a["status"], "the moved alert belongs to the other case")
	require.Equal(t, 2, caseEventCount(t, ts, "alert_closed", ids))

	// The case's timeline merges its own activity with its alerts'.
	r = ts.do(t, http.MethodGet, "/v1/cases/"+caseID+"/timeline?page_size=500", reader, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var summaries []string
	for _, it := range r.JSON(t)["data"].([]any) {
		summaries = append(summaries, it.(map[string]any)["summary"].(string))
	}
	joined := strings.Join(summaries, "\n")
	for _, want := range []string{"case_created", "case_closed", "alert_closed", "alert_added_to_case", "case_assigned"} {
		require.Contains(t, joined, want)
	}

	// Comments on the case.
	cm := caseData(t, ts.do(t, http.MethodPost, "/v1/cases/"+caseID+"/comments", key, map[string]any{"body": "Contained; **reimage** FIN-WS-07."}), http.StatusCreated)
	require.Equal(t, "Contained; **reimage** FIN-WS-07.", cm["body"])
	r = ts.do(t, http.MethodGet, "/v1/cases/"+caseID+"/comments", reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Len(t, r.JSON(t)["data"].([]any), 1)

	// A read-only key reads every case route and is refused every change.
	for _, path := range []string{"/v1/cases", "/v1/cases/" + caseID, "/v1/cases/" + caseID + "/alerts", "/v1/cases/" + caseID + "/comments",
		"/v1/cases/" + caseID + "/timeline", "/v1/alerts?case_uuid=" + caseID} {
		require.Equal(t, http.StatusOK, ts.do(t, http.MethodGet, path, reader, nil).Status, path)
	}
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/cases", `{"title": "x"}`},
		{http.MethodPatch, "/v1/cases/" + caseID, `{"title": "x"}`},
		{http.MethodDelete, "/v1/cases/" + caseID, ``},
		{http.MethodPost, "/v1/cases/" + caseID + "/alerts", `{"alert_uuids": ["` + ids[0] + `"]}`},
		{http.MethodDelete, "/v1/cases/" + caseID + "/alerts/" + ids[0], ``},
		{http.MethodPost, "/v1/cases/" + caseID + "/comments", `{"body": "x"}`},
	} {
		var b any
		if req.body != "" {
			b = req.body
		}
		e := requireError(t, ts.do(t, req.method, req.path, reader, b), http.StatusForbidden, "FORBIDDEN")["error"].(map[string]any)
		require.NotEmpty(t, e["details"].(map[string]any)["required_scopes"], req.path)
	}
	// DELETE is admin's, not a writer's.
	requireError(t, ts.do(t, http.MethodDelete, "/v1/cases/"+caseID, key, nil), http.StatusForbidden, "FORBIDDEN")
	c = caseData(t, ts.do(t, http.MethodGet, "/v1/cases/"+caseID, reader, nil), http.StatusOK)
	require.Equal(t, "LockBit on FIN-WS-07", c["title"], "nothing changed")

	// Remove an alert, then delete the case: its alerts stay, outside any case.
	r = ts.do(t, http.MethodDelete, "/v1/cases/"+caseID+"/alerts/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	requireError(t, ts.do(t, http.MethodDelete, "/v1/cases/"+caseID+"/alerts/"+ids[0], key, nil), http.StatusNotFound, "NOT_FOUND")
	r = ts.do(t, http.MethodDelete, "/v1/cases/"+caseID, admin, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	requireError(t, ts.do(t, http.MethodGet, "/v1/cases/"+caseID, reader, nil), http.StatusNotFound, "NOT_FOUND")
	a = alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+ids[1], reader, nil))
	require.Nil(t, a["case_uuid"])
	require.Equal(t, "Closed", a["status"])

	// The list and its filters.
	r = ts.do(t, http.MethodGet, "/v1/cases?status=Open&q=second&sort_by=case_number&sort_order=asc", reader, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	list := r.JSON(t)
	require.EqualValues(t, 1, list["meta"].(map[string]any)["total"])
	require.Equal(t, otherID, list["data"].([]any)[0].(map[string]any)["uuid"])
	r = ts.do(t, http.MethodGet, "/v1/cases?q="+other["case_number"].(string), reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.EqualValues(t, 1, r.JSON(t)["meta"].(map[string]any)["total"])
}

func TestCases_500AlertAdd(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	ids := caseAlerts(t, ts, 500, "Low")
	c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": "big"}), http.StatusCreated)
	start := time.Now()
	d := caseData(t, ts.do(t, http.MethodPost, "/v1/cases/"+c["uuid"].(string)+"/alerts", key, map[string]any{"alert_uuids": ids}), http.StatusOK)
	t.Logf("500-alert add: %s", time.Since(start))
	require.Len(t, d["joined"], 500)
	require.EqualValues(t, 500, d["case"].(map[string]any)["alert_count"])
	require.Equal(t, 500, caseEventCount(t, ts, store.EventAlertAddedToCase, ids))
	// Again: nothing joins, nothing is written.
	d = caseData(t, ts.do(t, http.MethodPost, "/v1/cases/"+c["uuid"].(string)+"/alerts", key, map[string]any{"alert_uuids": ids}), http.StatusOK)
	require.Empty(t, d["joined"])
	require.Equal(t, 500, caseEventCount(t, ts, store.EventAlertAddedToCase, ids))
	r := ts.do(t, http.MethodGet, "/v1/cases/"+c["uuid"].(string)+"/alerts?page_size=500", key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.EqualValues(t, 500, r.JSON(t)["meta"].(map[string]any)["total"])

	// One missing alert among them: all or none.
	fresh := caseAlerts(t, ts, 2, "Low")
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases/"+c["uuid"].(string)+"/alerts", key,
		map[string]any{"alert_uuids": []string{fresh[0], uuid.NewString(), fresh[1]}}), http.StatusNotFound, "NOT_FOUND")
	a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+fresh[0], key, nil))
	require.Nil(t, a["case_uuid"], "a refused add joins nothing")
}

func TestCases_MalformedOversizedWrongTypeHostile(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	ids := caseAlerts(t, ts, 1, "Low")
	c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": "target"}), http.StatusCreated)
	caseID := c["uuid"].(string)
	many := make([]string, 501)
	for i := range many {
		many[i] = uuid.NewString()
	}
	type tc struct{ method, path, body, loc string }
	cases := map[string]tc{
		"no title":            {http.MethodPost, "/v1/cases", `{}`, "body.title"},
		"null title":          {http.MethodPost, "/v1/cases", `{"title": null}`, "body.title"},
		"blank title":         {http.MethodPost, "/v1/cases", `{"title": "   "}`, "body.title"},
		"title number":        {http.MethodPost, "/v1/cases", `{"title": 42}`, "body.title"},
		"title list":          {http.MethodPost, "/v1/cases", `{"title": ["x"]}`, "body.title"},
		"long title":          {http.MethodPost, "/v1/cases", `{"title": "` + strings.Repeat("t", 501) + `"}`, "body.title"},
		"NUL title":           {http.MethodPost, "/v1/cases", `{"title": "a\u0000b"}`, "body.title"},
		"lone surrogate":      {http.MethodPost, "/v1/cases", `{"title": "a\ud800b"}`, "body.title"},
		"long description":    {http.MethodPost, "/v1/cases", `{"title": "x", "description": "` + strings.Repeat("d", 50001) + `"}`, "body.description"},
		"bad severity":        {http.MethodPost, "/v1/cases", `{"title": "x", "severity": "Apocalyptic"}`, "body.severity"},
		"unknown field":       {http.MethodPost, "/v1/cases", `{"title": "x", "status": "Closed"}`, "body.status"},
		"alerts not list":     {http.MethodPost, "/v1/cases", `{"title": "x", "alert_uuids": "` + ids[0] + `"}`, "body.alert_uuids"},
		"bad alert uuid":      {http.MethodPost, "/v1/cases", `{"title": "x", "alert_uuids": ["nope"]}`, "body.alert_uuids.0"},
		"repeated alert":      {http.MethodPost, "/v1/cases", `{"title": "x", "alert_uuids": ["` + ids[0] + `","` + ids[0] + `"]}`, "body.alert_uuids.1"},
		"move not bool":       {http.MethodPost, "/v1/cases", `{"title": "x", "move": "yes"}`, "body.move"},
		"blank tag":           {http.MethodPost, "/v1/cases", `{"title": "x", "tags": [" "]}`, "body.tags.0"},
		"reserved assignee":   {http.MethodPost, "/v1/cases", `{"title": "x", "assignee": "none"}`, "body.assignee"},
		"script in sort":      {http.MethodGet, "/v1/cases?sort_by=<script>", ``, "query.sort_by"},
		"bad status filter":   {http.MethodGet, "/v1/cases?status=Open,Done", ``, "query.status.1"},
		"page 0":              {http.MethodGet, "/v1/cases?page=0", ``, "query.page"},
		"bad case uuid":       {http.MethodGet, "/v1/cases/not-a-uuid", ``, "path.uuid"},
		"bad alerts filter":   {http.MethodGet, "/v1/alerts?case_uuid=1;DROP", ``, "query.case_uuid"},
		"patch bad status":    {http.MethodPatch, "/v1/cases/" + caseID, `{"status": "Done"}`, "body.status"},
		"patch both sev":      {http.MethodPatch, "/v1/cases/" + caseID, `{"severity": "Low", "reset_severity": true}`, "body.reset_severity"},
		"patch class on open": {http.MethodPatch, "/v1/cases/" + caseID, `{"close_classification": "Duplicate"}`, "body.close_classification"},
		"patch title null ok": {http.MethodPatch, "/v1/cases/" + caseID, `{"title": ""}`, "body.title"},
		"patch tags string":   {http.MethodPatch, "/v1/cases/" + caseID, `{"tags": "a"}`, "body.tags"},
		"add empty":           {http.MethodPost, "/v1/cases/" + caseID + "/alerts", `{"alert_uuids": []}`, "body.alert_uuids"},
		"add none":            {http.MethodPost, "/v1/cases/" + caseID + "/alerts", `{}`, "body.alert_uuids"},
		"add 501":             {http.MethodPost, "/v1/cases/" + caseID + "/alerts", `{"alert_uuids": ["` + strings.Join(many, `","`) + `"]}`, "body.alert_uuids"},
		"add bad path":        {http.MethodPost, "/v1/cases/x/alerts", `{"alert_uuids": ["nope"]}`, "path.uuid"},
		"remove bad alert":    {http.MethodDelete, "/v1/cases/" + caseID + "/alerts/x", ``, "path.alert_uuid"},
		"comment NUL":         {http.MethodPost, "/v1/cases/" + caseID + "/comments", `{"body": "a\u0000"}`, "body.body"},
		"comment too long":    {http.MethodPost, "/v1/cases/" + caseID + "/comments", `{"body": "` + strings.Repeat("c", 20001) + `"}`, "body.body"},
	}
	for name, tc := range cases {
		var b any
		if tc.body != "" {
			b = tc.body
		}
		d := requireValidation(t, ts.do(t, tc.method, tc.path, key, b))
		require.Contains(t, locs(d), tc.loc, name)
	}
	// Every field error of a request at once.
	d := requireValidation(t, ts.do(t, http.MethodPost, "/v1/cases", key, `{"title": "", "severity": "x", "tags": [1]}`))
	require.Subset(t, locs(d), []string{"body.title", "body.severity", "body.tags.0"})
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases", key, `{"title": `), http.StatusBadRequest, "INVALID_JSON")
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases", key, `[1,2]`), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases", "", `{"title": "x"}`), http.StatusUnauthorized, "UNAUTHORIZED")
	requireError(t, ts.do(t, http.MethodGet, "/v1/cases/"+uuid.NewString(), key, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPatch, "/v1/cases/"+uuid.NewString(), key, `{"title": "x"}`), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases/"+uuid.NewString()+"/alerts", key, `{"alert_uuids": ["`+ids[0]+`"]}`), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases/"+uuid.NewString()+"/comments", key, `{"body": "x"}`), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodPut, "/v1/cases/"+caseID, key, `{}`), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")

	// Hostile text that is valid is stored exactly and answered as JSON text.
	hostile := `<img src=x onerror=alert(1)> "; DROP TABLE cases; -- {{7*7}}`
	c = caseData(t, ts.do(t, http.MethodPost, "/v1/cases", key, map[string]any{"title": hostile, "description": hostile}), http.StatusCreated)
	require.Equal(t, hostile, c["title"])
	c = caseData(t, ts.do(t, http.MethodGet, "/v1/cases/"+c["uuid"].(string), key, nil), http.StatusOK)
	require.Equal(t, hostile, c["description"])

	// Nothing was changed by the refused requests.
	c = caseData(t, ts.do(t, http.MethodGet, "/v1/cases/"+caseID, key, nil), http.StatusOK)
	require.Equal(t, "target", c["title"])
	require.EqualValues(t, 0, c["alert_count"])
}

func TestCases_BodyLimit(t *testing.T) {
	ts := newAlertServer(t, func(cfg *Config, _ *Deps) { cfg.MaxRequestBodyMB = 1 })
	key := mustKey(t, ts.Store, auth.ScopeAlertsRead, auth.ScopeAlertsWrite) // a case write needs both (R4-3)
	big := `{"title": "` + strings.Repeat("a", 2<<20) + `"}`
	requireError(t, ts.do(t, http.MethodPost, "/v1/cases", key, big), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
}

// A case's comments are edited and deleted as an alert's: the author edits (the previous body kept in
// the case's activity), the author or an admin deletes (the body kept), another writer is 403
// NOT_COMMENT_AUTHOR, a read-only key is 403 FORBIDDEN, a comment is reached only through its own case,
// and bad input is the contract's error body with nothing changed.
func TestCaseComments_EditDelete(t *testing.T) {
	ts := newAlertServer(t, nil)
	st := ts.Store
	ctx := context.Background()
	maria := namedKey(t, st, "maria.ortiz", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	omar := namedKey(t, st, "omar.haddad", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	reader := namedKey(t, st, "read-only", false, auth.ScopeAlertsRead)
	admin := namedKey(t, st, "admin", false, auth.ScopeAdmin)
	caseID := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", maria, map[string]any{"title": "FIN-WS-07 beaconing"}), http.StatusCreated)["uuid"].(string)
	cid := uuid.MustParse(caseID)
	base := "/v1/cases/" + caseID + "/comments"
	first := caseData(t, ts.do(t, http.MethodPost, base, maria, map[string]any{"body": "Contained; **reimage** pending."}), http.StatusCreated)
	one := base + "/" + first["uuid"].(string)

	requireError(t, ts.do(t, http.MethodPatch, one, omar, map[string]any{"body": "rewritten"}), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	requireError(t, ts.do(t, http.MethodPatch, one, admin, map[string]any{"body": "rewritten"}), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	requireError(t, ts.do(t, http.MethodPatch, one, reader, map[string]any{"body": "rewritten"}), http.StatusForbidden, "FORBIDDEN")
	hostile := `<img src=x onerror=alert(1)> "; DROP TABLE comments; -- {{7*7}} ` + "\u202e"
	edited := caseData(t, ts.do(t, http.MethodPatch, one, maria, map[string]any{"body": hostile}), http.StatusOK)
	require.Equal(t, hostile, edited["body"], "stored exactly as sent")
	require.NotNil(t, edited["edited_at"])
	acts, _, err := st.ListActivity(ctx, store.ActivityFilter{CaseUUID: &cid, EventTypes: []string{store.EventCommentEdited}, Page: store.Page{Number: 1, Size: 10}})
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "Contained; **reimage** pending.", acts[0].References["previous_body"])

	// Bad input: each the contract's error body, the comment unchanged.
	for name, tc := range map[string]struct{ method, path, body, loc string }{
		"NUL":            {http.MethodPatch, one, `{"body": "a\u0000"}`, "body.body"},
		"too long":       {http.MethodPatch, one, `{"body": "` + strings.Repeat("c", 20001) + `"}`, "body.body"},
		"blank":          {http.MethodPatch, one, `{"body": "  "}`, "body.body"},
		"number":         {http.MethodPatch, one, `{"body": 7}`, "body.body"},
		"bad comment id": {http.MethodPatch, base + "/x", `{"body": "x"}`, "path.comment_uuid"},
		"bad case id":    {http.MethodDelete, "/v1/cases/x/comments/" + first["uuid"].(string), ``, "path.uuid"},
	} {
		var b any
		if tc.body != "" {
			b = tc.body
		}
		require.Contains(t, locs(requireValidation(t, ts.do(t, tc.method, tc.path, maria, b))), tc.loc, name)
	}
	requireError(t, ts.do(t, http.MethodPatch, one, maria, `{"body": `), http.StatusBadRequest, "INVALID_JSON")
	m := requireError(t, ts.do(t, http.MethodPatch, base+"/"+uuid.NewString(), maria, map[string]any{"body": "x"}), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "Comment not found.", m["error"].(map[string]any)["message"])
	// An alert's comment is not reached through a case's path.
	alert := newCommentAlert(t, st)
	r := ts.do(t, http.MethodPost, "/v1/alerts/"+alert.String()+"/comments", maria, map[string]any{"body": "on the alert"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	requireError(t, ts.do(t, http.MethodPatch, base+"/"+commentData(t, r)["uuid"].(string), maria, map[string]any{"body": "moved?"}), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodDelete, base+"/"+commentData(t, r)["uuid"].(string), admin, nil), http.StatusNotFound, "NOT_FOUND")

	// Delete: not another writer, not a reader; the author or an admin.
	requireError(t, ts.do(t, http.MethodDelete, one, omar, nil), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	requireError(t, ts.do(t, http.MethodDelete, one, reader, nil), http.StatusForbidden, "FORBIDDEN")
	r = ts.do(t, http.MethodDelete, one, admin, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	requireError(t, ts.do(t, http.MethodDelete, one, maria, nil), http.StatusNotFound, "NOT_FOUND")
	acts, _, err = st.ListActivity(ctx, store.ActivityFilter{CaseUUID: &cid, EventTypes: []string{store.EventCommentDeleted}, Page: store.Page{Number: 1, Size: 10}})
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, hostile, acts[0].References["body"])
	r = ts.do(t, http.MethodGet, base, reader, nil)
	require.EqualValues(t, 0, r.JSON(t)["meta"].(map[string]any)["total"])
}
