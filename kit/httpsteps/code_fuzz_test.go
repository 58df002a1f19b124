package httpsteps

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fuzz test of code steps: random Starlark programs over deep and huge values (strings up to
// 20 MB, lists up to two million elements, nesting up to 5 000 levels, JSON text nested three million
// deep; TestCodeWorstCasesStayBounded has the largest each bound allows), built from the builtins that allocate, recurse or work in Go. They run in child processes
// of the test binary (runInChild), so a fatal error is a child's exit, not the test's. It asserts
// that no child dies, that every evaluation ends within MaxCodeWallTime (plus slack) and that each
// child's peak RSS stays under maxChildRSSKB.
//
// CI runs codeFuzzDefaultCases; a longer run: VIGIL_CODE_FUZZ_CASES=200000 (and VIGIL_CODE_FUZZ_SEED
// to choose the programs) go test -run TestCodeFuzzNeverKillsTheProcess -timeout 60m ./kit/httpsteps/.
const (
	codeFuzzDefaultCases = 10000
	codeFuzzBatch        = 1000 // evaluations per child process
)

// codeGen writes random programs; kinds track what each variable holds so most operations apply.
type codeGen struct {
	r    *rand.Rand
	b    strings.Builder
	vars []string // kind of v0, v1, ...: "str", "list", "deep", "tuple", "dict", "int"
}

func (g *codeGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *codeGen) size(xs ...int) int { return xs[g.r.IntN(len(xs))] }

func (g *codeGen) varOf(kinds ...string) (string, bool) {
	var idx []int
	for i, k := range g.vars {
		if slices.Contains(kinds, k) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return "", false
	}
	return "v" + strconv.Itoa(idx[g.r.IntN(len(idx))]), true
}

func (g *codeGen) line(indent int, s string) {
	g.b.WriteString(strings.Repeat("    ", indent) + s + "\n")
}

// source: a value of some kind, assigned to a new variable.
func (g *codeGen) source() {
	v := "v" + strconv.Itoa(len(g.vars))
	switch g.r.IntN(9) {
	case 0, 1:
		g.line(1, fmt.Sprintf("%s = %q * %d", v, g.pick("a", "ab,", "[", "{\"k\":", "é"), g.size(0, 1, 100, 10000, 1000000, 20000000)))
		g.vars = append(g.vars, "str")
	case 2, 3:
		g.line(1, fmt.Sprintf("%s = list(range(%d))", v, g.size(0, 10, 10000, 100000, 2000000)))
		g.vars = append(g.vars, "list")
	case 4:
		wrap := g.pick("[%s]", "(%s,)", "{\"k\": %s}", "[%s, %s]")
		g.line(1, v+" = []")
		g.line(1, fmt.Sprintf("for i in range(%d):", g.size(10, 100, 1000, 5000)))
		g.line(2, fmt.Sprintf("%s = %s", v, strings.ReplaceAll(wrap, "%s", v)))
		g.vars = append(g.vars, "deep")
	case 5:
		n := g.size(1, 10, 64, 65, 1000, 1000000, 3000000)
		switch g.r.IntN(4) {
		case 0:
			g.line(1, fmt.Sprintf("%s = json.decode(\"[\" * %d + \"]\" * %d)", v, n, n))
		case 1:
			g.line(1, fmt.Sprintf("%s = json.decode(\"[\" * %d)", v, n))
		case 2:
			g.line(1, fmt.Sprintf("%s = json.decode('{\"a\":' * %d + '1' + '}' * %d)", v, n, n))
		default:
			g.line(1, fmt.Sprintf("%s = json.decode(\"[\" + \"[],\" * %d + \"[]]\")", v, n))
		}
		g.vars = append(g.vars, "deep")
	case 6:
		g.line(1, fmt.Sprintf("%s = %s", v, g.pick(`ctx["steps"]`, `ctx["indicator"]`, `ctx`, `ctx["st" + "eps"]["a"]`)))
		g.vars = append(g.vars, "dict")
	case 7:
		g.line(1, fmt.Sprintf("%s = %s", v, g.pick("7 * 7 * 7", "1 << 500", "(1 << 500) * (1 << 500)", "123456789 * 987654321", "int(\"9\" * 4300)", "int(\"9\" * 5000)")))
		g.vars = append(g.vars, "int")
	default:
		g.line(1, fmt.Sprintf("%s = tuple(range(%d))", v, g.size(1, 1000, 100000)))
		g.vars = append(g.vars, "tuple")
	}
}

// op: an operation over earlier variables, its value kept in a new variable or thrown away.
func (g *codeGen) op(indent int) {
	x, ok := g.varOf("str", "list", "deep", "tuple", "dict", "int")
	if !ok {
		g.source()
		return
	}
	y, _ := g.varOf("str", "list", "deep", "tuple", "dict", "int")
	s, hasStr := g.varOf("str")
	l, hasList := g.varOf("list", "tuple")
	exprs := []string{
		x + " == " + y, x + " != " + y, x + " in [" + y + "]", "str(" + x + ")", "repr(" + x + ")", "json.encode(" + x + ")",
		"json.indent(json.encode(" + x + "))", "\"%s\" % (" + x + ",)", "\"{}-{}\".format(" + x + ", " + y + ")", "len(str(" + x + "))",
		"{" + x + ": 1} if type(" + x + ") != \"list\" else 0", "print(" + x + ")", "type(" + x + ")", "hash(str(" + x + ")[:64])",
		"[" + x + "] * " + strconv.Itoa(g.size(0, 2, 1000, 1000000)), "(" + x + ", " + y + ")", "[" + x + ", " + y + "] == [" + y + ", " + x + "]",
	}
	if hasStr {
		exprs = append(exprs, s+"[::-1]", s+"[::2]", s+"[1:]", s+"[-5:]", s+" * "+strconv.Itoa(g.size(0, 2, 1000)), s+" + "+s,
			s+".replace(\"a\", \"bb\")", s+".split(\",\")", s+".rsplit(\",\", 2)", s+".splitlines()", s+".find(\"zz\")", s+".count(\"a\")",
			s+".upper()", s+".strip(\"a\")", s+".partition(\",\")", "\",\".join("+s+".elems())", s+".startswith(\"ab\")",
			"\"zz\" in "+s, s+" < "+s, "{"+s+": 1}", "json.decode(json.encode("+s+"))", "json.decode("+s+")", "int("+s+")", "float(\"1\" + "+s+"[:20])")
	}
	if hasList {
		exprs = append(exprs, l+"[::-1]", l+"[::3]", "sorted("+l+", reverse=True)", "max("+l+")", "min("+l+")", "-1 in "+l, "list("+l+")",
			"tuple("+l+")", "list(reversed("+l+"))", "list(enumerate("+l+"))", "list(zip("+l+", "+l+"))", "set("+l+")", l+" + "+l,
			"[e * 2 for e in "+l+"]", "dict([(str(e), e) for e in "+l+"])", "any("+l+")", "all("+l+")", "str("+l+")")
	}
	e := exprs[g.r.IntN(len(exprs))]
	if g.r.IntN(2) == 0 {
		v := "v" + strconv.Itoa(len(g.vars))
		g.line(indent, v+" = "+e)
		g.vars = append(g.vars, "str")
		if strings.HasPrefix(e, "[") || strings.Contains(e, "sorted(") || strings.HasPrefix(e, "list(") {
			g.vars[len(g.vars)-1] = "list"
		}
		return
	}
	g.line(indent, "_x = "+e)
}

// program: a few sources and operations, some in a loop, returning a small value.
func (g *codeGen) program() string {
	g.b.Reset()
	g.vars = g.vars[:0]
	g.line(0, "def main(ctx):")
	for range 1 + g.r.IntN(3) {
		g.source()
	}
	for range 1 + g.r.IntN(4) {
		if g.r.IntN(8) == 0 {
			g.line(1, fmt.Sprintf("for i in range(%d):", g.size(2, 10, 100, 300)))
			g.op(2)
			continue
		}
		g.op(1)
	}
	g.line(1, "return "+g.pick("1", "len(str(v0))", "type(v0)", "None"))
	return g.b.String()
}

func TestCodeFuzzNeverKillsTheProcess(t *testing.T) {
	n := codeFuzzDefaultCases
	if s := os.Getenv("VIGIL_CODE_FUZZ_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("VIGIL_CODE_FUZZ_CASES=%q: a positive number", s)
		}
		n = v
	}
	seed := uint64(20261128)
	if s := os.Getenv("VIGIL_CODE_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VIGIL_CODE_FUZZ_SEED=%q: a number", s)
		}
		seed = v
	}
	g := &codeGen{r: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	var batches [][]childCase
	for i := 0; i < n; i += codeFuzzBatch {
		var b []childCase
		for j := i; j < min(i+codeFuzzBatch, n); j++ {
			b = append(b, childCase{Code: g.program()})
		}
		batches = append(batches, b)
	}
	start := time.Now()
	type outcome struct {
		rep  childReport
		died string
	}
	outs := make([]outcome, len(batches))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2) // the machine's cores
	for i, b := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rep, died := runInChild(t, b)
			outs[i] = outcome{rep, died}
		}()
	}
	wg.Wait()
	var maxMS, totalMS float64
	var maxRSS int64
	var slowest string
	outcomes := map[string]int{}
	for i, o := range outs {
		if o.died != "" {
			k := len(o.rep.Results)
			code := ""
			if k < len(batches[i]) {
				code = batches[i][k].Code
			}
			t.Fatalf("a child died at case %d of batch %d: %s\nprogram:\n%s", k, i, o.died, code)
		}
		if len(o.rep.Results) != len(batches[i]) {
			t.Fatalf("batch %d: %d results for %d cases", i, len(o.rep.Results), len(batches[i]))
		}
		maxRSS = max(maxRSS, o.rep.VmHWMKB)
		if o.rep.VmHWMKB > maxChildRSSKB {
			t.Errorf("batch %d: peak RSS %d KB, bound %d KB", i, o.rep.VmHWMKB, maxChildRSSKB)
			for k, r := range o.rep.Results {
				if r.HWMKB > maxChildRSSKB {
					t.Errorf("the peak passed the bound at case %d (%d KB):\n%s", k, r.HWMKB, batches[i][k].Code)
					break
				}
			}
		}
		for k, r := range o.rep.Results {
			totalMS += r.MS
			if r.MS > maxMS {
				maxMS, slowest = r.MS, batches[i][k].Code
			}
			if time.Duration(r.MS*float64(time.Millisecond)) > MaxCodeWallTime+wallSlack {
				t.Errorf("batch %d case %d took %.0f ms:\n%s", i, k, r.MS, batches[i][k].Code)
			}
			kind := "value"
			if r.Err != "" {
				kind = r.Err
				if i := strings.Index(kind, ": "); i > 0 && strings.HasPrefix(kind, "code: line") {
					kind = kind[strings.Index(kind[i+2:], ": ")+i+4:]
				}
				kind = strings.TrimPrefix(kind, "code: ")
				if len(kind) > 40 {
					kind = kind[:40]
				}
			}
			outcomes[kind]++
		}
	}
	t.Logf("%d programs (seed %d) in %d children in %s: evaluation max %.1f ms, mean %.2f ms; peak RSS of a child %.1f MB",
		n, seed, len(batches), time.Since(start).Round(time.Millisecond), maxMS, totalMS/float64(n), float64(maxRSS)/1024)
	t.Logf("slowest program:\n%s", slowest)
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return outcomes[b] - outcomes[a] })
	for _, k := range keys[:min(12, len(keys))] {
		t.Logf("%6d  %s", outcomes[k], k)
	}
}
