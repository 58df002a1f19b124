package httpsteps

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// PreparedRequest is one step rendered and ready to send. It holds credentials in clear: build it
// inside the activity that sends it and never put it in workflow history, logs or API responses (use
// the StepRecord of the outcome instead).
type PreparedRequest struct {
	StepIndex      int
	StepName       string
	Method         string
	URL            string            // absolute URL including the query
	Headers        map[string]string // rendered headers, Content-Type included when there is a body
	Body           []byte            // nil when the step has no body
	RecordBody     any               // rendered json_body value or form_body map, for the record
	Timeout        time.Duration
	ExpectedStatus []int
	NotFoundStatus []int
	Optional       bool
	// FollowRedirects: the step's follow_redirects (see Runner.Do).
	FollowRedirects bool
	IndicatorValue  string
	Secrets         []string // values to mask in the record: auth.* and secrets.* leaves plus any given
	// CredentialRefs are the secrets.* and auth.* references the step carries ("secrets.NAME"): its
	// templates' own and those of the earlier steps whose outputs it reads (Config.StepTaint),
	// checked against the Runner's HostPolicy before sending.
	CredentialRefs []string
	// DerivedVia maps each of CredentialRefs the step carries only through an earlier step's outputs
	// to that step's name.
	DerivedVia map[string]string
	// ConditionRefs are the references the step carries only as a condition (its when reads a step
	// carrying them: Config.StepConditionTaint), with the step each comes through in ConditionVia:
	// outside their hosts the step may be sent only in a run a person approved.
	ConditionRefs []string
	ConditionVia  map[string]string
}

// BuildError is a step that could not be rendered (unknown variable, bad URL, oversized output). It
// is permanent: retrying renders the same thing.
type BuildError struct {
	StepIndex int
	StepName  string
	Err       error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build step %d (%s): %v", e.StepIndex, e.StepName, e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }

// BuildRequest renders step i of cfg against vars, a root map of namespaces: "indicator" {value,
// type}, "auth" {...}, "secrets" {...}, "alert" {...} and "steps" {name: StepOutcome.Vars()}.
// For step 0, cfg.URLTemplatesByType[indicator.type] replaces the step's url when present.
// Every string leaf under vars["auth"] and vars["secrets"] is added to the request's Secrets.
func BuildRequest(cfg Config, i int, vars map[string]any) (PreparedRequest, error) {
	if i < 0 || i >= len(cfg.Steps) {
		return PreparedRequest{}, &BuildError{StepIndex: i, Err: fmt.Errorf("step index %d out of range (%d steps)", i, len(cfg.Steps))}
	}
	st := cfg.Steps[i]
	p, err := buildRequest(cfg, i, st, vars)
	if err != nil {
		return PreparedRequest{}, &BuildError{StepIndex: i, StepName: st.Name, Err: err}
	}
	return p, nil
}

func buildRequest(cfg Config, i int, st Step, vars map[string]any) (PreparedRequest, error) {
	p := PreparedRequest{
		StepIndex:       i,
		StepName:        st.Name,
		Method:          strings.ToUpper(st.Method),
		ExpectedStatus:  st.ExpectedStatus,
		NotFoundStatus:  st.NotFoundStatus,
		Optional:        st.Optional,
		FollowRedirects: st.FollowRedirects,
		Timeout:         time.Duration(st.TimeoutSeconds) * time.Second,
		Headers:         map[string]string{},
		Secrets:         collectSecrets(vars),
	}
	if p.Method == "" {
		p.Method = DefaultMethod
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeoutSeconds * time.Second
	}
	if len(p.ExpectedStatus) == 0 {
		p.ExpectedStatus = []int{200}
	}
	indType := ""
	if ind, ok := vars[namespaceIndicator].(map[string]any); ok {
		indType, _ = ind["type"].(string)
		p.IndicatorValue, _ = ind["value"].(string)
	}

	urlTpl := st.URL
	if i == 0 {
		if override, ok := cfg.URLTemplatesByType[indType]; ok && override != "" {
			urlTpl = override
		}
	}
	p.CredentialRefs, p.DerivedVia = credentialRefs(cfg, i, urlTpl)
	p.ConditionRefs, p.ConditionVia = cfg.taintAt(i, []string{urlTpl}, TaintCondition)
	rawURL, err := renderURLTemplate(urlTpl, vars)
	if err != nil {
		return p, fmt.Errorf("url: %w", err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return p, errors.New("url: rendered URL does not parse")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return p, fmt.Errorf("url: scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return p, errors.New("url: rendered URL has no host")
	}
	if len(st.QueryParams) > 0 {
		q := u.Query()
		for _, k := range sortedKeys(st.QueryParams) {
			v, err := renderText(st.QueryParams[k], vars)
			if err != nil {
				return p, fmt.Errorf("query_params.%s: %w", k, err)
			}
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	p.URL = u.String()

	for _, k := range sortedKeys(st.Headers) {
		v, err := renderText(st.Headers[k], vars)
		if err != nil {
			return p, fmt.Errorf("headers.%s: %w", k, err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return p, fmt.Errorf("headers.%s: rendered value contains a line break or NUL", k)
		}
		p.Headers[k] = v
	}

	switch {
	case st.JSONBody != nil:
		budget := MaxRenderedSize
		body, err := renderJSON(st.JSONBody, vars, &budget)
		if err != nil {
			return p, fmt.Errorf("json_body: %w", err)
		}
		b, err := json.Marshal(body)
		if err != nil {
			return p, fmt.Errorf("json_body: %w", err)
		}
		if len(b) > MaxRenderedSize {
			return p, fmt.Errorf("json_body: rendered body exceeds %d bytes", MaxRenderedSize)
		}
		p.Body, p.RecordBody = b, body
		setDefaultHeader(p.Headers, "Content-Type", "application/json")
	case st.FormBody != nil:
		form := url.Values{}
		rec := make(map[string]string, len(st.FormBody))
		for _, k := range sortedKeys(st.FormBody) {
			v, err := renderText(st.FormBody[k], vars)
			if err != nil {
				return p, fmt.Errorf("form_body.%s: %w", k, err)
			}
			form.Set(k, v)
			rec[k] = v
		}
		enc := form.Encode()
		if len(enc) > MaxRenderedSize {
			return p, fmt.Errorf("form_body: rendered body exceeds %d bytes", MaxRenderedSize)
		}
		p.Body, p.RecordBody = []byte(enc), rec
		setDefaultHeader(p.Headers, "Content-Type", "application/x-www-form-urlencoded")
	}
	return p, nil
}

func renderURLTemplate(s string, vars map[string]any) (string, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.RenderURL(vars)
}

func renderText(s string, vars map[string]any) (string, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.Render(vars)
}

func setDefaultHeader(h map[string]string, name, value string) {
	for k := range h {
		if strings.EqualFold(k, name) {
			return
		}
	}
	h[name] = value
}

// collectSecrets returns every string leaf under vars["auth"] and vars["secrets"], sorted.
func collectSecrets(vars map[string]any) []string {
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 16 {
			return
		}
		switch x := v.(type) {
		case string:
			if x != "" {
				out = append(out, x)
			}
		case map[string]any:
			for _, el := range x {
				walk(el, depth+1)
			}
		case map[string]string:
			for _, el := range x {
				if el != "" {
					out = append(out, el)
				}
			}
		case []any:
			for _, el := range x {
				walk(el, depth+1)
			}
		case []string:
			for _, el := range x {
				if el != "" {
					out = append(out, el)
				}
			}
		}
	}
	walk(vars["auth"], 0)
	walk(vars["secrets"], 0)
	sort.Strings(out)
	return out
}
