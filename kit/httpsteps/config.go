// Package httpsteps is Vigil's multi-step HTTP engine: the http_config of enrichment providers and the
// steps of response workflows. It parses and validates step configurations, renders {{ }} templates
// against caller-supplied variables, builds one request per step, executes it through an injected
// Doer (the SSRF-guarded client in production), records each step with secrets masked, classifies
// failures as retryable or permanent, extracts fields from the final response and applies malice
// rules. It holds no database or Temporal code: an activity runs one step with BuildRequest and
// Runner.Do; dry runs and tests run every step with Runner.Run.
package httpsteps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/vigil-soc/vigil/kit/validate"
)

// Configuration limits and defaults.
const (
	MaxSteps              = 20
	MaxStepNameLen        = 64
	MaxURLTemplateLen     = 8 << 10
	MaxHeaders            = 50
	MaxParams             = 100
	DefaultMethod         = "GET"
	DefaultTimeoutSeconds = 30
	MinTimeoutSeconds     = 1
	MaxTimeoutSeconds     = 300
)

var (
	stepNameRE   = regexp.MustCompile(`^[a-zA-Z0-9_]+$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
)

// IndicatorTypes are the indicator types url_templates_by_type may name.
func IndicatorTypes() []string {
	return []string{"ip", "domain", "hash_md5", "hash_sha1", "hash_sha256", "url", "email", "account"}
}

// Config is a provider's http_config or a workflow's list of steps.
type Config struct {
	Steps              []Step            `json:"steps"`
	URLTemplatesByType map[string]string `json:"url_templates_by_type,omitempty"`
}

// Step is one HTTP request. String fields and map values may hold {{ }} templates; JSONBody's string
// values too (keys are literal).
type Step struct {
	Name           string            `json:"name"`
	Method         string            `json:"method"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers,omitempty"`
	QueryParams    map[string]string `json:"query_params,omitempty"`
	JSONBody       any               `json:"json_body,omitempty"`
	FormBody       map[string]string `json:"form_body,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	ExpectedStatus []int             `json:"expected_status"`
	NotFoundStatus []int             `json:"not_found_status"`
	Optional       bool              `json:"optional"`
	// FollowRedirects lets the step follow up to MaxRedirects redirects (default false: a 3xx is the
	// step's answer). Step headers, credentials and a body are only sent along to the same origin.
	FollowRedirects bool `json:"follow_redirects,omitempty"`
	// Workflow steps only (ParseWorkflowConfig): Kind is KindHTTP (the default, "") or KindCode;
	// When and ForEach are CEL expressions; Code is the Starlark source of a code step.
	Kind    string `json:"kind,omitempty"`
	When    string `json:"when,omitempty"`
	ForEach string `json:"for_each,omitempty"`
	Code    string `json:"code,omitempty"`
}

// Step kinds.
const (
	StepKindHTTP = "http"
	StepKindCode = "code"
)

// IsCode reports a code step.
func (st Step) IsCode() bool { return st.Kind == StepKindCode }

// itemAllowed marks, in the earlier-steps map a step's templates are checked with, that the step
// has for_each, so item may be named (a key no step name can take).
const itemAllowed = "#item"

// ParseConfig decodes and validates an http_config. It reports every problem, with locations relative
// to the config (["steps", 1, "url"]), and returns the config with defaults applied (method GET,
// timeout 30, expected_status [200], not_found_status []).
func ParseConfig(raw json.RawMessage) (Config, validate.Errors) {
	return parseConfig(raw, nil)
}

// ParseWorkflowConfig is ParseConfig for a workflow's steps, which may also carry kind, when,
// for_each and code: expressions and code are compiled, and a problem is reported at its field with
// the step's name and the line and column in ctx.
func ParseWorkflowConfig(raw json.RawMessage) (Config, validate.Errors) {
	env, err := newExprEnv()
	if err != nil {
		var errs validate.Errors
		errs.Add([]any{}, validate.TypeValue, err.Error(), nil)
		return Config{}, errs
	}
	return parseConfig(raw, env)
}

// parseConfig parses a config; exprs is nil for providers (no decisions) and the expression
// environment for workflows.
func parseConfig(raw json.RawMessage, exprs *exprEnv) (Config, validate.Errors) {
	var errs validate.Errors
	root, ok := decodeJSON(raw, &errs)
	if !ok {
		return Config{}, errs
	}
	obj, ok := root.(map[string]any)
	if !ok {
		errs.Add([]any{}, validate.TypeObject, "http_config must be an object", nil)
		return Config{}, errs
	}
	rejectUnknown(obj, []any{}, &errs, "steps", "url_templates_by_type")

	var cfg Config
	rawSteps, present := obj["steps"]
	switch list, isList := rawSteps.([]any); {
	case !present || rawSteps == nil:
		errs.Add([]any{"steps"}, validate.TypeMissing, "steps is required", nil)
	case !isList:
		errs.Add([]any{"steps"}, validate.TypeList, "steps must be a list", nil)
	case len(list) == 0:
		errs.Add([]any{"steps"}, validate.TypeTooShort, "at least one step is required", nil)
	case len(list) > MaxSteps:
		errs.Add([]any{"steps"}, validate.TypeTooLong, fmt.Sprintf("at most %d steps are allowed", MaxSteps), len(list))
	default:
		seen := map[string]int{}
		for i, rs := range list {
			loc := []any{"steps", i}
			st, ok := parseStep(rs, loc, seen, &errs, exprs)
			if ok && st.Name != "" {
				if _, dup := seen[st.Name]; dup {
					errs.Add(validate.Join(loc, "name"), validate.TypeValue, fmt.Sprintf("duplicate step name %q", st.Name), st.Name)
				} else {
					seen[st.Name] = i
				}
			}
			cfg.Steps = append(cfg.Steps, st)
		}
	}

	if rawTypes, present := obj["url_templates_by_type"]; present && rawTypes != nil {
		m, ok := rawTypes.(map[string]any)
		if !ok {
			errs.Add([]any{"url_templates_by_type"}, validate.TypeObject, "url_templates_by_type must be an object", nil)
		} else {
			cfg.URLTemplatesByType = map[string]string{}
			known := IndicatorTypes()
			for _, k := range sortedKeys(m) {
				loc := []any{"url_templates_by_type", k}
				if !contains(known, k) {
					errs.AddCtx(loc, validate.TypeEnum, "unknown indicator type "+strconvQuote(k), k,
						map[string]any{"expected": strings.Join(known, ", ")})
					continue
				}
				s, ok := m[k].(string)
				if !ok {
					errs.Add(loc, validate.TypeString, "url template must be a string", nil)
					continue
				}
				checkURLTemplate(s, loc, map[string]int{}, &errs)
				cfg.URLTemplatesByType[k] = s
			}
		}
	}
	if len(errs) > 0 {
		return Config{}, errs
	}
	return cfg, nil
}

func decodeJSON(raw json.RawMessage, errs *validate.Errors) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		errs.Add([]any{}, validate.TypeMissing, "value is required", nil)
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		errs.Add([]any{}, "json_invalid", "invalid JSON: "+err.Error(), nil)
		return nil, false
	}
	if dec.More() {
		errs.Add([]any{}, "json_invalid", "invalid JSON: trailing data after the value", nil)
		return nil, false
	}
	return v, true
}

func parseStep(raw any, loc []any, earlier map[string]int, errs *validate.Errors, exprs *exprEnv) (Step, bool) {
	obj, ok := raw.(map[string]any)
	if !ok {
		errs.Add(loc, validate.TypeObject, "step must be an object", nil)
		return Step{}, false
	}
	known := []string{"name", "method", "url", "headers", "query_params", "json_body",
		"form_body", "timeout_seconds", "expected_status", "not_found_status", "optional", "follow_redirects"}
	if exprs != nil {
		known = append(known, "kind", "when", "for_each", "code")
	}
	rejectUnknown(obj, loc, errs, known...)
	st := Step{Method: DefaultMethod, TimeoutSeconds: DefaultTimeoutSeconds, ExpectedStatus: []int{200}, NotFoundStatus: []int{}}
	if exprs != nil {
		var isCode bool
		earlier, isCode = parseDecisions(obj, loc, earlier, errs, exprs, &st)
		if isCode {
			return parseCodeStep(obj, loc, errs, st)
		}
	}

	st.Name = parseStepName(obj, loc, errs)
	if v, present := obj["method"]; present && v != nil {
		m, ok := v.(string)
		if !ok {
			errs.Add(validate.Join(loc, "method"), validate.TypeString, "method must be a string", nil)
		} else {
			m = strings.ToUpper(strings.TrimSpace(m))
			if !contains(Methods(), m) {
				errs.AddCtx(validate.Join(loc, "method"), validate.TypeEnum, "unsupported method "+strconvQuote(m), v,
					map[string]any{"expected": strings.Join(Methods(), ", ")})
			} else {
				st.Method = m
			}
		}
	}
	if u, ok := requiredString(obj, "url", loc, errs); ok {
		checkURLTemplate(u, validate.Join(loc, "url"), earlier, errs)
		st.URL = u
	}
	st.Headers = stringMap(obj, "headers", loc, earlier, errs, true)
	st.QueryParams = stringMap(obj, "query_params", loc, earlier, errs, false)
	st.FormBody = stringMap(obj, "form_body", loc, earlier, errs, false)
	if v, present := obj["json_body"]; present && v != nil {
		checkJSONTemplates(v, validate.Join(loc, "json_body"), earlier, errs)
		st.JSONBody = v
	}
	if st.JSONBody != nil && obj["form_body"] != nil {
		errs.Add(validate.Join(loc, "form_body"), validate.TypeValue, "only one of json_body and form_body may be set", nil)
	}
	if v, present := obj["timeout_seconds"]; present && v != nil {
		if n, ok := intValue(v, validate.Join(loc, "timeout_seconds"), errs); ok {
			switch {
			case n < MinTimeoutSeconds:
				errs.AddCtx(validate.Join(loc, "timeout_seconds"), validate.TypeGreaterThanEqual, fmt.Sprintf("must be at least %d", MinTimeoutSeconds), n, map[string]any{"ge": MinTimeoutSeconds})
			case n > MaxTimeoutSeconds:
				errs.AddCtx(validate.Join(loc, "timeout_seconds"), validate.TypeLessThanEqual, fmt.Sprintf("must be at most %d", MaxTimeoutSeconds), n, map[string]any{"le": MaxTimeoutSeconds})
			default:
				st.TimeoutSeconds = n
			}
		}
	}
	if codes, ok := statusList(obj, "expected_status", loc, errs); ok {
		if len(codes) == 0 {
			errs.Add(validate.Join(loc, "expected_status"), validate.TypeTooShort, "expected_status must not be empty", nil)
		} else {
			st.ExpectedStatus = codes
		}
	}
	if codes, ok := statusList(obj, "not_found_status", loc, errs); ok {
		st.NotFoundStatus = codes
	}
	for _, c := range st.NotFoundStatus {
		if containsInt(st.ExpectedStatus, c) {
			errs.Add(validate.Join(loc, "not_found_status"), validate.TypeValue, fmt.Sprintf("status %d is also in expected_status", c), c)
		}
	}
	if v, present := obj["optional"]; present && v != nil {
		b, ok := v.(bool)
		if !ok {
			errs.Add(validate.Join(loc, "optional"), validate.TypeBool, "optional must be a boolean", nil)
		}
		st.Optional = b
	}
	if v, present := obj["follow_redirects"]; present && v != nil {
		b, ok := v.(bool)
		if !ok {
			errs.Add(validate.Join(loc, "follow_redirects"), validate.TypeBool, "follow_redirects must be a boolean", nil)
		}
		st.FollowRedirects = b
	}
	return st, true
}

func parseStepName(obj map[string]any, loc []any, errs *validate.Errors) string {
	name, ok := requiredString(obj, "name", loc, errs)
	if !ok {
		return ""
	}
	switch {
	case len(name) > MaxStepNameLen:
		errs.Add(validate.Join(loc, "name"), validate.TypeStringTooLong, fmt.Sprintf("name is longer than %d characters", MaxStepNameLen), name)
	case !stepNameRE.MatchString(name):
		errs.AddCtx(validate.Join(loc, "name"), validate.TypePattern, "name must match ^[a-zA-Z0-9_]+$", name,
			map[string]any{"pattern": "^[a-zA-Z0-9_]+$"})
	default:
		return name
	}
	return ""
}

// Methods are the accepted HTTP methods.
func Methods() []string {
	return []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
}

func requiredString(obj map[string]any, key string, loc []any, errs *validate.Errors) (string, bool) {
	v, present := obj[key]
	if !present || v == nil {
		errs.Add(validate.Join(loc, key), validate.TypeMissing, key+" is required", nil)
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		errs.Add(validate.Join(loc, key), validate.TypeString, key+" must be a string", nil)
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		errs.Add(validate.Join(loc, key), validate.TypeStringTooShort, key+" must not be empty", s)
		return "", false
	}
	return s, true
}

func stringMap(obj map[string]any, key string, loc []any, earlier map[string]int, errs *validate.Errors, headers bool) map[string]string {
	v, present := obj[key]
	if !present || v == nil {
		return nil
	}
	kloc := validate.Join(loc, key)
	m, ok := v.(map[string]any)
	if !ok {
		errs.Add(kloc, validate.TypeObject, key+" must be an object", nil)
		return nil
	}
	limit := MaxParams
	if headers {
		limit = MaxHeaders
	}
	if len(m) > limit {
		errs.Add(kloc, validate.TypeTooLong, fmt.Sprintf("at most %d entries are allowed", limit), len(m))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		eloc := validate.Join(kloc, k)
		if headers && !headerNameRE.MatchString(k) {
			errs.Add(eloc, validate.TypeValue, "invalid header name "+strconvQuote(k), k)
			continue
		}
		if !headers && k == "" {
			errs.Add(eloc, validate.TypeValue, "empty parameter name", k)
			continue
		}
		var s string
		switch x := m[k].(type) {
		case string:
			s = x
		case json.Number:
			s = x.String()
		case bool:
			if x {
				s = "true"
			} else {
				s = "false"
			}
		default:
			errs.Add(eloc, validate.TypeString, "value must be a string", nil)
			continue
		}
		checkTemplate(s, eloc, earlier, errs)
		out[k] = s
	}
	return out
}

func statusList(obj map[string]any, key string, loc []any, errs *validate.Errors) ([]int, bool) {
	v, present := obj[key]
	if !present || v == nil {
		return nil, false
	}
	kloc := validate.Join(loc, key)
	list, ok := v.([]any)
	if !ok {
		errs.Add(kloc, validate.TypeList, key+" must be a list of status codes", nil)
		return nil, false
	}
	if len(list) > 100 {
		errs.Add(kloc, validate.TypeTooLong, "at most 100 status codes are allowed", len(list))
		return nil, false
	}
	out := make([]int, 0, len(list))
	good := true
	for i, el := range list {
		n, ok := intValue(el, validate.Join(kloc, i), errs)
		if !ok {
			good = false
			continue
		}
		if n < 100 || n > 599 {
			errs.Add(validate.Join(kloc, i), validate.TypeValue, "status code must be between 100 and 599", n)
			good = false
			continue
		}
		if !containsInt(out, n) {
			out = append(out, n)
		}
	}
	return out, good
}

func intValue(v any, loc []any, errs *validate.Errors) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		errs.Add(loc, validate.TypeInt, "value must be an integer", nil)
		return 0, false
	}
	n, err := num.Int64()
	if err != nil || n > 1<<31 || n < -(1<<31) {
		errs.Add(loc, validate.TypeIntParsing, "value must be an integer", num.String())
		return 0, false
	}
	return int(n), true
}

func rejectUnknown(obj map[string]any, loc []any, errs *validate.Errors, known ...string) {
	for _, k := range sortedKeys(obj) {
		if !contains(known, k) {
			errs.Add(validate.Join(loc, k), validate.TypeExtraForbidden, "unknown field "+strconvQuote(k), nil)
		}
	}
}

// checkTemplate parses s and checks its variable references: a known namespace, and steps.<name>
// only for a step that comes earlier (earlier holds the names of the steps before this one).
func checkTemplate(s string, loc []any, earlier map[string]int, errs *validate.Errors) (*Template, bool) {
	t, err := ParseTemplate(s)
	if err != nil {
		errs.Add(loc, validate.TypeValue, "invalid template: "+err.Error(), nil)
		return nil, false
	}
	good := true
	for _, e := range t.Exprs() {
		if msg := checkRef(e, earlier); msg != "" {
			errs.Add(loc, validate.TypeValue, msg, "{{"+e.String()+"}}")
			good = false
		}
	}
	return t, good
}

func checkRef(e Expr, earlier map[string]int) string {
	ns := e.Path[0]
	switch ns {
	case "indicator", "auth", "secrets", "alert":
		if len(e.Path) < 2 {
			return fmt.Sprintf("{{%s}} must name a field, e.g. {{%s.value}}", e, ns)
		}
	case namespaceSteps:
		if len(e.Path) < 3 {
			return fmt.Sprintf("{{%s}} must look like steps.<name>.response...", e)
		}
		if _, ok := earlier[e.Path[1]]; !ok {
			return fmt.Sprintf("{{%s}} refers to step %q, which is not an earlier step", e, e.Path[1])
		}
		switch e.Path[2] {
		case "response", "status", "headers", "result", "skipped", "items":
		default:
			return fmt.Sprintf("{{%s}}: a step exposes response, status, headers, result, skipped and items", e)
		}
	case namespaceItem:
		if _, ok := earlier[itemAllowed]; !ok {
			return fmt.Sprintf("{{%s}}: item exists only in a step with for_each", e)
		}
	default:
		return fmt.Sprintf("{{%s}}: unknown namespace %q (indicator, auth, secrets, alert, steps, item)", e, ns)
	}
	return ""
}

func checkURLTemplate(s string, loc []any, earlier map[string]int, errs *validate.Errors) {
	if len(s) > MaxURLTemplateLen {
		errs.Add(loc, validate.TypeStringTooLong, fmt.Sprintf("url is longer than %d characters", MaxURLTemplateLen), nil)
		return
	}
	t, ok := checkTemplate(s, loc, earlier, errs)
	if !ok {
		return
	}
	if len(t.parts) > 0 && t.parts[0].expr != nil {
		return // a base URL from a variable: checked when rendered
	}
	lower := strings.ToLower(s)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		errs.Add(loc, validate.TypeValue, "url must start with http:// or https:// (or a {{ }} base URL)", s)
		return
	}
	if len(t.parts) == 1 { // no expressions: the URL must already be complete
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			errs.Add(loc, validate.TypeValue, "url is not a valid absolute URL with a host", s)
		}
	}
}

func checkJSONTemplates(v any, loc []any, earlier map[string]int, errs *validate.Errors) {
	switch x := v.(type) {
	case string:
		checkTemplate(x, loc, earlier, errs)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			checkJSONTemplates(x[k], validate.Join(loc, k), earlier, errs)
		}
	case []any:
		for i, el := range x {
			checkJSONTemplates(el, validate.Join(loc, i), earlier, errs)
		}
	}
}

// Variables returns every template path the config uses ("auth.api_key", "secrets.OKTA_TOKEN",
// "steps.token.response.access_token"), sorted and without duplicates. Workflows use it to hand a run
// only the secrets it names.
func (c Config) Variables() []string {
	set := map[string]bool{}
	add := func(s string) {
		if t, err := ParseTemplate(s); err == nil {
			for _, e := range t.Exprs() {
				set[e.String()] = true
			}
		}
	}
	for _, st := range c.Steps {
		for _, s := range stepTemplates(st, st.URL) {
			add(s)
		}
	}
	for _, u := range c.URLTemplatesByType {
		add(u)
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func strconvQuote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}
