package httpsteps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Response limits.
const (
	DefaultMaxResponseBytes = 5 << 20  // bytes of response body read; more is a permanent error
	MaxRecordedBodyBytes    = 50 << 10 // bytes of response body kept in a step record
	TruncatedMarker         = "…[truncated]"
)

// Doer sends one HTTP request. netguard.Guard.HTTPClient(...) satisfies it in production; tests use
// an httptest server's client or an in-memory fake.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Runner executes prepared steps through a Doer.
type Runner struct {
	doer     Doer
	now      func() time.Time
	maxBytes int64
	hosts    HostPolicy
	approved bool                     // WithApprovedRun
	exprs    *exprEnv                 // when/for_each, built on first use
	codes    map[string]*compiledCode // code steps compiled, by source
	input    *codeInput               // the running step's ctx for code, frozen
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock sets the clock used for durations and Retry-After dates (default time.Now).
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// WithMaxResponseBytes bounds how much of a response body is read (default 5 MB).
func WithMaxResponseBytes(n int64) Option { return func(r *Runner) { r.maxBytes = n } }

// MaxRedirects bounds the redirects a step with follow_redirects follows.
const MaxRedirects = 5

// NewRunner returns a Runner sending requests through d. The Runner alone decides about redirects: an
// *http.Client is copied with a CheckRedirect that never follows (its transport, and so the SSRF
// guard, still sees every request); any other Doer must not follow redirects itself.
func NewRunner(d Doer, opts ...Option) *Runner {
	if c, ok := d.(*http.Client); ok && c != nil {
		cc := *c
		cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		d = &cc
	}
	r := &Runner{doer: d, now: time.Now, maxBytes: DefaultMaxResponseBytes}
	for _, o := range opts {
		o(r)
	}
	return r
}

type stepKey struct{}

// StepOf returns the prepared step that a request sent by Runner.Do belongs to, from the request's
// context: a Doer answering by step (the mock responses of dry runs) reads it.
func StepOf(ctx context.Context) (PreparedRequest, bool) {
	p, ok := ctx.Value(stepKey{}).(PreparedRequest)
	return p, ok
}

// StepRecord is the seed §2.7 step record, with secrets masked and the response body cut at 50 KB.
type StepRecord struct {
	StepName           string            `json:"step_name"`
	StepIndex          int               `json:"step_index"`
	RequestMethod      string            `json:"request_method"`
	RequestURL         string            `json:"request_url"`
	RequestHeaders     map[string]string `json:"request_headers"`
	IndicatorValue     string            `json:"indicator_value"`
	RequestQueryParams map[string]string `json:"request_query_params"`
	RequestBody        any               `json:"request_body"`
	ResponseStatusCode int               `json:"response_status_code"`
	ResponseHeaders    map[string]string `json:"response_headers"`
	ResponseBody       any               `json:"response_body"`
	DurationMS         int64             `json:"duration_ms"`
	Error              string            `json:"error"`
	Skipped            bool              `json:"skipped"`
	// Decisions (workflow steps): the step's kind when code, its when and the value it gave, why it
	// was skipped, its for_each and one record per item in order (each with its item and index), and
	// a code step's result (masked like the rest of the record).
	Kind       string       `json:"kind,omitempty"`
	When       string       `json:"when,omitempty"`
	WhenValue  any          `json:"when_value,omitempty"`
	SkipReason string       `json:"skip_reason,omitempty"`
	ForEach    string       `json:"for_each,omitempty"`
	Items      []StepRecord `json:"items,omitempty"`
	ItemIndex  *int         `json:"item_index,omitempty"`
	Item       any          `json:"item,omitempty"`
	Result     any          `json:"result,omitempty"`
}

// StepOutcome is the result of one step: its masked record and, on success, the unmasked decoded
// response that later steps read as steps.<name>.response.
type StepOutcome struct {
	Record   StepRecord        `json:"record"`
	Response any               `json:"response"` // decoded JSON (numbers as json.Number), text, or nil
	Status   int               `json:"status"`
	Headers  map[string]string `json:"headers"`
	NotFound bool              `json:"not_found"` // status in not_found_status: the call ends as success, found=false
}

// Vars returns the step's entry for the "steps" namespace: {response, status, headers}.
func (o StepOutcome) Vars() map[string]any {
	h := make(map[string]any, len(o.Headers))
	for k, v := range o.Headers {
		h[k] = v
		h[strings.ToLower(k)] = v
	}
	return map[string]any{"response": o.Response, "status": o.Status, "headers": h, "result": nil, "skipped": false}
}

// MarkSkipped records the outcome of a failed optional step as skipped, keeping its error.
func (o *StepOutcome) MarkSkipped(err error) {
	o.Record.Skipped = true
	if err != nil && o.Record.Error == "" {
		o.Record.Error = err.Error()
	}
	o.Response = nil
}

// FailedRecord builds the record of a step that could not be built (so BuildRequest failed): name,
// index, method, the url template as configured, and the error. It contains no rendered values.
func FailedRecord(cfg Config, i int, indicatorValue string, err error) StepRecord {
	rec := StepRecord{StepIndex: i, IndicatorValue: indicatorValue, RequestHeaders: map[string]string{},
		RequestQueryParams: map[string]string{}, ResponseHeaders: map[string]string{}}
	if i >= 0 && i < len(cfg.Steps) {
		st := cfg.Steps[i]
		rec.StepName, rec.RequestMethod, rec.RequestURL = st.Name, strings.ToUpper(st.Method), st.URL
	}
	if err != nil {
		rec.Error = err.Error()
	}
	return rec
}

// Do sends one prepared step. It always returns an outcome whose Record is filled (with Error set
// on failure). The error is nil for an expected status and for a not_found_status (outcome.NotFound);
// otherwise it is a *StepError: KindRateLimited for 429 (with RetryAfter), KindPermanent for other
// 4xx, unexpected statuses and oversized bodies, KindRetryable for 5xx, 408, network errors and
// timeouts. Do does not decide what an optional step's failure means: the caller calls MarkSkipped.
func (r *Runner) Do(ctx context.Context, p PreparedRequest, extraSecrets ...string) (result StepOutcome, _ error) {
	masker := NewMasker(append(append([]string(nil), p.Secrets...), extraSecrets...))
	out := StepOutcome{Record: newRecord(p, masker)}
	start := r.now()
	defer func() { result.Record.DurationMS = r.now().Sub(start).Milliseconds() }()

	fail := func(kind ErrorKind, status int, retryAfter time.Duration, err error) (StepOutcome, error) {
		se := &StepError{StepIndex: p.StepIndex, StepName: p.StepName, Kind: kind, Status: status, RetryAfter: retryAfter, Err: err}
		out.Record.Error = masker.String(se.Error())
		out.Response = nil
		return out, se
	}

	if err := r.hosts.checkHosts(p, r.approved); err != nil {
		return fail(KindPermanent, 0, 0, err)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeoutSeconds * time.Second
	}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, stepKey{}, p), timeout)
	defer cancel()

	resp, err := r.send(ctx, p)
	var perm *permanentSendError
	if errors.As(err, &perm) {
		return fail(KindPermanent, 0, 0, perm.err)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(KindRetryable, 0, 0, fmt.Errorf("timed out after %s", timeout))
		}
		return fail(KindRetryable, 0, 0, fmt.Errorf("request failed: %w", err))
	}
	defer resp.Body.Close()

	out.Status = resp.StatusCode
	out.Headers = flattenHeaders(resp.Header)
	out.Record.ResponseStatusCode = resp.StatusCode
	// What a step carrying a named secret receives is received in exchange for it: recorded masked
	// like the secret (every string of the body, every header but the plain transport ones).
	held := carriesSecret(p.CredentialRefs)
	if held {
		out.Record.ResponseHeaders = maskAllHeaders(out.Headers)
	} else {
		out.Record.ResponseHeaders = masker.Headers(out.Headers)
	}

	raw, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return fail(KindRetryable, resp.StatusCode, 0, fmt.Errorf("timed out reading the response after %s", timeout))
		}
		return fail(KindRetryable, resp.StatusCode, 0, fmt.Errorf("read response: %w", err))
	}
	if int64(len(raw)) > r.maxBytes {
		return fail(KindPermanent, resp.StatusCode, 0, fmt.Errorf("response body exceeds %d bytes", r.maxBytes))
	}
	decoded := decodeBody(raw)
	if held {
		out.Record.ResponseBody = recordBody(raw, maskAll(decoded, 0))
	} else {
		out.Record.ResponseBody = recordBody(raw, masker.Value(decoded))
	}

	code := resp.StatusCode
	switch {
	case containsInt(p.ExpectedStatus, code):
		out.Response = decoded
		return out, nil
	case containsInt(p.NotFoundStatus, code):
		out.Response = decoded
		out.NotFound = true
		return out, nil
	case code == http.StatusTooManyRequests:
		return fail(KindRateLimited, code, parseRetryAfter(resp.Header.Get("Retry-After"), r.now()), errors.New("rate limited"))
	case code == http.StatusRequestTimeout:
		return fail(KindRetryable, code, 0, errors.New("request timeout"))
	case code >= 500:
		return fail(KindRetryable, code, parseRetryAfter(resp.Header.Get("Retry-After"), r.now()), errors.New("server error"))
	case code >= 400:
		return fail(KindPermanent, code, 0, errors.New("client error"))
	default:
		return fail(KindPermanent, code, 0, fmt.Errorf("unexpected status (expected %v)", p.ExpectedStatus))
	}
}

func newRecord(p PreparedRequest, m *Masker) StepRecord {
	rec := StepRecord{
		StepName:           p.StepName,
		StepIndex:          p.StepIndex,
		RequestMethod:      p.Method,
		RequestURL:         m.URL(p.URL),
		RequestHeaders:     m.Headers(p.Headers),
		IndicatorValue:     p.IndicatorValue,
		RequestQueryParams: map[string]string{},
		ResponseHeaders:    map[string]string{},
	}
	if q := queryOf(p.URL); len(q) > 0 {
		rec.RequestQueryParams = m.Params(q)
	}
	switch b := p.RecordBody.(type) {
	case nil:
	case map[string]string:
		rec.RequestBody = m.Params(b)
	default:
		rec.RequestBody = m.Value(b)
	}
	return rec
}

func queryOf(raw string) map[string]string {
	i := strings.IndexByte(raw, '?')
	if i < 0 {
		return nil
	}
	q := raw[i+1:]
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	out := map[string]string{}
	for _, pair := range strings.Split(q, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			val = v
		}
		if prev, ok := out[key]; ok {
			out[key] = prev + "," + val
		} else {
			out[key] = val
		}
	}
	return out
}

func flattenHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[k] = strings.Join(vs, ", ")
	}
	return out
}

// decodeBody returns JSON bodies decoded (numbers as json.Number), other bodies as text, empty as nil.
func decodeBody(raw []byte) any {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' || trimmed[0] == '"' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			return v
		}
	}
	return string(raw)
}

// recordBody cuts the masked decoded body to MaxRecordedBodyBytes: a larger body is recorded as its
// first 50 KB of (masked) text followed by TruncatedMarker.
func recordBody(raw []byte, masked any) any {
	if len(raw) <= MaxRecordedBodyBytes {
		return masked
	}
	text, ok := masked.(string)
	if !ok {
		b, err := json.Marshal(masked)
		if err != nil {
			return TruncatedMarker
		}
		text = string(b)
	}
	if len(text) > MaxRecordedBodyBytes {
		cut := MaxRecordedBodyBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return text + TruncatedMarker
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date. Absent, unparseable or
// past values give 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > 7*24*3600 {
			n = 7 * 24 * 3600
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// Result is the outcome of running every step of a config in order.
type Result struct {
	Success       bool           `json:"success"`
	NotFound      bool           `json:"not_found"`
	Error         string         `json:"error_message"`
	Err           error          `json:"-"` // the typed error (*StepError or *BuildError) when Success is false
	Steps         []StepRecord   `json:"steps"`
	FinalResponse any            `json:"-"` // unmasked decoded response of the last step that ran successfully
	Responses     map[string]any `json:"-"` // unmasked decoded responses by step name
	Results       map[string]any `json:"-"` // unmasked code step results by step name (records may mask them whole)
	DurationMS    int64          `json:"duration_ms"`
}

// RawResponse returns the masked, size-bounded response body of the last step that ran (for the
// provider test result's raw_response), or nil.
func (r Result) RawResponse() any {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if !r.Steps[i].Skipped && r.Steps[i].Error == "" {
			return r.Steps[i].ResponseBody
		}
	}
	return nil
}

// Extract applies extractions to the result: {"found": false} when the call ended not-found,
// nothing when it failed, else Extract over the final and per-step responses.
func (r Result) Extract(exts []Extraction) map[string]any {
	if r.NotFound {
		return NotFoundExtracted()
	}
	if !r.Success {
		return map[string]any{}
	}
	return Extract(r.FinalResponse, r.Responses, exts)
}

// Run executes every step of cfg in order, without retries (dry runs, the provider test endpoint,
// tests). vars is not modified; each successful step is exposed to later ones as steps.<name>, and
// what a step carrying a named secret received is masked in every later record (DerivedSecretValues).
// A not-found status ends the call as a success with NotFound set. A failing optional step is recorded
// as skipped and the run goes on; a failing required step ends the run. secrets are masked in every
// record in addition to the auth.* and secrets.* values found in vars.
func (r *Runner) Run(ctx context.Context, cfg Config, vars map[string]any, secrets []string) (res Result) {
	start := r.now()
	res = Result{Responses: map[string]any{}, Results: map[string]any{}, Steps: []StepRecord{}}
	defer func() { res.DurationMS = r.now().Sub(start).Milliseconds() }()

	root := maps.Clone(vars)
	if root == nil {
		root = map[string]any{}
	}
	stepVars := map[string]any{}
	root[namespaceSteps] = stepVars
	indicatorValue := ""
	if ind, ok := root[namespaceIndicator].(map[string]any); ok {
		indicatorValue, _ = ind["value"].(string)
	}
	base := append(collectSecrets(root), secrets...)

	for i, st := range cfg.Steps {
		// What earlier steps received for a named secret is masked like it in this step's record.
		derived := cfg.DerivedSecretValues(stepVars)
		if st.HasDecisions() {
			run, err := r.RunStep(ctx, cfg, i, root, append(append([]string(nil), secrets...), derived...), nil, nil)
			res.Steps = append(res.Steps, run.Record)
			if err != nil {
				res.Err, res.Error = err, run.Record.Error
				return res
			}
			stepVars[st.Name] = run.Vars
			if !run.Skipped {
				res.Responses[st.Name] = run.Vars["response"]
				res.Results[st.Name] = run.Vars["result"]
			}
			if run.NotFound { // a not_found_status ends the call, as for a plain step
				res.Success, res.NotFound = true, true
				return res
			}
			continue
		}
		p, err := BuildRequest(cfg, i, root)
		if err != nil {
			rec := FailedRecord(cfg, i, indicatorValue, err)
			rec.Error = NewMasker(append(append([]string(nil), base...), derived...)).String(rec.Error)
			if st.Optional {
				rec.Skipped = true
				res.Steps = append(res.Steps, rec)
				stepVars[st.Name] = skippedVars()
				continue
			}
			res.Steps = append(res.Steps, rec)
			res.Err, res.Error = err, rec.Error
			return res
		}
		out, err := r.Do(ctx, p, append(append([]string(nil), secrets...), derived...)...)
		if err != nil {
			if st.Optional {
				out.MarkSkipped(err)
				res.Steps = append(res.Steps, out.Record)
				stepVars[st.Name] = skippedVars()
				continue
			}
			res.Steps = append(res.Steps, out.Record)
			res.Err, res.Error = err, out.Record.Error
			return res
		}
		res.Steps = append(res.Steps, out.Record)
		res.Responses[st.Name] = out.Response
		res.FinalResponse = out.Response
		if out.NotFound {
			res.Success, res.NotFound = true, true
			return res
		}
		stepVars[st.Name] = out.Vars()
	}
	res.Success = true
	return res
}

// permanentSendError is a request that cannot be sent as configured (retrying changes nothing).
type permanentSendError struct{ err error }

func (e *permanentSendError) Error() string { return e.err.Error() }

// send sends p and, when the step says follow_redirects, follows up to MaxRedirects redirects itself:
// 301/302/303 continue as GET without a body (HEAD stays HEAD), 307/308 keep method and body. The
// step's headers (credentials included) and its body go only to the origin (scheme, host, port) of
// the step's URL; once a redirect leaves it they are dropped for good, a 307/308 carrying a body
// across origins is refused, and no Referer is ever sent. Without follow_redirects a 3xx is the answer.
func (r *Runner) send(ctx context.Context, p PreparedRequest) (*http.Response, error) {
	target, err := url.Parse(p.URL)
	if err != nil {
		return nil, &permanentSendError{fmt.Errorf("new request: %w", err)}
	}
	origin := originOf(target)
	method, body, sameOrigin := p.Method, p.Body, true
	for hop := 0; ; hop++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, target.String(), rd)
		if err != nil {
			return nil, &permanentSendError{fmt.Errorf("new request: %w", err)}
		}
		if sameOrigin {
			for k, v := range p.Headers {
				req.Header.Set(k, v)
			}
		}
		resp, err := r.doer.Do(req)
		if err != nil || !p.FollowRedirects || !isRedirect(resp.StatusCode) {
			return resp, err
		}
		loc := resp.Header.Get("Location")
		if loc == "" {
			return resp, nil
		}
		next, err := target.Parse(loc)
		_ = resp.Body.Close()
		if err != nil {
			return nil, &permanentSendError{fmt.Errorf("redirect: unparseable Location")}
		}
		if hop+1 > MaxRedirects {
			return nil, &permanentSendError{fmt.Errorf("stopped after %d redirects", MaxRedirects)}
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
			if method != http.MethodHead {
				method = http.MethodGet
			}
			body = nil
		}
		next.User = nil
		target = next
		if sameOrigin && originOf(target) != origin {
			sameOrigin = false
		}
		if !sameOrigin && body != nil {
			return nil, &permanentSendError{fmt.Errorf("redirect: a %d would carry the step's body to another origin", resp.StatusCode)}
		}
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// originOf is scheme://host:port with the default port made explicit.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
