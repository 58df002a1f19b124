package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

func TestAlertDetail_AndSubresources(t *testing.T) {
	ts := newAlertServer(t, nil)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ctx := context.Background()
	id := newAlert(t, ts, key, `,"rule_id":"detail-rule"`)

	t.Run("detail shape and meta", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil)
		m := r.JSON(t)
		d := m["data"].(map[string]any)
		for _, f := range []string{"uuid", "title", "severity", "status", "enrichment_status", "source_name", "occurred_at", "ingested_at",
			"enriched_at", "is_enriched", "fingerprint", "close_classification", "acknowledged_at", "triaged_at", "closed_at", "tags",
			"detection_rule_id", "created_at", "updated_at", "description", "duplicate_count", "last_seen_at", "raw_payload", "malice",
			"malice_override", "malice_override_source", "malice_override_at", "indicators", "detection_rule", "context_documents", "agent_findings"} {
			require.Contains(t, d, f)
		}
		require.Equal(t, []any{}, d["indicators"])
		require.Equal(t, []any{}, d["agent_findings"])
		require.Nil(t, d["detection_rule"])
		meta := m["meta"].(map[string]any)
		for _, f := range []string{"generated_at", "indicator_count", "enrichment", "detection_rule_matched", "context_documents_applied"} {
			require.Contains(t, meta, f)
		}
		require.Equal(t, map[string]any{"succeeded": []any{}, "failed": []any{}, "enriched_at": nil}, meta["enrichment"])
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString(), key, nil), 404, "NOT_FOUND")
		require.Equal(t, []string{"path.uuid"}, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts/123", key, nil))))
	})

	t.Run("findings", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/findings", key, map[string]any{"agent_name": "triage-bot", "summary": "Looks like phishing.",
			"confidence": "high", "recommended_action": "block sender", "evidence": map[string]any{"urls": []string{"https://x.test"}}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		f := r.JSON(t)["data"].(map[string]any)
		for _, k := range []string{"id", "agent_name", "summary", "confidence", "recommended_action", "evidence", "posted_at"} {
			require.Contains(t, f, k)
		}
		r = ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/findings", key, map[string]any{"agent_name": "second", "summary": "More."})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		list := alertData2(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/findings", key, nil))
		require.Len(t, list, 2)
		require.Equal(t, "triage-bot", list[0].(map[string]any)["agent_name"], "oldest first")
		d := ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil).JSON(t)["data"].(map[string]any)
		require.Len(t, d["agent_findings"], 2)
		require.Len(t, eventsOf(t, ts, id, "agent_finding_posted"), 2)

		bad := []struct {
			body any
			loc  string
		}{
			{map[string]any{"summary": "x"}, "body.agent_name"},
			{map[string]any{"agent_name": "a"}, "body.summary"},
			{map[string]any{"agent_name": "a", "summary": ""}, "body.summary"},
			{map[string]any{"agent_name": "a", "summary": strings.Repeat("s", 50001)}, "body.summary"},
			{map[string]any{"agent_name": "a", "summary": "s", "confidence": "certain"}, "body.confidence"},
			{map[string]any{"agent_name": "a", "summary": "s", "evidence": []int{1}}, "body.evidence"},
			{map[string]any{"agent_name": "a", "summary": "s", "evidence": map[string]any{"blob": strings.Repeat("e", 70000)}}, "body.evidence"},
			{map[string]any{"agent_name": "a", "summary": "s\u0000"}, "body.summary"},
			{map[string]any{"agent_name": "a", "summary": "s", "extra": true}, "body.extra"},
		}
		for _, b := range bad {
			require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/findings", key, b.body))), b.loc)
		}
		requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+uuid.NewString()+"/findings", key, map[string]any{"agent_name": "a", "summary": "s"}), 404, "NOT_FOUND")
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/findings", key, nil), 404, "NOT_FOUND")
	})

	t.Run("indicators", func(t *testing.T) {
		path := "/v1/alerts/" + id + "/indicators"
		r := ts.do(t, http.MethodPost, path+"?enrich=false", key, map[string]any{"indicators": []map[string]any{
			{"value": " 45.33.32.156 "}, {"value": "Mail@Example.COM"}, {"value": "https://evil.example.net/x"},
			{"value": strings.Repeat("a", 32)}, {"value": strings.Repeat("b", 40)}, {"value": strings.Repeat("C", 64)},
			{"value": "Evil-Domain.org"}, {"value": "svc_backup", "type": "account"},
		}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		d := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, float64(8), d["added_count"])
		require.Equal(t, false, d["enrich_requested"])
		var got []string
		for _, x := range d["indicators"].([]any) {
			ind := x.(map[string]any)
			got = append(got, ind["type"].(string)+":"+ind["value"].(string))
		}
		require.Equal(t, []string{"ip:45.33.32.156", "email:mail@example.com", "url:https://evil.example.net/x", "hash_md5:" + strings.Repeat("a", 32),
			"hash_sha1:" + strings.Repeat("b", 40), "hash_sha256:" + strings.Repeat("c", 64), "domain:evil-domain.org", "account:svc_backup"}, got)
		var outbox int
		require.NoError(t, ts.Store.DB().NewRaw("SELECT count(*) FROM alert_outbox WHERE alert_uuid = ? AND kind = 'rerun'", id).Scan(ctx, &outbox))
		require.Equal(t, 0, outbox, "enrich=false queues nothing")

		// Again: idempotent upsert, no new links; enrich defaults to true and queues one enrichment start
		// for the indicator through the start outbox (issue 11: no Temporal call inside the request).
		r = ts.do(t, http.MethodPost, path, key, map[string]any{"indicators": []map[string]any{{"value": "45.33.32.156", "type": "ip"}}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		d = r.JSON(t)["data"].(map[string]any)
		require.Equal(t, float64(0), d["added_count"])
		require.Equal(t, true, d["enrich_requested"])
		indID := d["indicators"].([]any)[0].(map[string]any)["uuid"]
		require.NoError(t, ts.Store.DB().NewRaw("SELECT count(*) FROM start_outbox WHERE subject_uuid = ? AND kind = 'indicator_enrichment'", indID).Scan(ctx, &outbox))
		require.Equal(t, 1, outbox)

		list := alertData2(t, ts.do(t, http.MethodGet, path, key, nil))
		require.Len(t, list, 8)

		hundredOne := make([]map[string]any, 101)
		for i := range hundredOne {
			hundredOne[i] = map[string]any{"value": fmt.Sprintf("10.0.0.%d", i)}
		}
		bad := []struct {
			body any
			loc  string
		}{
			{map[string]any{"indicators": []any{}}, "body.indicators"},
			{map[string]any{"indicators": hundredOne}, "body.indicators"},
			{map[string]any{}, "body.indicators"},
			{map[string]any{"indicators": []map[string]any{{"value": "ok.com"}, {"value": "not inferable!"}}}, "body.indicators.1.value"},
			{map[string]any{"indicators": []map[string]any{{"value": "ok.com", "type": "ip"}}}, "body.indicators.0.value"},
			{map[string]any{"indicators": []map[string]any{{"value": "x", "type": "ipv6"}}}, "body.indicators.0.type"},
			{map[string]any{"indicators": []map[string]any{{"value": ""}}}, "body.indicators.0.value"},
			{map[string]any{"indicators": []map[string]any{{"value": strings.Repeat("a", 2049) + ".com"}}}, "body.indicators.0.value"},
			{map[string]any{"indicators": []map[string]any{{"type": "ip"}}}, "body.indicators.0.value"},
			{map[string]any{"indicators": "45.33.32.156"}, "body.indicators"},
		}
		for _, b := range bad {
			require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, path, key, b.body))), b.loc, fmt.Sprint(b.body)[:min(80, len(fmt.Sprint(b.body)))])
		}
		require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodPost, path+"?enrich=perhaps", key, map[string]any{"indicators": []map[string]any{{"value": "a.com"}}}))), "query.enrich")
		requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+uuid.NewString()+"/indicators", key, map[string]any{"indicators": []map[string]any{{"value": "a.com"}}}), 404, "NOT_FOUND")
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/indicators", key, nil), 404, "NOT_FOUND")
	})

	t.Run("activity", func(t *testing.T) {
		alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"severity": "Critical"}))
		r := ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/activity?page_size=2", key, nil)
		m := r.JSON(t)
		require.Len(t, m["data"], 2)
		total := m["meta"].(map[string]any)["total"].(float64)
		require.GreaterOrEqual(t, total, float64(4))
		first := m["data"].([]any)[0].(map[string]any)
		require.Equal(t, "alert_severity_updated", first["event_type"], "newest first")
		for _, k := range []string{"uuid", "event_type", "actor_type", "actor_key_prefix", "alert_uuid", "workflow_uuid", "detection_rule_uuid", "references", "created_at"} {
			require.Contains(t, first, k)
		}
		r = ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/activity?event_type=alert_created,agent_finding_posted", key, nil)
		require.Equal(t, float64(3), r.JSON(t)["meta"].(map[string]any)["total"])
		requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/activity?page=-1", key, nil))
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/activity", key, nil), 404, "NOT_FOUND")
	})

	t.Run("enrich", func(t *testing.T) {
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/enrich", key, nil)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
		require.Equal(t, "alert-"+id, r.JSON(t)["data"].(map[string]any)["workflow_id"])
		require.Len(t, eventsOf(t, ts, id, "alert_enrichment_requested"), 2)
		requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+uuid.NewString()+"/enrich", key, nil), 404, "NOT_FOUND")
		requireError(t, ts.do(t, http.MethodPost, "/v1/alerts/"+id+"/enrich", mustKey(t, ts.Store, auth.ScopeAlertsRead), nil), 403, "FORBIDDEN")
	})

	t.Run("relationship graph", func(t *testing.T) {
		other := newAlert(t, ts, key, "")
		r := ts.do(t, http.MethodPost, "/v1/alerts/"+other+"/indicators?enrich=false", key, map[string]any{"indicators": []map[string]any{{"value": "45.33.32.156"}}})
		require.Equal(t, http.StatusCreated, r.Status)
		g := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/relationship-graph?sibling_limit=1", key, nil))
		require.Equal(t, id, g["alert"].(map[string]any)["uuid"])
		inds := g["indicators"].([]any)
		require.Len(t, inds, 8)
		for _, x := range inds {
			ind := x.(map[string]any)
			rel := ind["related_alerts"].([]any)
			if ind["value"] == "45.33.32.156" {
				require.Len(t, rel, 1, "sibling_limit bounds the list")
			} else if ind["value"] == "svc_backup" {
				require.Empty(t, rel)
			}
		}
		for _, q := range []string{"sibling_limit=0", "sibling_limit=51", "sibling_limit=x"} {
			require.Contains(t, locs(requireValidation(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id+"/relationship-graph?"+q, key, nil))), "query.sibling_limit")
		}
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+uuid.NewString()+"/relationship-graph", key, nil), 404, "NOT_FOUND")
	})

	t.Run("delete", func(t *testing.T) {
		victim := newAlert(t, ts, key, "")
		requireError(t, ts.do(t, http.MethodDelete, "/v1/alerts/"+victim, key, nil), 403, "FORBIDDEN")
		r := ts.do(t, http.MethodDelete, "/v1/alerts/"+victim, admin, nil)
		require.Equal(t, http.StatusNoContent, r.Status)
		requireError(t, ts.do(t, http.MethodGet, "/v1/alerts/"+victim, admin, nil), 404, "NOT_FOUND")
		requireError(t, ts.do(t, http.MethodDelete, "/v1/alerts/"+victim, admin, nil), 404, "NOT_FOUND")
		var outbox int
		require.NoError(t, ts.Store.DB().NewRaw("SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?", victim).Scan(ctx, &outbox))
		require.Equal(t, 0, outbox, "a deleted alert leaves no pipeline to start")
		// Its fingerprint is free again.
		_, err := ts.Store.GetAlert(ctx, uuid.MustParse(victim))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func alertData2(t testing.TB, r response) []any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return r.JSON(t)["data"].([]any)
}
