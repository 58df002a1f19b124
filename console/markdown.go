package console

import (
	"bytes"
	"encoding/json"
	"html"
	"html/template"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown renders context documents: CommonMark with GitHub tables, strikethrough and autolinks.
// goldmark's default (not WithUnsafe) drops raw HTML in the source and escapes text. Links are kept
// only to http(s) and mailto (safeLinks, an allow-list checked on the destination as goldmark decoded
// it, entities included: its own deny-list let `javascript&#58;` and `<javascript:…>` autolinks
// through); any other link is rendered as its text. The CSP is the second wall: no script runs and
// no image loads from elsewhere even if one slipped through.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(safeLinks{}, 0))))
}

// safeLinks replaces every link, autolink and image whose destination is not allowedURL by its text.
type safeLinks struct{}

// Transform implements parser.ASTTransformer.
func (safeLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	var unsafe []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Link:
			if !allowedURL(string(x.Destination), true) {
				unsafe = append(unsafe, n)
			}
		case *ast.Image:
			if !allowedURL(string(x.Destination), false) {
				unsafe = append(unsafe, n)
			}
		case *ast.AutoLink:
			if !allowedURL(string(x.URL(reader.Source())), true) {
				unsafe = append(unsafe, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range unsafe {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		switch x := n.(type) {
		case *ast.AutoLink:
			parent.ReplaceChild(parent, n, ast.NewString(x.Label(reader.Source())))
		default: // a link's or image's text stays, without the link
			for c := n.FirstChild(); c != nil; {
				next := c.NextSibling()
				parent.InsertBefore(parent, n, c)
				c = next
			}
			parent.RemoveChild(parent, n)
		}
	}
}

// allowedURL reports whether a link (mailto too when mail) may point at dest: http and https
// absolute URLs, or a relative reference (no scheme). Browsers ignore tabs and newlines anywhere in a
// URL and control characters and spaces around it, so those are removed before the scheme is read.
func allowedURL(dest string, mail bool) bool {
	// As rendered: goldmark resolves entity and numeric references (and backslash escapes) when it
	// writes the href, so "javascript&#58;" is checked as "javascript:".
	d := html.UnescapeString(string(util.UnescapePunctuations([]byte(dest))))
	d = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, d)
	d = strings.TrimFunc(d, func(r rune) bool { return r <= ' ' })
	u, err := url.Parse(d)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return true
	case "mailto":
		return mail
	case "":
		// No scheme: a relative reference, unless a colon before any '/', '?' or '#' would make
		// a browser read one.
		end := strings.IndexAny(d, "/?#")
		if end < 0 {
			end = len(d)
		}
		return !strings.Contains(d[:end], ":")
	}
	return false
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
