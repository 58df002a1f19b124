package store

import "github.com/uptrace/bun/dialect/pgdialect"

// Page is a 1-based page request. The API validates the bounds before it reaches the store.
type Page struct {
	Number int
	Size   int
}

// Limit is the SQL LIMIT of the page.
func (p Page) Limit() int64 {
	if p.Size <= 0 {
		return 50
	}
	return int64(p.Size)
}

// Offset is the SQL OFFSET of the page.
func (p Page) Offset() int64 {
	if p.Number <= 1 {
		return 0
	}
	return int64(p.Number-1) * p.Limit()
}

func pgdialectArray(v any) any { return pgdialect.Array(v) }
