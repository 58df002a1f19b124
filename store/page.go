package store

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

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

// scanPage scans q into its model and returns the total of matching rows. A zero page reads every
// row in one query (the total is then the number read: scanned); a page adds its limit and offset
// and counts the total with a second query.
func scanPage(ctx context.Context, q *bun.SelectQuery, p Page, scanned func() int) (int, error) {
	if p.Size <= 0 {
		if err := q.Scan(ctx); err != nil {
			return 0, err
		}
		return scanned(), nil
	}
	total, err := q.Limit(p.Limit()).Offset(p.Offset()).ScanAndCount(ctx)
	return int(total), err
}

func pgdialectArray(v any) any { return pgdialect.Array(v) }
