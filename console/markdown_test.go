package console

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMarkdownAllowsOnlyHTTPAndMailtoLinks: a context document's links render as links only to
// http(s) and mailto; entity-encoded and autolink javascript: (which goldmark's own check let
// through, issue 27 item 5) and every other scheme render as text.
func TestMarkdownAllowsOnlyHTTPAndMailtoLinks(t *testing.T) {
	c := &Console{md: newMarkdown()}
	hostile := []string{
		"[a](javascript&#58;alert(1))",
		"[b](javascript&colon;alert(1))",
		"[c](&#106;avascript:alert(1))",
		"<javascript:alert(1)>",
		"<JaVaScRiPt:alert(1)>",
		"[d](JAVASCRIPT:alert(1))",
		"[e](vbscript:msgbox(1))",
		"[f](data:text/html;base64,PHNjcmlwdD4=)",
		"[g](file:///etc/passwd)",
		"[h](\u0001javascript:alert(1))",
		"![i](javascript:alert(1))",
		"[j]: javascript&#x3A;alert(1)\n\n[k][j]",
		"<vbscript:x>",
		"[l](javascript\\:alert(1))",
		"[m](java&#x09;script:alert(1))",
		"[n](<java\tscript:alert(1)>)",
	}
	hrefs := regexp.MustCompile(`(?:href|src)="([^"]*)"`)
	for _, src := range hostile {
		out := string(c.renderMarkdown(src))
		for _, m := range hrefs.FindAllStringSubmatch(out, -1) {
			t.Errorf("%q rendered a link to %q: %s", src, m[1], out)
		}
		require.NotContains(t, strings.ToLower(out), "<a ", src)
	}
	for src, want := range map[string]string{
		"[site](https://example.com/x)":  `href="https://example.com/x"`,
		"<http://example.com>":           `href="http://example.com"`,
		"www.example.com":                `href="http://www.example.com"`,
		"[mail](mailto:soc@example.com)": `href="mailto:soc@example.com"`,
		"<soc@example.com>":              `href="mailto:soc@example.com"`,
		"[rel](#section-2)":              `href="#section-2"`,
		"[path](runbooks/phishing)":      `href="runbooks/phishing"`,
	} {
		require.Contains(t, string(c.renderMarkdown(src)), want, src)
	}
	// The text of a refused link stays.
	require.Contains(t, string(c.renderMarkdown("see [the runbook](javascript:alert(1)) now")), "see the runbook now")
}
