package httpsteps

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Template limits. Substituted values are never re-parsed, so expansion is linear in the size of the
// variables; MaxRenderedSize bounds what one template may produce.
const (
	MaxTemplateSize    = 64 << 10 // bytes of template text
	MaxTemplateExprs   = 100      // {{ }} expressions in one template
	MaxPathSegments    = 32       // segments in one expression path
	MaxRenderedSize    = 1 << 20  // bytes produced by rendering one template (or one JSON body)
	FilterURLEncode    = "urlencode"
	namespaceSteps     = "steps"
	namespaceIndicator = "indicator"
)

// ErrUnknownVariable is wrapped by rendering errors for a path that does not resolve.
var ErrUnknownVariable = errors.New("unknown template variable")

// Expr is one {{ path | filter }} expression.
type Expr struct {
	Path      []string // dotted path, e.g. ["steps", "token", "response", "access_token"]
	URLEncode bool     // the "| urlencode" filter
}

// String renders the expression's path with dots.
func (e Expr) String() string { return strings.Join(e.Path, ".") }

type part struct {
	lit  string
	expr *Expr
}

// Template is a parsed template string: literal text and {{ }} expressions. Templates do not execute
// code: an expression is a dotted path into the variables plus an optional urlencode filter.
type Template struct {
	src   string
	parts []part
}

// ParseTemplate parses s. Expressions look like {{ indicator.value }} or {{ auth.key | urlencode }};
// a path segment is letters, digits, '_' or '-'. An unclosed "{{" is an error; a lone "}}" is text.
func ParseTemplate(s string) (*Template, error) {
	if len(s) > MaxTemplateSize {
		return nil, fmt.Errorf("template is %d bytes, limit %d", len(s), MaxTemplateSize)
	}
	t := &Template{src: s}
	rest := s
	nexpr := 0
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest})
			}
			return t, nil
		}
		if open > 0 {
			t.parts = append(t.parts, part{lit: rest[:open]})
		}
		rest = rest[open+2:]
		closeAt := strings.Index(rest, "}}")
		if closeAt < 0 {
			return nil, fmt.Errorf("unclosed {{ at offset %d", len(s)-len(rest)-2)
		}
		e, err := parseExpr(rest[:closeAt])
		if err != nil {
			return nil, fmt.Errorf("expression {{%s}}: %w", rest[:closeAt], err)
		}
		nexpr++
		if nexpr > MaxTemplateExprs {
			return nil, fmt.Errorf("more than %d expressions", MaxTemplateExprs)
		}
		t.parts = append(t.parts, part{expr: &e})
		rest = rest[closeAt+2:]
	}
}

func parseExpr(s string) (Expr, error) {
	var e Expr
	pathText, filter, hasFilter := strings.Cut(s, "|")
	if hasFilter {
		switch strings.TrimSpace(filter) {
		case FilterURLEncode:
			e.URLEncode = true
		case "":
			return e, errors.New("empty filter after |")
		default:
			return e, fmt.Errorf("unknown filter %q (only %q is supported)", strings.TrimSpace(filter), FilterURLEncode)
		}
	}
	pathText = strings.TrimSpace(pathText)
	if pathText == "" {
		return e, errors.New("empty expression")
	}
	segs := strings.Split(pathText, ".")
	if len(segs) > MaxPathSegments {
		return e, fmt.Errorf("path has more than %d segments", MaxPathSegments)
	}
	for _, seg := range segs {
		if seg == "" {
			return e, errors.New("empty path segment")
		}
		for _, c := range seg {
			if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return e, fmt.Errorf("invalid character %q in path (letters, digits, _ and - only)", c)
			}
		}
	}
	e.Path = segs
	return e, nil
}

// Source returns the template text as written.
func (t *Template) Source() string { return t.src }

// Exprs returns the template's expressions in order.
func (t *Template) Exprs() []Expr {
	out := make([]Expr, 0, len(t.parts))
	for _, p := range t.parts {
		if p.expr != nil {
			out = append(out, *p.expr)
		}
	}
	return out
}

// single returns the expression when the whole template is exactly one expression.
func (t *Template) single() (*Expr, bool) {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		return t.parts[0].expr, true
	}
	return nil, false
}

// Render substitutes values as they are (headers, bodies, query_params values); only the urlencode
// filter escapes. Objects and lists are substituted as compact JSON.
func (t *Template) Render(vars map[string]any) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
		} else {
			s, err := renderExpr(*p.expr, vars)
			if err != nil {
				return "", err
			}
			if p.expr.URLEncode {
				s = url.QueryEscape(s)
			}
			b.WriteString(s)
		}
		if b.Len() > MaxRenderedSize {
			return "", fmt.Errorf("rendered template exceeds %d bytes", MaxRenderedSize)
		}
	}
	return b.String(), nil
}

// URL rendering positions.
type urlPos int

const (
	posStart urlPos = iota // nothing written yet
	posScheme
	posAuthority
	posPath
	posQuery
	posFragment
)

type urlState struct {
	pos  urlPos
	tail string // last characters seen while in posScheme, to find "://"
}

func (st *urlState) feed(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch st.pos {
		case posStart, posScheme:
			st.pos = posScheme
			st.tail += string(c)
			if len(st.tail) > 3 {
				st.tail = st.tail[len(st.tail)-3:]
			}
			if st.tail == "://" {
				st.pos = posAuthority
			}
		case posAuthority:
			switch c {
			case '/':
				st.pos = posPath
			case '?':
				st.pos = posQuery
			case '#':
				st.pos = posFragment
			}
		case posPath:
			switch c {
			case '?':
				st.pos = posQuery
			case '#':
				st.pos = posFragment
			}
		case posQuery:
			if c == '#' {
				st.pos = posFragment
			}
		}
	}
}

// RenderURL substitutes values into a URL template, escaping each by where it lands: path segment
// escaping in the path ("/" becomes %2F), query escaping in the query and with the urlencode filter,
// host values checked to be a plain host[:port]. An expression that starts the template (a base URL
// such as {{auth.base_url}}/v1) is inserted as is and becomes part of the URL's structure.
func (t *Template) RenderURL(vars map[string]any) (string, error) {
	var b strings.Builder
	var st urlState
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			st.feed(p.lit)
		} else {
			s, err := renderExpr(*p.expr, vars)
			if err != nil {
				return "", err
			}
			switch {
			case st.pos == posStart:
				if p.expr.URLEncode {
					return "", fmt.Errorf("{{%s}}: urlencode cannot apply to the start of a URL", p.expr)
				}
				st.feed(s)
			case st.pos == posScheme:
				return "", fmt.Errorf("{{%s}}: a value cannot be placed inside the URL scheme", p.expr)
			case p.expr.URLEncode:
				s = url.QueryEscape(s)
			case st.pos == posAuthority:
				if !validHostValue(s) {
					return "", fmt.Errorf("{{%s}}: value is not a valid host name", p.expr)
				}
			case st.pos == posQuery:
				s = url.QueryEscape(s)
			default: // path, fragment
				s = url.PathEscape(s)
			}
			b.WriteString(s)
		}
		if b.Len() > MaxRenderedSize {
			return "", fmt.Errorf("rendered URL exceeds %d bytes", MaxRenderedSize)
		}
	}
	out := b.String()
	if hasDotSegment(out) {
		return "", errors.New("rendered URL path has a \".\" or \"..\" segment (a value may not move the request to another path)")
	}
	return out, nil
}

// hasDotSegment reports whether the path of raw has a "." or ".." segment, also once percent-decoded
// (repeatedly: %2e, %252e) and with "\" read as "/" as some servers do, so an indicator value such as
// ".." cannot turn /users/{{indicator.value}}/lifecycle/suspend into /lifecycle/suspend.
func hasDotSegment(raw string) bool {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
		j := strings.IndexAny(rest, "/?#")
		if j < 0 {
			return false
		}
		rest = rest[j:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	for range 4 {
		for _, seg := range strings.FieldsFunc(rest, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == "." || seg == ".." {
				return true
			}
		}
		dec, err := url.PathUnescape(rest)
		if err != nil || dec == rest {
			return false
		}
		rest = dec
	}
	return false
}

func validHostValue(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_' ||
			c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func renderExpr(e Expr, vars map[string]any) (string, error) {
	v, err := Lookup(vars, e.Path)
	if err != nil {
		return "", err
	}
	return stringify(v)
}

// Lookup resolves a path against vars. Maps (map[string]any, map[string]string) are indexed by key,
// lists ([]any, []string) by decimal index. A missing element is an error naming the path.
func Lookup(vars map[string]any, path []string) (any, error) {
	var cur any = vars
	for i, seg := range path {
		next, ok := child(cur, seg)
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownVariable, strings.Join(path[:i+1], "."))
		}
		cur = next
	}
	return cur, nil
}

func child(node any, seg string) (any, bool) {
	switch v := node.(type) {
	case map[string]any:
		c, ok := v[seg]
		return c, ok
	case map[string]string:
		c, ok := v[seg]
		return c, ok
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(v) {
			return nil, false
		}
		return v[i], true
	case []string:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(v) {
			return nil, false
		}
		return v[i], true
	}
	return nil, false
}

func stringify(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cannot render value of type %T: %w", v, err)
	}
	if len(b) > MaxRenderedSize {
		return "", fmt.Errorf("value exceeds %d bytes", MaxRenderedSize)
	}
	return string(b), nil
}

// renderJSON renders every string in a decoded JSON value. A string that is exactly one expression
// without a filter is replaced by the variable's value with its JSON type (number, object, ...);
// other strings are rendered as text. Object keys are literal.
func renderJSON(v any, vars map[string]any, budget *int) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := ParseTemplate(x)
		if err != nil {
			return nil, err
		}
		if e, ok := t.single(); ok && !e.URLEncode {
			val, err := Lookup(vars, e.Path)
			if err != nil {
				return nil, err
			}
			return val, nil
		}
		s, err := t.Render(vars)
		if err != nil {
			return nil, err
		}
		*budget -= len(s)
		if *budget < 0 {
			return nil, fmt.Errorf("rendered body exceeds %d bytes", MaxRenderedSize)
		}
		return s, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r, err := renderJSON(x[k], vars, budget)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			r, err := renderJSON(el, vars, budget)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}
