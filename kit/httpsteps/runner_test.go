package httpsteps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/netguard"
)

const (
	clientSecret = "cs_9f8e7d6c5b4a3210fedcba"
	accessToken  = "eyJhbGciOiJIUzI1NiJ9.payload.signature"
	apiKey       = "vt-key-0123456789abcdef"
)

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

func mustConfig(t testing.TB, raw string) httpsteps.Config {
	t.Helper()
	cfg, errs := httpsteps.ParseConfig(json.RawMessage(raw))
	require.Empty(t, errs)
	return cfg
}

func oauthServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var lookups atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("client_secret") != clientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=abcdef0123456789")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, accessToken)
	})
	mux.HandleFunc("GET /v1/ip/{ip}", func(w http.ResponseWriter, r *http.Request) {
		lookups.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+accessToken {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		if r.PathValue("ip") == "1.2.3.4" {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"ip":%q,"score":"87","reports":12,"country":"NL","tags":["scanner","tor"],"big":12345678901234567890}}`, r.PathValue("ip"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &lookups
}

func oauthConfig(base string) string {
	return `{"steps":[
	  {"name":"token","method":"POST","url":"` + base + `/oauth2/token",
	   "form_body":{"grant_type":"client_credentials","client_id":"{{auth.client_id}}","client_secret":"{{auth.client_secret}}"}},
	  {"name":"lookup","url":"` + base + `/v1/ip/{{indicator.value}}",
	   "headers":{"Authorization":"Bearer {{steps.token.response.access_token}}","Accept":"application/json"},
	   "not_found_status":[404]}
	]}`
}

func oauthVars(ip string) map[string]any {
	return map[string]any{
		"indicator": map[string]any{"value": ip, "type": "ip"},
		"auth":      map[string]any{"client_id": "vigil-client", "client_secret": clientSecret},
	}
}

func TestRun_TwoStepOAuth(t *testing.T) {
	t.Parallel()
	srv, lookups := oauthServer(t)
	cfg := mustConfig(t, oauthConfig(srv.URL))
	r := httpsteps.NewRunner(srv.Client())

	res := r.Run(context.Background(), cfg, oauthVars("8.8.8.8"), nil)
	require.True(t, res.Success, res.Error)
	require.False(t, res.NotFound)
	require.Empty(t, res.Error)
	require.NoError(t, res.Err)
	require.Len(t, res.Steps, 2)
	require.Equal(t, int32(1), lookups.Load())

	tok, look := res.Steps[0], res.Steps[1]
	require.Equal(t, "token", tok.StepName)
	require.Equal(t, 0, tok.StepIndex)
	require.Equal(t, "POST", tok.RequestMethod)
	require.Equal(t, 200, tok.ResponseStatusCode)
	require.Equal(t, "8.8.8.8", tok.IndicatorValue)
	require.Equal(t, map[string]string{"grant_type": "client_credentials", "client_id": httpsteps.Mask("vigil-client"), "client_secret": httpsteps.Mask(clientSecret)}, tok.RequestBody, "every auth value is masked")
	require.Equal(t, httpsteps.Mask(accessToken), tok.ResponseBody.(map[string]any)["access_token"])
	require.Equal(t, "****6789", tok.ResponseHeaders["Set-Cookie"])

	require.Equal(t, "lookup", look.StepName)
	require.Equal(t, 1, look.StepIndex)
	require.Equal(t, srv.URL+"/v1/ip/8.8.8.8", look.RequestURL)
	require.Equal(t, "Bearer "+httpsteps.Mask(accessToken), look.RequestHeaders["Authorization"])
	require.Equal(t, "application/json", look.RequestHeaders["Accept"])
	require.Nil(t, look.RequestBody)
	require.Empty(t, look.Error)
	require.False(t, look.Skipped)

	// Nothing secret anywhere in the serialized result.
	b, err := json.Marshal(res)
	require.NoError(t, err)
	for _, secret := range []string{clientSecret, accessToken, "abcdef0123456789"} {
		require.NotContains(t, string(b), secret)
	}
	for _, field := range []string{"step_name", "step_index", "request_method", "request_url", "request_headers", "indicator_value",
		"request_query_params", "request_body", "response_status_code", "response_headers", "response_body", "duration_ms", "error", "skipped"} {
		require.Contains(t, string(b), `"`+field+`":`)
	}

	// The unmasked final response feeds extraction (and so malice rules, domain/enrichment).
	extracted := res.Extract([]httpsteps.Extraction{
		{SourcePath: "data.score", TargetKey: "score", ValueType: "int"},
		{SourcePath: "data.reports", TargetKey: "reports", ValueType: "float"},
		{SourcePath: "data.tags", TargetKey: "tags", ValueType: "list"},
		{SourcePath: "data.country", TargetKey: "country", ValueType: "string"},
		{SourcePath: "data.big", TargetKey: "big", ValueType: "any"},
		{SourcePath: "access_token", TargetKey: "tok_len", ValueType: "string", Step: "token"},
	})
	require.Equal(t, map[string]any{"score": int64(87), "reports": 12.0, "tags": []any{"scanner", "tor"}, "country": "NL",
		"big": 12345678901234567890.0, "tok_len": accessToken}, extracted)
	require.False(t, res.NotFound) // the malice rules' side: enrichment.TestMaliceRulesReadTheExtractedFields
	require.NotNil(t, res.RawResponse())
}

func TestRun_NotFoundEndsTheCall(t *testing.T) {
	t.Parallel()
	srv, _ := oauthServer(t)
	raw := strings.TrimSuffix(oauthConfig(srv.URL), "]}") + `,{"name":"never","url":"` + srv.URL + `/never"}]}`
	cfg := mustConfig(t, raw)
	res := httpsteps.NewRunner(srv.Client()).Run(context.Background(), cfg, oauthVars("1.2.3.4"), nil)
	require.True(t, res.Success)
	require.True(t, res.NotFound)
	require.Len(t, res.Steps, 2, "the step after a not-found answer does not run")
	require.Equal(t, 404, res.Steps[1].ResponseStatusCode)
	require.Equal(t, map[string]any{"found": false}, res.Extract([]httpsteps.Extraction{{SourcePath: "error", TargetKey: "e", ValueType: "string"}}))
}

func TestRun_FailureStopsAndReports(t *testing.T) {
	t.Parallel()
	srv, lookups := oauthServer(t)
	cfg := mustConfig(t, oauthConfig(srv.URL))
	vars := oauthVars("8.8.8.8")
	vars["auth"].(map[string]any)["client_secret"] = "wrong-secret-value-xyz"
	res := httpsteps.NewRunner(srv.Client()).Run(context.Background(), cfg, vars, nil)
	require.False(t, res.Success)
	require.True(t, httpsteps.IsPermanent(res.Err))
	require.Len(t, res.Steps, 1)
	require.Equal(t, 401, res.Steps[0].ResponseStatusCode)
	require.Contains(t, res.Error, "401")
	require.Zero(t, lookups.Load())
	require.Empty(t, res.Extract(nil))
}

func TestRun_OptionalStepSkipped(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch r.URL.Path {
		case "/flaky":
			http.Error(w, "boom", http.StatusBadGateway)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := mustConfig(t, `{"steps":[
	  {"name":"extra","url":"`+srv.URL+`/flaky","optional":true},
	  {"name":"needs_missing","url":"`+srv.URL+`/x/{{auth.nope}}","optional":true},
	  {"name":"main","url":"`+srv.URL+`/main"}]}`)
	res := httpsteps.NewRunner(srv.Client()).Run(context.Background(), cfg, oauthVars("8.8.8.8"), nil)
	require.True(t, res.Success, res.Error)
	require.Len(t, res.Steps, 3)
	require.True(t, res.Steps[0].Skipped)
	require.Contains(t, res.Steps[0].Error, "502")
	require.Equal(t, 502, res.Steps[0].ResponseStatusCode)
	require.True(t, res.Steps[1].Skipped)
	require.Contains(t, res.Steps[1].Error, "auth.nope")
	require.False(t, res.Steps[2].Skipped)
	require.Equal(t, map[string]any{"ok": true}, res.FinalResponse)
	require.Equal(t, int32(2), calls.Load())

	// A required step that reads a skipped step's response fails to build: permanent.
	cfg = mustConfig(t, `{"steps":[
	  {"name":"extra","url":"`+srv.URL+`/flaky","optional":true},
	  {"name":"main","url":"`+srv.URL+`/main/{{steps.extra.response.id}}"}]}`)
	res = httpsteps.NewRunner(srv.Client()).Run(context.Background(), cfg, oauthVars("8.8.8.8"), nil)
	require.False(t, res.Success)
	require.True(t, httpsteps.IsPermanent(res.Err))
	var be *httpsteps.BuildError
	require.ErrorAs(t, res.Err, &be)
	require.Equal(t, 1, be.StepIndex)
	require.Contains(t, res.Steps[1].Error, "steps.extra")
}

func respond(status int, headers map[string]string, body string) httpsteps.Doer {
	return doerFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		for k, v := range headers {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
}

func prepared(t testing.TB, raw string) httpsteps.PreparedRequest {
	t.Helper()
	p, err := httpsteps.BuildRequest(mustConfig(t, raw), 0, oauthVars("8.8.8.8"))
	require.NoError(t, err)
	return p
}

func TestDo_StatusHandling(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := prepared(t, `{"steps":[{"name":"s","url":"https://api.example.com/x","expected_status":[200,201],"not_found_status":[404,410]}]}`)
	cases := []struct {
		name       string
		status     int
		headers    map[string]string
		kind       httpsteps.ErrorKind // "" = success
		notFound   bool
		retryAfter time.Duration
	}{
		{"ok", 200, nil, "", false, 0},
		{"created", 201, nil, "", false, 0},
		{"not found", 404, nil, "", true, 0},
		{"gone", 410, nil, "", true, 0},
		{"rate limited seconds", 429, map[string]string{"Retry-After": "17"}, httpsteps.KindRateLimited, false, 17 * time.Second},
		{"rate limited date", 429, map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, httpsteps.KindRateLimited, false, 90 * time.Second},
		{"rate limited past date", 429, map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, httpsteps.KindRateLimited, false, 0},
		{"rate limited garbage", 429, map[string]string{"Retry-After": "soon"}, httpsteps.KindRateLimited, false, 0},
		{"rate limited none", 429, nil, httpsteps.KindRateLimited, false, 0},
		{"bad request", 400, nil, httpsteps.KindPermanent, false, 0},
		{"unauthorized", 401, nil, httpsteps.KindPermanent, false, 0},
		{"forbidden", 403, nil, httpsteps.KindPermanent, false, 0},
		{"request timeout", 408, nil, httpsteps.KindRetryable, false, 0},
		{"server error", 500, nil, httpsteps.KindRetryable, false, 0},
		{"unavailable with hint", 503, map[string]string{"Retry-After": "5"}, httpsteps.KindRetryable, false, 5 * time.Second},
		{"unexpected 204", 204, nil, httpsteps.KindPermanent, false, 0},
		{"unexpected redirect", 302, nil, httpsteps.KindPermanent, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httpsteps.NewRunner(respond(tc.status, tc.headers, `{"k":"v"}`), httpsteps.WithClock(func() time.Time { return now }))
			out, err := r.Do(context.Background(), p)
			require.Equal(t, tc.status, out.Status)
			require.Equal(t, tc.status, out.Record.ResponseStatusCode)
			require.Equal(t, map[string]any{"k": "v"}, out.Record.ResponseBody)
			if tc.kind == "" {
				require.NoError(t, err)
				require.Equal(t, tc.notFound, out.NotFound)
				require.Equal(t, map[string]any{"k": "v"}, out.Response)
				require.Empty(t, out.Record.Error)
				return
			}
			require.Error(t, err)
			require.NotEmpty(t, out.Record.Error)
			require.Nil(t, out.Response)
			var se *httpsteps.StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.kind, se.Kind)
			require.Equal(t, tc.status, se.Status)
			require.Equal(t, tc.kind == httpsteps.KindPermanent, httpsteps.IsPermanent(err))
			require.Equal(t, tc.kind != httpsteps.KindPermanent, httpsteps.IsRetryable(err))
			require.Equal(t, tc.kind == httpsteps.KindRateLimited, httpsteps.IsRateLimited(err))
			d, ok := httpsteps.RetryAfter(err)
			require.Equal(t, tc.retryAfter, d)
			require.Equal(t, tc.retryAfter > 0, ok)
		})
	}
}

func TestDo_NetworkErrorAndTimeout(t *testing.T) {
	t.Parallel()
	p := prepared(t, `{"steps":[{"name":"s","url":"https://api.example.com/x"}]}`)
	out, err := httpsteps.NewRunner(doerFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection refused")
	})).Do(context.Background(), p)
	require.True(t, httpsteps.IsRetryable(err))
	require.Contains(t, out.Record.Error, "connection refused")
	require.Zero(t, out.Record.ResponseStatusCode)

	// The SSRF guard's refusal is a network error too; the guard's type stays reachable.
	blocked := netguard.NewGuard(nil).HTTPClient(time.Second)
	p2 := prepared(t, `{"steps":[{"name":"s","url":"http://169.254.169.254/latest/meta-data/"}]}`)
	_, err = httpsteps.NewRunner(blocked).Do(context.Background(), p2)
	require.True(t, netguard.IsBlocked(err))

	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	p3 := prepared(t, `{"steps":[{"name":"s","url":"`+srv.URL+`/slow","timeout_seconds":1}]}`)
	p3.Timeout = 50 * time.Millisecond
	start := time.Now()
	out, err = httpsteps.NewRunner(srv.Client()).Do(context.Background(), p3)
	require.Less(t, time.Since(start), 5*time.Second)
	require.True(t, httpsteps.IsRetryable(err))
	require.Contains(t, out.Record.Error, "timed out")
}

func TestDo_ResponseBodies(t *testing.T) {
	t.Parallel()
	p := prepared(t, `{"steps":[{"name":"s","url":"https://api.example.com/x"}]}`)

	// Large JSON: recorded as truncated text, decoded in full for later steps and extraction.
	items := make([]string, 0, 20000)
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`"item-%d"`, i))
	}
	big := `{"items":[` + strings.Join(items, ",") + `],"last":"end"}`
	out, err := httpsteps.NewRunner(respond(200, nil, big)).Do(context.Background(), p)
	require.NoError(t, err)
	text, ok := out.Record.ResponseBody.(string)
	require.True(t, ok)
	require.True(t, strings.HasSuffix(text, httpsteps.TruncatedMarker))
	require.LessOrEqual(t, len(text), httpsteps.MaxRecordedBodyBytes+len(httpsteps.TruncatedMarker))
	require.Equal(t, "end", out.Response.(map[string]any)["last"])

	// Plain text and empty bodies.
	out, err = httpsteps.NewRunner(respond(200, nil, "hello")).Do(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "hello", out.Response)
	out, err = httpsteps.NewRunner(respond(200, nil, "")).Do(context.Background(), p)
	require.NoError(t, err)
	require.Nil(t, out.Response)
	require.Nil(t, out.Record.ResponseBody)
	out, err = httpsteps.NewRunner(respond(200, nil, `{"broken":`)).Do(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, `{"broken":`, out.Response)

	// Over the read limit: permanent.
	_, err = httpsteps.NewRunner(respond(200, nil, strings.Repeat("x", 2000)), httpsteps.WithMaxResponseBytes(1000)).Do(context.Background(), p)
	require.True(t, httpsteps.IsPermanent(err))
	require.ErrorContains(t, err, "exceeds 1000 bytes")
}

func TestBuildRequest(t *testing.T) {
	t.Parallel()
	cfg := mustConfig(t, `{"steps":[{"name":"s","method":"POST","url":"https://api.example.com/v1/{{indicator.type}}?fixed=1",
	  "query_params":{"apikey":"{{auth.api_key}}","q":"{{indicator.value}}"},
	  "headers":{"X-Note":"{{alert.title}}"},
	  "json_body":{"value":"{{indicator.value}}","count":"{{alert.count}}","meta":"{{alert.meta}}","label":"v={{indicator.value}}","lit":5}}],
	  "url_templates_by_type":{"domain":"https://api.example.com/domains/{{indicator.value}}"}}`)
	vars := map[string]any{
		"indicator": map[string]any{"value": "a&b c", "type": "ip"},
		"auth":      map[string]any{"api_key": apiKey},
		"alert":     map[string]any{"title": "t", "count": json.Number("3"), "meta": map[string]any{"x": true}},
	}
	p, err := httpsteps.BuildRequest(cfg, 0, vars)
	require.NoError(t, err)
	u, err := url.Parse(p.URL)
	require.NoError(t, err)
	require.Equal(t, "/v1/ip", u.Path)
	require.Equal(t, url.Values{"fixed": {"1"}, "apikey": {apiKey}, "q": {"a&b c"}}, u.Query())
	require.Equal(t, "application/json", p.Headers["Content-Type"])
	require.Equal(t, "t", p.Headers["X-Note"])
	var body map[string]any
	require.NoError(t, json.Unmarshal(p.Body, &body))
	require.Equal(t, map[string]any{"value": "a&b c", "count": 3.0, "meta": map[string]any{"x": true}, "label": "v=a&b c", "lit": 5.0}, body)
	require.Equal(t, []string{apiKey}, p.Secrets)
	require.Equal(t, 30*time.Second, p.Timeout)
	require.Equal(t, "a&b c", p.IndicatorValue)

	// The record masks the key in the URL and in the query params.
	out, err := httpsteps.NewRunner(respond(200, nil, "{}")).Do(context.Background(), p)
	require.NoError(t, err)
	require.NotContains(t, out.Record.RequestURL, apiKey)
	require.Contains(t, out.Record.RequestURL, "apikey="+httpsteps.Mask(apiKey))
	require.Equal(t, httpsteps.Mask(apiKey), out.Record.RequestQueryParams["apikey"])
	require.Equal(t, "a&b c", out.Record.RequestQueryParams["q"])

	// url_templates_by_type overrides the first step's URL for that type.
	vars["indicator"] = map[string]any{"value": "evil.com", "type": "domain"}
	p, err = httpsteps.BuildRequest(cfg, 0, vars)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p.URL, "https://api.example.com/domains/evil.com?"), p.URL)

	// Failures are permanent *BuildError values naming the step.
	bad := []struct {
		name string
		cfg  string
		vars map[string]any
		want string
	}{
		{"unknown var", `{"steps":[{"name":"s","url":"https://x.com/{{auth.key}}"}]}`, map[string]any{}, `"auth"`},
		{"header injection", `{"steps":[{"name":"s","url":"https://x.com/","headers":{"X":"{{indicator.value}}"}}]}`,
			map[string]any{"indicator": map[string]any{"value": "a\r\nEvil: 1"}}, "line break"},
		{"base url not http", `{"steps":[{"name":"s","url":"{{auth.base}}/x"}]}`, map[string]any{"auth": map[string]any{"base": "file:///etc"}}, "scheme"},
		{"base url without host", `{"steps":[{"name":"s","url":"{{auth.base}}/x"}]}`, map[string]any{"auth": map[string]any{"base": "http://"}}, "host"},
		{"host injection", `{"steps":[{"name":"s","url":"https://{{auth.tenant}}.okta.com/"}]}`, map[string]any{"auth": map[string]any{"tenant": "evil.com/?"}}, "host"},
		{"body too big", `{"steps":[{"name":"s","method":"POST","url":"https://x.com/","json_body":{"a":"{{indicator.value}}{{indicator.value}}"}}]}`,
			map[string]any{"indicator": map[string]any{"value": strings.Repeat("x", httpsteps.MaxRenderedSize/2+1)}}, "exceeds"},
		{"whole-value body too big", `{"steps":[{"name":"s","method":"POST","url":"https://x.com/","json_body":{"a":"{{indicator.value}}","b":"{{indicator.value}}"}}]}`,
			map[string]any{"indicator": map[string]any{"value": strings.Repeat("x", httpsteps.MaxRenderedSize/2+1)}}, "exceeds"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpsteps.BuildRequest(mustConfig(t, tc.cfg), 0, tc.vars)
			require.ErrorContains(t, err, tc.want)
			require.True(t, httpsteps.IsPermanent(err))
			require.False(t, httpsteps.IsRetryable(err))
		})
	}
	_, err = httpsteps.BuildRequest(cfg, 5, vars)
	require.ErrorContains(t, err, "out of range")
}

func TestBuildRequest_FormBody(t *testing.T) {
	t.Parallel()
	cfg := mustConfig(t, `{"steps":[{"name":"s","method":"POST","url":"https://x.com/t","headers":{"content-type":"application/x-www-form-urlencoded; charset=utf-8"},
	  "form_body":{"a":"{{indicator.value}}","b":"x y"}}]}`)
	p, err := httpsteps.BuildRequest(cfg, 0, map[string]any{"indicator": map[string]any{"value": "1&2"}})
	require.NoError(t, err)
	require.Equal(t, "a=1%262&b=x+y", string(p.Body))
	require.Equal(t, map[string]string{"content-type": "application/x-www-form-urlencoded; charset=utf-8"}, p.Headers)
}

func TestFailedRecord(t *testing.T) {
	t.Parallel()
	cfg := mustConfig(t, `{"steps":[{"name":"s","method":"DELETE","url":"https://x.com/{{auth.key}}"}]}`)
	rec := httpsteps.FailedRecord(cfg, 0, "8.8.8.8", errors.New("nope"))
	require.Equal(t, "s", rec.StepName)
	require.Equal(t, "DELETE", rec.RequestMethod)
	require.Equal(t, "https://x.com/{{auth.key}}", rec.RequestURL)
	require.Equal(t, "nope", rec.Error)
	require.Equal(t, "8.8.8.8", rec.IndicatorValue)
}

func TestStepOutcome_Vars(t *testing.T) {
	t.Parallel()
	out := httpsteps.StepOutcome{Response: map[string]any{"a": 1}, Status: 201, Headers: map[string]string{"X-Request-Id": "r1"}}
	v := out.Vars()
	require.Equal(t, 201, v["status"])
	require.Equal(t, "r1", v["headers"].(map[string]any)["x-request-id"])
	require.Equal(t, "r1", v["headers"].(map[string]any)["X-Request-Id"])
	out.MarkSkipped(errors.New("e"))
	require.True(t, out.Record.Skipped)
	require.Equal(t, "e", out.Record.Error)
	require.Nil(t, out.Response)
}

// BenchmarkStep measures the engine's own cost for one step (build, send to an in-memory Doer,
// decode, mask, record), without network.
func BenchmarkStep(b *testing.B) {
	cfg := mustConfig(b, `{"steps":[{"name":"lookup","url":"https://api.example.com/v3/ip_addresses/{{indicator.value}}",
	  "headers":{"x-apikey":"{{auth.api_key}}","Accept":"application/json"},"query_params":{"limit":"10"},"not_found_status":[404]}]}`)
	body := `{"data":{"id":"8.8.8.8","type":"ip_address","attributes":{"country":"US","reputation":12,
	  "last_analysis_stats":{"harmless":60,"malicious":1,"suspicious":0,"undetected":20},"tags":["dns","google"]}}}`
	doer := doerFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	r := httpsteps.NewRunner(doer)
	vars := map[string]any{"indicator": map[string]any{"value": "8.8.8.8", "type": "ip"}, "auth": map[string]any{"api_key": apiKey}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := httpsteps.BuildRequest(cfg, 0, vars)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Do(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
