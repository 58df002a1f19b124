package httpsteps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Code steps are evaluated in a child process of the test binary (os.Args[0] re-executed with
// codeChildEnv set), so that an evaluation that kills its process (Go's stack overflow is fatal and
// cannot be recovered) is observed by the test as the child's exit instead of ending the test
// binary, and so that the child's peak RSS (VmHWM) measures what the evaluations cost.

const codeChildEnv = "VIGIL_CODE_CHILD"

// childTimeout ends a child that runs far past every bound (it is then reported as died).
const childTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(codeChildEnv) != "" {
		os.Exit(codeChildMain())
	}
	os.Exit(m.Run())
}

// childCase is one evaluation asked of the child; childResult what it reports of it.
type childCase struct {
	Code string `json:"code"`
}

type childResult struct {
	MS    float64 `json:"ms"`
	Err   string  `json:"err,omitempty"`
	Value string  `json:"value,omitempty"`
	Steps uint64  `json:"steps"`
	HWMKB int64   `json:"hwm_kb"` // the child's peak RSS after this evaluation
}

type childReport struct {
	Results []childResult `json:"results"`
	VmHWMKB int64         `json:"vmhwm_kb"` // the child's peak resident set
	BaseKB  int64         `json:"base_kb"`  // its peak before the first evaluation
}

// codeChildMain reads the cases (JSON on stdin), evaluates each as a code step over a small ctx
// and writes one JSON line per result, then the report's peak RSS.
func codeChildMain() int {
	var cases []childCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "child: decode cases:", err)
		return 3
	}
	in, err := newCodeInput(map[string]any{namespaceIndicator: map[string]any{"type": "ip", "value": "198.51.100.7"},
		namespaceAlert: map[string]any{}, namespaceSteps: map[string]any{"a": map[string]any{"response": map[string]any{"k": "v"}}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: input:", err)
		return 3
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	_ = enc.Encode(map[string]int64{"base_kb": vmHWM()})
	for _, c := range cases {
		start := time.Now()
		res := childResult{}
		prog, cerr := compileCode(c.Code)
		if cerr == nil {
			var v any
			var steps uint64
			v, steps, cerr = prog.runCounted(context.Background(), in, nil, false)
			res.Steps = steps
			if cerr == nil {
				b, _ := json.Marshal(v)
				if len(b) > 200 {
					b = b[:200]
				}
				res.Value = string(b)
			}
		}
		if cerr != nil {
			res.Err = cerr.Error()
		}
		res.MS = float64(time.Since(start).Microseconds()) / 1000
		res.HWMKB = vmHWM()
		_ = enc.Encode(res)
		out.Flush() // a fatal error in the next case leaves this one reported
	}
	_ = enc.Encode(map[string]int64{"vmhwm_kb": vmHWM()})
	return 0
}

// vmHWM is this process's peak resident set in KB (Linux), -1 when unknown.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// runInChild evaluates cases in a child process and returns its report; exited is false, with
// the child's stderr tail in died, when the child did not exit 0 (a fatal error, a crash).
func runInChild(t *testing.T, cases []childCase) (rep childReport, died string) {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), codeChildEnv+"=1", "GOTRACEBACK=single")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	for _, line := range strings.Split(stdout.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, `{"base_kb"`):
			var m map[string]int64
			_ = json.Unmarshal([]byte(line), &m)
			rep.BaseKB = m["base_kb"]
		case strings.HasPrefix(line, `{"vmhwm_kb"`):
			var m map[string]int64
			_ = json.Unmarshal([]byte(line), &m)
			rep.VmHWMKB = m["vmhwm_kb"]
		default:
			var r childResult
			if err := json.Unmarshal([]byte(line), &r); err == nil {
				rep.Results = append(rep.Results, r)
			}
		}
	}
	if runErr != nil {
		tail := stderr.String()
		if len(tail) > 600 {
			tail = tail[:600]
		}
		return rep, fmt.Sprintf("%v: %s", runErr, tail)
	}
	return rep, ""
}
