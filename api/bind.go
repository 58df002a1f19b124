package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/severity"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Request types are plain structs. The binder decodes them field by field so that every problem of a
// request is reported at once, with its location, and reads these struct tags (the OpenAPI document is
// generated from the same tags, so the two cannot drift):
//
//	json:"name"          body field name            query:"name"   query parameter name
//	required:"true"      must be present and not null
//	enum:"a,b"           allowed values (strings, or elements of string lists)
//	minLength/maxLength  string length in characters    minItems/maxItems  list length
//	minimum/maximum      numeric bounds                 pattern            regular expression
//	default:"v"          query default (documentation and value)
//	doc:"text"           description in the OpenAPI document
//
// Pointers and Optional[T] are nullable; null on any other field is a type error. Unknown body fields
// are rejected (extra_forbidden); unknown query parameters are ignored.
//
// Hostile characters (validate.HostileText: NUL, lone UTF-16 surrogates, invalid UTF-8), which
// Postgres cannot store, are refused here for every field, query parameter and path parameter (422
// value_error at their location), so no handler meets one. The one exception is a source payload
// (sourcePayload), which the ingest service stores with them replaced rather than lose the alert.

// Optional distinguishes an absent field from an explicit null, for PATCH fields where null means
// "clear".
type Optional[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON records presence; null sets Null.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// kit is the field as the domain services take it.
func (o Optional[T]) kit() optional.Value[T] {
	return optional.Value[T]{Set: o.Set, Null: o.Null, Value: o.Value}
}

type optionalValue interface{ optionalInner() (reflect.Value, bool) }

func (o *Optional[T]) optionalInner() (reflect.Value, bool) {
	return reflect.ValueOf(&o.Value).Elem(), o.Set && !o.Null
}

// sourcePayload is a source's payload inside a request body, kept as received (json.RawMessage
// otherwise): its hostile characters are the ingest service's to replace, not the binder's to refuse.
type sourcePayload []byte

// MarshalJSON writes the payload as is (an empty one as null).
func (p sourcePayload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	return p, nil
}

// Validator is implemented by request types with rules beyond the tags. Locations are relative to the
// request body (or query) and get the "body"/"query" prefix from the binder.
type Validator interface {
	Validate() validate.Errors
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	uuidType     = reflect.TypeFor[uuid.UUID]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	payloadType  = reflect.TypeFor[sourcePayload]()
	optionalType = reflect.TypeFor[optionalValue]()
)

var patternCache sync.Map // string → *regexp.Regexp; patterns are constants from struct tags

func compiledPattern(p string) *regexp.Regexp {
	if re, ok := patternCache.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patternCache.Store(p, re)
	return re
}

// bindBody decodes the JSON request body into dst (a pointer to a struct) and validates it.
func bindBody(c *fiber.Ctx, dst any) error {
	// The raw bytes: c.Body() would inflate a compressed body without bound.
	body := c.Request().Body()
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Compressed request bodies are not accepted.")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		var errs validate.Errors
		errs.Add([]any{"body"}, validate.TypeMissing, "Request body is required.", nil)
		return errs
	}
	if ct := string(c.Request().Header.ContentType()); ct != "" && !isJSONContentType(ct) {
		return errUnsupportedMediaType()
	}
	return decodeJSONObject(body, dst, []any{"body"})
}

// decodeJSONObject decodes raw JSON into dst, reporting problems under prefix.
func decodeJSONObject(raw []byte, dst any, prefix []any) error {
	if !json.Valid(raw) {
		return errInvalidJSON(raw)
	}
	var errs validate.Errors
	rv := reflect.ValueOf(dst).Elem()
	decodeInto(raw, rv, prefix, &errs)
	if len(errs) == 0 {
		if v, ok := dst.(Validator); ok {
			errs.Merge(prefix, v.Validate())
		}
	}
	return errs.Err()
}

func isJSONContentType(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// decodeInto decodes raw (known valid JSON) into v, a settable value.
func decodeInto(raw json.RawMessage, v reflect.Value, loc []any, errs *validate.Errors) {
	t := v.Type()
	isNull := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	switch {
	case reflect.PointerTo(t).Implements(optionalType):
		opt := v.Addr().Interface().(interface{ UnmarshalJSON([]byte) error })
		if isNull {
			_ = opt.UnmarshalJSON(raw)
			return
		}
		inner, _ := v.Addr().Interface().(optionalValue).optionalInner()
		v.FieldByName("Set").SetBool(true)
		decodeInto(raw, inner, loc, errs)
		return
	case t.Kind() == reflect.Pointer:
		if isNull {
			v.Set(reflect.Zero(t))
			return
		}
		nv := reflect.New(t.Elem())
		decodeInto(raw, nv.Elem(), loc, errs)
		v.Set(nv)
		return
	case t == payloadType:
		v.SetBytes(append([]byte(nil), raw...))
		return
	}
	if (t.Kind() != reflect.Struct || t == timeType) && (t.Kind() != reflect.Slice || t.Elem().Kind() == reflect.Uint8) {
		// A leaf (structs and lists are walked down to theirs): refused whole when it holds a hostile
		// character, wherever in it.
		if _, hostile := validate.SanitizeJSON(raw); hostile.Count > 0 {
			errs.Add(validate.Join(loc, hostile.Loc...), validate.TypeValue, hostile.Msg, nil)
			return
		}
	}
	switch {
	case t == rawType:
		v.SetBytes(append([]byte(nil), raw...))
		return
	case t.Kind() == reflect.Interface:
		if isNull {
			return
		}
		var x any
		_ = json.Unmarshal(raw, &x)
		v.Set(reflect.ValueOf(x))
		return
	}
	if isNull {
		errs.Add(loc, typeOf(t), "Input should not be null.", nil)
		return
	}
	switch {
	case t.Kind() == reflect.Struct && t != timeType:
		decodeStruct(raw, v, loc, errs)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			errs.Add(loc, validate.TypeList, "Input should be a valid list.", rawInput(raw))
			return
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			decodeInto(item, s.Index(i), validate.Join(loc, i), errs)
		}
		v.Set(s)
	default:
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			errs.Add(loc, typeOf(t), typeMessage(t), rawInput(raw))
		}
	}
}

func decodeStruct(raw json.RawMessage, v reflect.Value, loc []any, errs *validate.Errors) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		errs.Add(loc, validate.TypeObject, "Input should be a valid object.", rawInput(raw))
		return
	}
	known := map[string]bool{}
	for _, f := range bodyFields(v.Type()) {
		known[f.name] = true
		fv := v.FieldByIndex(f.index)
		floc := validate.Join(loc, f.name)
		item, present := obj[f.name]
		if !present || (f.required && bytes.Equal(bytes.TrimSpace(item), []byte("null"))) {
			if f.required {
				errs.Add(floc, validate.TypeMissing, "Field required.", nil)
			}
			continue
		}
		before := len(*errs)
		decodeInto(item, fv, floc, errs)
		if !hasErrorAt(*errs, before, floc) {
			// Element errors do not hide a list-level problem (too many items); elements that
			// failed to decode are not checked again.
			failed := erroredLocs(*errs, before)
			checkTags(fv, f.tag, floc, errs, failed)
		}
	}
	for k := range obj {
		if !known[k] {
			errs.Add(validate.Join(loc, k), validate.TypeExtraForbidden, "Extra inputs are not permitted.", nil)
		}
	}
}

// erroredLocs returns the locations of errs[from:].
func erroredLocs(errs validate.Errors, from int) map[string]bool {
	out := map[string]bool{}
	for _, e := range errs[from:] {
		out[validate.LocString(e.Loc)] = true
	}
	return out
}

// hasErrorAt reports whether errs[from:] holds an error located exactly at loc.
func hasErrorAt(errs validate.Errors, from int, loc []any) bool {
	for _, e := range errs[from:] {
		if validate.LocString(e.Loc) == validate.LocString(loc) {
			return true
		}
	}
	return false
}

type fieldInfo struct {
	name     string
	index    []int
	tag      reflect.StructTag
	required bool
	typ      reflect.Type
}

var fieldCache sync.Map // reflect.Type → []fieldInfo (json fields)

// bodyFields lists the JSON fields of struct type t, flattening embedded structs.
func bodyFields(t reflect.Type) []fieldInfo {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]fieldInfo)
	}
	var out []fieldInfo
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("json") == "" {
			for _, inner := range bodyFields(sf.Type) {
				inner.index = append([]int{i}, inner.index...)
				out = append(out, inner)
			}
			continue
		}
		name := strings.Split(sf.Tag.Get("json"), ",")[0]
		if !sf.IsExported() || name == "-" || name == "" {
			continue
		}
		out = append(out, fieldInfo{name: name, index: []int{i}, tag: sf.Tag, required: sf.Tag.Get("required") == "true", typ: sf.Type})
	}
	fieldCache.Store(t, out)
	return out
}

// checkTags applies the enum/length/range/pattern tags to a decoded value.
func checkTags(v reflect.Value, tag reflect.StructTag, loc []any, errs *validate.Errors, skip map[string]bool) {
	if opt, ok := v.Addr().Interface().(optionalValue); ok {
		inner, set := opt.optionalInner()
		if !set {
			return
		}
		v = inner
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		checkString(v.String(), tag, loc, errs)
	case reflect.Int, reflect.Int32, reflect.Int64:
		checkNumber(float64(v.Int()), tag, loc, errs)
	case reflect.Float64, reflect.Float32:
		checkNumber(v.Float(), tag, loc, errs)
	case reflect.Slice:
		if v.Type() == rawType {
			return
		}
		n := v.Len()
		if s := tag.Get("minItems"); s != "" {
			if m, _ := strconv.Atoi(s); n < m {
				errs.AddCtx(loc, validate.TypeTooShort, fmt.Sprintf("List should have at least %d item(s).", m), nil, map[string]any{"min_length": m})
			}
		}
		if s := tag.Get("maxItems"); s != "" {
			if m, _ := strconv.Atoi(s); n > m {
				errs.AddCtx(loc, validate.TypeTooLong, fmt.Sprintf("List should have at most %d item(s).", m), nil, map[string]any{"max_length": m})
			}
		}
		if v.Type().Elem().Kind() == reflect.String {
			for i := range n {
				if eloc := validate.Join(loc, i); !skip[validate.LocString(eloc)] {
					checkString(v.Index(i).String(), tag, eloc, errs)
				}
			}
		}
	}
}

// enumValues is the enum a struct tag declares: a comma-separated list, or "$name" for a vocabulary
// its owner (a domain package, the store or kit/) exports (so the list is written once, there, and the
// binder and the OpenAPI document read the same values). A literal list is only for a vocabulary no
// owner exports.
func enumValues(tag reflect.StructTag) []string {
	switch e := tag.Get("enum"); e {
	case "":
		return nil
	case "$indicator_type":
		return indicators.TypeNames()
	case "$malice":
		return indicators.MaliceNames()
	case "$severity":
		return severity.Names()
	case "$alert_status":
		return store.AlertStatuses()
	case "$close_classification":
		return store.CloseClassifications()
	case "$case_status":
		return store.CaseStatuses()
	case "$actor_type":
		return store.ActorTypes()
	case "$audit_action":
		return audit.Actions()
	case "$audit_resource_type":
		return audit.ResourceTypes()
	case "$run_status":
		return store.RunStatuses()
	case "$enrichment_status":
		return store.EnrichmentStatuses()
	case "$alert_sort":
		return store.AlertSortFields()
	case "$case_sort":
		return store.CaseSortFields()
	case "$document_type":
		return store.DocumentTypes()
	case "$provider_auth_type":
		return store.AuthTypes()
	case "$source_auth_type":
		return sources.AuthTypes()
	case "$finding_confidence":
		return alerts.Confidences()
	case "$extraction_value_type":
		return httpsteps.ValueTypes()
	case "$approval_channel":
		return approvals.NotifierTypes()
	case "$scope":
		return auth.AllScopes()
	case "$timeline_kind":
		return timeline.Kinds()
	case "$risk_level":
		return responses.RiskLevels()
	case "$workflow_type":
		return responses.WorkflowTypes()
	case "$agent_event":
		return agents.Events()
	case "$delivery_event":
		return append(agents.Events(), agents.EventTest)
	case "$workflow_state":
		return store.WorkflowStates()
	case "$approval_mode":
		return approvals.Modes()
	case "$trigger_source":
		return approvals.TriggerSources()
	case "$approval_status":
		return store.ApprovalStatuses()
	case "$delivery_status":
		return store.DeliveryStatuses()
	case "$key_type":
		return auth.KeyTypes()
	case "$extraction_target":
		return indicators.TargetNames()
	default:
		return strings.Split(e, ",")
	}
}

func checkString(s string, tag reflect.StructTag, loc []any, errs *validate.Errors) {
	if allowed := enumValues(tag); allowed != nil {
		if !containsString(allowed, s) {
			errs.AddCtx(loc, validate.TypeEnum, "Input should be one of: "+strings.Join(allowed, ", ")+".", s, map[string]any{"expected": allowed})
			return
		}
	}
	n := len([]rune(s))
	if m, ok := intTag(tag, "minLength"); ok && n < m {
		errs.AddCtx(loc, validate.TypeStringTooShort, fmt.Sprintf("String should have at least %d character(s).", m), validate.Truncate(s), map[string]any{"min_length": m})
	}
	if m, ok := intTag(tag, "maxLength"); ok && n > m {
		errs.AddCtx(loc, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d character(s).", m), validate.Truncate(s), map[string]any{"max_length": m})
	}
	if p := tag.Get("pattern"); p != "" && !compiledPattern(p).MatchString(s) {
		errs.AddCtx(loc, validate.TypePattern, "String should match pattern '"+p+"'.", validate.Truncate(s), map[string]any{"pattern": p})
	}
}

func checkNumber(f float64, tag reflect.StructTag, loc []any, errs *validate.Errors) {
	if s := tag.Get("minimum"); s != "" {
		if m, _ := strconv.ParseFloat(s, 64); f < m {
			errs.AddCtx(loc, validate.TypeGreaterThanEqual, "Input should be greater than or equal to "+s+".", f, map[string]any{"ge": m})
		}
	}
	if s := tag.Get("maximum"); s != "" {
		if m, _ := strconv.ParseFloat(s, 64); f > m {
			errs.AddCtx(loc, validate.TypeLessThanEqual, "Input should be less than or equal to "+s+".", f, map[string]any{"le": m})
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		errs.Add(loc, validate.TypeFloat, "Input should be a finite number.", nil)
	}
}

func intTag(tag reflect.StructTag, name string) (int, bool) {
	s := tag.Get(name)
	if s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func typeOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return validate.TypeDateTime
	case t == uuidType:
		return validate.TypeUUID
	}
	switch t.Kind() {
	case reflect.String:
		return validate.TypeString
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return validate.TypeInt
	case reflect.Float32, reflect.Float64:
		return validate.TypeFloat
	case reflect.Bool:
		return validate.TypeBool
	case reflect.Slice, reflect.Array:
		return validate.TypeList
	default:
		return validate.TypeObject
	}
}

func typeMessage(t reflect.Type) string {
	switch typeOf(t) {
	case validate.TypeDateTime:
		return "Input should be an RFC 3339 date-time with a timezone offset."
	case validate.TypeUUID:
		return "Input should be a valid UUID."
	case validate.TypeString:
		return "Input should be a valid string."
	case validate.TypeInt:
		return "Input should be a valid integer."
	case validate.TypeFloat:
		return "Input should be a valid number."
	case validate.TypeBool:
		return "Input should be a valid boolean."
	case validate.TypeList:
		return "Input should be a valid list."
	default:
		return "Input should be a valid object."
	}
}

// rawInput returns a small decoded form of raw for the error's input field.
func rawInput(raw json.RawMessage) any {
	if len(raw) > 256 {
		return string(raw[:256]) + "…"
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return string(raw)
	}
	return x
}

// bindQuery decodes query parameters into dst (a pointer to a struct with query tags).
func bindQuery(c *fiber.Ctx, dst any) error {
	var errs validate.Errors
	args := c.Request().URI().QueryArgs()
	values := func(name string) []string {
		var out []string
		for _, b := range args.PeekMulti(name) {
			out = append(out, string(b))
		}
		return out
	}
	decodeQueryStruct(reflect.ValueOf(dst).Elem(), values, &errs)
	if len(errs) == 0 {
		if v, ok := dst.(Validator); ok {
			errs.Merge([]any{"query"}, v.Validate())
		}
	}
	return errs.Err()
}

func decodeQueryStruct(v reflect.Value, values func(string) []string, errs *validate.Errors) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		fv := v.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			decodeQueryStruct(fv, values, errs)
			continue
		}
		name := sf.Tag.Get("query")
		if name == "" || !sf.IsExported() {
			continue
		}
		loc := []any{"query", name}
		raw := values(name)
		if len(raw) == 0 {
			if d := sf.Tag.Get("default"); d != "" {
				raw = []string{d}
			} else {
				if sf.Tag.Get("required") == "true" {
					errs.Add(loc, validate.TypeMissing, "Field required.", nil)
				}
				continue
			}
		}
		if hostileQuery(raw, loc, errs) {
			continue
		}
		before := len(*errs)
		setQueryValue(fv, raw, loc, errs)
		if len(*errs) == before {
			checkTags(fv, sf.Tag, loc, errs, nil)
		}
	}
}

func setQueryValue(v reflect.Value, raw []string, loc []any, errs *validate.Errors) {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		nv := reflect.New(t.Elem())
		setQueryValue(nv.Elem(), raw, loc, errs)
		v.Set(nv)
		return
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String {
		var out []string
		for _, r := range raw {
			for _, part := range strings.Split(r, ",") {
				if part = strings.TrimSpace(part); part != "" {
					out = append(out, part)
				}
			}
		}
		v.Set(reflect.ValueOf(out))
		return
	}
	s := strings.TrimSpace(raw[len(raw)-1])
	var err error
	switch {
	case t == timeType:
		var tm time.Time
		if tm, err = time.Parse(time.RFC3339Nano, s); err == nil {
			v.Set(reflect.ValueOf(tm.UTC()))
		}
	case t == uuidType:
		var id uuid.UUID
		if id, err = uuid.Parse(s); err == nil {
			v.Set(reflect.ValueOf(id))
		}
	default:
		switch t.Kind() {
		case reflect.String:
			v.SetString(s)
		case reflect.Int, reflect.Int64, reflect.Int32:
			var n int64
			if n, err = strconv.ParseInt(s, 10, 64); err == nil {
				v.SetInt(n)
			}
		case reflect.Float64:
			var f float64
			if f, err = strconv.ParseFloat(s, 64); err == nil {
				v.SetFloat(f)
			}
		case reflect.Bool:
			var b bool
			if b, err = strconv.ParseBool(s); err == nil {
				v.SetBool(b)
			}
		default:
			err = errors.New("unsupported query type")
		}
	}
	if err != nil {
		typ := typeOf(t)
		switch typ {
		case validate.TypeInt:
			typ = validate.TypeIntParsing
		case validate.TypeBool:
			typ = validate.TypeBoolParsing
		}
		errs.Add(loc, typ, typeMessage(t), validate.Truncate(s))
	}
}

// hostileQuery reports (and records at loc) a query value holding a hostile character.
func hostileQuery(raw []string, loc []any, errs *validate.Errors) bool {
	for _, r := range raw {
		if msg := validate.HostileText(r); msg != "" {
			errs.Add(loc, validate.TypeValue, msg, nil)
			return true
		}
	}
	return false
}

// pathText is the path parameter name, refused (422 at ["path", name]) when it holds a hostile
// character.
func pathText(c *fiber.Ctx, name string) (string, error) {
	s := c.Params(name)
	if msg := validate.HostileText(s); msg != "" {
		var errs validate.Errors
		errs.Add([]any{"path", name}, validate.TypeValue, msg, nil)
		return "", errs
	}
	return s, nil
}

// pathUUID parses the path parameter name as a UUID (422 at ["path", name] otherwise).
func pathUUID(c *fiber.Ctx, name string) (uuid.UUID, error) {
	s := c.Params(name)
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		var errs validate.Errors
		errs.Add([]any{"path", name}, validate.TypeUUID, "Input should be a valid UUID.", validate.Truncate(s))
		return uuid.Nil, errs
	}
	return id, nil
}
