package api

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func reportLatencies(b *testing.B, prefix string, ds []time.Duration) {
	slices.Sort(ds)
	pct := func(p float64) float64 {
		i := min(len(ds)-1, int(float64(len(ds))*p))
		return float64(ds[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), prefix+"_p50_ms")
	b.ReportMetric(pct(0.99), prefix+"_p99_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkWorkflowExecute measures POST /v1/workflows/{uuid}/execute → 202 (run row, approval row,
// Temporal start) for a gated agent run and an ungated human run.
//
//	go test ./api -run '^$' -bench BenchmarkWorkflowExecute -benchtime 300x
func BenchmarkWorkflowExecute(b *testing.B) {
	h := newRunHarness(b, "-bench")
	human, agent, _, _ := h.keys(b)
	for _, tc := range []struct {
		name, key, mode string
		body            map[string]any
	}{
		{"gated_agent", agent, "always", nil},
		{"ungated_human", human, "agent_only", map[string]any{"indicator_type": "ip", "indicator_value": "192.0.2.10"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			wf := h.createWorkflow(b, human, h.workflowBody("/bench/execute", func(m map[string]any) { m["approval_mode"] = tc.mode }))
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				h.execute(b, tc.key, wf, tc.body)
				lat = append(lat, time.Since(start))
			}
			reportLatencies(b, "execute_202", lat)
		})
	}
}

// BenchmarkApproveToFirstStep measures from POST .../approve (sent once the run waits at its gate)
// to the first step's request arriving at the step server.
//
//	go test ./api -run '^$' -bench BenchmarkApproveToFirstStep -benchtime 100x
func BenchmarkApproveToFirstStep(b *testing.B) {
	h := newRunHarness(b, "-bench")
	human, agent, approver, _ := h.keys(b)
	wf := h.createWorkflow(b, human, h.workflowBody("/perf", func(m map[string]any) {
		m["steps"] = []any{map[string]any{"name": "act", "method": "POST", "url": h.steps.URL + "/perf/{{indicator.value}}"}}
	}))
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		i++
		ip := fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255)
		ex := h.execute(b, agent, wf, map[string]any{"indicator_type": "ip", "indicator_value": ip, "reason": "bench", "confidence": 0.5})
		h.notices.DecideURL(b, *ex.ApprovalRequestUUID) // waiting at the gate
		start := time.Now()
		r := h.decide(b, approver, *ex.ApprovalRequestUUID, "approve", nil)
		require.Equal(b, http.StatusOK, r.Status, string(r.Body))
		var hit time.Time
		require.Eventually(b, func() bool { hit = h.steps.FirstHit("/perf/" + ip); return !hit.IsZero() }, 30*time.Second, time.Millisecond)
		lat = append(lat, hit.Sub(start))
	}
	reportLatencies(b, "approve_to_first_step", lat)
}
