// Package config owns the rules of Vigil's configuration resources besides API keys (domain/apikeys),
// workflows and agents (domain/responses, domain/agents): detection rules, context documents,
// indicator mappings, source integrations, enrichment providers and field extractions. For each it
// decides the defaults, the normalisation of lists, the conflicts, and writes the change with its
// audit event in the change's own transaction (audit.Record), whichever door asked for it: the REST
// handlers only bind, call and map the result.
package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/store"
)

// Unique drops repeated elements, keeping the first occurrence; nil becomes empty.
func Unique(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// setValue applies a patch field that is nil when unchanged to dst, adding column to cols when present.
func setValue[T any](v *T, dst *T, column string, cols []string) []string {
	if v == nil {
		return cols
	}
	*dst = *v
	return append(cols, column)
}

// setNullable applies a nullable patch field to dst, adding column to cols when present.
func setNullable[T any](v optional.Value[T], dst **T, column string, cols []string) []string {
	if !v.Set {
		return cols
	}
	*dst = v.Ptr()
	return append(cols, column)
}

// deleteAudited removes resource id (what names it in errors) with its audit event by actor, in one
// transaction: get reads it there (store.ErrNotFound when missing), subject names it, remove deletes
// it. get and remove are store methods ((*store.Store).GetX, (*store.Store).DeleteX).
func deleteAudited[T any](ctx context.Context, changes audit.Store, actor store.Actor, what string, id uuid.UUID,
	get func(*store.Store, context.Context, uuid.UUID) (T, error), remove func(*store.Store, context.Context, uuid.UUID) error,
	subject func(T) audit.Subject) error {
	err := audit.Record(ctx, changes, actor, store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		old, err := get(tx, ctx, id)
		if err != nil {
			return audit.Subject{}, err
		}
		return subject(old), remove(tx, ctx, id)
	})
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", what, id, err)
	}
	return nil
}

// What an ExistsError says is taken.
const (
	TakenMapping     = "indicator mapping"   // an identical mapping (source, path, type, target)
	TakenIntegration = "source integration"  // the source's one integration; Name the source
	TakenProvider    = "enrichment provider" // the provider name; Name it
	TakenExtraction  = "field extraction"    // (provider, indicator type, target key)
)

// ExistsError is the store's conflict (store.ErrConflict, which it wraps) as the owner names it: what
// is taken, so the one error table (domain/errcode) answers each resource's contract code.
type ExistsError struct {
	What string // TakenMapping, TakenIntegration, TakenProvider or TakenExtraction
	Name string // the taken name, when it has one
	err  error
}

func (e *ExistsError) Error() string { return e.What + " exists: " + e.err.Error() }
func (e *ExistsError) Unwrap() error { return e.err }

// taken is err as an *ExistsError when it is the store's conflict, else err.
func taken(err error, what, name string) error {
	if errors.Is(err, store.ErrConflict) {
		return &ExistsError{What: what, Name: name, err: err}
	}
	return err
}
