package api

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// The list, the detail and PATCH's answer carry the alert's effective malice as the store keeps it
// (store.Alert.EffectiveMalice, the generated column), never one recomputed from its indicators: the
// alert's kept worst indicator malice is set apart from its indicator's, so a door that recomputed
// would answer Malicious where the alert says Suspicious.
func TestAlertMaliceIsTheAlertsOwn(t *testing.T) {
	ts := newAlertServer(t, nil)
	ctx := context.Background()
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	id := newAlert(t, ts, key, "")
	inds, _, err := ts.Store.LinkIndicators(ctx, uuid.MustParse(id), []store.IndicatorKey{{Type: "domain", Value: "kept-" + uuid.NewString()[:8] + ".example"}}, "api")
	require.NoError(t, err)
	_, err = ts.Store.DB().NewRaw(`UPDATE indicators SET malice = 'Malicious' WHERE uuid = ?`, inds[0].UUID).Exec(ctx)
	require.NoError(t, err)
	setAlert(t, ts, id, "indicator_malice = 'Suspicious'")

	d := alertData(t, ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil))
	require.Equal(t, "Suspicious", d["malice"], "detail")
	r := ts.do(t, http.MethodGet, "/v1/alerts?q="+url.QueryEscape(d["title"].(string)), key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	list := r.JSON(t)["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "Suspicious", list[0].(map[string]any)["malice"], "list")

	// PATCH answers the malice Postgres recomputed for the override it wrote.
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"malice_override": "Benign"}))
	require.Equal(t, "Benign", d["malice"])
	d = alertData(t, ts.do(t, http.MethodPatch, "/v1/alerts/"+id, key, map[string]any{"reset_malice_override": true}))
	require.Equal(t, "Suspicious", d["malice"])
}
