package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
)

// newCommentAlert commits a fresh Open alert and returns its uuid.
func newCommentAlert(t *testing.T, st *store.Store) uuid.UUID {
	t.Helper()
	res, err := st.Ingest(context.Background(), store.IngestAlert{Title: "comments " + uuid.NewString(), Severity: "Medium",
		SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`),
		ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	return res.AlertUUID
}

// namedKey is a key named name with scopes (and the agent key type when agent).
func namedKey(t *testing.T, st *store.Store, name string, agent bool, scopes ...string) string {
	t.Helper()
	return mustKeyWith(t, st, func(k *store.APIKey) {
		k.Name = name
		if agent {
			k.KeyType = auth.KeyTypeAgent
		}
	}, scopes...)
}

func commentData(t *testing.T, r response) map[string]any {
	t.Helper()
	return r.JSON(t)["data"].(map[string]any)
}

// Comments through REST: the author is the key, oldest first, edit by the author only (the previous
// body kept in activity), delete by the author or an admin, the scopes of each route.
func TestAlertComments_RulesAndScopes(t *testing.T) {
	ts := newTestServer(t, nil)
	st := ts.Store
	ctx := context.Background()
	maria := namedKey(t, st, "maria.ortiz", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	omar := namedKey(t, st, "omar.haddad", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	bot := namedKey(t, st, "triage-bot", true, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	reader := namedKey(t, st, "read-only", false, auth.ScopeAlertsRead)
	admin := namedKey(t, st, "admin", false, auth.ScopeAdmin)
	id := newCommentAlert(t, st)
	base := "/v1/alerts/" + id.String() + "/comments"

	r := ts.do(t, http.MethodPost, base, maria, map[string]any{"body": "Hand-over: **host isolated**, waiting on the user."})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	first := commentData(t, r)
	require.Equal(t, "Hand-over: **host isolated**, waiting on the user.", first["body"])
	author := first["author"].(map[string]any)
	require.Equal(t, "maria.ortiz", author["key_name"])
	require.Equal(t, "human", author["key_type"])
	require.Equal(t, maria[:len(author["key_prefix"].(string))], author["key_prefix"])
	require.Nil(t, first["edited_at"])
	_, err := time.Parse(time.RFC3339Nano, first["created_at"].(string))
	require.NoError(t, err)

	r = ts.do(t, http.MethodPost, base, bot, map[string]any{"body": "Seen the same hash on 3 other hosts."})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.Equal(t, "agent", commentData(t, r)["author"].(map[string]any)["key_type"])

	// A read-only key reads, and cannot write.
	requireError(t, ts.do(t, http.MethodPost, base, reader, map[string]any{"body": "x"}), http.StatusForbidden, "FORBIDDEN")
	r = ts.do(t, http.MethodGet, base+"?page_size=1", reader, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	page := r.JSON(t)
	require.EqualValues(t, 2, page["meta"].(map[string]any)["total"])
	require.EqualValues(t, 2, page["meta"].(map[string]any)["total_pages"])
	require.Equal(t, first["uuid"], page["data"].([]any)[0].(map[string]any)["uuid"], "oldest first")
	r = ts.do(t, http.MethodGet, base+"?page=2&page_size=1", reader, nil)
	require.Equal(t, "Seen the same hash on 3 other hosts.", r.JSON(t)["data"].([]any)[0].(map[string]any)["body"])

	// Only the author edits; an admin may not edit someone else's words either.
	one := base + "/" + first["uuid"].(string)
	m := requireError(t, ts.do(t, http.MethodPatch, one, omar, map[string]any{"body": "rewritten"}), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	require.NotNil(t, m["error"].(map[string]any)["details"])
	requireError(t, ts.do(t, http.MethodPatch, one, admin, map[string]any{"body": "rewritten"}), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	requireError(t, ts.do(t, http.MethodPatch, one, reader, map[string]any{"body": "rewritten"}), http.StatusForbidden, "FORBIDDEN")
	r = ts.do(t, http.MethodPatch, one, maria, map[string]any{"body": "Hand-over: host isolated, **user reached**."})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	edited := commentData(t, r)
	require.Equal(t, "Hand-over: host isolated, **user reached**.", edited["body"])
	require.NotNil(t, edited["edited_at"])
	require.Equal(t, first["created_at"], edited["created_at"])
	acts, _, err := st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: []string{store.EventCommentEdited}, Page: store.Page{Number: 1, Size: 10}})
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "Hand-over: **host isolated**, waiting on the user.", acts[0].References["previous_body"], "the edit keeps the previous body")
	// The same body again changes nothing.
	r = ts.do(t, http.MethodPatch, one, maria, map[string]any{"body": "Hand-over: host isolated, **user reached**."})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	_, n, err := st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: []string{store.EventCommentEdited}, Page: store.Page{Number: 1, Size: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Delete: not another writer; the author, or an admin.
	requireError(t, ts.do(t, http.MethodDelete, one, omar, nil), http.StatusForbidden, "NOT_COMMENT_AUTHOR")
	requireError(t, ts.do(t, http.MethodDelete, one, reader, nil), http.StatusForbidden, "FORBIDDEN")
	r = ts.do(t, http.MethodDelete, one, admin, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	requireError(t, ts.do(t, http.MethodDelete, one, maria, nil), http.StatusNotFound, "NOT_FOUND")
	acts, _, err = st.ListActivity(ctx, store.ActivityFilter{AlertUUID: &id, EventTypes: []string{store.EventCommentDeleted}, Page: store.Page{Number: 1, Size: 10}})
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "Hand-over: host isolated, **user reached**.", acts[0].References["body"])
	require.Equal(t, "maria.ortiz", acts[0].References["author_key_name"])
	r = ts.do(t, http.MethodGet, base, maria, nil)
	require.EqualValues(t, 1, r.JSON(t)["meta"].(map[string]any)["total"])

	// Missing things are 404, named.
	m = requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/comments", maria, nil), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "Alert not found.", m["error"].(map[string]any)["message"])
	m = requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+uuid.NewString()+"/comments", maria, map[string]any{"body": "x"}), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "Alert not found.", m["error"].(map[string]any)["message"])
	m = requireError(t, ts.do(t, http.MethodPatch, base+"/"+uuid.NewString(), maria, map[string]any{"body": "x"}), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "Comment not found.", m["error"].(map[string]any)["message"])
	// A comment is reached only through its own alert.
	other := newCommentAlert(t, st)
	r = ts.do(t, http.MethodPost, "/v1/alerts/"+other.String()+"/comments", omar, map[string]any{"body": "on the other alert"})
	require.Equal(t, http.StatusCreated, r.Status)
	otherComment := commentData(t, r)["uuid"].(string)
	requireError(t, ts.do(t, http.MethodPatch, base+"/"+otherComment, omar, map[string]any{"body": "moved?"}), http.StatusNotFound, "NOT_FOUND")
	requireError(t, ts.do(t, http.MethodDelete, base+"/"+otherComment, admin, nil), http.StatusNotFound, "NOT_FOUND")
}

// Malformed, oversized, wrong-type and hostile input: 400/413/422 with the contract's body, never a
// 5xx; hostile markdown is stored exactly as sent.
func TestAlertComments_BadAndHostileInput(t *testing.T) {
	ts := newTestServer(t, func(cfg *Config, _ *Deps) { cfg.MaxRequestBodyMB = 1 })
	st := ts.Store
	key := namedKey(t, st, "analyst", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	id := newCommentAlert(t, st)
	base := "/v1/alerts/" + id.String() + "/comments"
	r := ts.do(t, http.MethodPost, base, key, map[string]any{"body": "to edit"})
	require.Equal(t, http.StatusCreated, r.Status)
	one := base + "/" + commentData(t, r)["uuid"].(string)

	for _, method := range []string{http.MethodPost, http.MethodPatch} {
		path := base
		if method == http.MethodPatch {
			path = one
		}
		requireError(t, ts.do(t, method, path, key, `{"body": "unterminated`), http.StatusBadRequest, "INVALID_JSON")
		requireError(t, ts.do(t, method, path, key, "body=x", "Content-Type", "application/x-www-form-urlencoded"),
			http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		for body, want := range map[string]string{
			`{}`:                         "body:missing",
			`{"body": null}`:             "body",
			`{"body": 5}`:                "body:string_type",
			`{"body": ["a"]}`:            "body:string_type",
			`{"body": ""}`:               "body:string_too_short",
			`{"body": " \n\t "}`:         "body:value_error",
			`{"body": "a\u0000b"}`:       "body:value_error",
			`{"body": "\ud800"}`:         "body:value_error",
			`{"body": "x", "author": 1}`: "author:extra_forbidden",
			`[]`:                         "body",
		} {
			d := requireValidation(t, ts.do(t, method, path, key, body))
			loc, typ, _ := strings.Cut(want, ":")
			found := false
			for _, fe := range d {
				l := fe["loc"].([]any)
				if (len(l) == 1 && loc == "body") || (len(l) > 1 && l[1] == loc) {
					found = typ == "" || fe["type"] == typ
					if found {
						break
					}
				}
			}
			require.True(t, found, "%s %s: want %s in %v", method, body, want, d)
		}
		d := requireValidation(t, ts.do(t, method, path, key, map[string]any{"body": strings.Repeat("é", 20001)}))
		require.Equal(t, "string_too_long", d[0]["type"])
		// Over MAX_REQUEST_BODY_SIZE_MB: 413 while reading.
		requireError(t, ts.do(t, method, path, key, map[string]any{"body": strings.Repeat("x", 2<<20)}), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	}
	d := requireValidation(t, ts.do(t, http.MethodPost, "/v1/alerts/not-a-uuid/comments", key, map[string]any{"body": "x"}))
	require.Equal(t, []string{"path.uuid"}, locs(d))
	d = requireValidation(t, ts.do(t, http.MethodPatch, base+"/nope", key, map[string]any{"body": "x"}))
	require.Equal(t, []string{"path.comment_uuid"}, locs(d))
	d = requireValidation(t, ts.do(t, http.MethodGet, base+"?page=0&page_size=501", key, nil))
	require.ElementsMatch(t, []string{"query.page", "query.page_size"}, locs(d))
	d = requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/timeline?page_size=abc", key, nil))
	require.Equal(t, []string{"query.page_size"}, locs(d))

	// Hostile markdown is data: stored and answered byte for byte (the console renders it inert).
	hostile := []string{
		`<script>alert(document.cookie)</script>`,
		`[click me](javascript:alert(1)) and <javascript:alert(2)> and [x](JaVaScRiPt&#58;alert(3))`,
		`<img src=x onerror=alert(4)><iframe src="https://evil.example"></iframe><b onclick="x()">bold</b>`,
		"```\n</textarea><script>alert(5)</script>\n```",
		strings.Repeat("😀", 20000), // 20 000 characters, 80 000 bytes
	}
	for _, body := range hostile {
		r := ts.do(t, http.MethodPost, base, key, map[string]any{"body": body})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		require.Equal(t, body, commentData(t, r)["body"])
	}
	r = ts.do(t, http.MethodGet, base+"?page_size=500", key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	var list struct {
		Data []struct {
			Body string `json:"body"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Data, 1+len(hostile))
	for i, body := range hostile {
		require.Equal(t, body, list.Data[i+1].Body, "stored as sent")
	}
}

// The timeline through REST: every source touching the alert in one list, oldest first, with a
// read-only key; comment.added delivered signed to a subscribed agent; a run about the alert and its
// approval decision appear.
func TestAlertTimeline_EverySourceAndCommentEvent(t *testing.T) {
	h := newRunHarness(t, "-timeline")
	st := h.ts.Store
	ctx := context.Background()
	_, agentKey, approver, _ := h.keys(t)
	analyst := namedKey(t, st, "maria.ortiz", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsWrite)
	reader := namedKey(t, st, "reader", false, auth.ScopeAlertsRead)

	recv := newReceiver(t)
	name, url, timeout := "comment watcher "+uuid.NewString(), recv.URL, 5
	ag, secret, err := h.agents.Create(ctx, agents.Actor{Type: store.ActorAPI},
		agents.Spec{Name: &name, EndpointURL: &url, Events: []string{agents.EventCommentAdded}, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.DeleteAgent(context.Background(), ag.UUID) })

	id := newCommentAlert(t, st)
	inds, _, err := st.LinkIndicators(ctx, id, []store.IndicatorKey{{Type: "ip", Value: "203.0.113.7"}}, "api")
	require.NoError(t, err)
	_, err = st.DB().NewRaw(`UPDATE indicators SET enrichment_results = ?, malice = 'Malicious' WHERE uuid = ?`,
		`{"abuseipdb":{"status":"success","malice":"Malicious","enriched_at":"2020-01-01T00:00:00Z"},"virustotal":{"status":"error","error_message":"quota"}}`,
		inds[0].UUID).Exec(ctx)
	require.NoError(t, err)
	r := h.ts.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/findings", analyst, map[string]any{"agent_name": "triage-bot",
		"summary": "C2 beacon every 60 s.", "confidence": "high"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	triaging := store.StatusTriaging
	_, err = h.ts.Server.alertRules.Patch(ctx, id, alerts.Patch{Status: &triaging}, store.Actor{Type: store.ActorAPI})
	require.NoError(t, err)
	r = h.ts.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/comments", analyst, map[string]any{"body": "Isolating the host.\n\n<script>x</script>"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	commentUUID := commentData(t, r)["uuid"].(string)

	// alert.comment_added, signed, with the comment and the alert.
	require.Eventually(t, func() bool { return len(recv.requests()) >= 1 }, 30*time.Second, 20*time.Millisecond, "alert.comment_added delivered")
	got := recv.requests()[0]
	require.True(t, webhooks.Verify(secret, got.Header.Get(webhooks.HeaderTimestamp), got.Body, got.Header.Get(webhooks.HeaderSignature)))
	require.Equal(t, "alert.comment_added", got.Header.Get(webhooks.HeaderEvent))
	var ev struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &ev))
	comment := ev.Data["comment"].(map[string]any)
	require.Equal(t, commentUUID, comment["uuid"])
	require.Equal(t, "Isolating the host.\n\n<script>x</script>", comment["body"])
	require.Equal(t, "maria.ortiz", comment["author"].(map[string]any)["key_name"])
	require.Equal(t, id.String(), ev.Data["alert"].(map[string]any)["uuid"])

	// A run about the alert, approved by a person.
	wf := h.createWorkflow(t, analyst, h.workflowBody("/timeline/"+uuid.NewString(), nil))
	ex := h.execute(t, agentKey, wf, map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.7", "alert_uuid": id.String(),
		"reason": "beaconing", "confidence": 0.9})
	require.Equal(t, "pending_approval", ex.Status)
	r = h.decide(t, approver, *ex.ApprovalRequestUUID, "approve", map[string]any{"comment": "go ahead", "responder_id": "alice"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)

	var tl struct {
		Data []struct {
			At    time.Time `json:"at"`
			Kind  string    `json:"kind"`
			Actor struct {
				Type      string  `json:"type"`
				KeyPrefix *string `json:"key_prefix"`
				Name      *string `json:"name"`
			} `json:"actor"`
			Summary string `json:"summary"`
			Ref     struct {
				Type string `json:"type"`
				UUID string `json:"uuid"`
			} `json:"ref"`
		} `json:"data"`
		Meta map[string]any `json:"meta"`
	}
	r = h.ts.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/timeline?page_size=500", reader, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.NoError(t, json.Unmarshal(r.Body, &tl))
	kinds := map[string]int{}
	for i, it := range tl.Data {
		kinds[it.Kind]++
		if i > 0 {
			require.False(t, it.At.Before(tl.Data[i-1].At), "oldest first")
		}
		require.NotEmpty(t, it.Summary)
		require.NotEmpty(t, it.Ref.UUID)
	}
	require.EqualValues(t, len(tl.Data), tl.Meta["total"])
	for _, k := range []string{"activity", "finding", "comment", "enrichment", "workflow_run", "approval_decision"} {
		require.Positive(t, kinds[k], "a %s item in %s", k, r.Body)
	}
	require.Equal(t, 2, kinds["enrichment"], "one item per provider")
	require.Equal(t, 1, kinds["comment"])
	require.Equal(t, 1, kinds["finding"])
	find := func(kind string) int {
		for i, it := range tl.Data {
			if it.Kind == kind {
				return i
			}
		}
		return -1
	}
	require.Equal(t, "enrichment", tl.Data[0].Kind, "the 2020 result is the oldest item")
	c := tl.Data[find("comment")]
	require.Equal(t, "maria.ortiz", *c.Actor.Name)
	require.Equal(t, "api", c.Actor.Type)
	require.Equal(t, commentUUID, c.Ref.UUID)
	require.Equal(t, "Isolating the host. <script>x</script>", c.Summary, "one line, text as written")
	f := tl.Data[find("finding")]
	require.Equal(t, "agent", f.Actor.Type)
	require.Equal(t, "[high confidence] C2 beacon every 60 s.", f.Summary)
	d := tl.Data[find("approval_decision")]
	require.Equal(t, "approval_request", d.Ref.Type)
	require.Equal(t, ex.ApprovalRequestUUID.String(), d.Ref.UUID)
	require.Contains(t, d.Summary, "approved")
	require.Contains(t, d.Summary, "go ahead")
	run := tl.Data[find("workflow_run")]
	require.Equal(t, ex.RunUUID.String(), run.Ref.UUID)
	require.Equal(t, "agent", run.Actor.Type)
	for _, it := range tl.Data {
		require.NotEqual(t, "agent_finding_posted", strings.SplitN(it.Summary, ":", 2)[0], "the finding is its own item")
		require.NotEqual(t, store.EventCommentAdded, strings.SplitN(it.Summary, ":", 2)[0], "the comment is its own item")
	}
	statusItem := false
	for _, it := range tl.Data {
		if it.Kind == "activity" && strings.HasPrefix(it.Summary, "alert_status_updated: Open → Triaging") {
			statusItem = true
		}
	}
	require.True(t, statusItem, "the status change, from → to: %s", r.Body)

	// Paged: the same order, page by page.
	r = h.ts.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/timeline?page=2&page_size=2", reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	var p2 struct {
		Data []struct {
			Ref struct {
				UUID string `json:"uuid"`
			} `json:"ref"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &p2))
	require.Len(t, p2.Data, 2)
	require.Equal(t, tl.Data[2].Ref.UUID, p2.Data[0].Ref.UUID)
	r = h.ts.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/timeline?page=99&page_size=50", reader, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.EqualValues(t, len(tl.Data), r.JSON(t)["meta"].(map[string]any)["total"], "the total past the last page")
	requireError(t, h.ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/timeline", reader, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, h.ts.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/timeline", approver, nil), http.StatusForbidden, "FORBIDDEN")
}
