package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// The OpenAPI 3.1 document is generated from the route table and the request/response types (with the
// same struct tags the binder enforces), so it describes exactly the routes that exist.

type schemaBuilder struct {
	components map[string]any
	names      map[reflect.Type]string // the component of each named struct
	taken      map[string]bool         // component names in use: one type each
}

func newSchemaBuilder() *schemaBuilder {
	b := &schemaBuilder{components: map[string]any{}, names: map[reflect.Type]string{}, taken: map[string]bool{}}
	for name := range errorSchemas { // Error, ValidationError, ListMeta: written by hand
		b.taken[name] = true
	}
	return b
}

var pathParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

func openAPIPath(fiberPath string) string { return pathParam.ReplaceAllString(fiberPath, "{$1}") }

// schemaFor returns the JSON Schema of t, registering named structs as components.
func (b *schemaBuilder) schemaFor(t reflect.Type, tag reflect.StructTag) map[string]any {
	s := b.baseSchema(t)
	applyTagSchema(s, tag)
	return s
}

func (b *schemaBuilder) baseSchema(t reflect.Type) map[string]any {
	if reflect.PointerTo(t).Implements(optionalType) {
		inner := reflect.New(t).Interface().(optionalValue)
		v, _ := inner.optionalInner()
		return nullable(b.baseSchema(v.Type()))
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case t == rawType, t == payloadType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(b.baseSchema(t.Elem()))
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": b.baseSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": b.baseSchema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return b.structSchema(t)
		}
		name, ok := b.names[t]
		if !ok {
			name = b.uniqueName(t)
			b.names[t] = name
			b.components[name] = map[string]any{} // placeholder against recursion
			b.components[name] = b.structSchema(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// componentName is a struct's component name: its Go name capitalized, without a "Response" suffix
// (responses are named after what they return: alertResponse → Alert). Request types keep their
// "Request" suffix, so executeWorkflowRequest and executeWorkflowResponse are two components.
func componentName(t reflect.Type) string {
	n := t.Name()
	if i := strings.Index(n, "["); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimSuffix(n, "Response")
	if n == "" {
		return "Object"
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

// uniqueName gives t a component name no other type holds: two types that would share one (the same
// name in two packages, indicatorResponse beside an Indicator) get a numeric suffix in registration
// order, so one type's schema never documents another's.
func (b *schemaBuilder) uniqueName(t reflect.Type) string {
	base := componentName(t)
	name := base
	for i := 2; b.taken[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	b.taken[name] = true
	return name
}

func nullable(s map[string]any) map[string]any {
	if ref, ok := s["$ref"]; ok {
		return map[string]any{"anyOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
	}
	if typ, ok := s["type"].(string); ok {
		s["type"] = []any{typ, "null"}
	}
	return s
}

func (b *schemaBuilder) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range bodyFields(t) {
		props[f.name] = b.schemaFor(f.typ, f.tag)
		if f.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// applyTagSchema copies the binder's tags into the schema.
func applyTagSchema(s map[string]any, tag reflect.StructTag) {
	target := s
	if items, ok := s["items"].(map[string]any); ok && (tag.Get("enum") != "" || tag.Get("minLength") != "" || tag.Get("maxLength") != "") {
		target = items // list of strings: string rules apply to the elements
	}
	if allowed := enumValues(tag); allowed != nil {
		vals := []any{}
		for _, v := range allowed {
			vals = append(vals, v)
		}
		target["enum"] = vals
	}
	for _, k := range []string{"minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"} {
		if v := tag.Get(k); v != "" {
			n, _ := strconv.ParseFloat(v, 64)
			dst := s
			if k == "minLength" || k == "maxLength" {
				dst = target
			}
			dst[k] = n
		}
	}
	if p := tag.Get("pattern"); p != "" {
		target["pattern"] = p
	}
	if d := tag.Get("doc"); d != "" {
		s["description"] = d
	}
	if d := tag.Get("default"); d != "" {
		s["default"] = d
	}
}

func (b *schemaBuilder) queryParams(t reflect.Type) []any {
	var out []any
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			out = append(out, b.queryParams(sf.Type)...)
			continue
		}
		name := sf.Tag.Get("query")
		if name == "" {
			continue
		}
		schema := b.schemaFor(sf.Type, sf.Tag)
		if d := sf.Tag.Get("default"); d != "" {
			if n, err := strconv.Atoi(d); err == nil {
				schema["default"] = n
			}
		}
		p := map[string]any{"name": name, "in": "query", "schema": schema, "required": sf.Tag.Get("required") == "true"}
		if d := sf.Tag.Get("doc"); d != "" {
			p["description"] = d
		}
		if sf.Type.Kind() == reflect.Slice {
			p["style"], p["explode"] = "form", false
			p["description"] = strings.TrimSpace(sf.Tag.Get("doc") + " Comma-separated values.")
		}
		out = append(out, p)
	}
	return out
}

var errorSchemas = map[string]any{
	"Error": map[string]any{"type": "object", "required": []any{"error"}, "properties": map[string]any{
		"error": map[string]any{"type": "object", "required": []any{"code", "message", "details"}, "properties": map[string]any{
			"code": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"}, "details": map[string]any{"type": "object"}}}}},
	"ValidationError": map[string]any{"type": "object", "required": []any{"detail", "error"}, "properties": map[string]any{
		"detail": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"loc", "msg", "type"}, "properties": map[string]any{
			"loc":   map[string]any{"type": "array", "items": map[string]any{"type": []any{"string", "integer"}}},
			"msg":   map[string]any{"type": "string"},
			"type":  map[string]any{"type": "string"},
			"input": map[string]any{},
			"ctx":   map[string]any{"type": "object"}}}},
		"error": map[string]any{"$ref": "#/components/schemas/Error/properties/error"}}},
	"ListMeta": map[string]any{"type": "object", "required": []any{"total", "page", "page_size", "total_pages"}, "properties": map[string]any{
		"total": map[string]any{"type": "integer"}, "page": map[string]any{"type": "integer"},
		"page_size": map[string]any{"type": "integer"}, "total_pages": map[string]any{"type": "integer"}}},
}

func errorResponse(desc string) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
}

// OpenAPI builds the document.
func (s *Server) OpenAPI() map[string]any {
	b := newSchemaBuilder()
	paths := map[string]any{}
	tags := map[string]bool{}
	for _, r := range s.routes {
		p := openAPIPath(r.Path)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		op := map[string]any{"summary": r.Summary, "tags": []any{r.Tag},
			"operationId": strings.ToLower(r.Method) + strings.NewReplacer("/", "_", "{", "", "}", "", "-", "_", ".", "_").Replace(p)}
		if r.Description != "" {
			op["description"] = r.Description
		}
		tags[r.Tag] = true
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}})
		}
		if r.Query != nil {
			params = append(params, b.queryParams(reflect.TypeOf(r.Query))...)
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if r.Body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": b.baseSchema(reflect.TypeOf(r.Body))}}}
		}
		responses := map[string]any{}
		success := map[string]any{"description": http.StatusText(r.Status)}
		switch {
		case r.ContentType != "":
			success["content"] = map[string]any{r.ContentType: map[string]any{}}
		case r.Response != nil && r.Public:
			success["content"] = map[string]any{"application/json": map[string]any{"schema": b.baseSchema(reflect.TypeOf(r.Response))}}
		case r.Response != nil:
			data := b.baseSchema(reflect.TypeOf(r.Response))
			meta := map[string]any{"type": "object"}
			if r.List {
				data = map[string]any{"type": "array", "items": data}
				meta = map[string]any{"$ref": "#/components/schemas/ListMeta"}
			}
			success["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type": "object", "required": []any{"data", "meta"}, "properties": map[string]any{"data": data, "meta": meta}}}}
		}
		responses[strconv.Itoa(r.Status)] = success
		if !r.Public {
			responses["401"] = errorResponse("Missing, invalid, revoked (UNAUTHORIZED) or expired (KEY_EXPIRED) key.")
			responses["403"] = errorResponse("The key lacks a required scope (FORBIDDEN, details.required_scopes).")
			op["security"] = []any{map[string]any{"bearer": []any{}}}
			if len(r.Scopes) > 0 {
				op["x-required-scopes"] = r.Scopes
			}
		}
		if !r.NoRateLimit {
			responses["429"] = errorResponse("Rate limited (RATE_LIMITED); see Retry-After.")
		}
		if r.Body != nil || r.Query != nil || len(params) > 0 {
			responses["422"] = map[string]any{"description": "Validation failed.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/ValidationError"}}}}
		}
		if r.Body != nil {
			responses["400"] = errorResponse("Malformed JSON (INVALID_JSON).")
			responses["413"] = errorResponse("Body too large (PAYLOAD_TOO_LARGE).")
		}
		if strings.Contains(r.Path, ":") {
			responses["404"] = errorResponse("Not found (NOT_FOUND).")
		}
		for _, code := range r.Errors {
			responses[strconv.Itoa(code)] = errorResponse(http.StatusText(code))
		}
		op["responses"] = responses
		item[strings.ToLower(r.Method)] = op
	}
	components := map[string]any{}
	for k, v := range b.components {
		components[k] = v
	}
	for k, v := range errorSchemas {
		components[k] = v
	}
	var tagList []any
	names := make([]string, 0, len(tags))
	for t := range tags {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		tagList = append(tagList, map[string]any{"name": t})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Vigil API", "version": s.cfg.Version,
			"description": "Security alert data platform: alerts, indicators, enrichment, detection rules, context, workflows and approvals."},
		"servers":    []any{map[string]any{"url": "/"}},
		"tags":       tagList,
		"paths":      paths,
		"components": map[string]any{"schemas": components, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "cai_ + 32 characters"}}},
	}
}

type docCache struct {
	once sync.Once
	json []byte
	html []byte
}

func (s *Server) openAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(s.openAPIJSON())
}

func (s *Server) openAPIJSON() []byte {
	s.apiDoc.once.Do(func() {
		doc := s.OpenAPI()
		s.apiDoc.json, _ = json.Marshal(doc)
		s.apiDoc.html = renderDocs(doc)
	})
	return s.apiDoc.json
}

func (s *Server) docs(c *fiber.Ctx) error {
	s.openAPIJSON()
	c.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(s.apiDoc.html)
}
