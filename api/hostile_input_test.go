package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/store"
)

// hostileStrings are JSON string literals Postgres cannot store: NUL, a lone high and a lone low
// UTF-16 surrogate, an overlong UTF-8 form and a UTF-8-encoded surrogate (raw bytes).
var hostileStrings = []string{`"a\u0000b"`, `"x\ud800y"`, `"\udc00"`, "\"\xc0\xaf\"", "\"\xed\xa0\x80\""}

// newSweepServer is the API with every dependency wired on the real store (Temporal stands in as a
// refusing starter: no run is started).
func newSweepServer(t *testing.T) *testServer {
	t.Helper()
	st := testStore(t)
	box, err := secretbox.New(testEncryptionKey)
	require.NoError(t, err)
	reg := sources.NewRegistry()
	require.NoError(t, builtins.SeedSources(context.Background(), st, reg))
	require.NoError(t, builtins.SeedProviders(context.Background(), st))
	guard := netguard.NewGuard([]string{"127.0.0.1"})
	return newTestServer(t, func(cfg *Config, d *Deps) {
		cfg.AlertDedupWindow = 0
		d.SourceRegistry, d.Secrets = reg, box
		d.DetectionRules, d.ContextDocuments = st, st
		d.Sources, d.Integrations, d.Alerts, d.Indicators, d.Mappings = st, st, st, st, st
		d.Enrichment = EnrichmentDeps{Store: st, Enricher: &fakeEnricher{}, Env: store.MapEnv(nil)}
		d.Workflows = st
		d.Metrics = st
		d.Agents, d.AgentStore = agents.New(st, box, guard, agents.NewHTTPClient(guard)), st
	})
}

// TestHostileCharactersNeverCostAnAlert: NUL, lone surrogates and invalid UTF-8 in a payload of each
// of the four sources (and in POST /v1/alerts' envelope) are stored as U+FFFD, the alert flagged
// input_sanitized and the body as received kept in original_body (issue 27 item 3).
func TestHostileCharactersNeverCostAnAlert(t *testing.T) {
	ts := newAlertServer(t, func(c *Config, _ *Deps) { c.AlertDedupWindow = 0 })
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	key := mustKey(t, ts.Store, auth.ScopeAlertsWrite, auth.ScopeAlertsRead)
	withIntegration(t, ts, admin, map[string]any{"source_name": "elastic", "auth_type": "hmac_sha256", "auth_config": map[string]any{"secret": "s3cret"}})

	const hostile = `\ud800 \u0000 ` + "\xc0\xaf" + ` \udfff`
	cases := []struct{ file, title string }{
		{"generic.json", "Outbound connection to known C2"},
		{"sentinel_incident.json", "Multiple failed sign-ins"},
		{"elastic_flat.json", "Suspicious PowerShell Spawned by Office"},
		{"splunk_webhook.json", "Excessive DNS Failures"},
	}
	check := func(t *testing.T, id string, sent []byte, wantTitle string) {
		a := ts.do(t, http.MethodGet, "/v1/alerts/"+id, key, nil)
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		d := a.JSON(t)["data"].(map[string]any)
		require.Equal(t, true, d["input_sanitized"])
		require.Contains(t, d["title"], wantTitle)
		require.Contains(t, d["title"], "\uFFFD")
		require.NotContains(t, string(a.Body), `\u0000`)
		original, err := base64.StdEncoding.DecodeString(d["original_body"].(string))
		require.NoError(t, err)
		require.Equal(t, sent, original, "the body as received is recoverable")
		raw, _ := json.Marshal(d["raw_payload"])
		require.Contains(t, string(raw), "k\uFFFD", "hostile keys replaced too")
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b, err := readSourceFixture(tc.file)
			require.NoError(t, err)
			s := strings.Replace(string(b), "{", `{"k\u0000\ud800": "v\udc00",`, 1)
			s = strings.ReplaceAll(s, tc.title, tc.title+" "+hostile+" "+uuid.NewString())
			body := []byte(s)
			source := strings.SplitN(strings.TrimSuffix(tc.file, ".json"), "_", 2)[0]
			var hdrs []string
			if source == "elastic" {
				hdrs = []string{"X-Elastic-Signature", sign("s3cret", body)}
			}
			d := ingestData(t, ts.do(t, http.MethodPost, "/v1/ingest/"+source, key, s, hdrs...))
			check(t, d["alert_uuid"].(string), body, tc.title)
		})
	}
	t.Run("POST /v1/alerts", func(t *testing.T) {
		payload := `{"title": "Envelope ` + hostile + ` ` + uuid.NewString() + `", "k\u0000": 1}`
		d := ingestData(t, ts.do(t, http.MethodPost, "/v1/alerts", key, `{"source_name": "generic", "payload": `+payload+`}`))
		check(t, d["alert_uuid"].(string), []byte(payload), "Envelope")
	})
	t.Run("a clean payload is not flagged", func(t *testing.T) {
		d := ingestData(t, ts.do(t, http.MethodPost, "/v1/ingest/generic", key, uniqueGeneric(t, "")))
		a := ts.do(t, http.MethodGet, "/v1/alerts/"+d["alert_uuid"].(string), key, nil).JSON(t)["data"].(map[string]any)
		require.Equal(t, false, a["input_sanitized"])
		require.Nil(t, a["original_body"])
	})
}

func readSourceFixture(name string) ([]byte, error) {
	return os.ReadFile("../kit/sources/testdata/" + name)
}

// TestHostileInputSweep sends every route hostile input: hostile characters in each body field (alone
// and inside an otherwise valid body), each query parameter and each path parameter; wrong types;
// deep nesting; a 1e6-element array within the body limit; the printable text \u0000 and numbers
// outside float64's range (round 4, R4-8). Nothing may answer 5xx, and every error carries the
// contract's body (issue 27 item 3).
func TestHostileInputSweep(t *testing.T) {
	ts := newSweepServer(t)
	admin := mustKey(t, ts.Store, auth.ScopeAdmin)
	ids, bases := sweepFixtures(t, ts, admin)

	var failures []string
	sent := 0
	send := func(method, path, body string) {
		sent++
		var b any
		if body != "" {
			b = body
		}
		r := ts.do(t, method, path, admin, b)
		if r.Status >= 500 {
			failures = append(failures, fmt.Sprintf("%s %s %.120q → %d %s", method, path, body, r.Status, r.Body))
			return
		}
		if r.Status >= 400 && !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") { // the decide page answers people in HTML
			var m map[string]any
			if json.Unmarshal(r.Body, &m) != nil || m["error"] == nil {
				failures = append(failures, fmt.Sprintf("%s %s %.120q → %d without the error body: %.200s", method, path, body, r.Status, r.Body))
			}
		}
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	huge := "[" + strings.Repeat("0,", 999_999) + "0]"
	routes := 0
	for _, r := range ts.Server.routes {
		if r.Public && r.Method == http.MethodGet && !strings.Contains(r.Path, ":") && r.Query == nil {
			continue // /health, /openapi.json, /docs: nothing to send
		}
		routes++
		path := fillPath(r, ids)
		// Path parameters.
		for _, p := range pathParams(r.Path) {
			for _, bad := range []string{"%00", "%C0%AF", "%ED%A0%80", "a%00b"} {
				send(r.Method, strings.Replace(path, ids.value(r.Path, p), bad, 1), "{}")
			}
		}
		// Query parameters.
		if r.Query != nil {
			for _, name := range queryNames(reflect.TypeOf(r.Query)) {
				for _, bad := range []string{"%00", "a%00b", "%C0%AF", "%ED%A0%80", "%FF"} {
					send(r.Method, path+"?"+name+"="+bad, "")
				}
			}
		}
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			continue
		}
		// Bodies.
		base := bases[r.Method+" "+r.Path]
		if base == nil {
			base = map[string]any{}
		}
		for _, whole := range []string{deep, huge, `"` + "\u0000" + `"`, `[]`, `"x"`, `{"a\u0000": 1}`, `{"\ud800": "\udc00"}`} {
			send(r.Method, path, whole)
		}
		if r.Body == nil || reflect.TypeOf(r.Body).Kind() != reflect.Struct {
			continue
		}
		for i, f := range bodyFields(reflect.TypeOf(r.Body)) {
			values := append([]string{}, hostileStrings...)
			values = append(values, `123`, `true`, `{}`, `{"k\u0000": "\ud800"}`, `["\u0000", "\udc00"]`, `[{"x": "\u0000"}]`,
				// The printable text \u0000 (R4-8: 500 through bun's jsonb literal), alone and inside
				// arrays and objects; numbers outside float64's range.
				`"\\u0000"`, `["\\u0000"]`, `{"k": "\\u0000"}`, `1e309`, `-1e309`, `[1e309]`)
			if i == 0 {
				values = append(values, deep, huge) // once per route: each costs a few MB
			}
			for _, v := range values {
				alone := `{"` + f.name + `": ` + v + `}`
				send(r.Method, path, alone)
				if len(base) > 0 {
					send(r.Method, path, withField(base, f.name, v))
				}
			}
		}
	}
	t.Logf("%d routes, %d requests", routes, sent)
	require.Greater(t, routes, 80)
	require.Empty(t, failures, "%d of %d requests failed:\n%s", len(failures), sent, strings.Join(failures, "\n"))
}

// withField is base's JSON with field set to the JSON text v.
func withField(base map[string]any, field, v string) string {
	m := map[string]any{}
	for k, x := range base {
		m[k] = x
	}
	const marker = "@@HOSTILE@@"
	m[field] = marker
	b, _ := json.Marshal(m)
	return strings.Replace(string(b), `"`+marker+`"`, v, 1)
}

func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, ":") {
			out = append(out, seg[1:])
		}
	}
	return out
}

func queryNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			out = append(out, queryNames(sf.Type)...)
			continue
		}
		if q := sf.Tag.Get("query"); q != "" {
			out = append(out, q)
		}
	}
	return out
}

// sweepIDs maps a resource's collection path (/v1/alerts) to one of its uuids.
type sweepIDs map[string]string

// value is what fillPath put for the parameter p of path.
func (ids sweepIDs) value(path, p string) string {
	switch p {
	case "source_name":
		return "generic"
	case "name":
		return "SWEEP_SECRET"
	}
	if id, ok := ids[collection(path)]; ok {
		return id
	}
	return ids["*"]
}

func collection(path string) string {
	if i := strings.Index(path, "/:"); i >= 0 {
		return path[:i]
	}
	return path
}

// fillPath replaces path parameters with the fixture of the route's collection (a fresh uuid for
// DELETE routes and unknown collections, so nothing the sweep needs is deleted).
func fillPath(r route, ids sweepIDs) string {
	out := r.Path
	for _, p := range pathParams(r.Path) {
		v := ids.value(r.Path, p)
		if r.Method == http.MethodDelete && p == "uuid" {
			v = ids["*"]
		}
		out = strings.Replace(out, ":"+p, v, 1)
	}
	return out
}

// sweepFixtures creates one resource per collection (removed at the end) and returns their uuids
// and valid create bodies to inject hostile fields into.
func sweepFixtures(t *testing.T, ts *testServer, admin string) (sweepIDs, map[string]map[string]any) {
	t.Helper()
	ids := sweepIDs{"*": uuid.NewString()}
	bases := map[string]map[string]any{}
	create := func(coll string, body map[string]any) string {
		r := ts.do(t, http.MethodPost, coll, admin, body)
		require.Contains(t, []int{http.StatusCreated, http.StatusAccepted}, r.Status, "%s: %s", coll, r.Body)
		d := r.JSON(t)["data"].(map[string]any)
		id, _ := d["uuid"].(string)
		if id == "" {
			id, _ = d["alert_uuid"].(string)
		}
		require.NotEmpty(t, id, string(r.Body))
		bases["POST "+coll] = body
		ids[coll] = id
		return id
	}
	suffix := uuid.NewString()[:8]
	rule := create("/v1/detection-rules", map[string]any{"name": "sweep rule " + suffix, "source_rule_id": "SWEEP-" + suffix, "source_name": "generic"})
	doc := create("/v1/context-documents", map[string]any{"title": "sweep " + suffix, "document_type": "sop", "content": "text"})
	mapping := create("/v1/indicator-mappings", map[string]any{"source_name": "generic", "field_path": "sweep_" + suffix, "indicator_type": "ip", "extraction_target": "raw_payload"})
	provider := create("/v1/enrichment-providers", validProviderBody("sweep"+suffix))
	agent := create("/v1/agents", map[string]any{"name": "sweep " + suffix, "endpoint_url": "http://127.0.0.1:9/hook", "description": "sweep"})
	wf := create("/v1/workflows", map[string]any{"name": "sweep " + suffix, "state": "active", "indicator_types": []string{"ip"},
		"approval_mode": "always", "risk_level": "low",
		"steps": []any{map[string]any{"name": "act", "method": "POST", "url": "http://127.0.0.1:9/x", "json_body": map[string]any{"ip": "{{indicator.value}}"}}}})
	key := create("/v1/api-keys", map[string]any{"name": "sweep " + suffix, "scopes": []string{"alerts:read"}})
	integ := create("/v1/source-integrations", map[string]any{"source_name": "generic", "auth_type": "none"})
	alert := create("/v1/alerts", map[string]any{"source_name": "generic", "payload": map[string]any{"title": "sweep " + suffix, "src_ip": "203.0.113.9"}})
	r := ts.do(t, http.MethodPost, "/v1/alerts/"+alert+"/indicators", admin, map[string]any{"indicators": []any{map[string]any{"type": "ip", "value": "203.0.113.9"}}})
	require.Less(t, r.Status, 300, string(r.Body))
	var ind string
	require.NoError(t, ts.Store.DB().NewRaw("SELECT indicator_uuid::text FROM alert_indicators WHERE alert_uuid = ? LIMIT 1", alert).
		Scan(context.Background(), &ind))
	ids["/v1/indicators"] = ind
	ids["/v1/sources"] = mustSourceUUID(t, ts)
	var fe string
	_ = ts.Store.DB().NewRaw("SELECT uuid::text FROM enrichment_field_extractions LIMIT 1").Scan(context.Background(), &fe)
	if fe != "" {
		ids["/v1/enrichment-field-extractions"] = fe
	}
	t.Cleanup(func() {
		for coll, id := range map[string]string{"/v1/detection-rules": rule, "/v1/context-documents": doc, "/v1/indicator-mappings": mapping,
			"/v1/enrichment-providers": provider, "/v1/agents": agent, "/v1/workflows": wf, "/v1/api-keys": key, "/v1/source-integrations": integ} {
			ts.do(t, http.MethodDelete, coll+"/"+id, admin, nil)
		}
	})
	return ids, bases
}

func mustSourceUUID(t *testing.T, ts *testServer) string {
	r := ts.do(t, http.MethodGet, "/v1/sources", mustKey(t, ts.Store, auth.ScopeAdmin), nil)
	require.Equal(t, http.StatusOK, r.Status)
	return r.JSON(t)["data"].([]any)[0].(map[string]any)["uuid"].(string)
}
