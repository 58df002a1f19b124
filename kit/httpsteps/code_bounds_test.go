package httpsteps

import (
	"strings"
	"testing"
	"time"
)

// Bounds the evaluating process must keep whatever a code step does (docs/SECURITY.md "Code steps
// cannot take down a process"): every evaluation ends within its wall-clock bound (plus the slack of a
// shared machine), and the child's peak RSS stays under maxChildRSSKB.
const (
	wallSlack = 1500 * time.Millisecond
	// maxChildRSSKB: the test binary (~15 MB) and evaluations at their bounds, one after another, with
	// what the Go runtime keeps of their garbage (a child of the fuzz test runs 1 000).
	maxChildRSSKB = 256 << 10
)

// worstCases are the review's reproductions (security round 4, R4-2 and R4-4) and the builtins that
// recurse in Go or work in proportion to their operands' size, at the sizes the bounds allow.
var worstCases = []struct{ name, code string }{
	// R4-2: a 3 MB string, 3 execution steps: the decoder recursed 3 000 000 levels (fatal).
	{"json.decode bomb", "def main(ctx):\n    return json.decode(\"[\" * 3000000)\n"},
	{"json.decode objects", "def main(ctx):\n    return json.decode('{\"a\":' * 1000000)\n"},
	// R4-4: slices with a step were free (API RSS 241 MB → 677 MB, then 1.05 GB).
	{"reversed strings kept", "def main(ctx):\n    s = \"a\" * 8000000\n    keep = []\n    for i in range(50):\n        keep.append(s[::-1])\n    return len(keep)\n"},
	{"reversed lists kept", "def main(ctx):\n    l = list(range(900000))\n    keep = []\n    for i in range(30):\n        keep.append(l[::-1])\n    return len(keep)\n"},
	// R4-4: string work on 15 MB for one step each (27.8 s of CPU in one evaluation).
	{"15 MB compares", "def main(ctx):\n    s = \"a\" * 15000000\n    t = s[::-1]\n    n = 0\n    for i in range(20000):\n        if s == t:\n            n += 1\n        n += s.find(\"b\") + s.count(\"b\")\n    return n\n"},
	{"7 MB compares", "def main(ctx):\n    s = \"a\" * 7000000\n    t = s[::-1]\n    n = 0\n    for i in range(20000):\n        if s == t or s < t:\n            n += 1\n        n += s.find(\"b\") + s.count(\"b\") + s.rfind(\"b\")\n    return n\n"},
	{"15 MB in and startswith", "def main(ctx):\n    s = \"a\" * 15000000\n    n = 0\n    for i in range(20000):\n        if \"b\" in s or s.startswith(s):\n            n += 1\n    return n\n"},
	{"list scans", "def main(ctx):\n    l = list(range(900000))\n    n = 0\n    for i in range(20000):\n        if -1 in l:\n            n += 1\n        n += max(l) + min(l)\n    return n\n"},
	{"sorted big lists", "def main(ctx):\n    l = list(range(900000))\n    n = 0\n    for i in range(2000):\n        n += len(sorted(l, reverse=True))\n    return n\n"},
	{"dict keyed by a 15 MB string", "def main(ctx):\n    s = \"a\" * 15000000\n    d = {}\n    for i in range(20000):\n        d[s] = i\n    return len(d)\n"},
	// Builtins that recurse in Go over a value nested as deep as the step bound allows.
	{"deep tuple hashed", "def main(ctx):\n    t = ()\n    for i in range(100000):\n        t = (t,)\n    d = {t: 1}\n    return len(d)\n"},
	{"deep list printed", "def main(ctx):\n    l = []\n    for i in range(100000):\n        l = [l]\n    print(l)\n    return 1\n"},
	{"deep list in fail", "def main(ctx):\n    l = []\n    for i in range(100000):\n        l = [l]\n    fail(l)\n"},
	{"deep list encoded", "def main(ctx):\n    l = []\n    for i in range(100000):\n        l = [l]\n    return len(json.encode(l)) + len(str(l)) + len(\"%s\" % (l,))\n"},
	{"deep list compared", "def main(ctx):\n    a = []\n    b = []\n    for i in range(60000):\n        a = [a]\n        b = [b]\n    return a == b\n"},
	{"json.indent of deep text", "def main(ctx):\n    return len(json.indent(\"[\" * 9000 + \"]\" * 9000))\n"},
	{"json.encode_indent with a long indent", "def main(ctx):\n    return len(json.encode_indent([[1] * 1000] * 10, indent=\"x\" * 100000))\n"},
	{"json.encode of escapes", "def main(ctx):\n    return len(json.encode(\"\\x01\" * 4000000))\n"},
	{"builtins over a huge range", "def main(ctx):\n    r = range(1, 2147483647)\n    return all(r) or any(r) or max(r) or min(r)\n"},
	{"deep source", "def main(ctx):\n    return " + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + "\n"},
	{"repetition of a list", "def main(ctx):\n    l = [1] * 900000\n    keep = []\n    for i in range(40):\n        keep.append(l * 1)\n    return len(keep)\n"},
	{"string builtins", "def main(ctx):\n    s = \"a,\" * 3000000\n    n = 0\n    for i in range(2000):\n        n += len(s.split(\",\", 1)) + len(s.rsplit(\",\", 1)) + len(s.partition(\",\")) + len(s.strip(\"x\"))\n    return n\n"},
	{"elems and join", "def main(ctx):\n    s = \"ab\" * 4000000\n    n = 0\n    for i in range(20):\n        n += len(\"\".join(s.elems()))\n    return n\n"},
}

// TestCodeWorstCasesStayBounded replays each case in a child process: the child never dies, each
// evaluation ends within the wall-clock bound, and its peak RSS stays bounded. Before the fixes of
// R4-2 and R4-4 the decoder bomb killed the child (fatal error: stack overflow), the kept slices
// took it past 1 GB and the compares ran for tens of seconds.
func TestCodeWorstCasesStayBounded(t *testing.T) {
	for _, tc := range worstCases {
		t.Run(tc.name, func(t *testing.T) {
			rep, died := runInChild(t, []childCase{{Code: tc.code}})
			if died != "" {
				t.Fatalf("the evaluating process died: %s", died)
			}
			if len(rep.Results) != 1 {
				t.Fatalf("child reported %d results", len(rep.Results))
			}
			r := rep.Results[0]
			t.Logf("%.1f ms, %d steps, peak RSS %.1f MB (%.1f MB before): %s%s", r.MS, r.Steps, float64(rep.VmHWMKB)/1024,
				float64(rep.BaseKB)/1024, r.Err, r.Value)
			if d := time.Duration(r.MS * float64(time.Millisecond)); d > MaxCodeWallTime+wallSlack {
				t.Errorf("evaluation took %s, bound %s", d, MaxCodeWallTime)
			}
			if rep.VmHWMKB > maxChildRSSKB {
				t.Errorf("peak RSS %d KB, bound %d KB", rep.VmHWMKB, maxChildRSSKB)
			}
		})
	}
}
