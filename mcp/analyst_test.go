package mcp

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func TestAssignAlertAndPivotFilters(t *testing.T) {
	h := newHarness(t, 1000)
	token, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	readOnly, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	cs := h.session(t, token)
	title := "MCP assign " + uuid.NewString()
	id := h.alert(t, title)

	res, body := call(t, cs, "assign_alert", map[string]any{"alert_uuid": id.String(), "assignee": "maria.ortiz"})
	require.False(t, res.IsError, "%v", body)
	d := body["data"].(map[string]any)
	require.Equal(t, map[string]any{"notice": untrustedNotice, "origin": "alert_assignment", "data": "maria.ortiz"}, d["assignee"])
	require.Equal(t, store.ActorMCP, activityActors(t, h.st, id)["alert_assigned"])

	// search_alerts: assignee, indicator (normalized), malice, q over the description.
	res, body = call(t, cs, "add_alert_indicators", map[string]any{"alert_uuid": id.String(),
		"indicators": []any{map[string]any{"value": "10.9.8.7"}}, "enrich": false})
	require.False(t, res.IsError, "%v", body)
	res, body = call(t, cs, "search_alerts", map[string]any{"assignee": []string{"maria.ortiz"}, "indicator": " 10.9.8.7 ",
		"indicator_type": "ip", "malice": "Pending", "q": "close every alert", "tags": []string{"mcp-test"}})
	require.False(t, res.IsError, "%v", body)
	require.Len(t, body["data"], 1)
	require.Equal(t, id.String(), body["data"].([]any)[0].(map[string]any)["uuid"])
	res, body = call(t, cs, "search_alerts", map[string]any{"assignee": "none", "q": title})
	require.False(t, res.IsError, "%v", body)
	require.Empty(t, body["data"])

	// Unassign.
	res, body = call(t, cs, "assign_alert", map[string]any{"alert_uuid": id.String(), "assignee": ""})
	require.False(t, res.IsError, "%v", body)
	require.Nil(t, body["data"].(map[string]any)["assignee"])

	// Malformed, oversized, wrong-type and hostile arguments.
	for name, args := range map[string]map[string]any{
		"missing":   {"alert_uuid": id.String()},
		"number":    {"alert_uuid": id.String(), "assignee": 7},
		"oversized": {"alert_uuid": id.String(), "assignee": strings.Repeat("a", 201)},
		"NUL":       {"alert_uuid": id.String(), "assignee": "a\x00b"},
		"reserved":  {"alert_uuid": id.String(), "assignee": "none"},
		"escape":    {"alert_uuid": id.String(), "assignee": "a\x1b[31m"},
	} {
		res, body := call(t, cs, "assign_alert", args)
		requireToolError(t, res, body, "VALIDATION_ERROR")
		require.Contains(t, locs(t, body), `["arguments","assignee"]`, name)
	}
	res, body = call(t, cs, "assign_alert", map[string]any{"alert_uuid": uuid.NewString(), "assignee": "x"})
	requireToolError(t, res, body, "NOT_FOUND")
	for name, tc := range map[string]struct {
		args map[string]any
		loc  string
	}{
		"indicator NUL":        {map[string]any{"indicator": "a\x00b"}, `["arguments","indicator"]`},
		"indicator oversized":  {map[string]any{"indicator": strings.Repeat("a", 3000)}, `["arguments","indicator"]`},
		"indicator wrong type": {map[string]any{"indicator": "not-an-ip", "indicator_type": "ip"}, `["arguments","indicator"]`},
		"type alone":           {map[string]any{"indicator_type": "ip"}, `["arguments","indicator_type"]`},
		"malice enum":          {map[string]any{"malice": []string{"Evil"}}, `["arguments","malice",0]`},
		"malice wrong type":    {map[string]any{"malice": 3}, `["arguments","malice"]`},
		"close enum":           {map[string]any{"close_classification": "Nope"}, `["arguments","close_classification",0]`},
		"assignee oversized":   {map[string]any{"assignee": []string{strings.Repeat("a", 201)}}, `["arguments","assignee",0]`},
	} {
		res, body := call(t, cs, "search_alerts", tc.args)
		requireToolError(t, res, body, "VALIDATION_ERROR")
		require.Contains(t, locs(t, body), tc.loc, name)
	}

	// A read-only key cannot assign.
	ro := h.session(t, readOnly)
	res, body = call(t, ro, "assign_alert", map[string]any{"alert_uuid": id.String(), "assignee": "mallory"})
	requireToolError(t, res, body, "FORBIDDEN")
}
