package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// TestSignInsAreAudited: a good sign-in is recorded (signed_in, the key's prefix, name and uuid) with
// its session; a refused one too (sign_in_failed), with the key's prefix when the text has the key
// format, and never the text itself.
func TestSignInsAreAudited(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Second)
	signIns := func(action, prefix string) []store.AuditEvent {
		t.Helper()
		evs, _, err := h.st.ListAuditEvents(ctx, store.AuditFilter{ResourceTypes: []string{audit.ConsoleSession},
			Actions: []string{action}, ActorKeyPrefix: prefix, From: &start})
		require.NoError(t, err)
		return evs
	}

	good, k := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead)
	h.browser(t).signIn(good)
	evs := signIns(store.AuditSignedIn, k.KeyPrefix)
	require.Len(t, evs, 1)
	e := evs[0]
	require.Equal(t, store.ActorConsole, e.ActorType)
	require.Equal(t, k.Name, *e.ActorKeyName)
	require.Equal(t, k.UUID, *e.ResourceUUID)
	require.NotEmpty(t, *e.ClientIP)

	// A well-formed key that is not valid: recorded with no key prefix as its actor (security review
	// round 4, R4-10: an unauthenticated client chose the actor's prefix, an admin's). An unknown
	// prefix is not recorded at all; an existing key's prefix is recorded as what the attempt claimed.
	before := len(signIns(store.AuditSignInFailed, ""))
	unknown, err := auth.NewKey()
	require.NoError(t, err)
	b := h.browser(t)
	resp, _ := b.do(http.MethodPost, "/console/login", url.Values{"key": {unknown}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, signIns(store.AuditSignInFailed, auth.Prefix(unknown)))
	forged := k.KeyPrefix + strings.Repeat("Z", len(good)-len(k.KeyPrefix))
	resp, _ = b.do(http.MethodPost, "/console/login", url.Values{"key": {forged}}, "X-Request-ID", "4f7c1a2e-forged-request-id")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, signIns(store.AuditSignInFailed, k.KeyPrefix), "never under the real key's prefix")
	evs = signIns(store.AuditSignInFailed, "")
	require.Len(t, evs, before+2)
	for _, e := range evs[:2] {
		require.Nil(t, e.ActorKeyPrefix)
		require.Nil(t, e.ActorKeyName)
		require.Nil(t, e.ResourceUUID)
		require.NotEqual(t, "4f7c1a2e-forged-request-id", *e.RequestID)
	}
	claims := map[string]any{}
	for _, e := range evs[:2] {
		if c, ok := e.Changes["claimed_key_prefix"]; ok {
			claims[c.To.(string)] = e.ClientRequestID
		}
	}
	require.Len(t, claims, 1, "only the existing key's prefix is recorded, as claimed")
	require.Contains(t, claims, k.KeyPrefix)

	// Garbage and an oversized key: recorded without a prefix.
	before = len(signIns(store.AuditSignInFailed, ""))
	for _, key := range []string{"not-a-key", "<script>alert(1)</script>", strings.Repeat("k", 250), ""} {
		resp, _ := b.do(http.MethodPost, "/console/login", url.Values{"key": {key}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	failed := signIns(store.AuditSignInFailed, "")
	require.Len(t, failed, before+4)
	var raw []string
	require.NoError(t, h.st.DB().NewRaw("SELECT row_to_json(a)::text FROM audit_events a WHERE created_at >= ?", start).Scan(ctx, &raw))
	all := strings.Join(raw, "\n")
	for _, secret := range []string{good, unknown, "not-a-key", "<script>"} {
		require.NotContains(t, all, secret, "a sign-in's event never holds the text that was tried")
	}
}

// TestAuditPage: the audit trail page is an admin's (linked from the nav for admin sessions only; any
// other key gets the console's 403 page); its filters narrow, and a filter value that is not valid is
// ignored and named, never reflected as markup nor a 5xx.
func TestAuditPage(t *testing.T) {
	h := newHarness(t)
	adminKey, admin := h.key(t, auth.KeyTypeHuman, auth.ScopeAdmin)
	readerKey, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeWorkflowsRead)

	reader := h.browser(t)
	reader.signIn(readerKey)
	_, page := reader.do(http.MethodGet, "/console/", nil)
	require.NotContains(t, page, `href="/console/audit"`, "no link for a non-admin session")
	resp, page := reader.do(http.MethodGet, "/console/audit", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, page, "admin")

	b := h.browser(t)
	b.signIn(adminKey)
	_, page = b.do(http.MethodGet, "/console/", nil)
	require.Contains(t, page, `href="/console/audit"`, "admins see the link")

	resp, page = b.do(http.MethodGet, "/console/audit?resource_type=console_session&action=signed_in&actor_key_prefix="+admin.KeyPrefix, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="total">1 event(s)`)
	require.Contains(t, page, admin.KeyPrefix)
	require.Contains(t, page, admin.UUID.String())
	_, page = b.do(http.MethodGet, "/console/audit?resource_type=agent&actor_key_prefix="+admin.KeyPrefix, nil)
	require.Contains(t, page, `id="total">0 event(s)`)

	for _, q := range []string{
		"resource_type=bogus",
		"action=" + url.QueryEscape("<script>alert(1)</script>"),
		"actor_key_prefix=" + url.QueryEscape("<script>alert(1)</script>"),
		"actor_key_prefix=" + url.QueryEscape("x' OR '1'='1"),
		"actor_key_prefix=" + strings.Repeat("a", 65),
		"from_time=yesterday",
		"to_time=" + url.QueryEscape("2026-13-45T99:99"),
		"from_time=" + strings.Repeat("9", 100),
		"page=-5",
		"page=99999999999999999999",
	} {
		resp, page := b.do(http.MethodGet, "/console/audit?"+q, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, q)
		require.NotContains(t, page, "<script>alert(1)", q)
		if !strings.HasPrefix(q, "page=") {
			require.Contains(t, page, `id="ignored"`, q)
		}
	}
	// A datetime-local window (UTC) that holds the sign-in.
	from := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
	_, page = b.do(http.MethodGet, "/console/audit?action=signed_in&actor_key_prefix="+admin.KeyPrefix+"&from_time="+from, nil)
	require.Contains(t, page, `id="total">1 event(s)`)
	require.Contains(t, page, `value="`+from+`"`)
}
