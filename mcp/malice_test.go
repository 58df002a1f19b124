package mcp

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Every tool that answers an alert answers the alert's effective malice as the store keeps it
// (store.Alert.EffectiveMalice, the generated column), never one recomputed from its indicators: the
// alert's kept worst indicator malice is set apart from its own indicator's, so a tool that recomputed
// would answer Malicious where the alert says Suspicious.
func TestToolsAnswerTheAlertsOwnMalice(t *testing.T) {
	h := newHarness(t, 1000)
	ctx := context.Background()
	token, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	cs := h.session(t, token)
	title := "MCP kept malice " + uuid.NewString()
	id := h.alert(t, title)
	inds, _, err := h.st.LinkIndicators(ctx, id, []store.IndicatorKey{{Type: "domain", Value: "kept-" + uuid.NewString()[:8] + ".example"}}, "api")
	require.NoError(t, err)
	_, err = h.st.DB().NewRaw(`UPDATE indicators SET malice = 'Malicious' WHERE uuid = ?`, inds[0].UUID).Exec(ctx)
	require.NoError(t, err)
	_, err = h.st.DB().NewRaw(`UPDATE alerts SET indicator_malice = 'Suspicious' WHERE uuid = ?`, id).Exec(ctx)
	require.NoError(t, err)
	kept, err := h.st.GetAlert(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Suspicious", kept.EffectiveMalice)

	res, body := call(t, cs, "search_alerts", map[string]any{"q": title})
	require.False(t, res.IsError, "%v", body)
	require.Equal(t, "Suspicious", body["data"].([]any)[0].(map[string]any)["malice"], "search_alerts")
	res, body = call(t, cs, "get_alert", map[string]any{"alert_uuid": id.String()})
	require.False(t, res.IsError, "%v", body)
	require.Equal(t, "Suspicious", body["data"].(map[string]any)["malice"], "get_alert")
	res, body = call(t, cs, "create_case", map[string]any{"title": "kept malice", "alert_uuids": []string{id.String()}})
	require.False(t, res.IsError, "%v", body)
	caseID := body["data"].(map[string]any)["uuid"].(string)
	res, body = call(t, cs, "get_case", map[string]any{"case_uuid": caseID})
	require.False(t, res.IsError, "%v", body)
	require.Equal(t, "Suspicious", body["data"].(map[string]any)["alerts"].([]any)[0].(map[string]any)["malice"], "get_case")
}
