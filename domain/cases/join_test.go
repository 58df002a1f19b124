package cases_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// DecideJoin: an actor's allowed_sources first, then at most one case per alert unless move; an
// alert already in the case passes (the store writes nothing for it).
func TestDecideJoin(t *testing.T) {
	target, other := uuid.New(), uuid.New()
	free, inTarget, inOther := uuid.New(), uuid.New(), uuid.New()
	locked := []store.JoiningAlert{{UUID: free, SourceName: "generic"}, {UUID: inTarget, CaseUUID: &target, SourceName: "generic"},
		{UUID: inOther, CaseUUID: &other, SourceName: "splunk"}}

	_, err := cases.DecideJoin(false, actor)(target, locked)
	var oc *cases.AlertInOtherCaseError
	require.ErrorAs(t, err, &oc)
	require.Equal(t, inOther, oc.AlertUUID)
	require.Equal(t, other, oc.CaseUUID)

	join, err := cases.DecideJoin(true, actor)(target, locked)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{free, inTarget, inOther}, join)

	limited := actor
	limited.AllowedSources = []string{"generic"}
	_, err = cases.DecideJoin(true, limited)(target, locked)
	var sn *store.SourceNotAllowedError
	require.ErrorAs(t, err, &sn)
	require.Equal(t, inOther, sn.AlertUUID)
	require.Equal(t, "splunk", sn.Source)
}

// Grouping.Decide: off at window 0, no lookup for an alert in a case or without a verdict that
// groups; the lookup searches with GroupingMalices, OpenStatuses and the window; a case whose
// creator was limited to other sources is not joined.
func TestGroupingDecide(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	g := cases.Grouping{Window: 6 * time.Hour}
	hot := store.GroupingAlert{UUID: uuid.New(), SourceName: "generic", Malices: []string{"Benign", "Suspicious"}}
	match := &store.GroupingMatch{Case: store.Case{UUID: uuid.New()}}
	var asked []store.GroupingLookup
	lookup := func(q store.GroupingLookup) (*store.GroupingMatch, error) {
		asked = append(asked, q)
		return match, nil
	}

	for name, tc := range map[string]struct {
		g cases.Grouping
		a store.GroupingAlert
	}{
		"window 0":                {cases.Grouping{}, hot},
		"in a case":               {g, store.GroupingAlert{UUID: hot.UUID, InCase: true, Malices: hot.Malices}},
		"no verdict that groups":  {g, store.GroupingAlert{UUID: hot.UUID, Malices: []string{"Benign", "Pending"}}},
		"no indicator at all yet": {g, store.GroupingAlert{UUID: hot.UUID}},
	} {
		m, err := tc.g.Decide(tc.a, now, lookup)
		require.NoError(t, err, name)
		require.Nil(t, m, name)
		require.Empty(t, asked, name)
	}

	m, err := g.Decide(hot, now, lookup)
	require.NoError(t, err)
	require.Same(t, match, m)
	require.Equal(t, []store.GroupingLookup{{Malices: cases.GroupingMalices(), OpenStatuses: cases.OpenStatuses(), Since: now.Add(-6 * time.Hour)}}, asked)
	require.Equal(t, []string{"Malicious", "Suspicious"}, cases.GroupingMalices(), "API.md §14: worst first")
	require.Equal(t, []string{store.CaseOpen, store.CaseInvestigating}, cases.OpenStatuses())

	match.Case.CreatorAllowedSources = []string{"splunk"}
	m, err = g.Decide(hot, now, lookup)
	require.NoError(t, err)
	require.Nil(t, m, "the creator's allowed_sources leave the generic alert out (R4-3)")
	match.Case.CreatorAllowedSources = []string{"splunk", "generic"}
	m, err = g.Decide(hot, now, lookup)
	require.NoError(t, err)
	require.Same(t, match, m)
}

// Issue 45: the verdicts that group and the open statuses are named once, here: the store's lookup
// function (case_grouping_match, as the migrations leave it) names no verdict and no case status,
// so changing GroupingMalices or OpenStatuses is the whole change. Naming them again in the SQL
// fails this test.
func TestGroupingRulesAreNamedOnce(t *testing.T) {
	st := testenv.Store(t)
	var defs []string
	require.NoError(t, st.DB().NewRaw(`SELECT pg_get_functiondef(p.oid) FROM pg_proc AS p WHERE p.proname = 'case_grouping_match'`).
		Scan(context.Background(), &defs))
	require.Len(t, defs, 1, "one lookup function")
	for _, level := range indicators.MaliceLevels() {
		require.NotContains(t, defs[0], "'"+string(level)+"'", "verdict %s named in the SQL", level)
	}
	for _, status := range store.CaseStatuses() {
		require.NotContains(t, defs[0], "'"+status+"'", "case status %s named in the SQL", status)
	}
	require.True(t, strings.Contains(defs[0], "p_malices") && strings.Contains(defs[0], "p_open"), "the rules come in as arguments")
}
