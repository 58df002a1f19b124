package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// heavyKeys is n indicators of four types (a quarter of the IPs private).
func heavyKeys(n int) []store.IndicatorKey {
	tag := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	keys := make([]store.IndicatorKey, n)
	for i := range keys {
		switch i % 4 {
		case 0:
			keys[i] = store.IndicatorKey{Type: "ip", Value: fmt.Sprintf("10.%d.%d.%d", i%200, i/200, 7)}
		case 1:
			keys[i] = store.IndicatorKey{Type: "ip", Value: fmt.Sprintf("45.%d.%d.%d", i%200, i/200, 9)}
		case 2:
			keys[i] = store.IndicatorKey{Type: "domain", Value: fmt.Sprintf("c2-%d-%s.example.org", i, tag)}
		default:
			keys[i] = store.IndicatorKey{Type: "url", Value: fmt.Sprintf("https://dl-%s.example.net/payload/%d/stage2.bin", tag, i)}
		}
	}
	return keys
}

// heavySetup is the measured case: an alert with 200 indicators and a 100 KB raw payload, 12 active
// workflows over its types, and pending approval requests on it (one per workflow, 3 steps each).
func heavySetup(t testing.TB, h *harness) (alert uuid.UUID, key string) {
	t.Helper()
	steps := `[{"name":"a","method":"POST","url":"https://a.example.com/api/v1/block"},{"name":"b","url":"https://b.example.com/lookup/{{indicator.value}}"},{"name":"c","method":"PUT","url":"https://c.example.com/tickets"}]`
	var wfs []store.Workflow
	for i, types := range [][]string{{"ip"}, {"ip"}, {"ip"}, {"ip"}, {"domain"}, {"domain"}, {"domain"}, {"url"}, {"url"}, {"ip", "domain"}, {"ip", "url"}, {}} {
		wfs = append(wfs, h.typedWorkflow(t, fmt.Sprintf("heavy %02d", i), []string{"low", "medium", "high", "critical"}[i%4], store.ApprovalModeAlways, types, steps))
	}
	alert = h.heavyAlert(t, "heavy alert", 100, heavyKeys(200))
	k, row := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite, auth.ScopeWorkflowsExecute, auth.ScopeWorkflowsRead, auth.ScopeApprovalsWrite)
	other := uuid.New()
	for i, w := range wfs {
		trigger := other
		if i%3 == 0 {
			trigger = row.UUID // some of the analyst's own: no Approve
		}
		run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunPendingApproval, TriggerSource: "human",
			TriggerKeyUUID: &trigger, IndicatorType: "ip", IndicatorValue: "10.0.0.7", AlertUUID: &alert}
		ap := store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "human", TriggerKeyUUID: &trigger,
			IndicatorType: "ip", IndicatorValue: "10.0.0.7", RiskLevel: w.RiskLevel, RequiredApprovals: 1, NotifierType: "none",
			ExpiresAt: time.Now().Add(time.Duration(10+i) * time.Minute)}
		_, err := h.st.CreateWorkflowRun(t.Context(), &run, &ap)
		require.NoError(t, err)
	}
	return alert, k
}

// The heaviest alert page (200 indicators, 100 KB payload) and the approvals page stay under 200 KB.
func TestHeavyAlertPagesStaySmall(t *testing.T) {
	h := newHarness(t)
	alert, key := heavySetup(t, h)
	b := h.browser(t)
	b.signIn(key)
	resp, page := b.do(http.MethodGet, "/console/alerts/"+alert.String(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, len(page), 200<<10, "alert page %d bytes", len(page))
	require.Equal(t, 200, strings.Count(page, `<div class="launch">`))
	require.Equal(t, 50, strings.Count(page, "Internal address: "), "the 10.x addresses")
	resp, page = b.do(http.MethodGet, "/console/approvals", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, len(page), 200<<10, "approvals page %d bytes", len(page))
}

// BenchmarkHeavyAlertPages times the alert page, one indicator's launcher and the approvals page of
// the heavy case through the console over loopback (docs/PERFORMANCE.md "Alert page and approvals"):
//
//	go test ./console/ -run '^$' -bench HeavyAlertPages -benchtime 200x
func BenchmarkHeavyAlertPages(b *testing.B) {
	h := newHarness(b)
	alert, key := heavySetup(b, h)
	br := h.browser(b)
	br.signIn(key)
	inds, err := h.st.AlertIndicators(b.Context(), alert)
	require.NoError(b, err)
	for _, p := range []struct{ name, path string }{
		{"alert", "/console/alerts/" + alert.String()},
		{"launch", "/console/alerts/" + alert.String() + "/launch?indicator=" + inds[0].UUID.String()},
		{"approvals", "/console/approvals"},
	} {
		b.Run(p.name, func(b *testing.B) {
			var took []time.Duration
			size := 0
			for b.Loop() {
				start := time.Now()
				resp, page := br.do(http.MethodGet, p.path, nil)
				took = append(took, time.Since(start))
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", p.path, resp.StatusCode)
				}
				size = len(page)
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(size)/1024, "KB")
		})
	}
}
