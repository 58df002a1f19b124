package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/console"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// newConsoleServer is a REST server with the console over its own store (no Temporal: the pages
// of issue 29 need none).
func newConsoleServer(t *testing.T) *testServer {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	st := testStore(t)
	return newTestServer(t, func(_ *Config, d *Deps) {
		d.Console = console.New(console.Deps{Auth: d.Auth, Box: box, Store: st, Alerts: alerts.New(st, d.Log), Log: d.Log,
			LiveRefresh: time.Hour})
	})
}

// jsNumber evaluates expression on the page and returns its number.
func (c *cdp) jsNumber(expression string) float64 {
	c.t.Helper()
	var out struct {
		Result struct {
			Value float64 `json:"value"`
		} `json:"result"`
	}
	c.call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &out)
	return out.Result.Value
}

// The analyst work of issue 29 in headless Chromium: "Assign to me" on the alert page, the
// indicator pivot from the alert page and from the search box, the "My alerts" view, bulk changes
// from the queue without JavaScript (ticked rows, every row of the page) and with it (shift-click
// range, select all), and a read-only key that sees none of it and is refused when it posts anyway.
func TestConsoleAnalystWorkInHeadlessChromium(t *testing.T) {
	ts := newConsoleServer(t)
	st := ts.Store
	ctx := context.Background()
	handle := "maria.ortiz." + uuid.NewString()[:6]
	analyst := mustKeyWith(t, st, func(k *store.APIKey) { k.Name = handle }, auth.ScopeAlertsRead, auth.ScopeAlertsWrite)
	tag := "c29-" + uuid.NewString()[:8]
	hash := strings.Repeat("c0ffee", 10) + "abcd"
	ids := make([]uuid.UUID, 4)
	for i := range ids {
		res, err := st.Ingest(ctx, store.IngestAlert{Title: fmt.Sprintf("LockBit note %d %s", i, tag), Severity: "High", SourceName: "generic",
			Fingerprint: uuid.NewString(), Tags: []string{tag}, RawPayload: []byte(`{}`), Normalized: []byte(`{"fields":{},"indicators":[]}`),
			ActorType: store.ActorAPI}, 0)
		require.NoError(t, err)
		ids[i] = res.AlertUUID
	}
	for _, id := range ids[:2] {
		_, _, err := st.LinkIndicators(ctx, id, []store.IndicatorKey{{Type: "hash_sha256", Value: hash}}, "api")
		require.NoError(t, err)
	}

	b := startChromium(t)
	b.open()
	b.navigate(ts.URL + "/console/")
	b.waitFor("#signin")
	b.typeInto("#key", analyst)
	b.click("#signin")
	b.waitFor("#queue")

	// Assign to me.
	b.navigate(ts.URL + "/console/alerts/" + ids[0].String())
	b.waitFor("#assign-me")
	b.click("#assign-me")
	b.waitForText(`<td id="assignee"><a href="/console/?assignee=` + handle + `">` + handle)
	a, err := st.GetAlert(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, handle, *a.Assignee, "the signed-in key's name")

	// Every indicator links to its pivot.
	b.click(`a.pivot[href*="` + hash + `"]`)
	page := b.waitFor("#pivot")
	require.Contains(t, page, "2 alert(s)")
	require.Contains(t, page, ids[0].String())
	require.Contains(t, page, ids[1].String())

	// The search box recognises the hash (any case) and pivots.
	b.navigate(ts.URL + "/console/")
	b.waitFor("#search")
	b.typeInto("#search", strings.ToUpper(hash))
	b.click("#filter")
	page = b.waitFor("#search-text")
	require.Contains(t, page, "Alerts carrying the hash_sha256")
	require.Contains(t, page, "2 alert(s)")

	// My alerts.
	b.click("#my-alerts")
	page = b.waitForText(`value="` + handle + `"`)
	require.Contains(t, page, "1 alert(s)")
	require.Contains(t, page, ids[0].String())

	// Bulk without JavaScript: tick two rows, one of which is Closed (Closed→Triaging is refused).
	_, err = alerts.New(st, nil).Patch(ctx, ids[3], alerts.Patch{Status: ptrTo("Closed"), CloseClassification: ptrTo("Duplicate")},
		store.Actor{Type: store.ActorAPI})
	require.NoError(t, err)
	b.navigate(ts.URL + "/console/?tags=" + tag)
	b.waitForText("4 alert(s)")
	b.check(`input.pick[value="` + ids[2].String() + `"]`)
	b.check(`input.pick[value="` + ids[3].String() + `"]`)
	b.selectOption(`select[name="status"]`, "Triaging")
	b.click("#bulk-status")
	page = b.waitFor("#bulk-summary")
	require.Contains(t, page, `<strong id="bulk-succeeded">1</strong>`)
	require.Contains(t, page, `<strong id="bulk-failed">1</strong>`)
	require.Contains(t, page, "INVALID_TRANSITION")
	require.Contains(t, page, ids[3].String())
	a, err = st.GetAlert(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, "Triaging", a.Status)

	// Every alert on the page: tags, without ticking anything.
	b.click("#bulk-back")
	b.waitFor("#apply-page")
	b.check("#apply-page")
	b.typeInto(`input[name="tags_add"]`, "fp-sweep, noisy-rule")
	b.click("#bulk-tags")
	page = b.waitFor("#bulk-summary")
	require.Contains(t, page, `<strong id="bulk-succeeded">4</strong>`)
	for _, id := range ids {
		a, err := st.GetAlert(ctx, id)
		require.NoError(t, err)
		require.Subset(t, a.Tags, []string{"fp-sweep", "noisy-rule"})
	}

	// With JavaScript: shift-click ticks a range, the header box the page; assign them to me.
	b.scripts(true)
	b.navigate(ts.URL + "/console/?tags=" + tag + "&sort_by=title&sort_order=asc")
	b.waitFor("#pick-all")
	shift := func(i int, withShift bool) {
		b.call("Runtime.evaluate", map[string]any{"expression": fmt.Sprintf(
			`document.querySelectorAll("input.pick")[%d].dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, shiftKey: %t}))`, i, withShift)}, nil)
	}
	shift(0, false)
	shift(2, true)
	require.EqualValues(t, 3, b.jsNumber(`document.querySelectorAll("input.pick:checked").length`), "rows 0..2 ticked")
	b.call("Runtime.evaluate", map[string]any{"expression": `(function(){ document.getElementById("pick-all").click(); })()`}, nil)
	require.EqualValues(t, 4, b.jsNumber(`document.querySelectorAll("input.pick:checked").length`), "select all on the page")
	b.click("#bulk-assign-me")
	page = b.waitFor("#bulk-summary")
	require.Contains(t, page, `<strong id="bulk-succeeded">4</strong>`)
	b.scripts(false)
	for _, id := range ids {
		a, err := st.GetAlert(ctx, id)
		require.NoError(t, err)
		require.Equal(t, handle, *a.Assignee)
	}

	// Hostile input through the forms: an over-long handle and a NUL are refused with the rule's words.
	b.navigate(ts.URL + "/console/alerts/" + ids[1].String())
	b.waitFor("#assignee-input")
	b.typeInto("#assignee-input", strings.Repeat("x", 150)+"\u0000"+strings.Repeat("y", 100))
	b.click("#assign-other")
	b.waitFor("#error")

	// A read-only key sees no bulk form and no assign button; its forged post is refused.
	readOnly := mustKey(t, st, auth.ScopeAlertsRead)
	b.click(`header button[type="submit"]`) // sign out
	b.waitFor("#signin")
	b.typeInto("#key", readOnly)
	b.click("#signin")
	page = b.waitFor("#queue")
	require.NotContains(t, page, `id="bulk"`)
	require.NotContains(t, page, `class="pick"`)
	b.navigate(ts.URL + "/console/alerts/" + ids[2].String())
	page = b.waitFor("#indicators")
	require.NotContains(t, page, `id="assign-me"`)
	b.scripts(true)
	b.call("Runtime.evaluate", map[string]any{"expression": `(function () {
		var f = document.createElement("form"); f.method = "post"; f.action = "/console/alerts/bulk";
		[["csrf", document.querySelector('input[name="csrf"]').value], ["alert_uuid", "` + ids[2].String() + `"], ["action", "unassign"]].forEach(function (kv) {
			var i = document.createElement("input"); i.type = "hidden"; i.name = kv[0]; i.value = kv[1]; f.appendChild(i); });
		document.body.appendChild(f); f.submit(); })()`}, nil)
	b.waitForText("lacks the scope alerts:write")
	a, err = st.GetAlert(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, handle, *a.Assignee, "the read-only key's post changed nothing")
}

func ptrTo[T any](v T) *T { return &v }
