package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// newCommentConsoleServer is the API with the console wired as cmd/vigil wires it (comments and the
// timeline included).
func newCommentConsoleServer(t *testing.T) *testServer {
	t.Helper()
	box, err := secretbox.New(testEncryptionKey)
	require.NoError(t, err)
	return newTestServer(t, func(_ *Config, d *Deps) {
		st := testStore(t)
		d.Console = console.New(console.Deps{Auth: d.Auth, Box: box, Store: st, Alerts: alerts.New(st, d.Log), Log: d.Log,
			Comments: comments.New(st), Timeline: timeline.New(st)})
	})
}

// section returns the part of page from the element with id to the end of its section.
func section(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	require.GreaterOrEqual(t, i, 0, "no #%s", id)
	rest := page[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// article returns the HTML of comment cid on page.
func article(t *testing.T, page, cid string) string {
	t.Helper()
	i := strings.Index(page, `id="comment-`+cid+`"`)
	require.GreaterOrEqual(t, i, 0, "no comment %s", cid)
	rest := page[i:]
	return rest[:strings.Index(rest, "</article>")]
}

// The console's comments and timeline in headless Chromium: hostile comment bodies (script, HTML,
// javascript: links, 20 000 characters) written by another key render inert; the signed-in analyst
// comments (markdown rendered), edits and deletes their own comment and cannot touch the other's; a
// NUL body and an oversized one are refused with a page, never a 5xx; a read-only key sees the
// comments and the timeline and cannot comment, even with a form it builds itself.
func TestConsoleCommentsAndTimelineInHeadlessChromium(t *testing.T) {
	ts := newCommentConsoleServer(t)
	st := ts.Store
	maria := namedKey(t, st, "maria.ortiz", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	omar := namedKey(t, st, "omar.haddad", false, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	reader := namedKey(t, st, "reader", false, auth.ScopeAlertsRead)
	id := newCommentAlert(t, st)
	alertPage := ts.URL + "/console/alerts/" + id.String()

	long := strings.Repeat("A", 19990) + " LONG-END"
	hostile := []string{
		`HOSTILE-1 <script>document.title='PWNED'</script>`,
		"<script>document.title='PWNED'</script>\n\n<div onmouseover=\"document.title='PWNED'\">raw block</div>",
		`[click HOSTILE-2](javascript:document.title='PWNED') <javascript:alert(1)> [x](JaVaScRiPt&#58;alert(3)) [ok](https://example.com/runbook)`,
		`<img src=x onerror="document.title='PWNED'"><iframe src="https://evil.example"></iframe><b onclick="x()">HOSTILE-3</b>`,
		"```\n</textarea><script>document.title='PWNED'</script> HOSTILE-4\n```",
		long,
	}
	var omarIDs []string
	for _, body := range hostile {
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/comments", omar, map[string]any{"body": body})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		omarIDs = append(omarIDs, commentData(t, r)["uuid"].(string))
	}

	b := startChromium(t)
	b.open()
	b.scripts(true) // scripts on: a hostile body that ran would show in the title
	b.navigate(ts.URL + "/console/")
	b.waitFor("#signin")
	b.typeInto("#key", maria)
	b.click("#signin")
	b.waitFor("#queue")
	b.navigate(alertPage)
	page := b.waitFor("#timeline")
	notes := section(t, page, "comments")
	for _, marker := range []string{"HOSTILE-1", "HOSTILE-2", "HOSTILE-3", "HOSTILE-4", "LONG-END"} {
		require.True(t, strings.Contains(notes, marker), "%s shown", marker)
	}
	for _, bad := range []string{"<script", "<img", "<iframe", "<div on", "onerror", "onclick", "onmouseover", `href="javascript`} {
		require.False(t, strings.Contains(strings.ToLower(notes), bad), "hostile markup %q rendered inert", bad)
	}
	require.True(t, strings.Contains(notes, `<a href="https://example.com/runbook">ok</a>`), "an https link stays a link")
	require.True(t, strings.Contains(notes, "&lt;/textarea&gt;&lt;script&gt;"), "code is shown as text")
	var title struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &title)
	require.NotContains(t, title.Result.Value, "PWNED", "no hostile script ran")
	for _, cid := range omarIDs {
		a := article(t, page, cid)
		require.NotContains(t, a, "edit-comment", "another key's comment has no edit form")
		require.NotContains(t, a, "delete-comment", "nor a delete button")
	}
	tl := section(t, page, "timeline")
	require.Contains(t, tl, `class="tl-comment"`)
	require.Contains(t, tl, "&lt;script&gt;document.title=", "summaries are text")
	b.screenshot("console-comments-hostile")

	// Comment, as markdown.
	b.scripts(false)
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	b.typeInto("#comment-body", "**Host isolated**, see [runbook](https://runbooks.example/isolate). MARIA-1")
	b.click("#add-comment")
	page = b.waitForText("MARIA-1")
	mine, _, err := st.ListComments(t.Context(), store.AlertCommentSubject(id), store.Page{Number: 1, Size: 500})
	require.NoError(t, err)
	own := mine[len(mine)-1]
	require.Equal(t, "maria.ortiz", own.AuthorKeyName)
	require.Equal(t, store.ActorConsole, own.ActorType)
	a := article(t, page, own.UUID.String())
	require.Contains(t, a, "<strong>Host isolated</strong>")
	require.Contains(t, a, `<a href="https://runbooks.example/isolate">runbook</a>`)
	require.Contains(t, a, "edit-comment")
	require.Contains(t, a, "delete-comment")

	// Edit it (the form is prefilled with the markdown source).
	b.scripts(true)
	b.navigate(alertPage)
	b.waitFor("#comment-" + own.UUID.String())
	b.call("Runtime.evaluate", map[string]any{"expression": `(function () {
		var t = document.querySelector('#comment-` + own.UUID.String() + ` textarea'); t.value = 'Host isolated; user reached. MARIA-EDITED';
		t.form.querySelector('button').click(); })()`}, nil)
	page = b.waitForText("MARIA-EDITED")
	require.Regexp(t, regexp.MustCompile(`edited \d{4}-\d\d-\d\d`), article(t, page, own.UUID.String()))
	acts, _, err := st.ListActivity(t.Context(), store.ActivityFilter{AlertUUID: &id, EventTypes: []string{store.EventCommentEdited},
		Page: store.Page{Number: 1, Size: 5}})
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Contains(t, acts[0].References["previous_body"], "MARIA-1")

	// A NUL body and one over 20 000 characters: the page again, with the rule's refusal.
	post := func(action, body string) {
		b.call("Runtime.evaluate", map[string]any{"expression": `(function () {
			var f = document.createElement("form"); f.method = "post"; f.action = location.pathname + "` + action + `";
			[["csrf", document.querySelector('input[name="csrf"]').value], ["body", ` + body + `]].forEach(function (kv) {
				var i = document.createElement("input"); i.type = "hidden"; i.name = kv[0]; i.value = kv[1]; f.appendChild(i); });
			document.body.appendChild(f); f.submit(); })()`}, nil)
	}
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	post("/comments", `"a\u0000b"`)
	b.waitForText("NUL characters are not accepted.")
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	post("/comments", `"x".repeat(20001)`)
	b.waitForText("at most 20000 character")
	// Someone else's comment, by a form built with this session's token: refused, unchanged.
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	post("/comments/"+omarIDs[0]+"/edit", `"taken over"`)
	b.waitForText("Only the key that wrote this comment may change it")
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	post("/comments/"+omarIDs[0]+"/delete", `""`)
	b.waitForText("Only the key that wrote this comment may change it")
	b.navigate(alertPage)
	b.waitFor("#comment-body")
	post("/comments/"+uuid.NewString()+"/delete", `""`)
	b.waitForText("No such comment")
	left, n, err := st.ListComments(t.Context(), store.AlertCommentSubject(id), store.Page{Number: 1, Size: 500})
	require.NoError(t, err)
	require.Equal(t, len(hostile)+1, n, "no refused form wrote anything")
	require.Equal(t, hostile[0], left[0].Body)

	// Delete her own.
	b.scripts(false)
	b.navigate(alertPage)
	b.waitFor("#comment-" + own.UUID.String())
	b.click("#comment-" + own.UUID.String() + " .delete-comment")
	page = b.waitForText("<td>comment_deleted</td>") // the deletion is on the timeline
	require.False(t, strings.Contains(section(t, page, "comments"), "MARIA-EDITED"), "deleted")
	b.screenshot("console-comments")

	// A read-only key reads the comments and the timeline and cannot comment.
	b.navigate(ts.URL + "/console/")
	b.waitFor("#queue")
	b.click(`header button[type="submit"]`) // sign out
	b.waitFor("#signin")
	b.typeInto("#key", reader)
	b.click("#signin")
	b.waitFor("#queue")
	b.navigate(alertPage)
	page = b.waitFor("#timeline")
	require.Contains(t, page, "HOSTILE-3")
	require.NotContains(t, page, `id="add-comment"`)
	require.NotContains(t, page, "delete-comment")
	b.scripts(true)
	b.navigate(alertPage)
	b.waitFor("#timeline")
	post("/comments", `"read-only words"`)
	b.waitForText("lacks the scope alerts:write")
	_, n, err = st.ListComments(t.Context(), store.AlertCommentSubject(id), store.Page{Number: 1, Size: 500})
	require.NoError(t, err)
	require.Equal(t, len(hostile), n)
}
