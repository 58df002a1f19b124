package httpsteps_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/validate"
)

func workflowConfig(t testing.TB, steps string) httpsteps.Config {
	t.Helper()
	cfg, errs := httpsteps.ParseWorkflowConfig(json.RawMessage(`{"steps":` + steps + `}`))
	require.Empty(t, errs)
	return cfg
}

func workflowErrors(t testing.TB, steps string) validate.Errors {
	t.Helper()
	_, errs := httpsteps.ParseWorkflowConfig(json.RawMessage(`{"steps":` + steps + `}`))
	require.NotEmpty(t, errs, "expected the definition to be refused")
	return errs
}

func codeStep(name, code string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "kind": "code", "code": code})
	return string(b)
}

func TestParseConfig_ProvidersHaveNoDecisions(t *testing.T) {
	for _, field := range []string{`"when":"true"`, `"for_each":"[1]"`, `"kind":"code"`, `"code":"def main(ctx): return 1"`} {
		_, errs := httpsteps.ParseConfig(json.RawMessage(`{"steps":[{"name":"a","url":"https://x.example/","` + field[1:] + `}]}`))
		require.NotEmpty(t, errs, field)
		require.Equal(t, validate.TypeExtraForbidden, errs[0].Type, field)
	}
}

// Save-time checking: every problem names the step and, when it has one, the line and column.
func TestParseWorkflowConfig_Refused(t *testing.T) {
	cases := []struct {
		name, steps string
		loc         []any
		msg         string
		line, col   int
	}{
		{"when syntax", `[{"name":"a","url":"https://x.example/","when":"indicator.value =="}]`,
			[]any{"steps", 0, "when"}, `step "a": when: line 1`, 1, 0},
		{"when undeclared", `[{"name":"a","url":"https://x.example/","when":"nope.x == 1"}]`,
			[]any{"steps", 0, "when"}, "undeclared reference to 'nope'", 1, 1},
		{"item without for_each", `[{"name":"a","url":"https://x.example/","when":"item == 1"}]`,
			[]any{"steps", 0, "when"}, "item exists only in a step with for_each", 1, 1},
		{"later step", `[{"name":"a","url":"https://x.example/","when":"steps.b.status == 200"},{"name":"b","url":"https://x.example/"}]`,
			[]any{"steps", 0, "when"}, "steps.b is not an earlier step", 1, 1},
		{"for_each multi-line", `[{"name":"a","url":"https://x.example/","for_each":"[1,\n 2,\n  )"}]`,
			[]any{"steps", 0, "for_each"}, `step "a": for_each: line 3`, 3, 0},
		{"for_each wrong type", `[{"name":"a","url":"https://x.example/","for_each":5}]`, []any{"steps", 0, "for_each"}, "must be a string", 0, 0},
		{"kind unknown", `[{"name":"a","url":"https://x.example/","kind":"python"}]`, []any{"steps", 0, "kind"}, "http or code", 0, 0},
		{"code with url", `[{"name":"a","kind":"code","url":"https://x.example/","code":"def main(ctx):\n  return 1"}]`,
			[]any{"steps", 0, "url"}, "HTTP step field", 0, 0},
		{"code missing", `[{"name":"a","kind":"code"}]`, []any{"steps", 0, "code"}, "code is required", 0, 0},
		{"code syntax", `[` + codeStep("c", "def main(ctx):\n  return (1 +\n") + `]`, []any{"steps", 0, "code"}, `step "c": code: line`, 0, 0},
		{"load", `[` + codeStep("c", "load('x.star', 'y')\ndef main(ctx):\n  return 1") + `]`,
			[]any{"steps", 0, "code"}, "load() is not available", 1, 1},
		{"undefined builtin", `[` + codeStep("c", "def main(ctx):\n  return open('/etc/passwd')") + `]`,
			[]any{"steps", 0, "code"}, "undefined: open", 2, 10},
		{"no main", `[` + codeStep("c", "def helper(x):\n  return x") + `]`, []any{"steps", 0, "code"}, "must define main(ctx)", 1, 1},
		{"main arity", `[` + codeStep("c", "def main():\n  return 1") + `]`, []any{"steps", 0, "code"}, "exactly one parameter", 1, 1},
		{"reserved name", `[` + codeStep("c", "_vigil_op = 1\ndef main(ctx):\n  return 1") + `]`, []any{"steps", 0, "code"}, "reserved", 1, 1},
		{"item template without for_each", `[{"name":"a","url":"https://x.example/{{item}}"}]`, []any{"steps", 0, "url"}, "only in a step with for_each", 0, 0},
		{"oversized expression", `[{"name":"a","url":"https://x.example/","when":"` + strings.Repeat("1+", 3000) + `1 == 1"}]`,
			[]any{"steps", 0, "when"}, "longer than", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := workflowErrors(t, tc.steps)
			var found *validate.FieldError
			for i := range errs {
				if fmt.Sprint(errs[i].Loc) == fmt.Sprint(tc.loc) {
					found = &errs[i]
				}
			}
			require.NotNil(t, found, "no error at %v in %v", tc.loc, errs)
			require.Contains(t, found.Msg, tc.msg)
			if tc.line > 0 {
				require.Equal(t, tc.line, found.Ctx["line"], found.Msg)
			}
			if tc.col > 0 {
				require.Equal(t, tc.col, found.Ctx["column"], found.Msg)
			}
		})
	}
}

func TestParseWorkflowConfig_Accepts(t *testing.T) {
	cfg := workflowConfig(t, `[
		{"name":"list","url":"https://x.example/users"},
		{"name":"each","url":"https://x.example/users/{{item.id}}","for_each":"steps.list.response.users","when":"item.active"},
		`+codeStep("output", "def main(ctx):\n  return [r for r in ctx['steps']['each']['result']]")+`]`)
	require.Len(t, cfg.Steps, 3)
	require.True(t, cfg.Steps[2].IsCode())
	require.Equal(t, "steps.list.response.users", cfg.Steps[1].ForEach)
}

// runDecisions runs a workflow's steps with Runner.Run against srv, as a dry run does.
func runDecisions(t *testing.T, steps string, vars map[string]any) httpsteps.Result {
	t.Helper()
	cfg := workflowConfig(t, steps)
	return httpsteps.NewRunner(http.DefaultClient).Run(context.Background(), cfg, vars, nil)
}

func TestRun_WhenForEachCode(t *testing.T) {
	var disabled atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /verdict/{p}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"verdict":"malicious","score":%d}`, map[string]int{"a": 90, "b": 70}[r.PathValue("p")])
	})
	mux.HandleFunc("POST /disable/{user}", func(w http.ResponseWriter, r *http.Request) {
		disabled.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"disabled":%q}`, r.PathValue("user"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "10.0.0.1"},
		"alert": map[string]any{"accounts": []any{"ann", "bob", "svc-backup"}}}
	res := runDecisions(t, `[
		{"name":"a","url":"`+srv.URL+`/verdict/a"},
		{"name":"b","url":"`+srv.URL+`/verdict/b"},
		{"name":"isolate","url":"`+srv.URL+`/disable/host","method":"POST","when":"steps.a.response.verdict == 'malicious' && steps.b.response.score > 80"},
		{"name":"disable","url":"`+srv.URL+`/disable/{{item}}","method":"POST","for_each":"alert.accounts","when":"!item.startsWith('svc-')"},
		`+codeStep("output", "def main(ctx):\n  done = [r['disabled'] for r in ctx['steps']['disable']['response'] if r]\n  return {'disabled': done, 'isolated': not ctx['steps']['isolate']['skipped']}")+`]`, vars)
	require.True(t, res.Success, res.Error)
	require.Len(t, res.Steps, 5)
	iso := res.Steps[2]
	require.True(t, iso.Skipped)
	require.Equal(t, false, iso.WhenValue)
	require.Equal(t, "when is not true", iso.SkipReason)
	dis := res.Steps[3]
	require.False(t, dis.Skipped)
	require.Len(t, dis.Items, 3)
	for k, it := range dis.Items {
		require.Equal(t, k, *it.ItemIndex)
	}
	require.Equal(t, "svc-backup", dis.Items[2].Item)
	require.True(t, dis.Items[2].Skipped)
	require.Equal(t, 200, dis.Items[0].ResponseStatusCode)
	require.EqualValues(t, 2, disabled.Load())
	out := res.Steps[4]
	require.Equal(t, "code", out.Kind)
	require.Equal(t, map[string]any{"disabled": []any{"ann", "bob"}, "isolated": false}, out.Result)
}

func TestRun_MissingFieldFailsTheStep(t *testing.T) {
	res := runDecisions(t, `[`+codeStep("c", "def main(ctx):\n  return 1")+`,
		{"name":"x","url":"https://x.example/","when":"steps.c.response.verdict == 'bad'"}]`, map[string]any{})
	require.False(t, res.Success)
	require.Contains(t, res.Error, "when: no such key: verdict")
	require.True(t, httpsteps.IsPermanent(res.Err))
}

func TestRun_ForEachBounds(t *testing.T) {
	res := runDecisions(t, `[`+`{"name":"c","kind":"code","for_each":"'not a list'","code":"def main(ctx):\n  return 1"}]`, nil)
	require.Contains(t, res.Error, "for_each: must give a list, gave a string")
	items := strings.TrimSuffix(strings.Repeat("1,", 101), ",")
	res = runDecisions(t, `[`+`{"name":"c","kind":"code","for_each":"[`+items+`]","code":"def main(ctx):\n  return 1"}]`, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "for_each: gave 101 items; at most 100 are allowed")
	res = runDecisions(t, `[`+codeStep("m", "def main(ctx):\n  return 1000000 * 1000000 + 3 * 10000000")+`]`, nil)
	require.True(t, res.Success, res.Error)
	require.EqualValues(t, 1000030000000, res.Steps[0].Result, "multiplying ints is not repeating a sequence")
	scan := func(times int) httpsteps.Result {
		return runDecisions(t, `[`+codeStep("scan", fmt.Sprintf("def main(ctx):\n  s = 'ab' * 500000\n  n = 0\n  for i in range(%d):\n    if s.startswith('ab') and s.find('zz') < 0:\n      n += 1\n  return n", times))+`]`, nil)
	}
	res = scan(100)
	require.True(t, res.Success, "reading a 1 MB string a hundred times allocates nothing and is within the step bound: %s", res.Error)
	// Searching it a thousand times is a gigabyte of work: charged to the step bound (R4-4).
	res = scan(1000)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "step bound exceeded")
	res = runDecisions(t, `[`+`{"name":"c","kind":"code","for_each":"[1,2,3]","when":"item != 2","code":"def main(ctx):\n  return ctx['item'] * 10"}]`, nil)
	require.True(t, res.Success, res.Error)
	require.Equal(t, []any{int64(10), nil, int64(30)}, []any{res.Steps[0].Items[0].Result, res.Steps[0].Items[1].Result, res.Steps[0].Items[2].Result})
}

func TestRun_ExpressionCostLimit(t *testing.T) {
	// A comprehension over a large generated list blows the CEL cost limit, within it.
	start := time.Now()
	res := runDecisions(t, `[{"name":"x","url":"https://x.example/","when":"[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f >= 0))))))"}]`, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "cost limit")
	require.Less(t, time.Since(start), 5*time.Second)
}

// Hostile code: each ends as a failed step with a clear message, within its bounds.
func TestRun_HostileCode(t *testing.T) {
	cases := []struct{ name, code, msg string }{
		{"infinite loop", "def main(ctx):\n  x = 0\n  while True:\n    x += 1\n  return x", "step bound exceeded"},
		{"deep recursion", "def f(n):\n  return f(n+1)\ndef main(ctx):\n  return f(0)", "called recursively"},
		{"100 MB string", "def main(ctx):\n  return 'x' * (100 * 1024 * 1024)", "memory bound exceeded"},
		{"many 1 MB strings", "def main(ctx):\n  out = []\n  for i in range(100):\n    out.append('y' * (1024 * 1024))\n  return len(out)", "memory bound exceeded"},
		{"join amplification", "def main(ctx):\n  s = 'z' * (1024 * 1024)\n  return ','.join([s] * 100)", "memory bound exceeded"},
		{"getattr join", "def main(ctx):\n  s = 'z' * (1024 * 1024)\n  return getattr(',', 'join')([s] * 100)", "memory bound exceeded"},
		{"list of range", "def main(ctx):\n  return len(list(range(100000000)))", "memory bound exceeded"},
		{"str of shared refs", "def main(ctx):\n  s = 'q' * 1000000\n  return len(str([s] * 50))", "memory bound exceeded"},
		{"augmented string", "def main(ctx):\n  s = 'a'\n  for i in range(40):\n    s += s\n  return len(s)", "memory bound exceeded"},
		{"items kept", "def main(ctx):\n  d = {str(i): i for i in range(5000)}\n  keep = []\n  for i in range(1000):\n    keep.append(d.items())\n  return len(keep)", "memory bound exceeded"},
		{"split kept", "def main(ctx):\n  s = ',' * 200000\n  keep = []\n  for i in range(100):\n    keep.append(s.split(','))\n  return len(keep)", "memory bound exceeded"},
		{"fail", "def main(ctx):\n  fail('nope')", "nope"},
		{"missing key", "def main(ctx):\n  return ctx['steps']['nothere']", "key \"nothere\" not in dict"},
		{"not JSON-able", "def main(ctx):\n  return main", "not JSON-able"},
		{"set result", "def main(ctx):\n  return set([1])", "not JSON-able"},
		{"mutate frozen global", "G = []\ndef main(ctx):\n  G.append(1)\n  return G", "frozen"},
		{"mutate ctx", "def main(ctx):\n  ctx['indicator']['value'] = 'x'\n  return 1", "frozen"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			start := time.Now()
			res := runDecisions(t, `[`+codeStep("c", tc.code)+`]`, map[string]any{"indicator": map[string]any{"value": "v"}})
			require.False(t, res.Success)
			t.Logf("%s (%s)", res.Error, time.Since(start))
			require.Contains(t, res.Error, tc.msg)
			require.Contains(t, res.Error, "step 0 (c): code:")
			require.True(t, httpsteps.IsPermanent(res.Err))
			require.Less(t, time.Since(start), 10*time.Second)
			require.LessOrEqual(t, runtime.NumGoroutine(), before+1)
		})
	}
}

func TestRun_CodeSeesNoSecrets(t *testing.T) {
	res := runDecisions(t, `[`+codeStep("c", "def main(ctx):\n  return sorted(ctx.keys())")+`]`,
		map[string]any{"secrets": map[string]any{"TOKEN": "s3cr3t"}, "indicator": map[string]any{"value": "v"}})
	require.True(t, res.Success, res.Error)
	require.Equal(t, []any{"alert", "indicator", "item", "steps"}[0:1], res.Steps[0].Result.([]any)[0:1])
	require.NotContains(t, fmt.Sprint(res.Steps[0].Result), "secrets")
}

func TestRun_CodeCancelledWithContext(t *testing.T) {
	cfg := workflowConfig(t, `[`+codeStep("c", "def main(ctx):\n  x = 0\n  while True:\n    x += 1")+`]`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := httpsteps.NewRunner(http.DefaultClient).Run(ctx, cfg, nil, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "cancelled")
}

// Determinism: a code step's result does not depend on Go's map order.
func TestRun_CodeDeterministic(t *testing.T) {
	vars := map[string]any{"alert": map[string]any{}}
	m := map[string]any{}
	for i := range 50 {
		m[fmt.Sprintf("k%02d", i)] = i
	}
	vars["alert"] = m
	code := codeStep("c", "def main(ctx):\n  return ','.join([k for k in ctx['alert']])")
	first := runDecisions(t, `[`+code+`]`, vars).Steps[0].Result
	for range 20 {
		require.Equal(t, first, runDecisions(t, `[`+code+`]`, vars).Steps[0].Result)
	}
}

// BenchmarkExpressionStep is the cost of a step decided by its when alone (false: the step is
// recorded skipped and its code never runs).
func BenchmarkExpressionStep(b *testing.B) {
	cfg := workflowConfig(b, `[{"name":"c","kind":"code","when":"indicator.value.startsWith('10.') && indicator.type == 'domain'","code":"def main(ctx):\n  return 1"}]`)
	vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "10.0.0.1"}}
	r := httpsteps.NewRunner(http.DefaultClient)
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.RunStep(context.Background(), cfg, 0, vars, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodeStep is the cost of a small code step (parse an IP, build a dict).
func BenchmarkCodeStep(b *testing.B) {
	cfg := workflowConfig(b, `[`+codeStep("c", "def main(ctx):\n  v = ctx['indicator']['value']\n  parts = v.split('.')\n  return {'octets': [int(p) for p in parts], 'private': parts[0] == '10'}")+`]`)
	vars := map[string]any{"indicator": map[string]any{"value": "10.0.0.1"}}
	r := httpsteps.NewRunner(http.DefaultClient)
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.RunStep(context.Background(), cfg, 0, vars, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseWorkflowConfig is what each RunWorkflowStep activity pays to parse a deciding
// definition (a CEL environment, two expressions and two code steps compiled).
func BenchmarkParseWorkflowConfig(b *testing.B) {
	raw := json.RawMessage(`{"steps":[{"name":"a","url":"https://x.example/"},
		{"name":"b","url":"https://x.example/{{item}}","for_each":"steps.a.response.users","when":"item.active"},
		` + codeStep("c", "def main(ctx):\n  return [r for r in ctx['steps']['b']['response']]") + `,
		` + codeStep("output", "def main(ctx):\n  return len(ctx['steps']['c']['result'])") + `]}`)
	for b.Loop() {
		if _, errs := httpsteps.ParseWorkflowConfig(raw); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkCodeForEachLargeState is a code step over 100 items while an earlier step's response
// is large (20 000 records, ~1.5 MB): ctx is converted once per step, not once per item.
func BenchmarkCodeForEachLargeState(b *testing.B) {
	recs := make([]any, 20000)
	for i := range recs {
		recs[i] = map[string]any{"id": json.Number(fmt.Sprint(i)), "login": fmt.Sprintf("user%05d@example.com", i), "active": i%3 != 0}
	}
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprint(i * 200)
	}
	cfg := workflowConfig(b, `[{"name":"big","url":"https://x.example/"},
		{"name":"c","kind":"code","for_each":"[`+strings.Join(items, ",")+`]","code":"def main(ctx):\n  u = ctx['steps']['big']['response']['users'][ctx['item']]\n  return {'login': u['login'], 'active': u['active']}"}]`)
	vars := map[string]any{"indicator": map[string]any{"value": "v"},
		"steps": map[string]any{"big": map[string]any{"status": 200, "response": map[string]any{"users": recs}, "headers": map[string]any{}}}}
	r := httpsteps.NewRunner(http.DefaultClient)
	b.ResetTimer()
	for b.Loop() {
		run, err := r.RunStep(context.Background(), cfg, 1, vars, nil, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(run.Record.Items) != 100 {
			b.Fatal(len(run.Record.Items))
		}
	}
}

// A response nested deeper than expressions and code look reads as null there; it does not fail
// a step that does not need it.
func TestRun_DeeplyNestedResponse(t *testing.T) {
	var deep any = "bottom"
	for range 200 {
		deep = map[string]any{"x": deep}
	}
	vars := map[string]any{"steps": map[string]any{"a": map[string]any{"response": deep, "status": 200}}}
	cfg := workflowConfig(t, `[{"name":"a","url":"https://x.example/"},`+codeStep("c", "def main(ctx):\n  return ctx['steps']['a']['status']")+`]`)
	run, err := httpsteps.NewRunner(http.DefaultClient).RunStep(context.Background(), cfg, 1, vars, nil, nil, nil)
	require.NoError(t, err)
	require.EqualValues(t, 200, run.Record.Result)
}

// An item whose when fails names the item; the items before it stay in the record.
func TestRun_ItemFailureNamesTheItem(t *testing.T) {
	res := runDecisions(t, `[{"name":"c","kind":"code","for_each":"[{'a': 1}, {'b': 2}]","when":"item.a == 1","code":"def main(ctx):\n  return 1"}]`, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "step 0 (c): item 1: when: no such key: a")
	require.Len(t, res.Steps[0].Items, 1)
	require.EqualValues(t, 1, res.Steps[0].Items[0].Result)
}

// What a code step really allocates (the Go heap, garbage included) stays near its 16 MB bound,
// whether the meter or the step bound stops it: hostile programs that build many small values the
// meter does not see one by one, and ones that build large values it charges up front.
func TestRun_CodeAllocationsStayNearTheBound(t *testing.T) {
	progs := map[string]string{
		"small strings kept": "def main(ctx):\n  keep = []\n  for i in range(300000):\n    keep.append(str(i))\n  return len(keep)",
		"comprehension":      "def main(ctx):\n  return len([i for i in range(400000)])",
		"dict built":         "def main(ctx):\n  d = {}\n  for i in range(300000):\n    d[i] = i\n  return len(d)",
		"small lists kept":   "def main(ctx):\n  keep = []\n  for i in range(200000):\n    keep.append([i, i])\n  return len(keep)",
		"concatenation":      "def main(ctx):\n  s = ''\n  for i in range(100000):\n    s += 'abcdefghij'\n  return len(s)",
		"100 MB string":      "def main(ctx):\n  return len('x' * (100 << 20))",
		"items kept":         "def main(ctx):\n  d = {str(i): i for i in range(5000)}\n  keep = []\n  for i in range(1000):\n    keep.append(d.items())\n  return len(keep)",
	}
	for name, code := range progs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := runDecisions(t, `[`+codeStep("c", code)+`]`, nil)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d MB allocated: %s", name, alloc>>20, res.Error)
		require.False(t, res.Success, name)
		require.Less(t, alloc, uint64(64<<20), "%s allocated %d MB", name, alloc>>20)
	}
}
