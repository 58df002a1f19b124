package alerts

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// MaxBulkAlerts is the most alerts one bulk change may name (API.md §13).
const MaxBulkAlerts = 500

// bulkParallel is how many alerts of a bulk change are patched at once, each in its own
// transaction: enough to keep 500 alerts well inside the 2 s target, few enough to leave the pool
// (DATABASE_MAX_CONNS) to everyone else.
const bulkParallel = 4

// BulkItem is the outcome of one alert of a bulk change: Err nil when its patch committed (or
// changed nothing), else why it was refused (a validate.Errors, store.ErrNotFound, ...).
type BulkItem struct {
	AlertUUID uuid.UUID
	Err       error
}

// Bulked is what a bulk change did: one item per alert, in the order asked.
type Bulked struct {
	Items             []BulkItem
	Succeeded, Failed int
}

// ErrEmptyBulkPatch: a bulk patch that names nothing to change.
var ErrEmptyBulkPatch = errors.New("bulk patch changes nothing")

// ValidateBulk checks a bulk request before any alert is touched: 1..500 distinct uuids and a patch
// that changes something and passes Patch.Validate. Locations are "alert_uuids" and "patch".
func ValidateBulk(ids []uuid.UUID, p Patch) validate.Errors {
	var errs validate.Errors
	switch n := len(ids); {
	case n == 0:
		errs.AddCtx([]any{"alert_uuids"}, validate.TypeTooShort, "List should have at least 1 item.", nil, map[string]any{"min_length": 1})
	case n > MaxBulkAlerts:
		errs.AddCtx([]any{"alert_uuids"}, validate.TypeTooLong, fmt.Sprintf("List should have at most %d items.", MaxBulkAlerts), nil,
			map[string]any{"max_length": MaxBulkAlerts})
	}
	seen := make(map[uuid.UUID]int, len(ids))
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			errs.AddCtx([]any{"alert_uuids", i}, validate.TypeValue, "Repeated alert uuid.", id.String(), map[string]any{"first_index": j})
			continue
		}
		seen[id] = i
	}
	if p.Status == nil && p.Severity == nil && p.CloseClassification == nil && p.Tags == nil && p.MaliceOverride == nil &&
		!p.ResetMaliceOverride && p.Assignee == nil && len(p.TagsAdd) == 0 && len(p.TagsRemove) == 0 {
		errs.Add([]any{"patch"}, validate.TypeMissing, "The patch changes nothing: give at least one field.", nil)
	}
	errs.Merge([]any{"patch"}, p.Validate())
	return errs
}

// Bulk applies p to every alert of ids through the same rules as Patch, one transaction per alert,
// and reports each alert's outcome: one alert refused (a transition the graph forbids, a missing
// alert) never undoes or stops the others. A request that fails ValidateBulk is refused whole
// (validate.Errors) before any alert is touched.
func (s *Service) Bulk(ctx context.Context, ids []uuid.UUID, p Patch, actor store.Actor) (Bulked, error) {
	if errs := ValidateBulk(ids, p); len(errs) > 0 {
		return Bulked{}, errs
	}
	out := Bulked{Items: make([]BulkItem, len(ids))}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(bulkParallel, len(ids)) {
		wg.Go(func() {
			for i := range next {
				_, err := s.Patch(ctx, ids[i], p, actor)
				if err != nil {
					err = fmt.Errorf("alert %s: %w", ids[i], err)
				}
				out.Items[i] = BulkItem{AlertUUID: ids[i], Err: err}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, it := range out.Items {
		if it.Err != nil {
			out.Failed++
		} else {
			out.Succeeded++
		}
	}
	return out, nil
}
