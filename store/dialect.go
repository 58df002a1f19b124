package store

import (
	"bytes"

	"github.com/uptrace/bun/dialect/pgdialect"
)

// Dialect is bun's Postgres dialect with its JSON literal writer corrected. Every jsonb value the
// store writes (structs, maps and slices in jsonb columns) is turned into a SQL literal by
// AppendJSON; bun v1.3.0's writes a backslash without the byte it escapes, so in the JSON text
// "\\u0000" (a backslash, then the six printable characters \u0000) the second backslash was read
// again as the start of a NUL escape, and Postgres refused the statement (22P05: the request
// answered 500, the change was lost; security review round 4, R4-8).
type Dialect struct {
	*pgdialect.Dialect
}

// NewDialect is the dialect every bun handle of the store uses.
func NewDialect() *Dialect { return &Dialect{Dialect: pgdialect.New()} }

var nulEscape = []byte("u0000")

// AppendJSON appends jsonb (JSON text as encoding/json writes it) as a SQL string literal. An escape
// is copied whole, backslash and escaped byte together, so an escaped backslash can never start
// another escape. The one JSON escape jsonb refuses, \u0000 (NUL), is kept as its six characters
// of text, as bun does; the API refuses NUL in every field before it gets here.
func (d *Dialect) AppendJSON(b, jsonb []byte) []byte {
	b = append(b, '\'')
	for i := 0; i < len(jsonb); i++ {
		switch c := jsonb[i]; c {
		case '\'':
			b = append(b, "''"...)
		case 0:
			// A raw NUL cannot be in a Postgres literal; encoding/json never writes one.
		case '\\':
			if bytes.HasPrefix(jsonb[i+1:], nulEscape) {
				b = append(b, `\\u0000`...)
				i += len(nulEscape)
				continue
			}
			b = append(b, '\\')
			if i+1 < len(jsonb) {
				i++
				switch n := jsonb[i]; n {
				case '\'':
					b = append(b, "''"...)
				case 0:
				default:
					b = append(b, n)
				}
			}
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}
