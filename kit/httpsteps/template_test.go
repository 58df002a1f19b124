package httpsteps_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

func testVars() map[string]any {
	return map[string]any{
		"indicator": map[string]any{"value": "8.8.8.8", "type": "ip"},
		"auth":      map[string]any{"api_key": "sk_live_abcdefghijklmnop", "domain": "dev-123.okta.com"},
		"secrets":   map[string]string{"OKTA_TOKEN": "00aBcDeFgHiJkLmNoP"},
		"alert":     map[string]any{"title": "Brute force & more", "severity": "High"},
		"steps": map[string]any{
			"token": map[string]any{
				"response": map[string]any{
					"access_token": "tok/with+chars=",
					"count":        json.Number("12345678901234567890"),
					"ratio":        0.5,
					"ok":           true,
					"items":        []any{"a", map[string]any{"id": "x1"}},
					"nested":       map[string]any{"k": "v"},
					"nothing":      nil,
				},
				"status": 200,
			},
		},
	}
}

func TestParseTemplate_Errors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"unclosed":       "https://x/{{indicator.value",
		"empty":          "{{}}",
		"blank":          "{{   }}",
		"empty segment":  "{{indicator..value}}",
		"leading dot":    "{{.indicator}}",
		"bad char":       "{{indicator.value()}}",
		"space in path":  "{{indicator value}}",
		"unknown filter": "{{indicator.value | upper}}",
		"empty filter":   "{{indicator.value | }}",
		"two filters":    "{{indicator.value | urlencode | urlencode}}",
		"nested":         "{{ {{indicator.value}} }}",
		"code":           "{{ os.exit(1) }}",
		"too deep":       "{{" + strings.Repeat("a.", httpsteps.MaxPathSegments) + "a}}",
		"too many exprs": strings.Repeat("{{a.b}}", httpsteps.MaxTemplateExprs+1),
		"too long":       strings.Repeat("x", httpsteps.MaxTemplateSize+1),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := httpsteps.ParseTemplate(src)
			require.Error(t, err)
		})
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tpl, want string
	}{
		{"plain text", "plain text"},
		{"", ""},
		{"x }} y", "x }} y"},
		{"{{indicator.value}}", "8.8.8.8"},
		{"{{ indicator.value }}", "8.8.8.8"},
		{"Bearer {{steps.token.response.access_token}}", "Bearer tok/with+chars="},
		{"{{steps.token.response.access_token | urlencode}}", "tok%2Fwith%2Bchars%3D"},
		{"{{steps.token.response.access_token|urlencode}}", "tok%2Fwith%2Bchars%3D"},
		{"{{steps.token.response.count}}", "12345678901234567890"},
		{"{{steps.token.response.ratio}}", "0.5"},
		{"{{steps.token.response.ok}}", "true"},
		{"{{steps.token.response.items.0}}", "a"},
		{"{{steps.token.response.items.1.id}}", "x1"},
		{"{{steps.token.response.nested}}", `{"k":"v"}`},
		{"{{steps.token.response.nothing}}", ""},
		{"{{steps.token.status}}", "200"},
		{"{{secrets.OKTA_TOKEN}}", "00aBcDeFgHiJkLmNoP"},
		{"{{alert.title}} ({{alert.severity}})", "Brute force & more (High)"},
	}
	vars := testVars()
	for _, tc := range cases {
		t.Run(tc.tpl, func(t *testing.T) {
			tpl, err := httpsteps.ParseTemplate(tc.tpl)
			require.NoError(t, err)
			got, err := tpl.Render(vars)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestRender_UnknownVariable(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"{{auth.missing}}", "{{nope.x}}", "{{steps.other.response.x}}", "{{steps.token.response.items.9}}", "{{indicator.value.deeper}}"} {
		tpl, err := httpsteps.ParseTemplate(src)
		require.NoError(t, err)
		_, err = tpl.Render(testVars())
		require.Error(t, err, src)
		require.True(t, errors.Is(err, httpsteps.ErrUnknownVariable))
		path := strings.Trim(src, "{}")
		require.Contains(t, err.Error(), `"`+strings.Split(path, ".")[0])
	}
	tpl, _ := httpsteps.ParseTemplate("{{auth.missing}}")
	_, err := tpl.Render(testVars())
	require.ErrorContains(t, err, `"auth.missing"`)
}

func TestRender_NoRecursiveExpansion(t *testing.T) {
	t.Parallel()
	vars := map[string]any{"indicator": map[string]any{"value": "{{auth.key}}"}, "auth": map[string]any{"key": "SECRET"}}
	tpl, err := httpsteps.ParseTemplate("x={{indicator.value}}")
	require.NoError(t, err)
	got, err := tpl.Render(vars)
	require.NoError(t, err)
	require.Equal(t, "x={{auth.key}}", got)
}

func TestRender_OutputCap(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", httpsteps.MaxRenderedSize/4+1)
	vars := map[string]any{"indicator": map[string]any{"value": big}}
	tpl, err := httpsteps.ParseTemplate(strings.Repeat("{{indicator.value}}", 5))
	require.NoError(t, err)
	_, err = tpl.Render(vars)
	require.ErrorContains(t, err, "exceeds")
	tpl, err = httpsteps.ParseTemplate("https://x/" + strings.Repeat("{{indicator.value}}", 5))
	require.NoError(t, err)
	_, err = tpl.RenderURL(vars)
	require.ErrorContains(t, err, "exceeds")
}

func TestRenderURL(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"indicator": map[string]any{"value": "a b/c?d#e&f=g", "type": "url"},
		"auth":      map[string]any{"domain": "dev-123.okta.com", "base": "https://api.example.com/v2", "evil": "evil.com/#", "port": "dev.okta.com:8443"},
	}
	cases := []struct {
		tpl, want, err string
	}{
		{"https://x.com/lookup/{{indicator.value}}", "https://x.com/lookup/a%20b%2Fc%3Fd%23e&f=g", ""},
		{"https://x.com/lookup?q={{indicator.value}}", "https://x.com/lookup?q=a+b%2Fc%3Fd%23e%26f%3Dg", ""},
		{"https://x.com/a/{{indicator.value}}?q={{indicator.value}}#{{indicator.value}}", "https://x.com/a/a%20b%2Fc%3Fd%23e&f=g?q=a+b%2Fc%3Fd%23e%26f%3Dg#a%20b%2Fc%3Fd%23e&f=g", ""},
		{"https://x.com/p/{{indicator.value | urlencode}}", "https://x.com/p/a+b%2Fc%3Fd%23e%26f%3Dg", ""},
		{"https://{{auth.domain}}/api/v1/users/{{indicator.type}}", "https://dev-123.okta.com/api/v1/users/url", ""},
		{"https://{{auth.port}}/x", "https://dev.okta.com:8443/x", ""},
		{"{{auth.base}}/ip/{{indicator.value}}", "https://api.example.com/v2/ip/a%20b%2Fc%3Fd%23e&f=g", ""},
		{"{{auth.base}}?q={{indicator.value}}", "https://api.example.com/v2?q=a+b%2Fc%3Fd%23e%26f%3Dg", ""},
		{"https://{{auth.evil}}/x", "", "not a valid host"},
		{"https://{{indicator.value}}/x", "", "not a valid host"},
		{"http{{auth.domain}}://x", "", "scheme"},
		{"{{auth.base | urlencode}}/x", "", "urlencode"},
		{"https://x.com/{{auth.nope}}", "", "auth.nope"},
	}
	for _, tc := range cases {
		t.Run(tc.tpl, func(t *testing.T) {
			tpl, err := httpsteps.ParseTemplate(tc.tpl)
			require.NoError(t, err)
			got, err := tpl.RenderURL(vars)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func FuzzTemplate(f *testing.F) {
	f.Add("https://x.com/{{indicator.value}}?q={{indicator.value | urlencode}}", "a/b?c")
	f.Add("{{auth.base}}/x/{{steps.s.response.k}}", "{{indicator.value}}")
	f.Add("Bearer {{ steps.s.response.k }}", "\r\nX: y")
	f.Add("{{", "")
	f.Add("}}{{a}}", "x")
	f.Add("https://{{indicator.value}}:80/", "[::1]")
	f.Fuzz(func(t *testing.T, src, value string) {
		vars := map[string]any{
			"indicator": map[string]any{"value": value, "type": "ip"},
			"auth":      map[string]any{"base": value},
			"steps":     map[string]any{"s": map[string]any{"response": map[string]any{"k": value}}},
		}
		tpl, err := httpsteps.ParseTemplate(src)
		if err != nil {
			return
		}
		limit := httpsteps.MaxRenderedSize + len(src) + 3*len(value)
		if out, err := tpl.Render(vars); err == nil && len(out) > limit {
			t.Fatalf("render produced %d bytes", len(out))
		}
		if out, err := tpl.RenderURL(vars); err == nil {
			if len(out) > limit {
				t.Fatalf("render URL produced %d bytes", len(out))
			}
			if strings.Contains(value, "/") && strings.HasPrefix(src, "https://x/{{indicator.value}}") && strings.Contains(out[len("https://x/"):], value) {
				t.Fatalf("path value not escaped: %q", out)
			}
		}
	})
}
