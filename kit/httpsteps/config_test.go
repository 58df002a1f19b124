package httpsteps_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/validate"
)

const twoStepConfig = `{
  "steps": [
    {"name": "token", "method": "post", "url": "https://login.example.com/oauth2/token",
     "form_body": {"grant_type": "client_credentials", "client_id": "{{auth.client_id}}", "client_secret": "{{auth.client_secret}}"},
     "timeout_seconds": 10},
    {"name": "lookup", "url": "https://api.example.com/v1/ip/{{indicator.value}}",
     "headers": {"Authorization": "Bearer {{steps.token.response.access_token}}"},
     "query_params": {"verbose": true, "limit": 10},
     "expected_status": [200, 202], "not_found_status": [404], "optional": false}
  ],
  "url_templates_by_type": {"domain": "https://api.example.com/v1/domain/{{indicator.value}}"}
}`

func TestParseConfig_Valid(t *testing.T) {
	t.Parallel()
	cfg, errs := httpsteps.ParseConfig(json.RawMessage(twoStepConfig))
	require.Empty(t, errs)
	require.Len(t, cfg.Steps, 2)
	tok, look := cfg.Steps[0], cfg.Steps[1]
	require.Equal(t, "POST", tok.Method)
	require.Equal(t, 10, tok.TimeoutSeconds)
	require.Equal(t, []int{200}, tok.ExpectedStatus)
	require.Equal(t, []int{}, tok.NotFoundStatus)
	require.Equal(t, "{{auth.client_secret}}", tok.FormBody["client_secret"])
	require.Equal(t, "GET", look.Method)
	require.Equal(t, 30, look.TimeoutSeconds)
	require.Equal(t, []int{200, 202}, look.ExpectedStatus)
	require.Equal(t, []int{404}, look.NotFoundStatus)
	require.Equal(t, map[string]string{"verbose": "true", "limit": "10"}, look.QueryParams)
	require.Contains(t, cfg.URLTemplatesByType, "domain")
	require.Equal(t, []string{
		"auth.client_id", "auth.client_secret", "indicator.value", "steps.token.response.access_token",
	}, cfg.Variables())

	// The normalized config survives a JSON round trip (it is stored and passed to activities).
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	again, errs := httpsteps.ParseConfig(b)
	require.Empty(t, errs)
	require.Equal(t, cfg, again)
}

func TestParseConfig_JSONBodyTemplates(t *testing.T) {
	t.Parallel()
	cfg, errs := httpsteps.ParseConfig(json.RawMessage(`{"steps":[{"name":"s","method":"POST","url":"https://x.com/",
		"json_body":{"user":{"id":"{{indicator.value}}","tags":["a","{{alert.title}}"]},"n":3}}]}`))
	require.Empty(t, errs)
	require.NotNil(t, cfg.Steps[0].JSONBody)
}

func locs(errs validate.Errors) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, validate.LocString(e.Loc)+" "+e.Type)
	}
	return out
}

func TestParseConfig_Invalid(t *testing.T) {
	t.Parallel()
	step := func(extra string) string {
		return `{"steps":[{"name":"a","url":"https://x.com/"` + extra + `}]}`
	}
	cases := []struct {
		name, raw string
		want      []string // LocString + " " + type, all of them
	}{
		{"empty", ``, []string{" missing"}},
		{"null", `null`, []string{" missing"}},
		{"bad json", `{"steps":`, []string{" json_invalid"}},
		{"trailing", `{"steps":[]} {}`, []string{" json_invalid"}},
		{"not object", `[1]`, []string{" dict_type"}},
		{"no steps", `{}`, []string{"steps missing"}},
		{"steps not list", `{"steps":{}}`, []string{"steps list_type"}},
		{"zero steps", `{"steps":[]}`, []string{"steps too_short"}},
		{"too many steps", `{"steps":[` + strings.TrimSuffix(strings.Repeat(`{"name":"a","url":"https://x/"},`, 21), ",") + `]}`, []string{"steps too_long"}},
		{"unknown root", `{"steps":[{"name":"a","url":"https://x.com/"}],"extra":1}`, []string{"extra extra_forbidden"}},
		{"step not object", `{"steps":["x"]}`, []string{"steps[0] dict_type"}},
		{"unknown step field", step(`,"retries":3`), []string{"steps[0].retries extra_forbidden"}},
		{"missing name and url", `{"steps":[{}]}`, []string{"steps[0].name missing", "steps[0].url missing"}},
		{"bad name", `{"steps":[{"name":"a-b","url":"https://x.com/"}]}`, []string{"steps[0].name string_pattern_mismatch"}},
		{"long name", `{"steps":[{"name":"` + strings.Repeat("a", 65) + `","url":"https://x.com/"}]}`, []string{"steps[0].name string_too_long"}},
		{"name wrong type", `{"steps":[{"name":1,"url":"https://x.com/"}]}`, []string{"steps[0].name string_type"}},
		{"duplicate names", `{"steps":[{"name":"a","url":"https://x.com/"},{"name":"a","url":"https://x.com/"}]}`, []string{"steps[1].name value_error"}},
		{"bad method", step(`,"method":"TRACE"`), []string{"steps[0].method enum"}},
		{"method wrong type", step(`,"method":1`), []string{"steps[0].method string_type"}},
		{"empty url", `{"steps":[{"name":"a","url":" "}]}`, []string{"steps[0].url string_too_short"}},
		{"ftp url", `{"steps":[{"name":"a","url":"ftp://x.com/"}]}`, []string{"steps[0].url value_error"}},
		{"relative url", `{"steps":[{"name":"a","url":"/v1/x"}]}`, []string{"steps[0].url value_error"}},
		{"hostless url", `{"steps":[{"name":"a","url":"https://"}]}`, []string{"steps[0].url value_error"}},
		{"bad template", `{"steps":[{"name":"a","url":"https://x.com/{{indicator.value"}]}`, []string{"steps[0].url value_error"}},
		{"unknown namespace", `{"steps":[{"name":"a","url":"https://x.com/{{env.HOME}}"}]}`, []string{"steps[0].url value_error"}},
		{"bare namespace", `{"steps":[{"name":"a","url":"https://x.com/{{auth}}"}]}`, []string{"steps[0].url value_error"}},
		{"self reference", `{"steps":[{"name":"a","url":"https://x.com/{{steps.a.response.x}}"}]}`, []string{"steps[0].url value_error"}},
		{"forward reference", `{"steps":[{"name":"a","url":"https://x.com/{{steps.b.response.x}}"},{"name":"b","url":"https://x.com/"}]}`, []string{"steps[0].url value_error"}},
		{"bad step field", `{"steps":[{"name":"a","url":"https://x.com/"},{"name":"b","url":"https://x.com/{{steps.a.body}}"}]}`, []string{"steps[1].url value_error"}},
		{"short step ref", `{"steps":[{"name":"a","url":"https://x.com/"},{"name":"b","url":"https://x.com/{{steps.a}}"}]}`, []string{"steps[1].url value_error"}},
		{"headers not object", step(`,"headers":[]`), []string{"steps[0].headers dict_type"}},
		{"header value not string", step(`,"headers":{"X":[1]}`), []string{"steps[0].headers.X string_type"}},
		{"header bad name", step(`,"headers":{"X Y":"1"}`), []string{"steps[0].headers.X Y value_error"}},
		{"header bad template", step(`,"headers":{"A":"{{auth.k | base64}}"}`), []string{"steps[0].headers.A value_error"}},
		{"query value object", step(`,"query_params":{"q":{}}`), []string{"steps[0].query_params.q string_type"}},
		{"json body bad template", step(`,"json_body":{"a":[1,"{{nope.x}}"]}`), []string{"steps[0].json_body.a[1] value_error"}},
		{"both bodies", step(`,"json_body":{},"form_body":{}`), []string{"steps[0].form_body value_error"}},
		{"timeout zero", step(`,"timeout_seconds":0`), []string{"steps[0].timeout_seconds greater_than_equal"}},
		{"timeout big", step(`,"timeout_seconds":301`), []string{"steps[0].timeout_seconds less_than_equal"}},
		{"timeout float", step(`,"timeout_seconds":1.5`), []string{"steps[0].timeout_seconds int_parsing"}},
		{"timeout string", step(`,"timeout_seconds":"10"`), []string{"steps[0].timeout_seconds int_type"}},
		{"status out of range", step(`,"expected_status":[200,600,99]`), []string{"steps[0].expected_status[1] value_error", "steps[0].expected_status[2] value_error"}},
		{"status empty", step(`,"expected_status":[]`), []string{"steps[0].expected_status too_short"}},
		{"status not list", step(`,"expected_status":200`), []string{"steps[0].expected_status list_type"}},
		{"status wrong type", step(`,"not_found_status":["404"]`), []string{"steps[0].not_found_status[0] int_type"}},
		{"status overlap", step(`,"not_found_status":[200]`), []string{"steps[0].not_found_status value_error"}},
		{"optional wrong type", step(`,"optional":"yes"`), []string{"steps[0].optional bool_type"}},
		{"url by type unknown type", `{"steps":[{"name":"a","url":"https://x.com/"}],"url_templates_by_type":{"ipv4":"https://x/"}}`, []string{"url_templates_by_type.ipv4 enum"}},
		{"url by type not string", `{"steps":[{"name":"a","url":"https://x.com/"}],"url_templates_by_type":{"ip":1}}`, []string{"url_templates_by_type.ip string_type"}},
		{"url by type step ref", `{"steps":[{"name":"a","url":"https://x.com/"}],"url_templates_by_type":{"ip":"https://x/{{steps.a.response.x}}"}}`, []string{"url_templates_by_type.ip value_error"}},
		{"url by type not object", `{"steps":[{"name":"a","url":"https://x.com/"}],"url_templates_by_type":"x"}`, []string{"url_templates_by_type dict_type"}},
		{"several problems in several steps", `{"steps":[{"name":"ok","url":"https://x.com/","method":"GIT"},{"name":"b!","url":"x","timeout_seconds":-1}]}`,
			[]string{"steps[0].method enum", "steps[1].name string_pattern_mismatch", "steps[1].url value_error", "steps[1].timeout_seconds greater_than_equal"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, errs := httpsteps.ParseConfig(json.RawMessage(tc.raw))
			require.NotEmpty(t, errs)
			require.ElementsMatch(t, tc.want, locs(errs), "%v", errs)
			require.Empty(t, cfg.Steps)
			for _, e := range errs {
				require.NotEmpty(t, e.Msg)
			}
		})
	}
}

func TestParseConfig_NullOptionalFields(t *testing.T) {
	t.Parallel()
	cfg, errs := httpsteps.ParseConfig(json.RawMessage(`{"steps":[{"name":"a","url":"https://x.com/","method":null,"headers":null,"json_body":null,"timeout_seconds":null,"expected_status":null,"optional":null}],"url_templates_by_type":null}`))
	require.Empty(t, errs)
	require.Equal(t, "GET", cfg.Steps[0].Method)
	require.Equal(t, 30, cfg.Steps[0].TimeoutSeconds)
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(twoStepConfig))
	f.Add([]byte(`{"steps":[{"name":"a","url":"https://x/{{steps.a.response}}"}]}`))
	f.Add([]byte(`{"steps":[{"name":"a","url":"{{auth.base}}","json_body":[[[[{"a":"{{x"}]]]]}]}`))
	f.Add([]byte(`{"steps":[{"name":"a","url":"https://x","expected_status":[1e400]}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"steps":null,"url_templates_by_type":{"ip":"{{"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, errs := httpsteps.ParseConfig(raw)
		if len(errs) > 0 {
			require.Empty(t, cfg.Steps)
			for _, e := range errs {
				require.NotEmpty(t, e.Msg)
				require.NotEmpty(t, e.Type)
			}
			return
		}
		require.NotEmpty(t, cfg.Steps)
		require.LessOrEqual(t, len(cfg.Steps), httpsteps.MaxSteps)
		// A valid config builds or fails cleanly for every step, and its output stays bounded.
		vars := map[string]any{"indicator": map[string]any{"value": "v", "type": "ip"}}
		for i := range cfg.Steps {
			p, err := httpsteps.BuildRequest(cfg, i, vars)
			if err != nil {
				require.True(t, httpsteps.IsPermanent(err), fmt.Sprint(err))
				continue
			}
			require.LessOrEqual(t, len(p.Body), httpsteps.MaxRenderedSize)
		}
	})
}
