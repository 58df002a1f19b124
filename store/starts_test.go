package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// clearOutboxes empties both outboxes of the package's database (tests run one at a time).
func clearOutboxes(t *testing.T, st *store.Store) {
	t.Helper()
	_, err := st.DB().NewRaw("DELETE FROM start_outbox; DELETE FROM alert_outbox").Exec(context.Background())
	require.NoError(t, err)
}

// newWorkflow stores an active workflow gated by mode with required approvals.
func newWorkflow(t *testing.T, st *store.Store, mode string, required int) store.Workflow {
	t.Helper()
	w := store.Workflow{Name: "store test " + uuid.NewString(), WorkflowType: "indicator", State: store.WorkflowStateActive,
		Steps: json.RawMessage(`[{"name":"a","url":"https://x.example.com/"}]`), TimeoutSeconds: 300, RetryMaxAttempts: 1,
		RetryInitialIntervalSeconds: 1, ApprovalMode: mode, ApprovalTimeoutSeconds: 3600, RequiredApprovals: required, RiskLevel: "low"}
	require.NoError(t, st.CreateWorkflow(context.Background(), &w))
	return w
}

// newRun commits a run of w (gated when expires is not zero) and returns it with its approval.
func newRun(t *testing.T, st *store.Store, w store.Workflow, trigger uuid.UUID, expires time.Time) (store.WorkflowRun, *store.ApprovalRequest) {
	t.Helper()
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunQueued, TriggerSource: "human",
		TriggerKeyUUID: &trigger, IndicatorType: "ip", IndicatorValue: "192.0.2.1"}
	var ap *store.ApprovalRequest
	if !expires.IsZero() {
		run.Status = store.RunPendingApproval
		ap = &store.ApprovalRequest{WorkflowUUID: w.UUID, WorkflowName: w.Name, TriggerSource: "human", TriggerKeyUUID: &trigger,
			IndicatorType: "ip", IndicatorValue: "192.0.2.1", RiskLevel: "low", RequiredApprovals: w.RequiredApprovals, ExpiresAt: expires,
			NotifierType: "none"}
	}
	created, err := st.CreateWorkflowRun(context.Background(), &run, ap)
	require.NoError(t, err)
	require.True(t, created)
	return run, ap
}

// newAlert ingests one alert and returns its uuid.
func newAlert(t *testing.T, st *store.Store) uuid.UUID {
	t.Helper()
	res, err := st.Ingest(context.Background(), store.IngestAlert{Title: "store test", Severity: "Low", SourceName: "generic",
		Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`), ActorType: store.ActorAPI}, 0)
	require.NoError(t, err)
	return res.AlertUUID
}

func TestStartOutbox_RunAndEnrichmentCommitWithTheirRows(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)

	// A run commits its start entry; an idempotent repeat commits nothing more.
	w := newWorkflow(t, st, store.ApprovalModeNever, 1)
	key := uuid.New()
	idem := "idem-" + uuid.NewString()
	run := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunQueued, TriggerSource: "human",
		TriggerKeyUUID: &key, IndicatorType: "ip", IndicatorValue: "192.0.2.1", IdempotencyKey: &idem}
	created, err := st.CreateWorkflowRun(ctx, &run, nil)
	require.NoError(t, err)
	require.True(t, created)
	again := store.WorkflowRun{WorkflowUUID: w.UUID, WorkflowVersion: w.Version, Status: store.RunQueued, TriggerSource: "human",
		TriggerKeyUUID: &key, IndicatorType: "ip", IndicatorValue: "192.0.2.1", IdempotencyKey: &idem}
	created, err = st.CreateWorkflowRun(ctx, &again, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, run.UUID, again.UUID)
	n, err := st.StartsPending(ctx, store.StartWorkflowRun)
	require.NoError(t, err)
	require.Equal(t, 1, n, "one entry per run, never twice")

	// Indicators linked for enrichment: one entry each, with the links, and an activity event.
	alert := newAlert(t, st)
	inds, added, err := st.LinkIndicatorsForEnrichment(ctx, alert, []store.IndicatorKey{{Type: "ip", Value: "192.0.2.10"}, {Type: "domain", Value: "store-test.example"}},
		"api", store.ActorAPI, "cai_test")
	require.NoError(t, err)
	require.Equal(t, 2, added)
	require.Len(t, inds, 2)
	n, err = st.StartsPending(ctx, store.StartIndicatorEnrichment)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	var events int
	require.NoError(t, st.DB().NewRaw("SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enrichment_requested' AND actor_key_prefix = 'cai_test'", alert).Scan(ctx, &events))
	require.Equal(t, 1, events)

	// An unknown alert: nothing linked, nothing queued.
	_, _, err = st.LinkIndicatorsForEnrichment(ctx, uuid.New(), []store.IndicatorKey{{Type: "ip", Value: "192.0.2.11"}}, "api", store.ActorAPI, "")
	require.ErrorIs(t, err, store.ErrNotFound)
	n, err = st.StartsPending(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 3, n)

	// The start outbox is not the alert outbox: the pipeline claim does not see these rows, and the
	// start claim does not see the alert's pipeline row.
	var pipeline []store.OutboxEntry
	_, err = st.DispatchOutbox(ctx, 100, store.OutboxCaps{InFlight: 100}, func(_ context.Context, es []store.OutboxEntry) []error {
		pipeline = es
		return make([]error, len(es))
	})
	require.NoError(t, err)
	require.Len(t, pipeline, 1)
	require.Equal(t, alert, pipeline[0].AlertUUID)
	require.Equal(t, store.OutboxPipeline, pipeline[0].Kind)

	kinds := map[string][]uuid.UUID{}
	claimed, err := st.DispatchStarts(ctx, 100, func(_ context.Context, es []store.StartEntry) []error {
		for _, e := range es {
			kinds[e.Kind] = append(kinds[e.Kind], e.SubjectUUID)
		}
		return make([]error, len(es))
	})
	require.NoError(t, err)
	require.Equal(t, 3, claimed)
	require.Equal(t, []uuid.UUID{run.UUID}, kinds[store.StartWorkflowRun])
	require.ElementsMatch(t, []uuid.UUID{inds[0].UUID, inds[1].UUID}, kinds[store.StartIndicatorEnrichment])
	n, err = st.StartsPending(ctx, "")
	require.NoError(t, err)
	require.Zero(t, n, "started entries are deleted in the claim's transaction")
}

func TestStartOutbox_FailuresBackOffDoneIsDeleted(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)
	w := newWorkflow(t, st, store.ApprovalModeNever, 1)
	failing, _ := newRun(t, st, w, uuid.New(), time.Time{})
	done, _ := newRun(t, st, w, uuid.New(), time.Time{})

	claimed, err := st.DispatchStarts(ctx, 10, func(_ context.Context, es []store.StartEntry) []error {
		errs := make([]error, len(es))
		for i, e := range es {
			switch e.SubjectUUID {
			case failing.UUID:
				require.Zero(t, e.Attempts)
				errs[i] = errors.New("temporal unreachable")
			case done.UUID:
				errs[i] = store.ErrOutboxDone
			}
		}
		return errs
	})
	require.NoError(t, err)
	require.Equal(t, 2, claimed)
	var row struct {
		Attempts  int       `bun:"attempts"`
		LastError string    `bun:"last_error"`
		NotBefore time.Time `bun:"not_before"`
	}
	require.NoError(t, st.DB().NewRaw("SELECT attempts, last_error, not_before FROM start_outbox WHERE subject_uuid = ?", failing.UUID).Scan(ctx, &row))
	require.Equal(t, 1, row.Attempts)
	require.Equal(t, "temporal unreachable", row.LastError)
	require.True(t, row.NotBefore.After(time.Now().Add(-time.Second)), "backed off")
	n, err := st.StartsPending(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 1, n, "the done entry is deleted, the failed one kept")

	// Backed off: not due, so not claimed.
	claimed, err = st.DispatchStarts(ctx, 10, func(_ context.Context, es []store.StartEntry) []error {
		t.Fatalf("claimed a backed-off entry: %v", es)
		return nil
	})
	require.NoError(t, err)
	require.Zero(t, claimed)
	// Due again: claimed with its attempts.
	_, err = st.DB().NewRaw("UPDATE start_outbox SET not_before = now() - interval '1 second'").Exec(ctx)
	require.NoError(t, err)
	claimed, err = st.DispatchStarts(ctx, 10, func(_ context.Context, es []store.StartEntry) []error {
		require.Len(t, es, 1)
		require.Equal(t, 1, es[0].Attempts)
		return []error{nil}
	})
	require.NoError(t, err)
	require.Equal(t, 1, claimed)
}

// Concurrent dispatchers never claim the same entry (FOR UPDATE SKIP LOCKED), and every entry is
// claimed.
func TestStartOutbox_ConcurrentDispatchersClaimEachEntryOnce(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)
	w := newWorkflow(t, st, store.ApprovalModeNever, 1)
	want := map[uuid.UUID]bool{}
	for range 40 {
		r, _ := newRun(t, st, w, uuid.New(), time.Time{})
		want[r.UUID] = true
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n, err := st.DispatchStarts(ctx, 3, func(_ context.Context, es []store.StartEntry) []error {
					mu.Lock()
					for _, e := range es {
						seen[e.SubjectUUID]++
					}
					mu.Unlock()
					time.Sleep(5 * time.Millisecond) // hold the claim while the others look
					return make([]error, len(es))
				})
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, len(want))
	for id, n := range seen {
		require.True(t, want[id])
		require.Equal(t, 1, n, "entry %s claimed %d times", id, n)
	}
}

// The alert outbox keeps its kinds and its in-flight cap: a re-run is claimed as kind rerun, and
// nothing beyond maxInFlight started entries is claimed.
func TestAlertOutbox_KindsAndInFlightCap(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)
	a1, a2 := newAlert(t, st), newAlert(t, st)
	claim := func(limit, maxInFlight int) []store.OutboxEntry {
		var got []store.OutboxEntry
		_, err := st.DispatchOutbox(ctx, limit, store.OutboxCaps{InFlight: maxInFlight}, func(_ context.Context, es []store.OutboxEntry) []error {
			got = es
			return make([]error, len(es))
		})
		require.NoError(t, err)
		return got
	}
	first := claim(10, 1)
	require.Len(t, first, 1, "the cap holds the second pipeline back")
	require.Equal(t, store.OutboxPipeline, first[0].Kind)
	require.Empty(t, claim(10, 1))
	second := claim(10, 2)
	require.Len(t, second, 1)
	require.ElementsMatch(t, []uuid.UUID{a1, a2}, []uuid.UUID{first[0].AlertUUID, second[0].AlertUUID})

	// A re-run asked while the pipeline is in flight waits for it.
	require.NoError(t, st.EnqueueRerun(ctx, a1, store.ActorAPI, "cai_test"))
	require.Empty(t, claim(10, 10), "a re-run waits for the alert's pipeline in flight")
	_, err := st.DB().NewRaw("DELETE FROM alert_outbox WHERE alert_uuid = ? AND started_at IS NOT NULL", a1).Exec(ctx)
	require.NoError(t, err)
	got := claim(10, 10)
	require.Len(t, got, 1)
	require.Equal(t, a1, got[0].AlertUUID)
	require.Equal(t, store.OutboxRerun, got[0].Kind)
}

// The claim takes an alert's first run before any re-run, however much older the re-runs are; each
// kind oldest first.
func TestAlertOutbox_FirstRunsBeforeReRuns(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)
	old1, old2 := newAlert(t, st), newAlert(t, st)
	_, err := st.DB().NewRaw("DELETE FROM alert_outbox WHERE alert_uuid IN (?, ?)", old1, old2).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnqueueRerun(ctx, old1, store.ActorAPI, "cai_test"))
	require.NoError(t, st.EnqueueRerun(ctx, old2, store.ActorAPI, "cai_test"))
	fresh1, fresh2 := newAlert(t, st), newAlert(t, st)
	var order []uuid.UUID
	for range 4 {
		_, err := st.DispatchOutbox(ctx, 1, store.OutboxCaps{InFlight: 10}, func(_ context.Context, es []store.OutboxEntry) []error {
			for _, e := range es {
				order = append(order, e.AlertUUID)
			}
			return make([]error, len(es))
		})
		require.NoError(t, err)
	}
	require.Equal(t, []uuid.UUID{fresh1, fresh2, old1, old2}, order)
}

// While alerts arrive, re-runs take at most caps.Reruns places in flight, however many are due and
// however many places are free; first runs take the rest, up to caps.InFlight. With no alert created
// within caps.RerunsWhile, re-runs may take every place.
func TestAlertOutbox_ReRunsCapped(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	clearOutboxes(t, st)
	for range 8 {
		a := newAlert(t, st)
		_, err := st.DB().NewRaw("DELETE FROM alert_outbox WHERE alert_uuid = ?", a).Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, st.EnqueueRerun(ctx, a, store.ActorAPI, "cai_test"))
	}
	arriving := func(inFlight, reruns int) store.OutboxCaps {
		return store.OutboxCaps{InFlight: inFlight, Reruns: reruns, RerunsWhile: time.Hour}
	}
	claim := func(limit int, caps store.OutboxCaps) (kinds map[string]int) {
		kinds = map[string]int{}
		_, err := st.DispatchOutbox(ctx, limit, caps, func(_ context.Context, es []store.OutboxEntry) []error {
			for _, e := range es {
				kinds[e.Kind]++
			}
			return make([]error, len(es))
		})
		require.NoError(t, err)
		return kinds
	}
	require.Equal(t, map[string]int{store.OutboxRerun: 2}, claim(10, arriving(10, 2)), "two re-runs of eight, with places to spare")
	require.Empty(t, claim(10, arriving(10, 2)), "two re-runs started: the rest wait")
	for range 3 {
		newAlert(t, st)
	}
	require.Equal(t, map[string]int{store.OutboxPipeline: 3}, claim(10, arriving(10, 2)), "first runs take the places re-runs may not")
	require.Equal(t, map[string]int{store.OutboxRerun: 1}, claim(10, arriving(10, 3)), "a third re-run place")
	require.Equal(t, map[string]int{store.OutboxRerun: 2}, claim(10, arriving(8, 10)), "the cap over both kinds still holds: 8 started")
	require.Empty(t, claim(10, arriving(8, 10)))

	// Re-runs finished free their places for the next.
	_, err := st.DB().NewRaw("DELETE FROM alert_outbox WHERE kind = ? AND started_at IS NOT NULL", store.OutboxRerun).Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{store.OutboxRerun: 1}, claim(10, arriving(10, 1)))
	require.Empty(t, claim(10, arriving(10, 1)))

	// No alert created within RerunsWhile (-1 h here: none later than an hour from now, whatever other
	// tests insert meanwhile): the re-run cap is off, the cap over both kinds still holds.
	quiet := store.OutboxCaps{InFlight: 6, Reruns: 1, RerunsWhile: -time.Hour}
	require.Equal(t, map[string]int{store.OutboxRerun: 2}, claim(10, quiet), "4 started, 2 more places, both re-runs")
	require.Empty(t, claim(10, quiet))
}
