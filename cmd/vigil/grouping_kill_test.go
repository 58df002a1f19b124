package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/store"
)

// Grouping under a worker crash (issue 30 item 2): 200 alerts ingested concurrently through the real
// `vigil api`, each sharing one Malicious indicator with the alert of an open case, are grouped into
// that case by their pipelines' finish while the real `vigil worker` is SIGKILLed halfway; a second
// worker finishes the rest. Every alert joins the case exactly once: one alert_grouped activity event
// and one case.alert_added agent event per alert, whatever finish the kill interrupted.
func TestGrouping_WorkerProcessSIGKILL(t *testing.T) {
	target := newCountingTarget(t)
	c := newCluster(t, 1, 1, map[string]string{
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t) + "-grpkill",
		"SSRF_ALLOWED_HOSTS":         strings.TrimPrefix(target.URL, "http://"),
		"CASE_GROUPING_WINDOW_HOURS": "24",
	})
	ctx := context.Background()
	api := c.apis[0].base
	tag := "grp-" + uuid.NewString()[:8]
	// A non-routable address: no provider is called for it, so only the analyst's verdict counts.
	r := uuid.New().ID()
	bad := fmt.Sprintf("198.%d.%d.%d", 18+r%2, r/2%256, 1+r/512%250)

	// An agent subscribed to case.alert_added, on a loopback server, removed at the end.
	code, m := c.must(api, http.MethodPost, "/v1/agents", c.admin, map[string]any{"name": "grouping agent " + tag,
		"endpoint_url": target.URL + "/agent", "events": []string{store.EventCaseAlertAddedAgent}, "timeout_seconds": 5})
	require.Equal(t, http.StatusCreated, code, m)
	agent := m["data"].(map[string]any)["uuid"].(string)
	t.Cleanup(func() { c.must(api, http.MethodDelete, "/v1/agents/"+agent, c.admin, nil) })

	// The case: one alert with the indicator, Malicious by an analyst's verdict.
	seed, err := ingest(ctx, api, c.admin, map[string]any{"title": tag + " seed", "severity": "High", "tags": []string{tag + "-seed"},
		"indicators": []map[string]any{{"type": "ip", "value": bad}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.enriched(t, tag+"-seed") == 1 }, 2*time.Minute, 100*time.Millisecond)
	code, m = c.must(api, http.MethodGet, "/v1/alerts/"+seed+"/indicators", c.admin, nil)
	require.Equal(t, http.StatusOK, code, m)
	inds := m["data"].([]any)
	require.Len(t, inds, 1)
	ind := inds[0].(map[string]any)["uuid"].(string)
	code, m = c.must(api, http.MethodPatch, "/v1/indicators/"+ind, c.admin, map[string]any{"malice": "Malicious"})
	require.Equal(t, http.StatusOK, code, m)
	discard := slog.New(slog.DiscardHandler)
	svc := cases.New(c.st, alerts.New(c.st, discard), discard)
	kase, err := svc.Create(ctx, cases.Create{Title: tag,
		AlertUUIDs: []uuid.UUID{uuid.MustParse(seed)}}, store.Actor{Type: store.ActorSystem})
	require.NoError(t, err)
	// No trap for the package's other tests: the case goes (its alerts leave it), the verdict too.
	t.Cleanup(func() {
		_ = svc.Delete(context.Background(), kase.UUID, store.Actor{Type: store.ActorSystem})
		c.must(api, http.MethodPatch, "/v1/indicators/"+ind, c.admin, map[string]any{"malice": nil})
	})

	// 200 alerts sharing it, ingested 8 at a time.
	const n = 200
	ids := c.ingestEach(t, n, nil, func(i int) map[string]any {
		return map[string]any{"title": fmt.Sprintf("%s %d", tag, i), "severity": "Medium", "tags": []string{tag},
			"indicators": []map[string]any{{"type": "ip", "value": bad}}}
	})

	grouped := func() int {
		var k int
		require.NoError(t, c.st.DB().NewRaw(`SELECT count(*) FROM alerts WHERE ? = ANY(tags) AND case_uuid = ?`, tag, kase.UUID).Scan(ctx, &k))
		return k
	}
	// SIGKILL the worker once half the alerts are grouped; a second worker groups the rest.
	require.Eventually(t, func() bool { return grouped() >= n/2 }, 10*time.Minute, 20*time.Millisecond)
	c.workers[0].kill(t)
	atKill := grouped()
	t.Logf("worker SIGKILLed with %d of %d alerts grouped", atKill, n)
	require.Less(t, atKill, n, "the kill interrupted the grouping")
	c.launch("worker-2", "worker")
	require.Eventually(t, func() bool { return c.enriched(t, tag) == n }, 10*time.Minute, 250*time.Millisecond)
	require.Equal(t, n, grouped(), "every alert joined the case")

	// Exactly once: one alert_grouped event per alert naming the indicator, one case.alert_added per
	// alert, and the case counts its 201 alerts.
	var events, alerts int
	require.NoError(t, c.st.DB().NewRaw(`SELECT count(*), count(DISTINCT e.alert_uuid) FROM activity_events AS e
		JOIN alerts AS a ON a.uuid = e.alert_uuid
		WHERE ? = ANY(a.tags) AND e.event_type = 'alert_grouped' AND e.case_uuid = ? AND e."references"->'indicator'->>'value' = ?`,
		tag, kase.UUID, bad).Scan(ctx, &events, &alerts))
	require.Equal(t, n, alerts)
	require.Equal(t, n, events, "one alert_grouped event per alert")
	require.NoError(t, c.st.DB().NewRaw(`SELECT count(*), count(DISTINCT e.alert_uuid) FROM agent_events AS e
		JOIN alerts AS a ON a.uuid = e.alert_uuid
		WHERE ? = ANY(a.tags) AND e.event = ? AND e.case_uuid = ?`, tag, store.EventCaseAlertAddedAgent, kase.UUID).Scan(ctx, &events, &alerts))
	require.Equal(t, n, alerts)
	require.Equal(t, n, events, "one case.alert_added per alert")
	var count int
	require.NoError(t, c.st.DB().NewRaw(`SELECT alert_count FROM cases WHERE uuid = ?`, kase.UUID).Scan(ctx, &count))
	require.Equal(t, n+1, count)
	// The agent hears of every join: the 200 groupings and the seed's join by hand.
	require.Eventually(t, func() bool { got, _ := target.deliveryCounts(); return got >= n+1 }, 2*time.Minute, 100*time.Millisecond)
	for _, id := range ids {
		require.NotEmpty(t, id)
	}
}
