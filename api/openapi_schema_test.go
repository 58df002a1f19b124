package api

import (
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// schemaChecker compares the served document's schemas with Go types, resolving $ref through the
// document's own components (so two types sharing one component name cannot pass).
type schemaChecker struct {
	t          *testing.T
	components map[string]any
}

func (sc schemaChecker) resolve(s map[string]any) map[string]any {
	if alts, ok := s["anyOf"].([]any); ok { // nullable: {anyOf: [X, {type: null}]}
		for _, alt := range alts {
			if m := alt.(map[string]any); m["type"] != "null" {
				return sc.resolve(m)
			}
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		c, ok := sc.components[name].(map[string]any)
		require.True(sc.t, ok, "dangling %s", ref)
		return c
	}
	return s
}

// check asserts that schema s documents type t: a struct's properties are exactly its JSON fields and
// its required list exactly its required fields, recursively through lists, maps and pointers.
func (sc schemaChecker) check(where string, s map[string]any, t reflect.Type, seen map[reflect.Type]bool) {
	if reflect.PointerTo(t).Implements(optionalType) {
		inner, _ := reflect.New(t).Interface().(optionalValue).optionalInner()
		t = inner.Type()
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s = sc.resolve(s)
	switch {
	case t == timeType || t == uuidType || t == rawType || t == payloadType:
		return
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		items, ok := s["items"].(map[string]any)
		require.True(sc.t, ok, "%s: %s should be an array schema: %v", where, t, s)
		sc.check(where+"[]", items, t.Elem(), seen)
	case t.Kind() == reflect.Map:
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			sc.check(where+"{}", ap, t.Elem(), seen)
		}
	case t.Kind() == reflect.Struct:
		if seen[t] {
			return
		}
		seen[t] = true
		props, _ := s["properties"].(map[string]any)
		var wantProps, wantRequired []string
		for _, f := range bodyFields(t) {
			wantProps = append(wantProps, f.name)
			if f.required {
				wantRequired = append(wantRequired, f.name)
			}
		}
		var gotProps, gotRequired []string
		for k := range props {
			gotProps = append(gotProps, k)
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				gotRequired = append(gotRequired, r.(string))
			}
		}
		sort.Strings(wantProps)
		sort.Strings(gotProps)
		sort.Strings(wantRequired)
		sort.Strings(gotRequired)
		require.Equal(sc.t, wantProps, gotProps, "%s documents the properties of another type than %s", where, t)
		require.Equal(sc.t, wantRequired, gotRequired, "%s documents the required fields of another type than %s", where, t)
		for _, f := range bodyFields(t) {
			sc.check(where+"."+f.name, props[f.name].(map[string]any), f.typ, seen)
		}
	}
}

func servedDocument(t *testing.T, ts *testServer) map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	return r.JSON(t)
}

// TestOpenAPISchemasAreTheirRoutesTypes: every route's requestBody documents the request type the
// route declares, and its success response the response type, field for field (names and required),
// nested types included. Request and response types named alike (executeWorkflowRequest and
// executeWorkflowResponse) must not share a component.
func TestOpenAPISchemasAreTheirRoutesTypes(t *testing.T) {
	ts := newTestServer(t, nil)
	doc := servedDocument(t, ts)
	sc := schemaChecker{t: t, components: doc["components"].(map[string]any)["schemas"].(map[string]any)}
	paths := doc["paths"].(map[string]any)
	bodies := 0
	for _, r := range ts.Server.routes {
		op := paths[openAPIPath(r.Path)].(map[string]any)[strings.ToLower(r.Method)].(map[string]any)
		where := r.Method + " " + r.Path
		if r.Body != nil {
			rb, ok := op["requestBody"].(map[string]any)
			require.True(t, ok, "%s: no requestBody", where)
			schema := rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			sc.check(where+" request", schema, reflect.TypeOf(r.Body), map[reflect.Type]bool{})
			bodies++
		} else {
			require.NotContains(t, op, "requestBody", where)
		}
		if r.Response == nil || r.ContentType != "" {
			continue
		}
		content := op["responses"].(map[string]any)[strconv.Itoa(r.Status)]
		schema := content.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		if !r.Public {
			schema = schema["properties"].(map[string]any)["data"].(map[string]any)
		}
		typ := reflect.TypeOf(r.Response)
		if r.List {
			typ = reflect.SliceOf(typ)
		}
		sc.check(where+" response", schema, typ, map[reflect.Type]bool{})
	}
	require.GreaterOrEqual(t, bodies, 30, "routes with a JSON body")
}

// TestOpenAPIRequestSchemaIsWhatTheHandlerBinds sends every JSON-body route, through the real stack,
// a body holding each documented property (with a value of no type) plus one unknown field. The
// handler's binder answers 422 before anything happens: the unknown field must be the only
// extra_forbidden (every documented property is a field of the type the handler binds) and no field
// may be missing (every required field of that type is documented).
func TestOpenAPIRequestSchemaIsWhatTheHandlerBinds(t *testing.T) {
	box, err := secretbox.New(testEncryptionKey)
	require.NoError(t, err)
	guard := netguard.NewGuard([]string{"127.0.0.1"})
	ts := newAlertServer(t, func(_ *Config, d *Deps) { // every route wired, as cmd/vigil does
		st := testStore(t)
		d.DetectionRules, d.ContextDocuments, d.Workflows, d.AgentStore = st, st, st, st
		d.Enrichment = EnrichmentDeps{Store: st, Enricher: &fakeEnricher{}, Env: store.MapEnv(nil)}
		d.Secrets = box
		d.Agents = agents.New(st, box, guard, agents.NewHTTPClient(guard))
	})
	doc := servedDocument(t, ts)
	sc := schemaChecker{t: t, components: doc["components"].(map[string]any)["schemas"].(map[string]any)}
	paths := doc["paths"].(map[string]any)
	key := mustKey(t, ts.Store, auth.AllScopes()...)
	// Three handlers load their row before binding: give them one (removed at the end).
	name := uniqueName("probe")
	created := ts.do(t, http.MethodPost, "/v1/enrichment-providers", key, validProviderBody(name))
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	provider := created.JSON(t)["data"].(map[string]any)["uuid"].(string)
	t.Cleanup(func() { ts.do(t, http.MethodDelete, "/v1/enrichment-providers/"+provider, key, nil) })
	created = ts.do(t, http.MethodPost, "/v1/enrichment-field-extractions", key, map[string]any{"provider_name": name, "indicator_type": "ip",
		"source_path": "data.score", "target_key": "score", "value_type": "int"})
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	rows := map[string]string{"/v1/enrichment-providers/": provider,
		"/v1/enrichment-field-extractions/": created.JSON(t)["data"].(map[string]any)["uuid"].(string)}
	probed := 0
	for _, r := range ts.Server.routes {
		if r.Body == nil || reflect.TypeOf(r.Body).Kind() != reflect.Struct {
			continue // POST /v1/ingest/{source_name} takes the source's own payload
		}
		where := r.Method + " " + r.Path
		op := paths[openAPIPath(r.Path)].(map[string]any)[strings.ToLower(r.Method)].(map[string]any)
		schema := sc.resolve(op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any))
		body := map[string]any{"zz_not_a_field": true}
		for name := range schema["properties"].(map[string]any) {
			body[name] = []any{[]any{[]any{}}}
		}
		id := uuid.NewString()
		for prefix, row := range rows {
			if strings.HasPrefix(r.Path, prefix) {
				id = row
			}
		}
		path := strings.ReplaceAll(r.Path, ":uuid", id)
		path = strings.ReplaceAll(path, ":name", "PROBE_SECRET")
		res := ts.do(t, r.Method, path, key, body)
		details := requireValidation(t, res)
		var extra, missing []string
		for i, d := range details {
			switch d["type"] {
			case "extra_forbidden":
				extra = append(extra, locs(details)[i])
			case "missing":
				missing = append(missing, locs(details)[i])
			}
		}
		require.Equal(t, []string{"body.zz_not_a_field"}, extra, "%s: documented properties the handler does not bind: %s", where, res.Body)
		require.Empty(t, missing, "%s: required fields the document does not list", where)
		probed++
	}
	require.GreaterOrEqual(t, probed, 30)
}
