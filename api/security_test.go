package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/auth"
)

// Issue 12 item 9: a revoked key stays revoked; PATCH is_active true on it is refused and the key keeps
// failing authentication. PATCH on an active key (and renaming a revoked one) still works.
func TestRevokedKeyCannotBeReactivated(t *testing.T) {
	ts := newTestServer(t, nil)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	r := ts.do(t, http.MethodPost, "/v1/api-keys", admin, map[string]any{"name": "victim", "scopes": []string{"alerts:read"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	data := r.JSON(t)["data"].(map[string]any)
	id, plain := data["uuid"].(string), data["key"].(string)

	// Legitimate: is_active true on an active key is a no-op, the key keeps working.
	require.Equal(t, http.StatusOK, ts.do(t, http.MethodPatch, "/v1/api-keys/"+id, admin, `{"is_active": true}`).Status)
	requireError(t, ts.do(t, http.MethodGet, "/v1/api-keys", plain, nil), http.StatusForbidden, "FORBIDDEN") // authenticated

	require.Equal(t, http.StatusNoContent, ts.do(t, http.MethodDelete, "/v1/api-keys/"+id, admin, nil).Status)
	requireError(t, ts.do(t, http.MethodPatch, "/v1/api-keys/"+id, admin, `{"is_active": true, "name": "back"}`), http.StatusConflict, "KEY_REVOKED")
	requireError(t, ts.do(t, http.MethodGet, "/v1/api-keys", plain, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	got := ts.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil).JSON(t)["data"].(map[string]any)
	require.Equal(t, false, got["is_active"])
	require.Equal(t, "victim", got["name"], "a refused PATCH changes nothing")

	// Other fields of a revoked key may still change (audit labels), it stays revoked.
	p := ts.do(t, http.MethodPatch, "/v1/api-keys/"+id, admin, `{"name": "victim-revoked", "is_active": false}`)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	require.Equal(t, false, p.JSON(t)["data"].(map[string]any)["is_active"])
}
