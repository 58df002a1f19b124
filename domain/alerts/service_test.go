package alerts_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestService_PatchWritesColumnsAndEventsWithTheActor(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	id := newAlert(t, st)
	agent := store.Actor{Type: store.ActorMCP, KeyPrefix: "cai_mcp1", Agent: true}

	a, err := svc.Patch(ctx, id, alerts.Patch{Status: ptr("Closed"), CloseClassification: ptr("Duplicate"),
		MaliceOverride: ptr("Suspicious"), Tags: &[]string{"x", "x "}}, agent)
	require.NoError(t, err)
	require.Equal(t, "Closed", a.Status)
	got, err := st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Closed", got.Status)
	require.Equal(t, "Duplicate", *got.CloseClassification)
	require.NotNil(t, got.ClosedAt)
	require.NotNil(t, got.AcknowledgedAt)
	require.Equal(t, []string{"x"}, got.Tags)
	require.Equal(t, "agent", *got.MaliceOverrideSource)

	var types []string
	for _, e := range activity(t, st, id) {
		if e.EventType == "alert_created" {
			continue
		}
		types = append(types, e.EventType)
		require.Equal(t, store.ActorMCP, e.ActorType)
		require.Equal(t, "cai_mcp1", *e.ActorKeyPrefix)
	}
	require.ElementsMatch(t, []string{"alert_closed", "alert_tags_updated", "alert_malice_updated"}, types)

	// A refused move changes nothing.
	_, err = svc.Patch(ctx, id, alerts.Patch{Status: ptr("Triaging")}, agent)
	var errs validate.Errors
	require.True(t, errors.As(err, &errs))
	require.Equal(t, "invalid_transition", errs[0].Type)
	again, err := st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.Equal(t, got.UpdatedAt, again.UpdatedAt)

	// Reopen clears the close fields.
	a, err = svc.Patch(ctx, id, alerts.Patch{Status: ptr("Open")}, human)
	require.NoError(t, err)
	require.Nil(t, a.ClosedAt)
	require.Nil(t, a.CloseClassification)

	// Malformed input is refused before the store is touched; a missing alert is ErrNotFound.
	_, err = svc.Patch(ctx, id, alerts.Patch{Severity: ptr("Bad")}, human)
	require.True(t, errors.As(err, &errs))
	_, err = svc.Patch(ctx, uuid.New(), alerts.Patch{Severity: ptr("High")}, human)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestService_FindingsAreAppendOnlyAndBounded(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	id := newAlert(t, st)
	agent := store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_agt2", Agent: true}

	f1, err := svc.AddFinding(ctx, id, alerts.NewFinding{AgentName: "triage-bot", Summary: "first",
		Evidence: map[string]any{"k": []any{"v", 1.0}}}, agent)
	require.NoError(t, err)
	f2, err := svc.AddFinding(ctx, id, alerts.NewFinding{AgentName: "triage-bot", Summary: "second", Confidence: ptr("high")}, agent)
	require.NoError(t, err)
	require.Equal(t, "cai_agt2", *f1.ActorKeyPrefix)
	rows, err := svc.Findings(ctx, id)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, f1.ID, rows[0].ID, "oldest first")
	require.Equal(t, f2.ID, rows[1].ID)

	_, err = svc.AddFinding(ctx, uuid.New(), alerts.NewFinding{AgentName: "a", Summary: "s"}, agent)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = svc.Findings(ctx, uuid.New())
	require.ErrorIs(t, err, store.ErrNotFound)

	bad := []struct {
		name string
		f    alerts.NewFinding
		loc  string
	}{
		{"empty agent", alerts.NewFinding{Summary: "s"}, "agent_name"},
		{"empty summary", alerts.NewFinding{AgentName: "a"}, "summary"},
		{"long agent", alerts.NewFinding{AgentName: strings.Repeat("a", 201), Summary: "s"}, "agent_name"},
		{"long summary", alerts.NewFinding{AgentName: "a", Summary: strings.Repeat("s", 50001)}, "summary"},
		{"long action", alerts.NewFinding{AgentName: "a", Summary: "s", RecommendedAction: ptr(strings.Repeat("r", 10001))}, "recommended_action"},
		{"confidence", alerts.NewFinding{AgentName: "a", Summary: "s", Confidence: ptr("certain")}, "confidence"},
		{"NUL summary", alerts.NewFinding{AgentName: "a", Summary: "s\x00"}, "summary"},
		{"NUL evidence key", alerts.NewFinding{AgentName: "a", Summary: "s", Evidence: map[string]any{"a": map[string]any{"b\x00": 1}}}, "evidence.a.b\x00"},
		{"huge evidence", alerts.NewFinding{AgentName: "a", Summary: "s", Evidence: map[string]any{"x": strings.Repeat("e", 64<<10)}}, "evidence"},
		{"unencodable evidence", alerts.NewFinding{AgentName: "a", Summary: "s", Evidence: map[string]any{"f": func() {}}}, "evidence"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.AddFinding(ctx, id, tc.f, agent)
			var errs validate.Errors
			require.True(t, errors.As(err, &errs), "%v", err)
			require.Equal(t, tc.loc, validate.LocString(errs[0].Loc))
		})
	}
	rows, err = svc.Findings(ctx, id)
	require.NoError(t, err)
	require.Len(t, rows, 2, "refused findings are not stored")
}

func TestService_AddIndicators(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	id := newAlert(t, st)
	pending := func(ids ...uuid.UUID) int {
		var n int
		require.NoError(t, st.DB().NewRaw("SELECT count(*) FROM start_outbox WHERE kind = ? AND subject_uuid IN (?)",
			store.StartIndicatorEnrichment, bun.List(ids)).Scan(ctx, &n))
		return n
	}

	added, err := svc.AddIndicators(ctx, id, []alerts.NewIndicator{{Value: " 10.0.0.1 "}, {Value: "EVIL.example.", Type: ptr("domain")},
		{Value: "D41D8CD98F00B204E9800998ECF8427E"}}, ptr(true), human)
	require.NoError(t, err)
	require.Equal(t, 3, added.NewLinks)
	require.Len(t, added.Indicators, 3)
	vals := map[string]string{}
	ids := make([]uuid.UUID, 0, 3)
	for _, ind := range added.Indicators {
		vals[ind.Type] = ind.Value
		ids = append(ids, ind.UUID)
	}
	require.Equal(t, map[string]string{"ip": "10.0.0.1", "domain": "evil.example", "hash_md5": "d41d8cd98f00b204e9800998ecf8427e"}, vals)
	// One enrichment start per indicator, committed with the links (start outbox; no Temporal call).
	require.Equal(t, 3, pending(ids...))

	// Adding again links nothing new; without enrich nothing is queued.
	added, err = svc.AddIndicators(ctx, id, []alerts.NewIndicator{{Value: "10.0.0.1", Type: ptr("ip")}}, ptr(false), human)
	require.NoError(t, err)
	require.Equal(t, 0, added.NewLinks)
	require.Equal(t, 3, pending(ids...))
	// The request is recorded once per enrich call: an alert_enrichment_requested event by the actor,
	// which the enrich=false call did not write.
	var requested []store.ActivityEvent
	for _, e := range activity(t, st, id) {
		if e.EventType == "alert_enrichment_requested" {
			requested = append(requested, e)
		}
	}
	require.Len(t, requested, 1)
	require.Equal(t, store.ActorAPI, requested[0].ActorType)
	require.Equal(t, "cai_hum", *requested[0].ActorKeyPrefix)

	// Not saying is the rules' default: enrich.
	require.True(t, alerts.EnrichAddedByDefault)
	other := newAlert(t, st)
	added, err = svc.AddIndicators(ctx, other, []alerts.NewIndicator{{Value: "10.0.0.9"}}, nil, human)
	require.NoError(t, err)
	require.True(t, added.Enriched)
	require.Equal(t, 1, pending(added.Indicators[0].UUID))

	_, err = svc.AddIndicators(ctx, uuid.New(), []alerts.NewIndicator{{Value: "10.0.0.3"}}, ptr(false), human)
	require.ErrorIs(t, err, store.ErrNotFound)

	bad := []struct {
		name string
		in   []alerts.NewIndicator
		loc  string
	}{
		{"none", nil, "indicators"},
		{"too many", make([]alerts.NewIndicator, 101), "indicators"},
		{"not inferable", []alerts.NewIndicator{{Value: "10.0.0.1"}, {Value: "no type here"}}, "indicators[1].value"},
		{"unknown type", []alerts.NewIndicator{{Value: "x", Type: ptr("mac")}}, "indicators[0].type"},
		{"invalid for type", []alerts.NewIndicator{{Value: "999.1.1.1", Type: ptr("ip")}}, "indicators[0].value"},
		{"NUL", []alerts.NewIndicator{{Value: "evil\x00.example", Type: ptr("domain")}}, "indicators[0].value"},
		{"oversized", []alerts.NewIndicator{{Value: strings.Repeat("a", 3000), Type: ptr("account")}}, "indicators[0].value"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.AddIndicators(ctx, id, tc.in, ptr(false), human)
			var errs validate.Errors
			require.True(t, errors.As(err, &errs), "%v", err)
			require.Equal(t, tc.loc, validate.LocString(errs[0].Loc))
		})
	}
}

func TestService_SetIndicatorMalice(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	svc := alerts.New(st, nil)
	id := newAlert(t, st)
	added, err := svc.AddIndicators(ctx, id, []alerts.NewIndicator{{Value: "198.51.100.7"}}, ptr(false), human)
	require.NoError(t, err)
	ind := added.Indicators[0]
	require.NoError(t, st.RecordEnrichment(ctx, nil, []store.IndicatorEnrichment{{IndicatorUUID: ind.UUID, Results: map[string]any{
		"p1": map[string]any{"success": true, "malice": "Suspicious"},
		"p2": map[string]any{"success": false, "malice": "Malicious"},
	}}}))

	got, err := svc.SetIndicatorMalice(ctx, ind.UUID, ptr("Benign"), human)
	require.NoError(t, err)
	require.Equal(t, "Benign", got.Malice)
	require.Equal(t, "analyst", *got.MaliceSource)
	got, err = svc.SetIndicatorMalice(ctx, ind.UUID, nil, human)
	require.NoError(t, err)
	require.Equal(t, "Suspicious", got.Malice, "recomputed from the successful results")
	require.Nil(t, got.MaliceOverriddenAt)

	_, err = svc.SetIndicatorMalice(ctx, ind.UUID, ptr("evil"), human)
	var errs validate.Errors
	require.True(t, errors.As(err, &errs))
	require.Equal(t, "malice", validate.LocString(errs[0].Loc))
	_, err = svc.SetIndicatorMalice(ctx, uuid.New(), nil, human)
	require.ErrorIs(t, err, store.ErrNotFound)
}
