package console

import (
	"bytes"
	"encoding/json"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders context documents: CommonMark with GitHub tables, strikethrough and autolinks.
// goldmark's default (not WithUnsafe) is the sanitiser: raw HTML in the source is dropped, not passed
// through, and links or images with a javascript:, vbscript:, file: or data: (other than image) URL are
// emptied; text is escaped. The CSP is the second wall: no script runs and no image loads from
// elsewhere even if one slipped through.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))
}

// maxMarkdown bounds what one document renders (the rest is cut, with a note).
const maxMarkdown = 512 << 10

func (c *Console) renderMarkdown(src string) template.HTML {
	cut := false
	if len(src) > maxMarkdown {
		src, cut = src[:maxMarkdown], true
	}
	var buf bytes.Buffer
	if err := c.md.Convert([]byte(src), &buf); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>") //nolint:gosec // escaped
	}
	if cut {
		buf.WriteString("<p><em>(document cut at 512 KB; the API has all of it)</em></p>")
	}
	return template.HTML(buf.String()) //nolint:gosec // goldmark escapes text and drops raw HTML (no WithUnsafe)
}

// fmtJSON pretty-prints a decoded JSON value for a <pre> block.
func fmtJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "(unprintable)"
	}
	return string(b)
}
