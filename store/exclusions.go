package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// ExtractionExclusions is the never-indicator list (API.md §4, one row): the entries extraction
// passes 2-4 never report (package indicators parses them).
type ExtractionExclusions struct {
	bun.BaseModel `bun:"table:extraction_exclusions"`

	ID        int16     `bun:"id,pk"`
	UUID      uuid.UUID `bun:"uuid,type:uuid"`
	Entries   []string  `bun:"entries,array"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// SeedExclusions writes entries as the list when no list was ever stored; a stored list, an admin's
// edits included, stays as it is.
func (s *Store) SeedExclusions(ctx context.Context, entries []string) error {
	_, err := s.db.NewRaw(`INSERT INTO extraction_exclusions (id, entries) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`,
		pgdialectArray(entries)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("seed extraction exclusions: %w", mapErr(err))
	}
	return nil
}

// ExtractionExclusions returns the list (empty, with a nil uuid, when none was ever stored).
func (s *Store) ExtractionExclusions(ctx context.Context) (ExtractionExclusions, error) {
	var x ExtractionExclusions
	err := s.db.NewSelect().Model(&x).Where("id = 1").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ExtractionExclusions{ID: 1, Entries: []string{}}, nil
	}
	if err != nil {
		return ExtractionExclusions{}, fmt.Errorf("read extraction exclusions: %w", mapErr(err))
	}
	if x.Entries == nil {
		x.Entries = []string{}
	}
	return x, nil
}

// PutExtractionExclusions replaces the list, returning it as stored. Run it in a transaction with
// its audit event (audit.Record): the row is locked from the read before to the write.
func (s *Store) PutExtractionExclusions(ctx context.Context, entries []string) (ExtractionExclusions, error) {
	x := ExtractionExclusions{ID: 1, Entries: entries}
	err := s.db.NewRaw(`INSERT INTO extraction_exclusions (id, entries, updated_at) VALUES (1, ?, now())
		ON CONFLICT (id) DO UPDATE SET entries = EXCLUDED.entries, updated_at = now()
		RETURNING uuid, updated_at`, pgdialectArray(entries)).Scan(ctx, &x.UUID, &x.UpdatedAt)
	if err != nil {
		return ExtractionExclusions{}, fmt.Errorf("write extraction exclusions: %w", mapErr(err))
	}
	return x, nil
}

// LockExtractionExclusions reads the list FOR UPDATE (inside the transaction of a change). A list
// never stored is created empty first, so there is a row to lock: two first changes at once wait for
// each other instead of both writing over an unlocked nothing (the insert rolls back with a change
// that does not commit, and one that commits writes the row anyway).
func (s *Store) LockExtractionExclusions(ctx context.Context) (ExtractionExclusions, error) {
	if _, err := s.db.NewRaw(`INSERT INTO extraction_exclusions (id, entries) VALUES (1, '{}') ON CONFLICT (id) DO NOTHING`).Exec(ctx); err != nil {
		return ExtractionExclusions{}, fmt.Errorf("lock extraction exclusions: %w", mapErr(err))
	}
	var x ExtractionExclusions
	err := s.db.NewSelect().Model(&x).Where("id = 1").For("UPDATE").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ExtractionExclusions{ID: 1, Entries: []string{}}, nil
	}
	if err != nil {
		return ExtractionExclusions{}, fmt.Errorf("lock extraction exclusions: %w", mapErr(err))
	}
	return x, nil
}

// Exclusions returns the never-indicator list parsed (uncached; the worker reads it through
// ingest.ExclusionCache).
func (s *Store) Exclusions(ctx context.Context) (*indicators.Exclusions, error) {
	x, err := s.ExtractionExclusions(ctx)
	if err != nil {
		return nil, err
	}
	return indicators.NewExclusions(x.Entries), nil
}
