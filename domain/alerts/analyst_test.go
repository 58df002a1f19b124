package alerts_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestDecide_AssigneeWritesEventAndRaisesAlertUpdated(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	a := &store.Alert{Status: store.StatusOpen}
	ch, err := alerts.Decide(alerts.Patch{Assignee: ptr("  maria.ortiz ")}, human, a, now)
	require.NoError(t, err)
	require.Equal(t, "maria.ortiz", *a.Assignee, "trimmed")
	require.Equal(t, now, *a.AssignedAt)
	require.ElementsMatch(t, []string{"assignee", "assigned_at"}, ch.Columns)
	require.Len(t, ch.Events, 1)
	require.Equal(t, "alert_assigned", ch.Events[0].EventType)
	require.Equal(t, map[string]any{"from": nil, "to": "maria.ortiz"}, ch.Events[0].References)
	require.NotNil(t, ch.Updated, "an assignment is an alert.updated")
	changes := ch.Updated["changes"].([]map[string]any)
	require.Equal(t, "alert_assigned", changes[0]["change"])

	// Same handle again: nothing.
	ch, err = alerts.Decide(alerts.Patch{Assignee: ptr("maria.ortiz")}, human, a, now.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, ch.Columns)
	require.Nil(t, ch.Updated)
	require.Equal(t, now, *a.AssignedAt, "assigned_at stays the time of the assignment")

	// "" unassigns and clears assigned_at.
	ch, err = alerts.Decide(alerts.Patch{Assignee: ptr("")}, human, a, now)
	require.NoError(t, err)
	require.Nil(t, a.Assignee)
	require.Nil(t, a.AssignedAt)
	require.Equal(t, map[string]any{"from": "maria.ortiz", "to": nil}, ch.Events[0].References)

	// nil leaves it.
	a.Assignee = ptr("x")
	ch, err = alerts.Decide(alerts.Patch{Severity: ptr("High")}, human, a, now)
	require.NoError(t, err)
	require.Equal(t, "x", *a.Assignee)
	require.NotContains(t, ch.Columns, "assignee")
}

func TestPatchValidate_AssigneeHostileInput(t *testing.T) {
	for name, v := range map[string]string{
		"blank":     "   ",
		"too long":  strings.Repeat("a", 201),
		"NUL":       "ma\x00ria",
		"newline":   "maria\nadmin",
		"reserved":  "None",
		"bad utf-8": "ma\xffria",
	} {
		errs := alerts.Patch{Assignee: ptr(v)}.Validate()
		require.Len(t, errs, 1, name)
		require.Equal(t, []any{"assignee"}, errs[0].Loc, name)
	}
	for _, v := range []string{"", "maria.ortiz", strings.Repeat("é", 200), "<script>alert(1)</script>", "Maria Ortiz (T2)"} {
		require.Empty(t, alerts.Patch{Assignee: ptr(v)}.Validate(), v)
	}
}

func TestDecide_TagsAddRemove(t *testing.T) {
	a := &store.Alert{Status: store.StatusOpen, Tags: []string{"a", "b"}}
	ch, err := alerts.Decide(alerts.Patch{TagsAdd: []string{"c", " b ", "c"}, TagsRemove: []string{"a"}}, human, a, time.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, a.Tags)
	require.Equal(t, "alert_tags_updated", ch.Events[0].EventType)
	require.Nil(t, ch.Updated, "tags alone raise no alert.updated")
	ch, err = alerts.Decide(alerts.Patch{TagsAdd: []string{"b"}, TagsRemove: []string{"zzz"}}, human, a, time.Now())
	require.NoError(t, err)
	require.Empty(t, ch.Events, "no change, no event")

	full := &store.Alert{Status: store.StatusOpen}
	for i := range alerts.MaxTags {
		full.Tags = append(full.Tags, fmt.Sprint("t", i))
	}
	_, err = alerts.Decide(alerts.Patch{TagsAdd: []string{"one-more"}}, human, full, time.Now())
	var errs validate.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []any{"tags_add"}, errs[0].Loc)
}

func TestService_BulkPerAlertOutcomes(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	ids := []uuid.UUID{newAlert(t, st), newAlert(t, st), newAlert(t, st), uuid.New()}
	// The second alert is Closed: Closed→Triaging breaks the graph.
	_, err := svc.Patch(ctx, ids[1], alerts.Patch{Status: ptr("Closed"), CloseClassification: ptr("Duplicate")}, human)
	require.NoError(t, err)

	done, err := svc.Bulk(ctx, ids, alerts.Patch{Status: ptr("Triaging"), Assignee: ptr("sam"), TagsAdd: []string{"fp-sweep"}}, human)
	require.NoError(t, err)
	require.Equal(t, 2, done.Succeeded)
	require.Equal(t, 2, done.Failed)
	require.NoError(t, done.Items[0].Err)
	require.NoError(t, done.Items[2].Err)
	var errs validate.Errors
	require.ErrorAs(t, done.Items[1].Err, &errs)
	require.Equal(t, "invalid_transition", errs[0].Type)
	require.ErrorIs(t, done.Items[3].Err, store.ErrNotFound)
	for i, id := range ids[:3] {
		require.Equal(t, id, done.Items[i].AlertUUID)
		a, err := st.GetAlert(ctx, id)
		require.NoError(t, err)
		if i == 1 {
			require.Equal(t, "Closed", a.Status, "the refused alert is unchanged")
			require.Nil(t, a.Assignee, "its whole patch is refused, not only the status")
			continue
		}
		require.Equal(t, "Triaging", a.Status)
		require.Equal(t, "sam", *a.Assignee)
		require.Equal(t, []string{"fp-sweep"}, a.Tags)
		var types []string
		for _, e := range activity(t, st, id) {
			types = append(types, e.EventType)
		}
		require.Subset(t, types, []string{"alert_status_updated", "alert_assigned", "alert_tags_updated"})
	}

	// A request broken as a whole touches nothing.
	for name, tc := range map[string]struct {
		ids []uuid.UUID
		p   alerts.Patch
		loc []any
	}{
		"no alerts":    {nil, alerts.Patch{Severity: ptr("Low")}, []any{"alert_uuids"}},
		"too many":     {make([]uuid.UUID, 501), alerts.Patch{Severity: ptr("Low")}, []any{"alert_uuids"}},
		"repeated":     {[]uuid.UUID{ids[0], ids[0]}, alerts.Patch{Severity: ptr("Low")}, []any{"alert_uuids", 1}},
		"empty patch":  {ids[:1], alerts.Patch{}, []any{"patch"}},
		"bad severity": {ids[:1], alerts.Patch{Severity: ptr("Bogus")}, []any{"patch", "severity"}},
		"close no why": {ids[:1], alerts.Patch{Status: ptr("Closed")}, []any{"patch", "close_classification"}},
	} {
		_, err := svc.Bulk(ctx, tc.ids, tc.p, human)
		var errs validate.Errors
		require.ErrorAs(t, err, &errs, name)
		require.Equal(t, tc.loc, errs[0].Loc, name)
	}
}

func TestIndicatorFilter(t *testing.T) {
	keys, errs := alerts.IndicatorFilter(" 10.0.0.1 ", "")
	require.Empty(t, errs)
	require.Contains(t, keys, store.IndicatorKey{Type: "ip", Value: "10.0.0.1"})
	keys, errs = alerts.IndicatorFilter("EVIL.Example.COM", "domain")
	require.Empty(t, errs)
	require.Equal(t, []store.IndicatorKey{{Type: "domain", Value: "evil.example.com"}}, keys)
	hash := strings.Repeat("AB", 32)
	keys, _ = alerts.IndicatorFilter(hash, "")
	require.Contains(t, keys, store.IndicatorKey{Type: "hash_sha256", Value: strings.ToLower(hash)})

	for name, tc := range map[string]struct{ v, typ, loc string }{
		"bad type":        {"10.0.0.1", "bogus", "indicator_type"},
		"not an ip":       {"not-an-ip", "ip", "indicator"},
		"NUL":             {"a\x00b", "", "indicator"},
		"oversized":       {strings.Repeat("a", 5000), "", "indicator"},
		"nothing accepts": {"\x01\x02", "", "indicator"},
	} {
		_, errs := alerts.IndicatorFilter(tc.v, tc.typ)
		require.NotEmpty(t, errs, name)
		require.Equal(t, []any{tc.loc}, errs[0].Loc, name)
	}
}

// TestMaliceFilterAgreesWithAlertMalice holds the list's malice filter (SQL) to the one rule,
// indicators.AlertMalice: over alerts with random overrides and random indicator malices, each
// level's filter returns exactly the alerts whose computed malice is that level.
func TestMaliceFilterAgreesWithAlertMalice(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	rng := rand.New(rand.NewPCG(29, 29))
	levels := indicators.MaliceNames()
	tag := "malice-agree-" + uuid.NewString()[:8]
	want := map[string][]uuid.UUID{}
	for i := range 40 {
		id := newAlert(t, st)
		p := alerts.Patch{Tags: &[]string{tag}}
		var override *string
		if rng.IntN(4) == 0 {
			override = ptr(levels[rng.IntN(len(levels))])
			p.MaliceOverride = override
		}
		_, err := svc.Patch(ctx, id, p, human)
		require.NoError(t, err)
		var malices []string
		for j := range rng.IntN(4) {
			lvl := levels[rng.IntN(len(levels))]
			inds, _, err := st.LinkIndicators(ctx, id, []store.IndicatorKey{{Type: "domain", Value: fmt.Sprintf("m%d-%d-%s.example", i, j, tag)}}, "test")
			require.NoError(t, err)
			_, err = svc.SetIndicatorMalice(ctx, inds[0].UUID, &lvl, human)
			require.NoError(t, err)
			malices = append(malices, lvl)
		}
		m := string(indicators.AlertMalice(override, malices))
		want[m] = append(want[m], id)
	}
	for _, lvl := range levels {
		rows, total, err := st.ListAlerts(ctx, store.AlertFilter{Tags: []string{tag}, Malices: []string{lvl}, Page: store.Page{Number: 1, Size: 500}})
		require.NoError(t, err)
		got := make([]uuid.UUID, len(rows))
		for i, r := range rows {
			got[i] = r.UUID
			require.Equal(t, lvl, r.EffectiveMalice, "the alert read carries the level its filter matched")
		}
		require.ElementsMatch(t, want[lvl], got, lvl)
		require.Equal(t, len(want[lvl]), total)
	}
	rows, _, err := st.ListAlerts(ctx, store.AlertFilter{Tags: []string{tag}, Malices: []string{"Malicious", "Suspicious"}, Page: store.Page{Number: 1, Size: 500}})
	require.NoError(t, err)
	require.Len(t, rows, len(want["Malicious"])+len(want["Suspicious"]))

	// The other two ways an alert's worst indicator malice changes: a link to an indicator that
	// already has a verdict, and an enrichment recording one.
	only := func(level string, id uuid.UUID) bool {
		rows, _, err := st.ListAlerts(ctx, store.AlertFilter{Tags: []string{tag}, Malices: []string{level}, Page: store.Page{Number: 1, Size: 500}})
		require.NoError(t, err)
		for _, r := range rows {
			if r.UUID == id {
				return true
			}
		}
		return false
	}
	bad, _, err := st.LinkIndicators(ctx, newAlert(t, st), []store.IndicatorKey{{Type: "domain", Value: "bad-" + tag + ".example"}}, "test")
	require.NoError(t, err)
	_, err = svc.SetIndicatorMalice(ctx, bad[0].UUID, ptr("Malicious"), human)
	require.NoError(t, err)
	fresh := newAlert(t, st)
	_, err = svc.Patch(ctx, fresh, alerts.Patch{Tags: &[]string{tag}}, human)
	require.NoError(t, err)
	require.True(t, only("Pending", fresh))
	_, _, err = st.LinkIndicators(ctx, fresh, []store.IndicatorKey{{Type: "domain", Value: "bad-" + tag + ".example"}}, "test")
	require.NoError(t, err)
	require.True(t, only("Malicious", fresh), "linked to a Malicious indicator")

	enriched := newAlert(t, st)
	_, err = svc.Patch(ctx, enriched, alerts.Patch{Tags: &[]string{tag}}, human)
	require.NoError(t, err)
	inds, _, err := st.LinkIndicators(ctx, enriched, []store.IndicatorKey{{Type: "domain", Value: "enr-" + tag + ".example"}}, "test")
	require.NoError(t, err)
	require.True(t, only("Pending", enriched))
	require.NoError(t, st.RecordEnrichment(ctx, nil, []store.IndicatorEnrichment{{IndicatorUUID: inds[0].UUID,
		Results: map[string]any{"p": map[string]any{"success": true, "malice": "Suspicious"}}}}))
	require.True(t, only("Suspicious", enriched), "an enrichment's verdict reaches the alert")
	require.NoError(t, st.RecordEnrichment(ctx, nil, []store.IndicatorEnrichment{{IndicatorUUID: inds[0].UUID,
		Results: map[string]any{"p": map[string]any{"success": true, "malice": "Benign"}}}}))
	require.True(t, only("Benign", enriched), "and a later one replaces it")
}
