package temporal_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/webhooks"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/workflows"
)

// hook records what an agent endpoint received and when; respond answers the n-th request (1-based).
type hook struct {
	mu      sync.Mutex
	at      []time.Time
	headers []http.Header
	bodies  [][]byte
}

func (h *hook) handler(respond func(n int, w http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.at, h.headers, h.bodies = append(h.at, time.Now()), append(h.headers, r.Header.Clone()), append(h.bodies, body)
		n := len(h.at)
		h.mu.Unlock()
		respond(n, w)
	}
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.at)
}

// registerTestAgent registers an agent at url (removed when the test ends).
func registerTestAgent(t *testing.T, e *pipeEnv, url string, edit func(*agents.Spec)) (store.Agent, string) {
	t.Helper()
	name, timeout, retries := "agent "+uuid.NewString(), 5, 3
	spec := agents.Spec{Name: &name, EndpointURL: &url, TimeoutSeconds: &timeout, RetryCount: &retries}
	if edit != nil {
		edit(&spec)
	}
	a, secret, err := e.agents.Create(context.Background(), agents.Actor{Type: store.ActorAPI}, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.st.DeleteAgent(context.Background(), a.UUID) })
	return a, secret
}

// raise commits an event and starts its delivery, as the outbox dispatcher does; it waits for the
// DeliverEvent workflow to finish.
func raise(t *testing.T, e *pipeEnv, ev *store.AgentEvent) workflows.DeliverEventResult {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.st.RecordAgentEvent(ctx, nil, ev))
	starter := temporal.NewEventStarter(e.c, e.queues)
	require.NoError(t, starter.StartAgentEvent(ctx, ev.UUID, ev.AlertUUID))
	require.NoError(t, starter.StartAgentEvent(ctx, ev.UUID, ev.AlertUUID), "starting an event again is not an error")
	var res workflows.DeliverEventResult
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, e.c.GetWorkflow(wctx, ids.AgentEvent(ev.UUID), "").Get(wctx, &res))
	return res
}

func deliveries(t *testing.T, e *pipeEnv, agent uuid.UUID) []store.AgentDelivery {
	t.Helper()
	out, _, err := e.st.ListAgentDeliveries(context.Background(), store.AgentDeliveryFilter{Agent: agent, Page: store.Page{Size: 100}})
	require.NoError(t, err)
	return out
}

// An agent answering 500 twice then 200 gets three attempts of one delivery (same id, the same
// signed body), with growing gaps, and one delivered record.
func TestDeliverEvent_RetriesWithBackoffUntilDelivered(t *testing.T) {
	e := pipelineHarness(t)
	var h hook
	url := e.handle(h.handler(func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	a, secret := registerTestAgent(t, e, url, nil)
	ev := &store.AgentEvent{Event: agents.EventRunCompleted, TargetAgent: &a.UUID,
		Facts: json.RawMessage(`{"run_uuid": "2b0e7c1e-0000-4000-8000-000000000001", "status": "succeeded"}`)}
	res := raise(t, e, ev)
	require.Equal(t, workflows.DeliverEventResult{Deliveries: 1, Failed: 0}, res)

	require.Equal(t, 3, h.count())
	want := activities.DeliveryID(ev.UUID, a.UUID).String()
	for i := range 3 {
		require.Equal(t, want, h.headers[i].Get(webhooks.HeaderDelivery), "one delivery id across retries")
		require.Equal(t, agents.EventRunCompleted, h.headers[i].Get(webhooks.HeaderEvent))
		require.True(t, webhooks.Verify(secret, h.headers[i].Get(webhooks.HeaderTimestamp), h.bodies[i], h.headers[i].Get(webhooks.HeaderSignature)))
		require.JSONEq(t, string(h.bodies[0]), string(h.bodies[i]), "every attempt carries the same payload")
	}
	gap1, gap2 := h.at[1].Sub(h.at[0]), h.at[2].Sub(h.at[1])
	require.GreaterOrEqual(t, gap1, time.Second)
	require.Greater(t, gap2, gap1, "backoff grows")
	var payload map[string]any
	require.NoError(t, json.Unmarshal(h.bodies[2], &payload))
	require.Equal(t, want, payload["id"])
	require.Equal(t, "succeeded", payload["data"].(map[string]any)["status"])

	recs := deliveries(t, e, a.UUID)
	require.Len(t, recs, 3)
	statuses := map[int]string{}
	for _, r := range recs {
		statuses[r.Attempt] = r.Status
		require.Equal(t, want, r.DeliveryUUID.String())
	}
	require.Equal(t, map[int]string{1: store.DeliveryFailed, 2: store.DeliveryFailed, 3: store.DeliveryDelivered}, statuses)
	if *recordEventHistory != "" {
		testenv.WriteHistory(t, e.c, ids.AgentEvent(ev.UUID), *recordEventHistory)
	}
}

// An agent that never answers times out at its own timeout, while another agent receives the same
// event at once; a 410 gives up without retries.
func TestDeliverEvent_SlowAgentDelaysNobody(t *testing.T) {
	e := pipelineHarness(t)
	event := agents.EventApprovalDecided
	var slow, fast, gone hook
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slowURL := e.handle(slow.handler(func(int, http.ResponseWriter) { <-release }))
	fastURL := e.handle(fast.handler(func(int, http.ResponseWriter) {}))
	goneURL := e.handle(gone.handler(func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }))
	one, zero := 1, 0
	events := []string{event}
	s, _ := registerTestAgent(t, e, slowURL, func(sp *agents.Spec) { sp.TimeoutSeconds, sp.RetryCount, sp.Events = &one, &zero, events })
	f, _ := registerTestAgent(t, e, fastURL, func(sp *agents.Spec) { sp.Events = events })
	g, _ := registerTestAgent(t, e, goneURL, func(sp *agents.Spec) { sp.Events = events })
	notSubscribed := &hook{}
	registerTestAgent(t, e, e.handle(notSubscribed.handler(func(int, http.ResponseWriter) {})), nil)

	start := time.Now()
	res := raise(t, e, &store.AgentEvent{Event: event, Facts: json.RawMessage(`{"decision": "approved"}`)})
	require.Equal(t, workflows.DeliverEventResult{Deliveries: 3, Failed: 2}, res)
	require.Equal(t, 1, fast.count())
	require.Less(t, fast.at[0].Sub(start), 5*time.Second, "the fast agent is not held up by the slow one")
	require.Equal(t, 1, slow.count(), "retry_count 0: one attempt")
	require.Equal(t, 1, gone.count(), "410: not retried")
	require.Zero(t, notSubscribed.count(), "an agent not subscribed to the event gets nothing")

	sr := deliveries(t, e, s.UUID)
	require.Len(t, sr, 1)
	require.Equal(t, store.DeliveryGaveUp, sr[0].Status)
	require.Contains(t, *sr[0].Error, "timed out after 1s")
	require.Less(t, sr[0].DurationMS, 3000)
	require.Equal(t, store.DeliveryDelivered, deliveries(t, e, f.UUID)[0].Status)
	gr := deliveries(t, e, g.UUID)
	require.Len(t, gr, 1)
	require.Equal(t, store.DeliveryGaveUp, gr[0].Status)
	require.EqualValues(t, http.StatusGone, *gr[0].StatusCode)
}

// recordEventsHistory, when set, makes TestDeliverEvents_BatchInOrderRetriedOnItsOwn write its
// DeliverEvents history there (workflows/testdata/deliver_events_history.json feeds the replay test),
// and recordEventHistory makes TestDeliverEvent_RetriesWithBackoffUntilDelivered write its DeliverEvent
// history (workflows/testdata/deliver_event_history.json):
//
//	go test ./temporal -run 'TestDeliverEvents_BatchInOrderRetriedOnItsOwn|TestDeliverEvent_RetriesWithBackoffUntilDelivered' \
//	  -record-events-history=$PWD/workflows/testdata/deliver_events_history.json \
//	  -record-event-history=$PWD/workflows/testdata/deliver_event_history.json
var (
	recordEventsHistory = flag.String("record-events-history", "", "write the DeliverEvents history to this file")
	recordEventHistory  = flag.String("record-event-history", "", "write the DeliverEvent history to this file")
)

// A batch of three events to two agents, as the outbox dispatcher starts it (one DeliverEvents
// workflow, events-<uuid of the batch>), with an event id nobody raised (a deleted event) among them: the
// agent answering 200 receives the three in the events' order, each under its own delivery id and
// signed; its second delivery failing once (500) is retried on its own under the same id and body,
// recorded as attempt 2, after the later events; the agent with retry_count 0 answering 500 gives up
// after one attempt of each; an agent not subscribed receives nothing.
func TestDeliverEvents_BatchInOrderRetriedOnItsOwn(t *testing.T) {
	e := pipelineHarness(t)
	ctx := context.Background()
	event := agents.EventApprovalDecided
	var okHook, failing, notSubscribed hook
	okURL := e.handle(okHook.handler(func(n int, w http.ResponseWriter) {
		if n == 2 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	failURL := e.handle(failing.handler(func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }))
	events, zero := []string{event}, 0
	a, secret := registerTestAgent(t, e, okURL, func(sp *agents.Spec) { sp.Events = events })
	f, _ := registerTestAgent(t, e, failURL, func(sp *agents.Spec) { sp.Events, sp.RetryCount = events, &zero })
	registerTestAgent(t, e, e.handle(notSubscribed.handler(ok200)), nil)

	var ids3 []uuid.UUID
	for i := range 3 {
		ev := &store.AgentEvent{Event: event, Facts: json.RawMessage(fmt.Sprintf(`{"decision": "approved", "n": %d}`, i))}
		require.NoError(t, e.st.RecordAgentEvent(ctx, nil, ev))
		ids3 = append(ids3, ev.UUID)
	}
	batch := []uuid.UUID{ids3[0], uuid.New(), ids3[1], ids3[2]}
	starter := temporal.NewEventStarter(e.c, e.queues)
	require.NoError(t, starter.StartAgentEvents(ctx, batch))
	require.NoError(t, starter.StartAgentEvents(ctx, batch), "starting a batch again is not an error")
	require.NoError(t, starter.StartAgentEvents(ctx, nil), "an empty batch starts nothing")
	var res workflows.DeliverEventResult
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, e.c.GetWorkflow(wctx, ids.AgentEventBatch(batch), "").Get(wctx, &res))
	require.Equal(t, workflows.DeliverEventResult{Deliveries: 6, Failed: 3}, res)

	require.Equal(t, 4, okHook.count(), "three first attempts and one retry")
	got := okHook.received(t)
	for i, want := range []uuid.UUID{ids3[0], ids3[1], ids3[2], ids3[1]} {
		id := activities.DeliveryID(want, a.UUID)
		require.Equal(t, id, got[i].ID, "request %d", i)
		require.Equal(t, id.String(), got[i].Header.Get(webhooks.HeaderDelivery))
		require.True(t, webhooks.Verify(secret, got[i].Header.Get(webhooks.HeaderTimestamp), got[i].Body, got[i].Header.Get(webhooks.HeaderSignature)))
	}
	require.JSONEq(t, string(got[1].Body), string(got[3].Body), "the retry carries the same payload")
	require.EqualValues(t, 1, got[1].Data["n"])
	require.GreaterOrEqual(t, okHook.at[3].Sub(okHook.at[1]), time.Second, "the retry waits its backoff")

	attempts := map[string]string{}
	for _, r := range deliveries(t, e, a.UUID) {
		attempts[fmt.Sprintf("%s/%d", r.DeliveryUUID, r.Attempt)] = r.Status
	}
	require.Equal(t, map[string]string{
		fmt.Sprintf("%s/1", activities.DeliveryID(ids3[0], a.UUID)): store.DeliveryDelivered,
		fmt.Sprintf("%s/1", activities.DeliveryID(ids3[1], a.UUID)): store.DeliveryFailed,
		fmt.Sprintf("%s/2", activities.DeliveryID(ids3[1], a.UUID)): store.DeliveryDelivered,
		fmt.Sprintf("%s/1", activities.DeliveryID(ids3[2], a.UUID)): store.DeliveryDelivered,
	}, attempts)

	require.Equal(t, 3, failing.count(), "retry_count 0: one attempt of each")
	fr := deliveries(t, e, f.UUID)
	require.Len(t, fr, 3)
	for _, r := range fr {
		require.Equal(t, store.DeliveryGaveUp, r.Status)
		require.Equal(t, 1, r.Attempt)
	}
	require.Zero(t, notSubscribed.count())

	if *recordEventsHistory != "" {
		testenv.WriteHistory(t, e.c, ids.AgentEventBatch(batch), *recordEventsHistory)
	}
}

// DeliverAgentEvents run as Temporal retries it after its worker died: with progress heartbeated for
// the first delivery it makes only the second; with progress it cannot trust (more outcomes than
// deliveries, or not outcomes at all) it makes both again under the same ids; for an agent deleted
// meanwhile it makes none and reports each given up.
func TestDeliverAgentEvents_ResumesAfterHeartbeatedProgress(t *testing.T) {
	e := pipelineHarness(t)
	ctx := context.Background()
	var h hook
	a, _ := registerTestAgent(t, e, e.handle(h.handler(ok200)), nil)
	var batch []activities.BatchDelivery
	for range 2 {
		ev := &store.AgentEvent{Event: agents.EventAlertUpdated, TargetAgent: &a.UUID, Facts: json.RawMessage(`{}`)}
		require.NoError(t, e.st.RecordAgentEvent(ctx, nil, ev))
		require.NoError(t, e.st.SetAgentEventPayloads(ctx, map[uuid.UUID]json.RawMessage{ev.UUID: json.RawMessage(`{"n": 1}`)}))
		batch = append(batch, activities.BatchDelivery{EventUUID: ev.UUID, DeliveryUUID: activities.DeliveryID(ev.UUID, a.UUID)})
	}
	run := func(agent uuid.UUID, progress any) []activities.AttemptResult {
		t.Helper()
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(e.acts.DeliverAgentEvents)
		if progress != nil {
			env.SetHeartbeatDetails(progress)
		}
		val, err := env.ExecuteActivity(e.acts.DeliverAgentEvents, activities.DeliverAgentEventsInput{AgentUUID: agent, Deliveries: batch, MaxAttempts: 4})
		require.NoError(t, err)
		var out []activities.AttemptResult
		require.NoError(t, val.Get(&out))
		return out
	}
	delivered := activities.AttemptResult{State: activities.AttemptDelivered}
	require.Equal(t, []activities.AttemptResult{delivered, delivered}, run(a.UUID, []activities.AttemptResult{delivered}))
	got := h.received(t)
	require.Len(t, got, 1, "only the delivery not heartbeated")
	require.Equal(t, batch[1].DeliveryUUID, got[0].ID)

	for _, hostile := range []any{[]activities.AttemptResult{delivered, delivered, delivered}, "not progress", map[string]int{"next": 1}} {
		before := h.count()
		require.Equal(t, []activities.AttemptResult{delivered, delivered}, run(a.UUID, hostile), "%v", hostile)
		got := h.received(t)[before:]
		require.Len(t, got, 2, "progress %v not trusted: both again", hostile)
		require.Equal(t, batch[0].DeliveryUUID, got[0].ID)
		require.Equal(t, batch[1].DeliveryUUID, got[1].ID)
	}

	before := h.count()
	gaveUp := activities.AttemptResult{State: activities.AttemptGaveUp}
	require.Equal(t, []activities.AttemptResult{gaveUp, gaveUp}, run(uuid.New(), nil), "an agent gone receives nothing")
	require.Equal(t, before, h.count())
}
