package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// TestAuditTrailTakesNoForgedIDsAndMissesNoDeletion replays security review round 4, R4-10 through
// REST: a client's X-Request-ID was stored as the event's request_id (an admin could make an event
// share another request's id); a stub detection rule the pipeline made, and DELETE of an alert or a
// case, wrote no event (a deleted alert left no trace anywhere). Now request_id is the server's own
// id, the client's is client_request_id beside it (the response still echoes it, API.md §0); the
// stub rule is audited once, created by the pipeline; both deletions are audited with the title.
// (The console's failed sign-in under a chosen prefix: console.TestSignInsAreAudited.)
func TestAuditTrailTakesNoForgedIDsAndMissesNoDeletion(t *testing.T) {
	ts := newAlertServer(t, nil)
	ctx := context.Background()
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	events := func(query string) []map[string]any {
		t.Helper()
		r := ts.do(t, http.MethodGet, "/v1/audit-events?page_size=500&"+query, admin, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var out []map[string]any
		for _, e := range r.JSON(t)["data"].([]any) {
			out = append(out, e.(map[string]any))
		}
		return out
	}
	byUUID := func(list []map[string]any, id string) []map[string]any {
		var out []map[string]any
		for _, e := range list {
			if e["resource_uuid"] == id {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("a client's request id is its own words", func(t *testing.T) {
		forged := "forged-by-attacker-" + uuid.NewString()[:8]
		r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, map[string]any{"name": "rv4 audit", "scopes": []string{"alerts:read"}}, "X-Request-ID", forged)
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		require.Equal(t, forged, r.Header.Get("X-Request-ID"), "the response echoes the client's id (API.md §0)")
		id := r.JSON(t)["data"].(map[string]any)["uuid"].(string)
		evs := byUUID(events("resource_type=api_key&action=created"), id)
		require.Len(t, evs, 1)
		require.NotEqual(t, forged, evs[0]["request_id"])
		require.Regexp(t, `^[0-9a-f-]{36}$`, evs[0]["request_id"])
		require.Equal(t, forged, evs[0]["client_request_id"])
	})

	t.Run("the pipeline's stub rule is audited once", func(t *testing.T) {
		alert := newAlert(t, ts, admin, "")
		ref := &store.RuleReference{SourceRuleID: "RV4-" + uuid.NewString()[:8], Name: "rv4 stub rule " + uuid.NewString()[:8]}
		l, err := ts.Store.LinkExtraction(ctx, uuid.MustParse(alert), store.ExtractionLinks{}, "extraction", "generic", ref)
		require.NoError(t, err)
		_, err = ts.Store.LinkExtraction(ctx, uuid.MustParse(alert), store.ExtractionLinks{}, "extraction", "generic", ref) // a retried link step
		require.NoError(t, err)
		evs := byUUID(events("resource_type=detection_rule&action=created"), l.RuleUUID.String())
		require.Len(t, evs, 1)
		require.Equal(t, ref.Name, evs[0]["resource_name"])
		require.Equal(t, "workflow", evs[0]["actor"].(map[string]any)["type"])
		require.Equal(t, true, evs[0]["changes"].(map[string]any)["is_stub"].(map[string]any)["to"])
	})

	t.Run("deleting an alert or a case leaves its trace", func(t *testing.T) {
		alert := newAlert(t, ts, admin, "")
		title := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+alert, admin, nil))["title"]
		c := caseData(t, ts.do(t, http.MethodPost, "/v1/cases", admin, map[string]any{"title": "rv4 deleted case"}), http.StatusCreated)
		caseID := c["uuid"].(string)
		require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/alerts/"+alert, admin, nil).Status)
		require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/cases/"+caseID, admin, nil).Status)
		evs := byUUID(events("resource_type=alert&action=deleted"), alert)
		require.Len(t, evs, 1)
		require.Equal(t, title, evs[0]["resource_name"])
		require.Equal(t, "generic", evs[0]["changes"].(map[string]any)["source_name"].(map[string]any)["from"])
		evs = byUUID(events("resource_type=case&action=deleted"), caseID)
		require.Len(t, evs, 1)
		require.Equal(t, "rv4 deleted case", evs[0]["resource_name"])
		require.NotEmpty(t, evs[0]["actor"].(map[string]any)["key_prefix"])
	})
}
