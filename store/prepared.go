package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// prepared is a server-side prepared statement for a hot, fixed query: Postgres parses and plans it
// once per connection instead of on every call (for the ingest statement that is most of its CPU
// cost). It is prepared on first use, not at Open, because Open also serves `vigil migrate` before
// the tables exist; database/sql then prepares it once on each pooled connection. Postgres re-plans
// it by itself after a migration changes the tables.
type prepared struct {
	query string
	mu    sync.Mutex
	stmt  *sql.Stmt // nil until the first get succeeds
}

func (p *prepared) get(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt == nil {
		st, err := db.PrepareContext(ctx, p.query)
		if err != nil {
			return nil, fmt.Errorf("prepare statement: %w", mapErr(err))
		}
		p.stmt = st
	}
	return p.stmt, nil
}

func (p *prepared) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmt != nil {
		_ = p.stmt.Close()
		p.stmt = nil
	}
}

// pgTextArray renders vs as a Postgres text[] literal ({"a","b \"c\""}), for statement parameters.
func pgTextArray(vs []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range v {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
