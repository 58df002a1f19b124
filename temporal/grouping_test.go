package temporal_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/store"
)

// groupingProvider creates an active provider for ips and domains whose verdict follows the score
// handler: ≥ 80 Malicious, ≥ 50 Suspicious, else Benign. It is deactivated at cleanup.
func (e *pipeEnv) groupingProvider(t *testing.T, score func(value string) int) {
	t.Helper()
	var hits atomic.Int32
	url := e.handle(scoreHandler(&hits, score))
	ctx := context.Background()
	name := "grp_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	p := &store.EnrichmentProvider{ProviderName: name, DisplayName: name, IsActive: true, SupportedIndicatorTypes: []string{"ip", "domain"},
		HTTPConfig: map[string]any{"steps": []any{map[string]any{"name": "lookup", "url": url + "/{{indicator.value}}", "timeout_seconds": 5}}},
		AuthType:   store.AuthNone, DefaultCacheTTLSeconds: 1,
		MaliceRules: map[string]any{"rules": []any{
			map[string]any{"field": "score", "operator": ">=", "value": 80, "verdict": "Malicious"},
			map[string]any{"field": "score", "operator": ">=", "value": 50, "verdict": "Suspicious"},
		}, "default_verdict": "Benign"}}
	require.NoError(t, e.st.CreateProvider(ctx, p))
	t.Cleanup(func() {
		p.IsActive = false
		_ = e.st.UpdateProvider(context.Background(), p, "is_active")
	})
	require.NoError(t, e.st.CreateFieldExtractions(ctx, []*store.FieldExtraction{
		{ProviderName: name, IndicatorType: "ip", SourcePath: "score", TargetKey: "score", ValueType: "any", IsActive: true},
		{ProviderName: name, IndicatorType: "domain", SourcePath: "score", TargetKey: "score", ValueType: "any", IsActive: true},
	}))
}

// ingestEnriched ingests a generic alert with the given ips (occurred at occurred) and waits for its
// pipeline to finish.
func (e *pipeEnv) ingestEnriched(t *testing.T, title string, occurred time.Time, ips ...string) uuid.UUID {
	t.Helper()
	inds := make([]string, len(ips))
	for i, ip := range ips {
		inds[i] = fmt.Sprintf(`{"type":"ip","value":%q}`, ip)
	}
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":%q,"severity":"High","occurred_at":%q,"indicators":[%s]}`,
		title+" "+uuid.NewString(), occurred.UTC().Format(time.RFC3339), strings.Join(inds, ",")))
	a := e.waitEnriched(t, id, 60*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	return id
}

// newCase opens a case with the given alerts through the cases' rule owner (domain/cases) and
// deletes it when the test ends.
func (e *pipeEnv) newCase(t *testing.T, title string, alerts ...uuid.UUID) uuid.UUID {
	t.Helper()
	c, err := e.cases.Create(context.Background(), cases.Create{Title: title, AlertUUIDs: alerts}, store.Actor{Type: store.ActorSystem})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.cases.Delete(context.Background(), c.UUID, store.Actor{Type: store.ActorSystem}) })
	return c.UUID
}

// closeCase closes case id (Open → Investigating → Closed) through domain/cases.
func (e *pipeEnv) closeCase(t *testing.T, id uuid.UUID) {
	t.Helper()
	actor := store.Actor{Type: store.ActorSystem}
	investigating, closed, cls := store.CaseInvestigating, store.CaseClosed, "Duplicate"
	_, err := e.cases.Patch(context.Background(), id, cases.Patch{Status: &investigating}, actor)
	require.NoError(t, err)
	_, err = e.cases.Patch(context.Background(), id, cases.Patch{Status: &closed, CloseClassification: &cls}, actor)
	require.NoError(t, err)
}

func (e *pipeEnv) caseOf(t *testing.T, alert uuid.UUID) uuid.UUID {
	t.Helper()
	var c uuid.NullUUID
	require.NoError(t, e.st.DB().NewRaw("SELECT case_uuid FROM alerts WHERE uuid = ?", alert).Scan(context.Background(), &c))
	return c.UUID
}

// recordGroupingHistory, when set, makes TestPipeline_GroupsIntoOpenCase write the history of a
// pipeline that grouped its alert there (the version-4 and version-5 histories of the replay test,
// each recorded while it was the dispatcher's version):
//
//	go test ./temporal -run TestPipeline_GroupsIntoOpenCase -record-grouping-history=$PWD/workflows/testdata/alert_pipeline_v5_history.json
var recordGroupingHistory = flag.String("record-grouping-history", "", "write a grouping pipeline's Temporal history to this file")

// Grouping (issue 30 item 2, API.md §14): through the real API, dispatcher, worker and Temporal, an
// enriched alert that shares a Malicious or Suspicious indicator with an alert of an open case seen
// within the window joins it (the oldest such case), once, with alert_grouped naming the indicator;
// a Benign indicator, a case alert outside the window or a Closed case groups nothing, and an alert
// already in a case does not move when its pipeline runs again.
func TestPipeline_GroupsIntoOpenCase(t *testing.T) {
	e := pipelineHarness(t)
	require.Equal(t, 24*time.Hour, e.acts.CaseGroupingWindow)
	ips := freshIPs(7)
	bad, sus, benign, old, closed, both, other := ips[0], ips[1], ips[2], ips[3], ips[4], ips[5], ips[6]
	e.groupingProvider(t, func(v string) int {
		switch v {
		case bad, old, closed, both, other:
			return 95
		case sus:
			return 60
		}
		return 10
	})
	now := time.Now()

	// The case: one alert with a Malicious, a Suspicious and a Benign indicator.
	seed := e.ingestEnriched(t, "grouping seed", now, bad, sus, benign)
	caseID := e.newCase(t, "grouping "+bad, seed)

	// Shares the Malicious indicator: joins, one alert_grouped naming it.
	viaBad := e.ingestEnriched(t, "grouping bad", now, bad)
	require.Equal(t, caseID, e.caseOf(t, viaBad))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_grouped'
		AND case_uuid = ? AND "references"->'indicator'->>'value' = ? AND "references"->'indicator'->>'malice' = 'Malicious'`, viaBad, caseID, bad))
	if *recordGroupingHistory != "" {
		require.NoError(t, e.c.GetWorkflow(context.Background(), ids.Alert(viaBad), "").Get(context.Background(), nil))
		testenv.WriteHistory(t, e.c, ids.Alert(viaBad), *recordGroupingHistory)
	}
	// Shares only the Suspicious one: joins too.
	viaSus := e.ingestEnriched(t, "grouping suspicious", now, sus)
	require.Equal(t, caseID, e.caseOf(t, viaSus))
	// Shares only the Benign one: stays out.
	viaBenign := e.ingestEnriched(t, "grouping benign", now, benign)
	require.Equal(t, uuid.Nil, e.caseOf(t, viaBenign))
	require.Equal(t, 0, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_grouped'", viaBenign))

	// The case's only alert with `old` occurred 30 hours ago (and was never seen again): outside
	// the 24-hour window.
	oldSeed := e.ingestEnriched(t, "grouping old seed", now.Add(-30*time.Hour), old)
	oldCase := e.newCase(t, "grouping old "+old, oldSeed)
	viaOld := e.ingestEnriched(t, "grouping old", now, old)
	require.Equal(t, uuid.Nil, e.caseOf(t, viaOld))
	require.Equal(t, 1, e.count(t, "SELECT alert_count FROM cases WHERE uuid = ?", oldCase))

	// A Closed case is not joined.
	closedSeed := e.ingestEnriched(t, "grouping closed seed", now, closed)
	closedCase := e.newCase(t, "grouping closed "+closed, closedSeed)
	e.closeCase(t, closedCase)
	viaClosed := e.ingestEnriched(t, "grouping closed", now, closed)
	require.Equal(t, uuid.Nil, e.caseOf(t, viaClosed))

	// Two open cases share `both`: the older case wins, though its alert is the older one (the seeds
	// are enriched before either case exists, so neither is grouped itself).
	olderSeed := e.ingestEnriched(t, "grouping older seed", now.Add(-2*time.Hour), both)
	newerSeed := e.ingestEnriched(t, "grouping newer seed", now, both, other)
	olderCase := e.newCase(t, "grouping older "+both, olderSeed)
	e.newCase(t, "grouping newer "+both, newerSeed)
	viaBoth := e.ingestEnriched(t, "grouping both", now, other, both)
	require.Equal(t, olderCase, e.caseOf(t, viaBoth))

	// An alert in a case does not move: viaBoth shares `bad` with caseID now, and a re-run of its
	// pipeline keeps it where it is, with no second grouping.
	status, body := e.do(t, http.MethodPost, "/v1/alerts/"+viaBoth.String()+"/indicators", fmt.Sprintf(`{"indicators":[{"type":"ip","value":%q}]}`, bad))
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, status, "%v", body)
	runs := e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'", viaBoth)
	status, body = e.do(t, http.MethodPost, "/v1/alerts/"+viaBoth.String()+"/enrich", "")
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	e.waitEvents(t, viaBoth, "alert_enriched", runs+1, 60*time.Second)
	require.Equal(t, olderCase, e.caseOf(t, viaBoth))
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_grouped'", viaBoth))

	// The links of alerts in a case carry the case (the lookup's index); the others none.
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM alert_indicators AS ai JOIN alerts AS a ON a.uuid = ai.alert_uuid
		WHERE ai.case_uuid IS DISTINCT FROM a.case_uuid`))
	require.Equal(t, 3, e.count(t, "SELECT alert_count FROM cases WHERE uuid = ?", caseID))
}
