package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

// The issue 29 forms with malformed, oversized, wrong-type and hostile input: never a 5xx, never a
// change, the rule's words on the page; the queue's new filters ignore what they cannot use.
func TestAnalystFormsRefuseHostileInput(t *testing.T) {
	h := newHarness(t)
	b := h.browser(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	b.signIn(key)
	id := h.alert(t, "forms "+uuid.NewString())
	_, page := b.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	csrf := csrfOf(t, page)
	require.Contains(t, page, `/console/?indicator=203.0.113.77&amp;indicator_type=ip`, "the indicator links to its pivot")

	for name, v := range map[string]string{
		"oversized": strings.Repeat("a", 201), "NUL": "a\x00b", "escape": "a\x1b[2Jb", "reserved": "NONE", "blank": "   ",
	} {
		resp, page := b.do(http.MethodPost, "/console/alerts/"+id.String()+"/assign", url.Values{"csrf": {csrf}, "assignee": {v}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, page, `id="error"`, name)
	}
	resp, _ := b.do(http.MethodPost, "/console/alerts/"+id.String()+"/assign", url.Values{"assignee": {"x"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	a, err := h.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Nil(t, a.Assignee, "nothing was assigned")

	for name, form := range map[string]url.Values{
		"nothing ticked":   {"action": {"unassign"}},
		"malformed uuids":  {"action": {"unassign"}, "alert_uuid": {"nope", "' OR 1=1 --", strings.Repeat("f", 5000)}},
		"unknown action":   {"action": {"drop-table"}, "alert_uuid": {id.String()}},
		"no action":        {"alert_uuid": {id.String()}},
		"bad status":       {"action": {"status"}, "status": {"Done"}, "alert_uuid": {id.String()}},
		"close no reason":  {"action": {"status"}, "status": {"Closed"}, "alert_uuid": {id.String()}},
		"blank assignee":   {"action": {"assign"}, "assignee": {" "}, "alert_uuid": {id.String()}},
		"oversized tag":    {"action": {"tags"}, "tags_add": {strings.Repeat("t", 101)}, "alert_uuid": {id.String()}},
		"NUL tag":          {"action": {"tags"}, "tags_add": {"a\x00"}, "alert_uuid": {id.String()}},
		"repeated alerts":  {"action": {"unassign"}, "alert_uuid": {id.String(), id.String()}},
		"too many on page": {"action": {"unassign"}, "apply_to": {"page"}, "page_alert_uuid": manyUUIDs(501)},
	} {
		form.Set("csrf", csrf)
		form.Set("back", "https://evil.example/")
		resp, page := b.do(http.MethodPost, "/console/alerts/bulk", form)
		require.Less(t, resp.StatusCode, 500, name)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, page, `id="error"`, name)
		require.NotContains(t, page, "evil.example", "%s: back never leaves the console", name)
	}
	a, err = h.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Empty(t, a.Tags)
	require.Equal(t, "Open", a.Status)

	// The queue's filters leave out what they cannot use and say so.
	resp, page = b.do(http.MethodGet, "/console/?malice=Evil&close_classification=Nope&indicator=not-an-ip&indicator_type=ip&assignee="+
		url.QueryEscape(strings.Repeat("a", 201)), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="ignored"`)
	for _, label := range []string{"malice", "close classification", "indicator", "assignee"} {
		require.Contains(t, page, label)
	}
	// The search box pivots on an indicator it recognises, and searches text otherwise.
	_, page = b.do(http.MethodGet, "/console/?q=203.0.113.77", nil)
	require.Contains(t, page, `id="pivot"`)
	require.Contains(t, page, id.String())
	_, page = b.do(http.MethodGet, "/console/?q=203.0.113.77&text=1", nil)
	require.NotContains(t, page, `id="pivot"`)
	_, page = b.do(http.MethodGet, "/console/?q=forms", nil)
	require.NotContains(t, page, `id="pivot"`)
}

func manyUUIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.NewString()
	}
	return out
}
