package console_test

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
)

func TestDashboard(t *testing.T) {
	h := newHarness(t)
	key, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	b := h.browser(t)
	b.signIn(key)
	// Before any alert of this test (other tests' alerts may exist): renders, with no NaN anywhere.
	resp, page := b.do(http.MethodGet, "/console/dashboard", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	noInline(t, page)
	require.NotContains(t, page, "NaN")
	require.NotRegexp(t, `="[+-]?Inf`, page)
	h.alert(t, "dashboard <svg onload=alert(1)> "+uuid.NewString())
	_, page = b.do(http.MethodGet, "/console/dashboard", nil)
	require.Contains(t, page, `<svg id="alerts-over-time"`)
	require.Contains(t, page, `<svg id="open-by-severity"`)
	require.Regexp(t, `<rect class="bar sev-High" x="\d+" y="\d+" width="[1-9]\d*"`, page, "the High bar has a width")
	require.NotContains(t, page, `id="runs-over-time"`, "no workflow chart without workflows:read")
	require.NotContains(t, page, "<svg onload")
	require.NotRegexp(t, regexp.MustCompile(`(?:x|y|width|height)="-`), page, "no negative geometry")

	wk, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead)
	wb := h.browser(t)
	wb.signIn(wk)
	_, page = wb.do(http.MethodGet, "/console/dashboard", nil)
	require.Contains(t, page, `<svg id="runs-over-time"`)
	require.Contains(t, page, "Time saved")

	// Without alerts:read the dashboard is refused.
	rk, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeWorkflowsRead)
	rb := h.browser(t)
	rb.signIn(rk)
	resp, _ = rb.do(http.MethodGet, "/console/dashboard", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
