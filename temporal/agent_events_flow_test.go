package temporal_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/kit/webhooks/webhookstest"
	"github.com/vigil-soc/vigil/store"
)

// delivered is one request an agent received, decoded.
type delivered struct {
	Header http.Header
	Body   []byte
	ID     uuid.UUID      `json:"id"`
	Event  string         `json:"event"`
	Data   map[string]any `json:"data"`
}

func (h *hook) received(t *testing.T) []delivered {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]delivered, len(h.bodies))
	for i, b := range h.bodies {
		require.NoError(t, json.Unmarshal(b, &out[i]), string(b))
		out[i].Header, out[i].Body = h.headers[i], b
	}
	return out
}

// waitFor waits until h received n requests.
func (h *hook) waitFor(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return h.count() >= n }, 60*time.Second, 20*time.Millisecond, "%d deliveries", n)
}

func ok200(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }

// Events raised by the pipeline and by changes over REST reach the agents that match them, signed,
// with the alert's data, and only those: an ingest raises alert.enriched (the doc's Go and Python
// snippets verify it); agents filtered to another source, severity or trigger_filter get nothing; a
// PATCH to Closed raises alert.updated and a finding alert.finding_added; trigger-agents and
// dispatch-agent hand the alert over on demand.
func TestAgentEvents_RaisedWithTheirChangesAndMatched(t *testing.T) {
	e := pipelineHarness(t)
	snippets := webhookstest.Load(t, "../docs/WEBHOOKS.md")
	var all, otherSource, otherSeverity, filtered, inactive hook
	events := []string{agents.EventAlertEnriched, agents.EventAlertUpdated, agents.EventFindingAdded}
	main, secret := registerTestAgent(t, e, e.handle(all.handler(ok200)), func(s *agents.Spec) { s.Events = events })
	registerTestAgent(t, e, e.handle(otherSource.handler(ok200)), func(s *agents.Spec) { s.TriggerOnSources = []string{"splunk"} })
	registerTestAgent(t, e, e.handle(otherSeverity.handler(ok200)), func(s *agents.Spec) { s.TriggerOnSeverities = []string{"Low"} })
	registerTestAgent(t, e, e.handle(filtered.handler(ok200)), func(s *agents.Spec) {
		s.TriggerFilter = json.RawMessage(`{"match_all":[{"field":"title","op":"contains","value":"no-such-title"}]}`)
	})
	off := false
	dormant, _ := registerTestAgent(t, e, e.handle(inactive.handler(ok200)), func(s *agents.Spec) { s.IsActive = &off })

	ips := freshIPs(1)
	title := "agent events " + uuid.NewString()
	start := time.Now()
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":%q,"severity":"High","src_ip":%q}`, title, ips[0]))
	e.waitEnriched(t, id, 60*time.Second)
	all.waitFor(t, 1)
	t.Logf("ingest → alert.enriched received in %s", time.Since(start))

	got := all.received(t)[0]
	require.Equal(t, agents.EventAlertEnriched, got.Event)
	require.Equal(t, agents.EventAlertEnriched, got.Header.Get(webhooks.HeaderEvent))
	require.Equal(t, got.ID.String(), got.Header.Get(webhooks.HeaderDelivery))
	goErr, pyErr := snippets.Verify(secret, got.Header.Get(webhooks.HeaderTimestamp), got.Header.Get(webhooks.HeaderSignature), got.Body)
	require.NoError(t, goErr, "the Go snippet of docs/WEBHOOKS.md verifies alert.enriched")
	require.NoError(t, pyErr, "the Python snippet of docs/WEBHOOKS.md verifies alert.enriched")
	alert := got.Data["alert"].(map[string]any)
	require.Equal(t, id.String(), alert["uuid"])
	require.Equal(t, title, alert["title"])
	require.Equal(t, "Enriched", alert["enrichment_status"])
	require.Contains(t, alert, "malice")
	require.Contains(t, alert, "metadata")
	inds := got.Data["indicators"].([]any)
	require.Len(t, inds, 1)
	require.Equal(t, ips[0], inds[0].(map[string]any)["value"])
	require.Contains(t, got.Data, "detection_rule")
	require.Contains(t, got.Data, "context_documents")
	require.Contains(t, got.Data, "workflows")
	require.Equal(t, "http://vigil.test", got.Data["api_base_url"])
	require.Equal(t, "Enriched", got.Data["enrichment_status"])

	// A PATCH to Closed: alert.updated with what changed; a finding: alert.finding_added.
	status, body := e.do(t, http.MethodPatch, "/v1/alerts/"+id.String(), `{"status":"Closed","close_classification":"False Positive - Incorrect Detection Logic"}`)
	require.Equal(t, http.StatusOK, status, body)
	all.waitFor(t, 2)
	upd := all.received(t)[1]
	require.Equal(t, agents.EventAlertUpdated, upd.Event)
	require.Equal(t, "Closed", upd.Data["alert"].(map[string]any)["status"])
	change := upd.Data["changes"].([]any)[0].(map[string]any)
	require.Equal(t, "alert_closed", change["change"])
	// Tags alone are not an update agents hear of.
	status, body = e.do(t, http.MethodPatch, "/v1/alerts/"+id.String(), `{"tags":["quiet"]}`)
	require.Equal(t, http.StatusOK, status, body)
	status, body = e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/findings", `{"agent_name":"triage-bot","summary":"benign scanner","confidence":"high"}`)
	require.Equal(t, http.StatusCreated, status, body)
	all.waitFor(t, 3)
	fnd := all.received(t)[2]
	require.Equal(t, agents.EventFindingAdded, fnd.Event)
	require.Equal(t, "benign scanner", fnd.Data["finding"].(map[string]any)["summary"])

	// trigger-agents: every matching agent now; dispatch-agent: one agent, filters bypassed.
	status, body = e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/trigger-agents", "")
	require.Equal(t, http.StatusAccepted, status, body)
	require.EqualValues(t, 1, body["data"].(map[string]any)["queued_agent_count"])
	require.Equal(t, []any{main.Name}, body["data"].(map[string]any)["agent_names"])
	all.waitFor(t, 4)
	require.Equal(t, "trigger-agents", all.received(t)[3].Data["trigger"].(map[string]any)["type"])
	status, body = e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/dispatch-agent?agent_uuid="+dormant.UUID.String(), "")
	require.Equal(t, http.StatusUnprocessableEntity, status, body)
	require.Equal(t, "AGENT_INACTIVE", body["error"].(map[string]any)["code"])
	on := true
	_, _, err := e.agents.Update(t.Context(), agents.Actor{}, dormant.UUID, agents.Spec{IsActive: &on,
		TriggerOnSources: []string{"splunk"}})
	require.NoError(t, err)
	status, body = e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/dispatch-agent?agent_uuid="+dormant.UUID.String(), "")
	require.Equal(t, http.StatusAccepted, status, body)
	inactive.waitFor(t, 1)
	require.Equal(t, id.String(), inactive.received(t)[0].Data["alert"].(map[string]any)["uuid"])
	for path, want := range map[string]int{
		"/v1/alerts/" + uuid.NewString() + "/dispatch-agent?agent_uuid=" + dormant.UUID.String(): http.StatusNotFound,
		"/v1/alerts/" + id.String() + "/dispatch-agent?agent_uuid=" + uuid.NewString():           http.StatusNotFound,
		"/v1/alerts/" + id.String() + "/dispatch-agent":                                          http.StatusUnprocessableEntity,
		"/v1/alerts/" + id.String() + "/dispatch-agent?agent_uuid=not-a-uuid":                    http.StatusUnprocessableEntity,
		"/v1/alerts/" + uuid.NewString() + "/trigger-agents":                                     http.StatusNotFound,
	} {
		status, body := e.do(t, http.MethodPost, path, "")
		require.Equal(t, want, status, "%s: %v", path, body)
	}

	time.Sleep(time.Second)
	require.Equal(t, 4, all.count(), "each event once")
	require.Zero(t, otherSource.count(), "filtered to another source")
	require.Zero(t, otherSeverity.count(), "filtered to another severity")
	require.Zero(t, filtered.count(), "trigger_filter does not match")
	require.Equal(t, 1, inactive.count(), "only the dispatch")
}

// Fault: the worker (its Temporal workers and its outbox dispatcher) is down when a change commits
// its event. Nothing is delivered while it is down; once it is back the agent receives the event
// exactly once, under the delivery id derived from the event and the agent.
func TestAgentEvents_CommittedWhileWorkerDownDeliveredOnceAfterRestart(t *testing.T) {
	e := pipelineHarness(t)
	var h hook
	a, _ := registerTestAgent(t, e, e.handle(h.handler(ok200)), func(s *agents.Spec) { s.Events = []string{agents.EventAlertUpdated} })
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"fault %s","severity":"Medium","src_ip":%q}`, uuid.NewString(), freshIPs(1)[0]))
	e.waitEnriched(t, id, 60*time.Second)

	e.killDispatcher()
	e.killWorker()
	t.Cleanup(func() { e.startWorker(); e.startDispatcher(e.c) })
	status, body := e.do(t, http.MethodPatch, "/v1/alerts/"+id.String(), `{"status":"Triaging"}`)
	require.Equal(t, http.StatusOK, status, body)
	var event uuid.UUID
	require.NoError(t, e.st.DB().NewRaw(`SELECT uuid FROM agent_events WHERE alert_uuid = ? AND event = ?`, id, agents.EventAlertUpdated).
		Scan(t.Context(), &event), "the event committed with the PATCH")
	time.Sleep(2 * time.Second)
	require.Zero(t, h.count(), "nothing delivered while the worker is down")

	e.startWorker()
	e.startDispatcher(e.c)
	h.waitFor(t, 1)
	time.Sleep(2 * time.Second)
	got := h.received(t)
	require.Len(t, got, 1, "delivered once")
	require.Equal(t, activities.DeliveryID(event, a.UUID), got[0].ID)
	require.Equal(t, "Triaging", got[0].Data["alert"].(map[string]any)["status"])
}

// histogram reads a histogram (without labels) from reg: its count and sum.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("%s not registered", name)
	return 0, 0
}

// Freshness is visible on the worker's /metrics: an ingested alert's 202 → pipeline finished lands
// in vigil_alert_enrichment_lag_seconds and its alert.enriched's raised → delivered in
// vigil_agent_delivery_lag_seconds, each no longer than the test observed from outside.
func TestFreshness_EnrichmentAndDeliveryLagOnMetrics(t *testing.T) {
	e := pipelineHarness(t)
	var got hook
	registerTestAgent(t, e, e.handle(got.handler(ok200)), func(s *agents.Spec) { s.Events = []string{agents.EventAlertEnriched} })
	time.Sleep(500 * time.Millisecond) // earlier tests' pipelines and deliveries are over
	enrichedBefore, enrichedSumBefore := histogram(t, e.reg, "vigil_alert_enrichment_lag_seconds")
	deliveredBefore, deliveredSumBefore := histogram(t, e.reg, "vigil_agent_delivery_lag_seconds")

	start := time.Now()
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"freshness %s","severity":"High","src_ip":%q}`, uuid.NewString(), freshIPs(1)[0]))
	e.waitEnriched(t, id, 60*time.Second)
	got.waitFor(t, 1)
	bound := time.Since(start).Seconds()
	require.Eventually(t, func() bool {
		n, _ := histogram(t, e.reg, "vigil_agent_delivery_lag_seconds")
		return n > deliveredBefore
	}, 10*time.Second, 20*time.Millisecond, "the delivery is observed once the agent answered")

	n, sum := histogram(t, e.reg, "vigil_alert_enrichment_lag_seconds")
	d, dsum := histogram(t, e.reg, "vigil_agent_delivery_lag_seconds")
	require.Equal(t, enrichedBefore+1, n, "the alert's pipeline finish is observed once")
	require.Equal(t, deliveredBefore+1, d, "its delivery is observed once")
	require.Greater(t, sum-enrichedSumBefore, 0.0)
	require.Less(t, sum-enrichedSumBefore, bound, "202 → finished is within ingest → received")
	require.Greater(t, dsum-deliveredSumBefore, 0.0)
	require.Less(t, dsum-deliveredSumBefore, bound)

	// A re-run is not a 202's freshness: it adds no enrichment-lag sample.
	require.NoError(t, e.st.EnqueueRerun(t.Context(), id, store.ActorAPI, ""))
	e.waitEvents(t, id, "alert_enriched", 2, 60*time.Second)
	got.waitFor(t, 2)
	n, _ = histogram(t, e.reg, "vigil_alert_enrichment_lag_seconds")
	require.Equal(t, enrichedBefore+1, n)
}
