package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/store"
)

type noCache struct{}

func (noCache) Invalidate() {}

// TestAlertIndicatorOriginsAndAdminActions: the alert page says which pass found each indicator and
// where, with the normalization notes; an admin puts a value on the never-indicator list or maps a
// pass-4 field in one step through the owners; a key without admin sees neither and is refused.
func TestAlertIndicatorOriginsAndAdminActions(t *testing.T) {
	h := newHarness(t, func(d *console.Deps) {
		st := d.Store.(*store.Store)
		d.Exclusions = config.NewExclusions(st, st)
		d.Mappings = config.NewMappings(st, st, sources.NewRegistry(), noCache{})
	})
	ctx := context.Background()
	before, err := h.st.ExtractionExclusions(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = h.st.PutExtractionExclusions(context.Background(), before.Entries) })

	host := "excl-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "") + ".example.org"
	hash := strings.Repeat("ab", 32)
	res, err := h.st.Ingest(ctx, store.IngestAlert{Title: "origins " + uuid.NewString(), Severity: "High", SourceName: "generic",
		Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), ActorType: store.ActorAPI,
		Normalized: []byte(`{"fields":{},"indicators":[],"normalization_notes":[{"field":"title","note":"no title: <fallback> used"}]}`)}, 0)
	require.NoError(t, err)
	id := res.AlertUUID
	linked, err := h.st.LinkExtraction(ctx, id, store.ExtractionLinks{
		Keys:        []store.IndicatorKey{{Type: "domain", Value: host}, {Type: "hash_sha256", Value: hash}},
		ExtractedBy: [][]indicators.Origin{{{Pass: 1}, {Pass: 4, FieldPath: "evidence.0.hosts.12.name"}}, {{Pass: 4, FieldPath: "result._raw"}}},
	}, "pipeline", "generic", nil)
	require.NoError(t, err)
	hostInd, hashInd := linked.Indicators[0].UUID.String(), linked.Indicators[1].UUID.String()
	other := h.alert(t, "other "+uuid.NewString()) // carries 203.0.113.77, not on this alert
	otherInds, err := h.st.AlertIndicators(ctx, other)
	require.NoError(t, err)

	base := "/console/alerts/" + id.String()
	// An analyst sees the origins and the notes, not the admin's actions, and is refused them.
	analystKey, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	analyst := h.browser(t)
	analyst.signIn(analystKey)
	resp, page := analyst.do(http.MethodGet, base, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "pass 1 · the source plugin")
	require.Contains(t, page, "pass 4 · evidence.0.hosts.12.name")
	require.Contains(t, page, "pass 4 · result._raw")
	require.Contains(t, page, "no title: &lt;fallback&gt; used")
	require.NotContains(t, page, "Never an indicator")
	require.NotContains(t, page, "Map this field")
	noInline(t, page)
	csrf := csrfOf(t, page)
	resp, _ = analyst.do(http.MethodPost, base+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {hostInd}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = analyst.do(http.MethodPost, base+"/map-field", url.Values{"csrf": {csrf}, "indicator": {hashInd}, "path": {"result._raw"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	adminKey, _ := h.key(t, auth.KeyTypeHuman, auth.ScopeAdmin)
	admin := h.browser(t)
	admin.signIn(adminKey)
	_, page = admin.do(http.MethodGet, base, nil)
	require.Equal(t, 1, strings.Count(page, `class="never-indicator"`), "offered for the host, not the hash")
	require.Equal(t, 2, strings.Count(page, `class="map-field"`), "one per pass-4 origin")
	noInline(t, page)
	csrf = csrfOf(t, page)

	// Never an indicator: on the list, audited; again: already there, no second event.
	resp, page = admin.do(http.MethodPost, base+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {hostInd}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `id="notice"`)
	require.Contains(t, page, host+" is on the never-indicator list now")
	list, err := h.st.ExtractionExclusions(ctx)
	require.NoError(t, err)
	require.Contains(t, list.Entries, host)
	require.Subset(t, list.Entries, before.Entries, "appended: nothing else dropped")
	events := func() int {
		evs, _, err := h.st.ListAuditEvents(ctx, store.AuditFilter{ResourceTypes: []string{audit.ExtractionExcl},
			ActorKeyPrefix: auth.Prefix(adminKey), Page: store.Page{Number: 1, Size: 50}})
		require.NoError(t, err)
		return len(evs)
	}
	require.Equal(t, 1, events())
	resp, page = admin.do(http.MethodPost, base+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {hostInd}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, host+" was already on the never-indicator list.")
	require.Equal(t, 1, events())
	// A hash is not a host, a domain or an address: the owner's refusal, shown as the page's forms show theirs.
	resp, page = admin.do(http.MethodPost, base+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {hashInd}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, `class="error"`)
	require.NotContains(t, page, `id="notice"`)

	// Map this field: a raw_payload mapping for the alert's source, array indexes as *.
	resp, page = admin.do(http.MethodPost, base+"/map-field", url.Values{"csrf": {csrf}, "indicator": {hostInd}, "path": {"evidence.0.hosts.12.name"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Mapped evidence.*.hosts.*.name of generic")
	src := "generic"
	rows, _, err := h.st.ListIndicatorMappings(ctx, store.IndicatorMappingFilter{SourceName: src, ExtractionTarget: "raw_payload", Page: store.Page{Number: 1, Size: 500}})
	require.NoError(t, err)
	var made *store.IndicatorMapping
	for i, m := range rows {
		if m.FieldPath == "evidence.*.hosts.*.name" && m.SourceName != nil && *m.SourceName == src {
			made = &rows[i]
		}
	}
	require.NotNil(t, made)
	t.Cleanup(func() { _ = h.st.DeleteIndicatorMapping(context.Background(), made.UUID) })
	require.Equal(t, "domain", made.IndicatorType)
	require.True(t, made.IsActive)
	// The same mapping again: the owner's conflict.
	resp, page = admin.do(http.MethodPost, base+"/map-field", url.Values{"csrf": {csrf}, "indicator": {hostInd}, "path": {"evidence.0.hosts.12.name"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, page, `class="error"`)

	// Hostile, oversized and malformed values: refused on the page, nothing written.
	for _, form := range []url.Values{
		{"indicator": {"not-a-uuid"}, "path": {"result._raw"}},
		{"indicator": {otherInds[0].UUID.String()}, "path": {"result._raw"}},       // not this alert's
		{"indicator": {hashInd}, "path": {"result._raw<script>alert(1)</script>"}}, // not an origin
		{"indicator": {hashInd}, "path": {strings.Repeat("a.", 5000)}},             // oversized
		{"indicator": {hashInd}, "path": {""}},                                     // empty
		{"indicator": {hostInd}, "path": {"result._raw"}},                          // another indicator's origin
		{"indicator": {hashInd + "\x00"}, "path": {"result._raw"}},                 // NUL
		{"indicator": {strings.Repeat(hashInd, 200)}, "path": {"result._raw"}},     // oversized
	} {
		form.Set("csrf", csrf)
		resp, page = admin.do(http.MethodPost, base+"/map-field", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", form)
		require.Contains(t, page, `class="error"`)
		require.NotContains(t, page, "<script>alert(1)")
	}
	resp, _ = admin.do(http.MethodPost, base+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {"1' OR 1=1"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	// Without the CSRF token nothing happens.
	resp, _ = admin.do(http.MethodPost, base+"/map-field", url.Values{"indicator": {hashInd}, "path": {"result._raw"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	rows2, _, err := h.st.ListIndicatorMappings(ctx, store.IndicatorMappingFilter{SourceName: src, ExtractionTarget: "raw_payload", Page: store.Page{Number: 1, Size: 500}})
	require.NoError(t, err)
	require.Len(t, rows2, len(rows), "no other mapping was created")
	// An unknown alert.
	resp, _ = admin.do(http.MethodPost, "/console/alerts/"+uuid.NewString()+"/never-indicator", url.Values{"csrf": {csrf}, "indicator": {hostInd}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
