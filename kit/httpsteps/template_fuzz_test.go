package httpsteps_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

// dotSegment reports a "." or ".." segment in p, splitting on "/" and "\".
func dotSegment(p string) bool {
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// FuzzRenderURLDotSegments (issue 12 item 5): whatever the template and the indicator value, a URL that
// renders has no "." or ".." path segment, as written, once or twice percent-decoded. The seed corpus
// (testdata/fuzz/FuzzRenderURLDotSegments and the f.Add calls) runs under plain `go test`.
func FuzzRenderURLDotSegments(f *testing.F) {
	f.Add("https://okta.example.com/api/v1/users/{{indicator.value}}/lifecycle/suspend", "..")
	f.Add("https://okta.example.com/api/v1/users/{{indicator.value}}/lifecycle/suspend", ".")
	f.Add("https://api.example.com/v1/{{indicator.value}}", "%2e%2e")
	f.Add("https://api.example.com/v1/{{indicator.value}}", "%252e%252E")
	f.Add("https://api.example.com/v1/.{{indicator.value}}/x", ".")
	f.Add("https://api.example.com/v1/{{indicator.value}}./x", ".")
	f.Add("https://api.example.com/v1/{{indicator.value | urlencode}}/x", "..")
	f.Add("https://api.example.com/v1/{{indicator.value}}", "a/../../admin")
	f.Add("https://api.example.com/v1/{{indicator.value}}", "..\\..\\admin")
	f.Add("{{indicator.value}}/users", "https://h.example/a/..")
	f.Add("https://api.example.com/v1/{{indicator.value}}?q={{indicator.value}}", "..")
	f.Add("https://api.example.com/v1/ip/{{indicator.value}}", "8.8.8.8")
	f.Add("https://api.example.com/v1/domain/{{indicator.value}}", "example.com")
	f.Fuzz(func(t *testing.T, tpl, value string) {
		p, err := httpsteps.ParseTemplate(tpl)
		if err != nil {
			return
		}
		out, err := p.RenderURL(map[string]any{"indicator": map[string]any{"value": value, "type": "ip"}})
		if err != nil {
			return
		}
		u, err := url.Parse(out)
		if err != nil {
			return // the caller refuses URLs that do not parse
		}
		paths := []string{u.EscapedPath(), u.Path}
		if d, err := url.PathUnescape(u.Path); err == nil {
			paths = append(paths, d)
		}
		for _, path := range paths {
			require.False(t, dotSegment(path), "template %q value %q rendered %q (path %q)", tpl, value, out, path)
		}
	})
}

func TestRenderURL_DotSegmentsRefused(t *testing.T) {
	vars := func(v string) map[string]any { return map[string]any{"indicator": map[string]any{"value": v}} }
	tpl, err := httpsteps.ParseTemplate("https://okta.example.com/api/v1/users/{{indicator.value}}/lifecycle/suspend")
	require.NoError(t, err)
	for _, v := range []string{"..", ".", "%2e%2E", "%252e."} {
		_, err := tpl.RenderURL(vars(v))
		require.ErrorContains(t, err, "segment", v)
	}
	for _, v := range []string{"alice@example.com", "...", "a..b", ".hidden", "1.2.3.4"} {
		out, err := tpl.RenderURL(vars(v))
		require.NoError(t, err, v)
		require.Contains(t, out, "/lifecycle/suspend")
	}
}
