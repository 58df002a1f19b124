package cases_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var actor = store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_test"}

func newAlert(t *testing.T, st *store.Store, sev string) uuid.UUID {
	t.Helper()
	res, err := st.Ingest(context.Background(), store.IngestAlert{Title: "alert " + uuid.NewString(), Severity: sev,
		SourceName: "generic", Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`),
		ActorType: store.ActorAPI}, time.Hour)
	require.NoError(t, err)
	return res.AlertUUID
}

func service(st *store.Store) *cases.Service { return cases.New(st, alerts.New(st, nil), nil) }

func events(t *testing.T, st *store.Store, f store.ActivityFilter) []string {
	t.Helper()
	f.Page = store.Page{Number: 1, Size: 500}
	rows, _, err := st.ListActivity(context.Background(), f)
	require.NoError(t, err)
	out := make([]string, len(rows))
	for i, e := range rows {
		out[len(rows)-1-i] = e.EventType
	}
	return out
}

func TestCaseLifecycle(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	svc := service(st)
	a1, a2, a3 := newAlert(t, st, "Low"), newAlert(t, st, "High"), newAlert(t, st, "Medium")

	c, err := svc.Create(ctx, cases.Create{Title: "  LockBit on host-7 ", AlertUUIDs: []uuid.UUID{a1, a2, a3}}, actor)
	require.NoError(t, err)
	require.Equal(t, "LockBit on host-7", c.Title)
	require.Equal(t, 3, c.AlertCount)
	require.Equal(t, "High", c.EffectiveSeverity, "derived: the worst of its alerts")
	require.Nil(t, c.Severity)
	require.Equal(t, store.CaseOpen, c.Status)
	require.Greater(t, c.CaseNumber, int64(0))
	for _, a := range []uuid.UUID{a1, a2, a3} {
		al, err := st.GetAlert(ctx, a)
		require.NoError(t, err)
		require.Equal(t, c.UUID, *al.CaseUUID)
		require.Equal(t, []string{store.EventAlertAddedToCase}, events(t, st, store.ActivityFilter{AlertUUID: &a, EventTypes: []string{store.EventAlertAddedToCase}}))
	}

	// A second case cannot take a1 without move; with move it does, and the first case shrinks.
	other, err := svc.Create(ctx, cases.Create{Title: "other"}, actor)
	require.NoError(t, err)
	_, err = svc.AddAlerts(ctx, other.UUID, []uuid.UUID{a1}, false, actor)
	var oc *cases.AlertInOtherCaseError
	require.ErrorAs(t, err, &oc)
	require.Equal(t, a1, oc.AlertUUID)
	require.Equal(t, c.UUID, oc.CaseUUID)
	before, err := st.GetAlert(ctx, a1)
	require.NoError(t, err)
	added, err := svc.AddAlerts(ctx, other.UUID, []uuid.UUID{a1}, true, actor)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a1}, added.Joined)
	require.Equal(t, 1, added.Case.AlertCount)
	// The join moved the alert's updated_at and, with it (the cases' trigger), the case's.
	moved, err := st.GetAlert(ctx, a1)
	require.NoError(t, err)
	require.True(t, moved.UpdatedAt.After(before.UpdatedAt))
	require.True(t, added.Case.UpdatedAt.Equal(moved.UpdatedAt), "case %s, alert %s", added.Case.UpdatedAt, moved.UpdatedAt)
	first, err := svc.Get(ctx, c.UUID)
	require.NoError(t, err)
	require.Equal(t, 2, first.Case.AlertCount)
	// Adding again is no change.
	again, err := svc.AddAlerts(ctx, other.UUID, []uuid.UUID{a1}, false, actor)
	require.NoError(t, err)
	require.Empty(t, again.Joined)

	// The graph: Open cannot jump to Closed; Closed needs a classification.
	closed, inv := store.CaseClosed, store.CaseInvestigating
	cls := "True Positive - Suspicious Activity"
	_, err = svc.Patch(ctx, c.UUID, cases.Patch{Status: &closed, CloseClassification: &cls}, actor)
	var verrs validate.Errors
	require.ErrorAs(t, err, &verrs)
	require.Equal(t, "invalid_transition", verrs[0].Type)
	_, err = svc.Patch(ctx, c.UUID, cases.Patch{Status: &closed}, actor)
	require.ErrorAs(t, err, &verrs)
	_, err = svc.Patch(ctx, c.UUID, cases.Patch{Status: &inv}, actor)
	require.NoError(t, err)

	// Close with its alerts: each alert closed through the alert rules, one alert_closed each.
	p, err := svc.Patch(ctx, c.UUID, cases.Patch{Status: &closed, CloseClassification: &cls, CloseAlerts: true}, actor)
	require.NoError(t, err)
	require.Equal(t, store.CaseClosed, p.Case.Status)
	require.NotNil(t, p.Case.ClosedAt)
	require.NotNil(t, p.ClosedAlerts)
	require.Equal(t, 2, p.ClosedAlerts.Succeeded)
	for _, a := range []uuid.UUID{a2, a3} {
		al, err := st.GetAlert(ctx, a)
		require.NoError(t, err)
		require.Equal(t, store.StatusClosed, al.Status)
		require.Equal(t, cls, *al.CloseClassification)
		require.Equal(t, []string{"alert_closed"}, events(t, st, store.ActivityFilter{AlertUUID: &a, EventTypes: []string{"alert_closed"}}))
	}
	al1, err := st.GetAlert(ctx, a1)
	require.NoError(t, err)
	require.Equal(t, store.StatusOpen, al1.Status, "the moved alert is another case's")
	require.Equal(t, []string{store.EventCaseCreated, store.EventCaseStatusUpdated, store.EventCaseClosed},
		events(t, st, store.ActivityFilter{CaseUUID: &c.UUID, EventTypes: []string{store.EventCaseCreated, store.EventCaseStatusUpdated, store.EventCaseClosed}}))

	// Reopen clears the classification.
	open := store.CaseOpen
	p, err = svc.Patch(ctx, c.UUID, cases.Patch{Status: &open}, actor)
	require.NoError(t, err)
	require.Nil(t, p.Case.CloseClassification)
	require.Nil(t, p.Case.ClosedAt)

	// Severity set by hand wins; reset derives it again.
	crit := "Critical"
	p, err = svc.Patch(ctx, c.UUID, cases.Patch{Severity: &crit}, actor)
	require.NoError(t, err)
	require.Equal(t, "Critical", p.Case.EffectiveSeverity)
	p, err = svc.Patch(ctx, c.UUID, cases.Patch{ResetSeverity: true}, actor)
	require.NoError(t, err)
	require.Equal(t, "High", p.Case.EffectiveSeverity)

	// Remove, then delete: the alerts stay, outside any case.
	require.NoError(t, svc.RemoveAlert(ctx, c.UUID, a2, actor))
	require.ErrorIs(t, svc.RemoveAlert(ctx, c.UUID, a2, actor), store.ErrNotFound)
	d, err := svc.Get(ctx, c.UUID)
	require.NoError(t, err)
	require.Equal(t, 1, d.Case.AlertCount)
	require.Equal(t, "Medium", d.Case.EffectiveSeverity)
	require.NoError(t, svc.Delete(ctx, c.UUID, actor))
	_, err = svc.Get(ctx, c.UUID)
	require.ErrorIs(t, err, store.ErrNotFound)
	al3, err := st.GetAlert(ctx, a3)
	require.NoError(t, err)
	require.Nil(t, al3.CaseUUID)
}

func TestCreateValidation(t *testing.T) {
	long := make([]rune, cases.MaxTitleLength+1)
	for i := range long {
		long[i] = 'x'
	}
	bogus := "Bogus"
	id := uuid.New()
	for name, in := range map[string]cases.Create{
		"blank title":    {Title: "   "},
		"long title":     {Title: string(long)},
		"NUL title":      {Title: "a\x00b"},
		"bad severity":   {Title: "t", Severity: &bogus},
		"repeated alert": {Title: "t", AlertUUIDs: []uuid.UUID{id, id}},
		"nil alert":      {Title: "t", AlertUUIDs: []uuid.UUID{uuid.Nil}},
		"too many":       {Title: "t", AlertUUIDs: make([]uuid.UUID, cases.MaxAlerts+1)},
		"blank tag":      {Title: "t", Tags: []string{" "}},
	} {
		require.NotEmpty(t, in.Validate(), name)
	}
	require.Empty(t, cases.Create{Title: "ok"}.Validate())
}
