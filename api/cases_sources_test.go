package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/store"
)

// sourcedAlert ingests an alert of source linked to ip and returns its uuid.
func sourcedAlert(t *testing.T, ts *testServer, source, ip string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	res, err := ts.Store.Ingest(ctx, store.IngestAlert{Title: fmt.Sprintf("%s alert %s", source, uuid.NewString()), Severity: "High",
		SourceName: source, Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), Normalized: []byte(`{}`), ActorType: store.ActorAPI,
		OccurredAt: time.Now()}, time.Hour)
	require.NoError(t, err)
	_, _, err = ts.Store.LinkIndicators(ctx, res.AlertUUID, []store.IndicatorKey{{Type: "ip", Value: ip}}, "extraction")
	require.NoError(t, err)
	return res.AlertUUID
}

// TestSourceLimitedKeysCannotUseCasesOnOtherSources replays security review round 4, R4-3 through
// REST: an ingest-only key limited to generic (alerts:write, allowed_sources ["generic"]) made a case
// of its own alert, marked the shared indicator Malicious, let grouping pull a Splunk alert into its
// case, read it through the case's answers and closed it as a false positive. Now case writes and
// indicator overrides need alerts:read too; allowed_sources bounds which alerts a key changes (case
// joins and removals, case changes, alert PATCH and bulk, indicator overrides that reach other
// sources' alerts); and the grouping never joins an alert to a case whose creating key was limited to
// other sources.
func TestSourceLimitedKeysCannotUseCasesOnOtherSources(t *testing.T) {
	ts := newAlertServer(t, nil)
	ctx := context.Background()
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	generic := func(k *store.APIKey) { k.AllowedSources = []string{"generic"} }
	ingestGen := mustKeyWith(t, ts.Store, generic, auth.ScopeAlertsWrite)
	analystGen := mustKeyWith(t, ts.Store, generic, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	n := uuid.New().ID()
	ip := fmt.Sprintf("45.%d.%d.82", n%200, (n>>8)%200)
	own := sourcedAlert(t, ts, "generic", ip)
	victim := sourcedAlert(t, ts, "splunk", ip)
	var ind string
	require.NoError(t, ts.Store.DB().NewRaw("SELECT indicator_uuid::text FROM alert_indicators WHERE alert_uuid = ?", own).Scan(ctx, &ind))

	t.Run("an ingest-only key writes no case and no indicator verdict", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/cases", ingestGen, map[string]any{"title": "rv4 routine maintenance", "alert_uuids": []string{own.String()}})
		d := requireError(t, r, http.StatusForbidden, "FORBIDDEN")
		require.Contains(t, fmt.Sprint(d["error"].(map[string]any)["details"]), auth.ScopeAlertsRead)
		requireError(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+ind, ingestGen, map[string]any{"malice": "Malicious"}), http.StatusForbidden, "FORBIDDEN")
	})

	var caseID string
	t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/cases/"+caseID, admin, nil) })
	t.Run("a generic-only analyst works generic alerts only", func(t *testing.T) {
		c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", analystGen, map[string]any{"title": "rv4 generic case", "alert_uuids": []string{own.String()}}), http.StatusCreated)
		caseID = c["uuid"].(string)
		d := requireError(t, ts.do(t, http.MethodPost, "/v1/cases/"+caseID+"/alerts", analystGen, map[string]any{"alert_uuids": []string{victim.String()}}),
			http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		require.Equal(t, "splunk", d["error"].(map[string]any)["details"].(map[string]any)["source_name"])
		requireError(t, ts.do(t, http.MethodPost, "/v1/cases", analystGen, map[string]any{"title": "x", "alert_uuids": []string{victim.String()}}),
			http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		// The indicator is also on the Splunk alert: its verdict is not the generic key's to set.
		requireError(t, ts.do(t, http.MethodPatch, "/v1/indicators/"+ind, analystGen, map[string]any{"malice": "Malicious"}), http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		requireError(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+victim.String(), analystGen, map[string]any{"status": "Triaging"}), http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		r := ts.do(t, http.MethodPost, "/v1/alerts/bulk", analystGen, map[string]any{"alert_uuids": []string{victim.String(), own.String()},
			"patch": map[string]any{"assignee": "mallory"}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		b := r.JSON(t)["data"].(map[string]any)
		require.EqualValues(t, 1, b["failed"])
		require.EqualValues(t, 1, b["succeeded"])
	})

	t.Run("grouping leaves other sources out of a source-limited key's case", func(t *testing.T) {
		r := ts.do(t, http.MethodPatch, "/v1/indicators/"+ind, admin, map[string]any{"malice": "Malicious"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		later := sourcedAlert(t, ts, "splunk", ip)
		fin, err := cases.Grouping{Window: 24 * time.Hour}.FinishEnrichment(ctx, ts.Store, later, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil,
			func(*string, []string) store.ActivityEvent {
				return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
			})
		require.NoError(t, err)
		require.Equal(t, uuid.Nil, fin.GroupedInto, "the Splunk alert stays outside the generic key's case")
		sameSource := sourcedAlert(t, ts, "generic", ip)
		fin, err = cases.Grouping{Window: 24 * time.Hour}.FinishEnrichment(ctx, ts.Store, sameSource, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil,
			func(*string, []string) store.ActivityEvent {
				return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
			})
		require.NoError(t, err)
		require.Equal(t, caseID, fin.GroupedInto.String(), "an alert of its own source still groups")
	})

	t.Run("a case holding another source's alert is not the generic key's to change", func(t *testing.T) {
		c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", admin, map[string]any{"title": "rv4 admin case", "alert_uuids": []string{victim.String()}}), http.StatusCreated)
		id := c["uuid"].(string)
		t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/cases/"+id, admin, nil) })
		requireError(t, ts.do(t, http.MethodPatch, "/v1/cases/"+id, analystGen, map[string]any{"status": "Investigating"}), http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		requireError(t, ts.do(t, http.MethodDelete, "/v1/cases/"+id+"/alerts/"+victim.String(), analystGen, nil), http.StatusForbidden, "SOURCE_NOT_ALLOWED")
		a := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+victim.String(), admin, nil))
		require.Equal(t, "Open", a["status"])
		require.Equal(t, id, a["case_uuid"])
	})
}
