package config

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// ExclusionReader reads the never-indicator list (store.Store.ExtractionExclusions).
type ExclusionReader interface {
	ExtractionExclusions(ctx context.Context) (store.ExtractionExclusions, error)
}

// Exclusions applies the rules of the never-indicator list (API.md §4): every entry a host name, a
// domain, `*.` and a domain, an IP address or a CIDR range (indicators.ParseExclusion), at most
// indicators.MaxExclusions of them, stored canonical, sorted and without repeats; a change
// replaces the whole list and commits with its audit event.
type Exclusions struct {
	reader  ExclusionReader
	changes audit.Store
}

// NewExclusions is the never-indicator list's service over reader and changes (writes with their
// audit events).
func NewExclusions(reader ExclusionReader, changes audit.Store) *Exclusions {
	return &Exclusions{reader: reader, changes: changes}
}

// Get returns the list.
func (s *Exclusions) Get(ctx context.Context) (store.ExtractionExclusions, error) {
	return s.reader.ExtractionExclusions(ctx)
}

// Check returns entries canonical, or the 422 naming each bad one (locations ["entries", i]).
func Check(entries []string) ([]string, error) {
	var errs validate.Errors
	if len(entries) > indicators.MaxExclusions {
		errs.Add([]any{"entries"}, validate.TypeTooLong, "At most 1000 entries.", len(entries))
		return nil, errs
	}
	out, bad := indicators.CanonicalExclusions(entries)
	idx := make([]int, 0, len(bad))
	for i := range bad {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		errs.Add([]any{"entries", i}, validate.TypeValue, bad[i].Error(), entries[i])
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Put replaces the list with entries (checked, canonical) and records the change.
func (s *Exclusions) Put(ctx context.Context, actor store.Actor, entries []string) (store.ExtractionExclusions, error) {
	canon, err := Check(entries)
	if err != nil {
		return store.ExtractionExclusions{}, err
	}
	var out store.ExtractionExclusions
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		before, err := tx.LockExtractionExclusions(ctx)
		if err != nil {
			return audit.Subject{}, err
		}
		if out, err = tx.PutExtractionExclusions(ctx, canon); err != nil {
			return audit.Subject{}, err
		}
		after := out
		after.UpdatedAt = before.UpdatedAt
		return audit.Subject{Type: audit.ExtractionExcl, UUID: out.UUID, Name: "extraction exclusions",
			Before: &before, After: &after, Only: []string{"entries"}}, nil
	})
	return out, err
}

// Add puts entry on the list (checked, canonical) and records the change, appending under the
// list's lock so two concurrent adds both land. added is false when the list already held it
// (nothing is written, no event recorded). A bad entry is the 422 of Check (location ["entries", 0]);
// a full list the 422 of Check on the whole list.
func (s *Exclusions) Add(ctx context.Context, actor store.Actor, entry string) (out store.ExtractionExclusions, added bool, err error) {
	canon, err := Check([]string{entry})
	if err != nil {
		return store.ExtractionExclusions{}, false, err
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		before, err := tx.LockExtractionExclusions(ctx)
		if err != nil {
			return audit.Subject{}, err
		}
		out = before
		subj := audit.Subject{Type: audit.ExtractionExcl, UUID: before.UUID, Name: "extraction exclusions",
			Before: &before, After: &before, Only: []string{"entries"}}
		if slices.Contains(before.Entries, canon[0]) {
			return subj, nil // unchanged: no event
		}
		all, err := Check(append(slices.Clone(before.Entries), canon[0]))
		if err != nil {
			return audit.Subject{}, err
		}
		if out, err = tx.PutExtractionExclusions(ctx, all); err != nil {
			return audit.Subject{}, err
		}
		added = true
		after := out
		after.UpdatedAt = before.UpdatedAt
		subj.UUID, subj.After = out.UUID, &after
		return subj, nil
	})
	if err != nil {
		return store.ExtractionExclusions{}, false, fmt.Errorf("add extraction exclusion: %w", err)
	}
	return out, added, nil
}
