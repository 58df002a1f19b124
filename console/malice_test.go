package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

// The queue, the alert page and the case page show the alert's effective malice as the store keeps
// it (store.Alert.EffectiveMalice, the generated column), never one recomputed from its indicators:
// the alert's kept worst indicator malice is set apart from its indicator's (Malicious, from the
// harness), so a page that recomputed would show Malicious where the alert says Suspicious.
func TestPagesShowTheAlertsOwnMalice(t *testing.T) {
	h := newHarness(t, withCases)
	ctx := context.Background()
	b := h.browser(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	b.signIn(key)
	marker := "kept" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	id := h.alert(t, "kept malice "+marker)
	_, err := h.st.DB().NewRaw(`UPDATE alerts SET indicator_malice = 'Suspicious' WHERE uuid = ?`, id).Exec(ctx)
	require.NoError(t, err)
	const badge = `<span class="badge mal-Suspicious">Suspicious</span>`

	_, page := b.do(http.MethodGet, "/console/?q="+marker, nil)
	require.Contains(t, page, badge, "queue")
	require.NotContains(t, page, "mal-Malicious", "queue")
	csrf := csrfOf(t, page)
	_, page = b.do(http.MethodGet, "/console/alerts/"+id.String(), nil)
	require.Contains(t, page, `<span class="badge mal-Suspicious" id="malice">Suspicious</span>`, "alert page")
	c := createCase(t, b, csrf, "kept malice "+marker, id)
	_, page = b.do(http.MethodGet, "/console/cases/"+c.String(), nil)
	require.Contains(t, page, badge, "case page")
}
