package enrichment

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// The rules of field extractions as configured through a front door: a valid source path, a known
// provider, and system extractions that only switch on and off.

// ErrSystemExtraction: a system extraction can only be activated or deactivated, never edited or
// deleted (403 SYSTEM_EXTRACTION_RESTRICTED).
var ErrSystemExtraction = errors.New("system extractions can only be activated or deactivated")

// ValidateSourcePath checks a source path (fieldpath syntax), located at "source_path".
func ValidateSourcePath(path string) validate.Errors {
	var errs validate.Errors
	if err := fieldpath.Validate(path); err != nil {
		errs.Add([]any{"source_path"}, validate.TypeValue, "Invalid field path: "+err.Error(), validate.Truncate(path))
	}
	return errs
}

// ProviderLister lists providers by name (store.Store).
type ProviderLister interface {
	ListProviders(ctx context.Context, f store.ProviderFilter) ([]store.EnrichmentProvider, int, error)
}

// CheckProvidersExist refuses extractions of unknown providers: a validate.Errors naming each
// unknown names[i] at loc(i).
func CheckProvidersExist(ctx context.Context, st ProviderLister, names []string, loc func(i int) []any) error {
	distinct := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(distinct, n) {
			distinct = append(distinct, n)
		}
	}
	ps, _, err := st.ListProviders(ctx, store.ProviderFilter{Names: distinct})
	if err != nil {
		return fmt.Errorf("list providers: %w", err)
	}
	known := map[string]bool{}
	for _, p := range ps {
		known[p.ProviderName] = true
	}
	var errs validate.Errors
	for i, n := range names {
		if !known[n] {
			errs.Add(loc(i), validate.TypeValue, "Unknown provider "+n+".", n)
		}
	}
	return errs.Err()
}

// CheckExtractionChange refuses, for a system extraction, a change of anything but is_active
// (ErrSystemExtraction); fields are the fields the change sets.
func CheckExtractionChange(e store.FieldExtraction, fields []string) error {
	if !e.IsSystem {
		return nil
	}
	for _, f := range fields {
		if f != "is_active" {
			return ErrSystemExtraction
		}
	}
	return nil
}

// CheckExtractionDelete refuses deleting a system extraction (ErrSystemExtraction).
func CheckExtractionDelete(e store.FieldExtraction) error {
	if e.IsSystem {
		return ErrSystemExtraction
	}
	return nil
}
