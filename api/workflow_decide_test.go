package api

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/store"
)

// recordDecideHistory, when set, makes TestRunDecidingWorkflow write the history of its run there
// (workflows/testdata/workflow_run_decide_history.json feeds the replay test):
//
//	go test ./api -run TestRunDecidingWorkflow -record-decide-history=$PWD/workflows/testdata/workflow_run_decide_history.json
var recordDecideHistory = flag.String("record-decide-history", "", "write the deciding run's Temporal history to this file")

// verdictServer answers the lookups of the deciding workflows: /vt/<ip> and /abuse/<ip> give a
// verdict and a score, /list/<n> a list of n accounts, a path with /flaky/ 503 the first time,
// anything else {"done": path}; it counts every path.
type verdictServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newVerdictServer(t testing.TB) *verdictServer {
	s := &verdictServer{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		n := s.hits[r.URL.Path]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.URL.Path, "/flaky/") && n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"try again"}`)
		case strings.HasPrefix(r.URL.Path, "/vt/"):
			fmt.Fprint(w, `{"data":{"attributes":{"last_analysis_stats":{"malicious":12,"harmless":3}}}}`)
		case strings.HasPrefix(r.URL.Path, "/abuse/"):
			fmt.Fprint(w, `{"data":{"abuseConfidenceScore":97}}`)
		case strings.HasPrefix(r.URL.Path, "/list/"):
			var n int
			_, _ = fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/list/"), "%d", &n)
			users := make([]string, n)
			for i := range users {
				users[i] = fmt.Sprintf(`{"id":"u%03d","login":"user%03d@example.com"}`, i, i)
			}
			fmt.Fprintf(w, `{"users":[%s]}`, strings.Join(users, ","))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"done": r.URL.Path})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *verdictServer) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func codeStepBody(name string, code any, extra map[string]any) map[string]any {
	m := map[string]any{"name": name, "kind": "code", "code": code}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// decidingSteps: two lookups, isolate only when both agree, a step whose condition is false,
// disable each account but service accounts (for_each + when), a code step and the output.
func decidingSteps(base, tag string) []any {
	return []any{
		map[string]any{"name": "vt", "url": base + "/vt/{{indicator.value}}"},
		map[string]any{"name": "abuse", "url": base + "/abuse/{{indicator.value}}"},
		map[string]any{"name": "isolate", "method": "POST", "url": base + "/isolate/" + tag,
			"when": "steps.vt.response.data.attributes.last_analysis_stats.malicious >= 5 && steps.abuse.response.data.abuseConfidenceScore >= 90"},
		map[string]any{"name": "page_oncall", "method": "POST", "url": base + "/page/" + tag,
			"when": "steps.abuse.response.data.abuseConfidenceScore < 50"},
		map[string]any{"name": "disable", "method": "POST", "url": base + "/disable/" + tag + "/{{item}}",
			"for_each": "['ann', 'bob', 'svc-backup']", "when": "!item.startsWith('svc-')"},
		codeStepBody("score", "def main(ctx):\n  s = ctx['steps']\n  return s['vt']['response']['data']['attributes']['last_analysis_stats']['malicious'] + s['abuse']['response']['data']['abuseConfidenceScore']", nil),
		codeStepBody("output", "def main(ctx):\n  s = ctx['steps']\n  return {'isolated': not s['isolate']['skipped'], 'paged': not s['page_oncall']['skipped'],\n          'disabled': [r['done'].split('/')[-1] for r in s['disable']['response'] if r], 'score': s['score']['result']}", nil),
	}
}

// A run with conditions, a loop and code steps: each step is recorded (skipped with the value of
// its condition, for_each items in order, code results), the run's result is its output step's
// value, and workflow_run.completed carries it to agents.
func TestRunDecidingWorkflow(t *testing.T) {
	h := newRunHarness(t, "-decide")
	human, _, _, _ := h.keys(t)
	vs := newVerdictServer(t)
	recv := newReceiver(t)
	name, url, timeout := "decide watcher "+uuid.NewString(), recv.URL, 5
	a, _, err := h.agents.Create(context.Background(), agents.Actor{Type: store.ActorAPI},
		agents.Spec{Name: &name, EndpointURL: &url, Events: []string{agents.EventRunCompleted}, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.ts.Store.DeleteAgent(context.Background(), a.UUID) })

	tag := uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody("/decide", func(b map[string]any) {
		b["approval_mode"] = "never"
		b["steps"] = decidingSteps(vs.URL, tag)
	}))
	ex := h.execute(t, human, wf, nil)
	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, store.RunSucceeded, h.workflowResult(t, ex.RunUUID))
	if *recordDecideHistory != "" {
		testenv.WriteHistory(t, h.client, ex.WorkflowID, *recordDecideHistory)
	}

	recs := runSteps(t, run)
	require.Len(t, recs, 7)
	require.False(t, recs[2].Skipped, "both providers agree: isolated")
	require.Equal(t, true, recs[2].WhenValue)
	require.Equal(t, 1, vs.Hits("/isolate/"+tag))
	require.True(t, recs[3].Skipped)
	require.Equal(t, false, recs[3].WhenValue)
	require.Equal(t, "when is not true", recs[3].SkipReason)
	require.Zero(t, vs.Hits("/page/"+tag))
	require.Len(t, recs[4].Items, 3)
	require.Equal(t, []any{"ann", "bob", "svc-backup"}, []any{recs[4].Items[0].Item, recs[4].Items[1].Item, recs[4].Items[2].Item})
	require.True(t, recs[4].Items[2].Skipped)
	require.Equal(t, 1, vs.Hits("/disable/"+tag+"/ann"))
	require.Equal(t, 1, vs.Hits("/disable/"+tag+"/bob"))
	require.Zero(t, vs.Hits("/disable/"+tag+"/svc-backup"))
	require.Equal(t, "code", recs[5].Kind)
	require.EqualValues(t, 109, recs[5].Result)

	want := map[string]any{"isolated": true, "paged": false, "disabled": []any{"ann", "bob"}, "score": float64(109)}
	var result map[string]any
	require.NoError(t, json.Unmarshal(run.Result, &result))
	require.Equal(t, want, result, "the run's result is its output step's value")

	// The API shows it; the agent receives it with workflow_run.completed.
	got := h.ts.do(t, http.MethodGet, "/v1/workflow-runs/"+ex.RunUUID.String(), human, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, want, got.JSON(t)["data"].(map[string]any)["result"])
	require.Eventually(t, func() bool { return len(recv.requests()) >= 1 }, 20*time.Second, 20*time.Millisecond)
	var p struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(recv.requests()[0].Body, &p))
	require.Equal(t, want, p.Data["workflow_run"].(map[string]any)["result"])
}

// Hostile code and expressions end as a failed step with a clear message, within their bounds; the
// worker stays healthy and the next run succeeds.
func TestRunHostileDecisionsFailTheStep(t *testing.T) {
	h := newRunHarness(t, "-hostile")
	human, _, _, _ := h.keys(t)
	vs := newVerdictServer(t)
	cases := []struct {
		name string
		step map[string]any
		msg  string
	}{
		{"infinite loop", codeStepBody("c", "def main(ctx):\n  while True:\n    pass", nil), "step bound exceeded"},
		{"deep recursion", codeStepBody("c", "def f(n):\n  return f(n + 1)\ndef main(ctx):\n  return f(0)", nil), "called recursively"},
		{"100 MB string", codeStepBody("c", "def main(ctx):\n  return len('x' * (100 << 20))", nil), "memory bound exceeded"},
		{"missing field", map[string]any{"name": "c", "url": vs.URL + "/x", "when": "indicator.nothere == 'a'"}, "when: no such key: nothere"},
	}
	good := h.createWorkflow(t, human, h.workflowBody("/hostile-good", func(b map[string]any) {
		b["approval_mode"], b["steps"] = "never", []any{codeStepBody("output", "def main(ctx):\n  return 'ok'", nil)}
	}))
	// Every hostile run starts at once with a good run beside them: the good one succeeds.
	start := time.Now()
	runs := make([]executed, len(cases))
	for i, tc := range cases {
		wf := h.createWorkflow(t, human, h.workflowBody("/hostile", func(b map[string]any) {
			b["approval_mode"], b["steps"] = "never", []any{tc.step}
		}))
		runs[i] = h.execute(t, human, wf, nil)
	}
	beside := h.execute(t, human, good, nil)
	require.JSONEq(t, `"ok"`, string(h.waitRun(t, beside.RunUUID, store.RunSucceeded).Result), "a run beside hostile ones is unaffected")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := h.waitRun(t, runs[i].RunUUID, store.RunFailed)
			require.NotNil(t, run.Error)
			require.Contains(t, *run.Error, tc.msg)
			recs := runSteps(t, run)
			require.Contains(t, recs[0].Error, tc.msg)
			require.Equal(t, 1, run.AttemptCount, "a decision that fails is not retried")
		})
	}
	require.Less(t, time.Since(start), 20*time.Second)
	// The worker is still healthy: a good run afterwards succeeds.
	ex := h.execute(t, human, good, nil)
	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.JSONEq(t, `"ok"`, string(run.Result))
}

// Save-time checking: 422 naming the step and the line and column of the problem.
func TestWorkflowSaveRefusesBadDecisions(t *testing.T) {
	h := newRunHarness(t, "-save")
	human, _, _, _ := h.keys(t)
	cases := []struct {
		name   string
		steps  []any
		loc    string
		msg    string
		line   float64
		column float64
	}{
		{"undefined builtin", []any{codeStepBody("enrich", "def main(ctx):\n  return open('/etc/passwd')", nil)},
			"body.steps.0.code", `step "enrich": code: line 2, column 10: undefined: open`, 2, 10},
		{"load", []any{codeStepBody("enrich", "load('os.star', 'system')\ndef main(ctx):\n  return 1", nil)},
			"body.steps.0.code", `load() is not available`, 1, 1},
		{"bad expression", []any{map[string]any{"name": "x", "url": "https://x.example/", "when": "indicator.value ==\n  && true"}},
			"body.steps.0.when", `step "x": when: line 2`, 2, 0},
		{"for_each later step", []any{map[string]any{"name": "x", "url": "https://x.example/", "for_each": "steps.y.response"},
			map[string]any{"name": "y", "url": "https://x.example/"}}, "body.steps.0.for_each", "steps.y is not an earlier step", 1, 1},
		{"wrong type", []any{map[string]any{"name": "x", "url": "https://x.example/", "when": true}}, "body.steps.0.when", "must be a string", 0, 0},
		{"oversized code", []any{codeStepBody("big", "def main(ctx):\n  return 1\n"+strings.Repeat("#", 70<<10), nil)}, "body.steps.0.code", "longer than", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ts.do(t, http.MethodPost, "/v1/workflows", human, h.workflowBody("/save", func(b map[string]any) { b["steps"] = tc.steps }))
			details := requireValidation(t, r)
			var hit map[string]any
			for _, d := range details {
				var parts []string
				for _, p := range d["loc"].([]any) {
					parts = append(parts, fmt.Sprint(p))
				}
				if strings.Join(parts, ".") == tc.loc {
					hit = d
				}
			}
			require.NotNil(t, hit, "no error at %s: %s", tc.loc, r.Body)
			require.Contains(t, hit["msg"], tc.msg)
			if tc.line > 0 {
				ctx := hit["ctx"].(map[string]any)
				require.Equal(t, tc.line, ctx["line"])
				if tc.column > 0 {
					require.Equal(t, tc.column, ctx["column"])
				}
			}
		})
	}
}

// PATCH checks new steps like create: the stored definition and version stay.
func TestWorkflowPatchRefusesBadCode(t *testing.T) {
	h := newRunHarness(t, "-patch")
	human, _, _, _ := h.keys(t)
	wf := h.createWorkflow(t, human, h.workflowBody("/patch", nil))
	for _, steps := range []any{
		[]any{codeStepBody("c", "def main(ctx):\n  return undefined_name", nil)},
		[]any{codeStepBody("c", 42, nil)},
		[]any{map[string]any{"name": "c", "kind": "code", "code": "def main(ctx):\n  return 1", "for_each": "[1, 2"}},
		[]any{codeStepBody("c", "def main(ctx):\n  return '\x00' * 10", nil)},
	} {
		r := h.ts.do(t, http.MethodPatch, "/v1/workflows/"+wf, human, map[string]any{"steps": steps})
		details := requireValidation(t, r)
		require.Contains(t, fmt.Sprint(details[0]["loc"]), "steps 0", string(r.Body))
	}
	got := h.ts.do(t, http.MethodGet, "/v1/workflows/"+wf, human, nil)
	require.EqualValues(t, 1, got.JSON(t)["data"].(map[string]any)["version"])
}

// Dry runs (mock) show conditions, loops and code resolved.
func TestWorkflowDryRunShowsDecisions(t *testing.T) {
	h := newRunHarness(t, "-dry")
	human, _, _, _ := h.keys(t)
	wf := h.createWorkflow(t, human, h.workflowBody("/dry", func(b map[string]any) {
		b["steps"] = decidingSteps("https://edr.example", "dry")
	}))
	r := h.ts.do(t, http.MethodPost, "/v1/workflows/"+wf+"/test", human, map[string]any{"indicator_type": "ip", "indicator_value": "198.51.100.7",
		"mock_http_responses": map[string]any{
			"vt":      map[string]any{"body": map[string]any{"data": map[string]any{"attributes": map[string]any{"last_analysis_stats": map[string]any{"malicious": 1}}}}},
			"abuse":   map[string]any{"body": map[string]any{"data": map[string]any{"abuseConfidenceScore": 20}}},
			"disable": map[string]any{"body": map[string]any{"done": "/x/ann"}},
		}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	raw, err := json.Marshal(data["steps"])
	require.NoError(t, err)
	var recs []httpsteps.StepRecord
	require.NoError(t, json.Unmarshal(raw, &recs))
	require.Len(t, recs, 7, string(raw))
	require.True(t, recs[2].Skipped, "one provider says no: not isolated")
	require.Equal(t, false, recs[2].WhenValue)
	require.False(t, recs[3].Skipped)
	require.Len(t, recs[4].Items, 3)
	require.EqualValues(t, 21, recs[5].Result)
	require.Equal(t, map[string]any{"isolated": false, "paged": true, "disabled": []any{"ann", "ann"}, "score": float64(21)}, recs[6].Result)
}

// 100 for_each items with a code step each, after a loopback HTTP lookup and 100 loopback HTTP
// items: the step phase stays within docs/PERFORMANCE.md's 2 s.
func TestRunForEachHundredItemsWithinBudget(t *testing.T) {
	h := newRunHarness(t, "-perf")
	human, _, _, _ := h.keys(t)
	vs := newVerdictServer(t)
	tag := uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody("/perf", func(b map[string]any) {
		b["approval_mode"] = "never"
		b["steps"] = []any{
			map[string]any{"name": "users", "url": vs.URL + "/list/100"},
			codeStepBody("shape", "def main(ctx):\n  u = ctx['item']\n  local, _, domain = u['login'].partition('@')\n  return {'id': u['id'], 'local': local.upper(), 'domain': domain, 'n': len(local)}",
				map[string]any{"for_each": "steps.users.response.users"}),
			map[string]any{"name": "disable", "method": "POST", "url": vs.URL + "/disable/" + tag + "/{{item.id}}", "for_each": "steps.shape.result", "when": "item.n > 0"},
			codeStepBody("output", "def main(ctx):\n  return len([r for r in ctx['steps']['disable']['response'] if r])", nil),
		}
	}))
	ex := h.execute(t, human, wf, nil)
	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	recs := runSteps(t, run)
	require.Len(t, recs[1].Items, 100)
	require.Len(t, recs[2].Items, 100)
	require.JSONEq(t, `100`, string(run.Result))
	require.Equal(t, 1, vs.Hits("/disable/"+tag+"/u099"))
	var codeMS, httpMS int64
	for _, it := range recs[1].Items {
		codeMS += it.DurationMS
	}
	for _, it := range recs[2].Items {
		httpMS += it.DurationMS
	}
	phase := run.CompletedAt.Sub(*run.StartedAt)
	t.Logf("step phase %s (started → completed); steps: users %d ms, 100 code items %d ms (step %d ms), 100 HTTP items %d ms (step %d ms), output %d ms",
		phase, recs[0].DurationMS, codeMS, recs[1].DurationMS, httpMS, recs[2].DurationMS, recs[3].DurationMS)
	require.Less(t, phase, 2*time.Second, "docs/PERFORMANCE.md: 100 for_each items with a code step each within 2 s of step phase")
}

// A for_each HTTP step whose item fails with a retryable status is retried from that item: the
// items an earlier attempt sent are not sent again, and the results stay in order.
func TestRunForEachRetryResumesAtTheFailedItem(t *testing.T) {
	h := newRunHarness(t, "-resume")
	human, _, _, _ := h.keys(t)
	vs := newVerdictServer(t)
	tag := uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody("/resume", func(b map[string]any) {
		b["approval_mode"] = "never"
		b["steps"] = []any{
			map[string]any{"name": "disable", "method": "POST", "url": vs.URL + "/{{item}}", "for_each": "['ok/" + tag + "/a', 'flaky/" + tag + "/b', 'ok/" + tag + "/c']"},
			codeStepBody("output", "def main(ctx):\n  return [r['done'] for r in ctx['steps']['disable']['response']]", nil),
		}
	}))
	ex := h.execute(t, human, wf, nil)
	run := h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, vs.Hits("/ok/"+tag+"/a"), "sent once: the retry resumed after it")
	require.Equal(t, 2, vs.Hits("/flaky/"+tag+"/b"), "503, then retried")
	require.Equal(t, 1, vs.Hits("/ok/"+tag+"/c"))
	require.GreaterOrEqual(t, run.AttemptCount, 1)
	recs := runSteps(t, run)
	require.Len(t, recs[0].Items, 3)
	require.Empty(t, recs[0].Error)
	var result []string
	require.NoError(t, json.Unmarshal(run.Result, &result))
	require.Equal(t, []string{"/ok/" + tag + "/a", "/flaky/" + tag + "/b", "/ok/" + tag + "/c"}, result)
}
