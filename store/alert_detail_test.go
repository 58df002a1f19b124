package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// AlertDetails reads a batch of alerts in a few statements and gives each what AlertDetail gives it
// alone: its own indicators, findings and context documents, none of another's.
func TestAlertDetails_BatchEqualsOneByOne(t *testing.T) {
	st, ctx := testStore(t), context.Background()
	tag := "detail-" + uuid.NewString()[:8]
	doc := &store.ContextDocument{Title: "runbook " + tag, DocumentType: "runbook", Content: "steps",
		TargetingRules: &targeting.Rules{MatchAny: []targeting.Rule{{Field: targeting.FieldTitle, Op: targeting.OpContains, Value: tag}}}}
	require.NoError(t, st.CreateContextDocument(ctx, doc))
	t.Cleanup(func() { _ = st.DeleteContextDocument(context.Background(), doc.UUID) })

	now := time.Now()
	two := groupingAlert(t, st, now, "198.51.100.7", "198.51.100.8")
	none := groupingAlert(t, st, now)
	titled := groupingAlert(t, st, now, "198.51.100.7")
	_, err := st.DB().NewRaw("UPDATE alerts SET title = ? WHERE uuid = ?", "t "+tag, titled).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, st.CreateFinding(ctx, &store.Finding{AlertUUID: two, AgentName: "triage", Summary: "looks bad"}, store.ActorAPI))

	ids := []uuid.UUID{two, none, titled, uuid.New()}
	alerts, err := st.GetAlerts(ctx, ids)
	require.NoError(t, err)
	require.Len(t, alerts, 3, "an alert that does not exist is absent")
	batch := make([]store.Alert, 0, len(alerts))
	for _, a := range alerts {
		batch = append(batch, a)
	}
	details, err := st.AlertDetails(ctx, batch)
	require.NoError(t, err)
	require.Len(t, details, 3)
	for _, a := range batch {
		one, err := st.AlertDetail(ctx, a)
		require.NoError(t, err)
		require.Equal(t, one, details[a.UUID], "alert %s", a.UUID)
	}
	require.Len(t, details[two].Indicators, 2)
	require.Len(t, details[two].Findings, 1)
	require.Empty(t, details[none].Indicators)
	require.NotNil(t, details[none].Indicators, "lists are never nil")
	require.NotNil(t, details[none].Findings)
	require.Len(t, details[titled].Indicators, 1)
	require.Equal(t, "198.51.100.7", details[titled].Indicators[0].Value)
	docs := func(d store.AlertDetail) []uuid.UUID {
		var out []uuid.UUID
		for _, c := range d.ContextDocuments {
			out = append(out, c.UUID)
		}
		return out
	}
	require.Contains(t, docs(details[titled]), doc.UUID)
	require.NotContains(t, docs(details[two]), doc.UUID)
	require.NotContains(t, docs(details[none]), doc.UUID)
}
