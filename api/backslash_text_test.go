package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

// TestBackslashUTextIsStoredAsSent replays security review round 4, R4-8: the six printable
// characters \u0000 (an analyst quoting a payload) answered 500 on 14 write routes and the change was
// lost, because bun wrote a jsonb literal in which the escaped backslash started a NUL escape. Each
// route of the review's list now stores the text and gives it back unchanged.
func TestBackslashUTextIsStoredAsSent(t *testing.T) {
	ts := newSweepServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ids, _ := sweepFixtures(t, ts, admin)
	const text = `quoted \u0000 and \\u0000 and \"`
	alert, agent := ids["/v1/alerts"], ids["/v1/agents"]

	var caseID string
	cases := []struct {
		name, method, path string
		body               map[string]any
		want               int
	}{
		{"api key name", http.MethodPost, "/v1/api-keys", map[string]any{"name": text, "scopes": []string{"alerts:read"}}, http.StatusCreated},
		{"agent description", http.MethodPost, "/v1/agents", map[string]any{"name": "bs " + uuid.NewString()[:8], "endpoint_url": "http://127.0.0.1:9/hook", "description": text}, http.StatusCreated},
		{"agent documentation", http.MethodPatch, "/v1/agents/" + agent, map[string]any{"documentation": text}, http.StatusOK},
		{"detection rule name", http.MethodPost, "/v1/detection-rules", map[string]any{"name": text + uuid.NewString()[:8], "source_rule_id": "BS-" + uuid.NewString()[:8], "source_name": "generic"}, http.StatusCreated},
		{"context document content", http.MethodPost, "/v1/context-documents", map[string]any{"title": "bs " + uuid.NewString()[:8], "document_type": "sop", "content": text}, http.StatusCreated},
		{"finding evidence", http.MethodPost, "/v1/alerts/" + alert + "/findings", map[string]any{"agent_name": "bs", "summary": "s", "evidence": map[string]any{"payload": text}}, http.StatusCreated},
		{"alert tags and assignee", http.MethodPatch, "/v1/alerts/" + alert, map[string]any{"tags": []string{text}, "assignee": text}, http.StatusOK},
		{"case title", http.MethodPost, "/v1/cases", map[string]any{"title": text}, http.StatusCreated},
		{"case assignee", http.MethodPatch, "/v1/cases/{case}", map[string]any{"assignee": text}, http.StatusOK},
		{"case comment", http.MethodPost, "/v1/cases/{case}/comments", map[string]any{"body": text}, http.StatusCreated},
		{"alert comment", http.MethodPost, "/v1/alerts/" + alert + "/comments", map[string]any{"body": text}, http.StatusCreated},
		{"workflow", http.MethodPost, "/v1/workflows", map[string]any{"name": text + uuid.NewString()[:8], "description": text, "state": "active",
			"indicator_types": []string{"ip"}, "approval_mode": "always", "risk_level": "low", "steps": []any{
				map[string]any{"name": "act", "method": "POST", "url": "http://127.0.0.1:9/x", "headers": map[string]any{"X-Quote": text},
					"json_body": map[string]any{"q": text}, "when": `indicator.value != r'\u0000'`, "for_each": `[r'\u0000', r'\\u0000']`},
				codeStepBody("c", "def main(ctx):\n  # \\u0000\n  return r\"\\u0000\"", nil)}}, http.StatusCreated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.ReplaceAll(tc.path, "{case}", caseID)
			r := ts.do(t, tc.method, path, admin, tc.body)
			require.Equal(t, tc.want, r.Status, "%s %s: %s", tc.method, path, r.Body)
			require.Contains(t, string(r.Body), `quoted \\u0000 and \\\\u0000 and \\\"`, "the text comes back as sent")
			if tc.name == "case title" {
				caseID = r.JSON(t)["data"].(map[string]any)["uuid"].(string)
			}
		})
	}
	// What was stored reads back the same.
	a := ts.do(t, http.MethodGet, "/v1/alerts/"+alert, admin, nil)
	require.Equal(t, http.StatusOK, a.Status)
	d := a.JSON(t)["data"].(map[string]any)
	require.Equal(t, text, d["assignee"])
	require.Equal(t, []any{text}, d["tags"])
	f := d["agent_findings"].([]any)
	require.Equal(t, text, f[len(f)-1].(map[string]any)["evidence"].(map[string]any)["payload"])
}
