package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// joinAll is a decision that joins every alert the store locked, whatever case it is in and
// whoever asks: what the store does with it shows the store adds no rule of its own.
func joinAll(_ uuid.UUID, locked []store.JoiningAlert) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, len(locked))
	for i, a := range locked {
		out[i] = a.UUID
	}
	return out, nil
}

// Issue 45: whether an alert may join a case is decided by domain/cases (cases.DecideJoin) on the
// rows the store locked, and only there. The store refuses a join without a decision and writes
// exactly what the decision says: an alert of another case moves when the decision says so, for an
// actor limited to other sources too (both refusals are the domain's). A second copy of either
// refusal in the store fails this test.
func TestJoinCase_TheStoreWritesTheDomainsDecision(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	system := store.Actor{Type: store.ActorSystem}
	a := groupingAlert(t, st, time.Now())
	first := &store.Case{Title: "join decided elsewhere"}
	require.ErrorIs(t, st.CreateCase(ctx, store.CaseCreate{Case: first, Alerts: []uuid.UUID{a}, Actor: system}), store.ErrNoJoinDecision,
		"no join without the domain's decision")
	require.NoError(t, st.CreateCase(ctx, store.CaseCreate{Case: first, Alerts: []uuid.UUID{a}, Join: joinAll, Actor: system}))
	t.Cleanup(func() { _ = st.DeleteCase(context.Background(), first.UUID, system) })
	second := &store.Case{Title: "join decided elsewhere 2"}
	require.NoError(t, st.CreateCase(ctx, store.CaseCreate{Case: second, Actor: system}))
	t.Cleanup(func() { _ = st.DeleteCase(context.Background(), second.UUID, system) })

	_, err := st.AddAlertsToCase(ctx, second.UUID, []uuid.UUID{a}, nil, system)
	require.ErrorIs(t, err, store.ErrNoJoinDecision)
	_, err = st.AddAlertsToCase(ctx, second.UUID, []uuid.UUID{a}, func(uuid.UUID, []store.JoiningAlert) ([]uuid.UUID, error) {
		return []uuid.UUID{uuid.New()}, nil
	}, system)
	require.ErrorIs(t, err, store.ErrNoJoinDecision, "a decision naming an alert the store did not lock")
	require.Equal(t, first.UUID, alertCase(t, st, a))

	var seen []store.JoiningAlert
	limited := store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_test", AllowedSources: []string{"not-" + uuid.NewString()}}
	added, err := st.AddAlertsToCase(ctx, second.UUID, []uuid.UUID{a}, func(id uuid.UUID, locked []store.JoiningAlert) ([]uuid.UUID, error) {
		seen = locked
		return joinAll(id, locked)
	}, limited)
	require.NoError(t, err, "the store has no refusal of its own")
	require.Equal(t, []uuid.UUID{a}, added.Joined)
	require.Len(t, seen, 1)
	require.Equal(t, first.UUID, *seen[0].CaseUUID, "the decision sees the locked row's case")
	require.Equal(t, "generic", seen[0].SourceName)
	require.Equal(t, second.UUID, alertCase(t, st, a))
	require.Equal(t, 1, countRows(t, st, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND case_uuid = ?
		AND event_type = 'alert_removed_from_case' AND "references"->>'moved_to_case_uuid' = ?`, a, first.UUID, second.UUID.String()))
}

// Issue 45: the grouping's rules are domain/cases' (cases.Grouping): the verdicts that group and the
// open statuses reach the lookup as arguments, and the creator's allowed_sources are checked by the
// decision, not the store. Here a decision groups on Benign verdicts into a case whose creator was
// limited to another source: the lookup finds it and the store joins it. Verdicts or statuses named
// again in case_grouping_match, or the creator's rule again in the store, fail this test.
func TestGrouping_TheLookupSearchesWithTheDomainsRules(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	system := store.Actor{Type: store.ActorSystem}
	n := uuid.New().ID()
	benign := fmt.Sprintf("185.%d.%d.4", 100+n%50, n%200)
	groupingVerdict(t, st, benign, "Benign")
	now := time.Now()
	c := &store.Case{Title: "grouping on Benign " + benign, CreatorAllowedSources: []string{"not-" + uuid.NewString()}}
	require.NoError(t, st.CreateCase(ctx, store.CaseCreate{Case: c, Alerts: []uuid.UUID{groupingAlert(t, st, now, benign)}, Join: joinAll, Actor: system}))
	t.Cleanup(func() { _ = st.DeleteCase(context.Background(), c.UUID, system) })
	ev := func(*string, []string) store.ActivityEvent {
		return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
	}
	finish := func(a uuid.UUID, q store.GroupingLookup) (store.FinishedEnrichment, *store.GroupingMatch, error) {
		var got *store.GroupingMatch
		fin, err := st.FinishEnrichment(ctx, a, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil, ev,
			func(ga store.GroupingAlert, at time.Time, lookup store.GroupingLookupFunc) (*store.GroupingMatch, error) {
				require.Equal(t, a, ga.UUID)
				require.Equal(t, []string{"Benign"}, ga.Malices)
				require.False(t, ga.InCase)
				q.Since = at.Add(-time.Hour)
				m, err := lookup(q)
				got = m
				return m, err
			})
		return fin, got, err
	}

	// Only Investigating counts as open for this decision: the Open case is not found.
	a := groupingAlert(t, st, now, benign)
	fin, m, err := finish(a, store.GroupingLookup{Malices: []string{"Benign"}, OpenStatuses: []string{store.CaseInvestigating}})
	require.NoError(t, err)
	require.Nil(t, m)
	require.Equal(t, uuid.Nil, fin.GroupedInto)

	fin, m, err = finish(a, store.GroupingLookup{Malices: []string{"Benign"}, OpenStatuses: []string{store.CaseOpen}})
	require.NoError(t, err)
	require.NotNil(t, m)
	require.Equal(t, c.CreatorAllowedSources, m.Case.CreatorAllowedSources)
	require.Equal(t, "Benign", m.Indicator.Malice)
	require.Equal(t, c.UUID, fin.GroupedInto, "the store joins what the decision returned")
	require.Equal(t, c.UUID, alertCase(t, st, a))

	// A decision returning a match its lookup did not find is refused.
	b := groupingAlert(t, st, now, benign)
	_, err = st.FinishEnrichment(ctx, b, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil, ev,
		func(store.GroupingAlert, time.Time, store.GroupingLookupFunc) (*store.GroupingMatch, error) {
			return &store.GroupingMatch{Case: *c}, nil
		})
	require.ErrorIs(t, err, store.ErrGroupingNotLookedUp)
	require.Equal(t, uuid.Nil, alertCase(t, st, b))
}
