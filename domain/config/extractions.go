package config

import (
	"context"
	"fmt"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/store"
)

// Extractions applies the rules of field extractions (API.md §7) beyond their validation
// (enrichment.ValidateSourcePath): an extraction names an existing provider
// (enrichment.CheckProvidersExist), system rows may only be activated or deactivated
// (enrichment.CheckExtractionChange, CheckExtractionDelete), a (provider, type, target key) taken is
// store.ErrConflict; a change commits with its audit event (one per extraction of a bulk create).
type Extractions struct {
	providers enrichment.ProviderLister
	changes   audit.Store
}

// NewExtractions is the field-extraction service over providers (to check the names) and changes
// (writes with their audit events).
func NewExtractions(providers enrichment.ProviderLister, changes audit.Store) *Extractions {
	return &Extractions{providers: providers, changes: changes}
}

// ExtractionFields are a new extraction (already validated). IsActive nil is true.
type ExtractionFields struct {
	ProviderName, IndicatorType, SourcePath, TargetKey, ValueType string
	Description                                                   *string
	IsActive                                                      *bool
}

func (f ExtractionFields) extraction() *store.FieldExtraction {
	e := &store.FieldExtraction{ProviderName: f.ProviderName, IndicatorType: f.IndicatorType, SourcePath: f.SourcePath,
		TargetKey: f.TargetKey, ValueType: f.ValueType, IsActive: f.IsActive == nil || *f.IsActive}
	if f.Description != nil {
		e.Description = *f.Description
	}
	return e
}

// Create stores a new extraction with its audit event by actor. An unknown provider is a
// validate.Errors at "provider_name"; a taken (provider, type, target key) store.ErrConflict.
func (s *Extractions) Create(ctx context.Context, actor store.Actor, f ExtractionFields) (store.FieldExtraction, error) {
	if err := enrichment.CheckProvidersExist(ctx, s.providers, []string{f.ProviderName}, func(int) []any { return []any{"provider_name"} }); err != nil {
		return store.FieldExtraction{}, err
	}
	e := f.extraction()
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateFieldExtractions(ctx, []*store.FieldExtraction{e})
		return extractionSubject(nil, e), err
	})
	if err != nil {
		return store.FieldExtraction{}, taken(fmt.Errorf("create field extraction: %w", err), TakenExtraction, "")
	}
	return *e, nil
}

// CreateMany stores every extraction of fs, all or none, with one audit event each by actor. An
// unknown provider is a validate.Errors at "extractions", i, "provider_name"; a taken (provider,
// type, target key) store.ErrConflict.
func (s *Extractions) CreateMany(ctx context.Context, actor store.Actor, fs []ExtractionFields) ([]store.FieldExtraction, error) {
	names := make([]string, len(fs))
	exts := make([]*store.FieldExtraction, len(fs))
	for i, f := range fs {
		names[i], exts[i] = f.ProviderName, f.extraction()
	}
	if err := enrichment.CheckProvidersExist(ctx, s.providers, names, func(i int) []any { return []any{"extractions", i, "provider_name"} }); err != nil {
		return nil, err
	}
	err := audit.RecordEach(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) ([]audit.Subject, error) {
		if err := tx.CreateFieldExtractions(ctx, exts); err != nil {
			return nil, err
		}
		subjects := make([]audit.Subject, len(exts))
		for i, e := range exts {
			subjects[i] = extractionSubject(nil, e)
		}
		return subjects, nil
	})
	if err != nil {
		return nil, taken(fmt.Errorf("create %d field extractions: %w", len(exts), err), TakenExtraction, "")
	}
	out := make([]store.FieldExtraction, len(exts))
	for i, e := range exts {
		out[i] = *e
	}
	return out, nil
}

// ExtractionPatch is an extraction update; nil fields are unchanged.
type ExtractionPatch struct {
	ProviderName, IndicatorType, SourcePath, TargetKey, ValueType, Description *string
	IsActive                                                                   *bool
}

// Fields lists the fields p sets (what CheckExtractionChange judges).
func (p ExtractionPatch) Fields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"provider_name", p.ProviderName != nil}, {"indicator_type", p.IndicatorType != nil}, {"source_path", p.SourcePath != nil},
		{"target_key", p.TargetKey != nil}, {"value_type", p.ValueType != nil}, {"description", p.Description != nil},
		{"is_active", p.IsActive != nil}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// Update applies p to extraction e (as read) with its audit event by actor (none when nothing
// changed). A system row changed beyond is_active is enrichment.ErrSystemExtraction; an unknown
// provider a validate.Errors at "provider_name"; a taken (provider, type, target key)
// store.ErrConflict; an extraction gone meanwhile store.ErrNotFound.
func (s *Extractions) Update(ctx context.Context, actor store.Actor, e store.FieldExtraction, p ExtractionPatch) (store.FieldExtraction, error) {
	if err := enrichment.CheckExtractionChange(e, p.Fields()); err != nil {
		return store.FieldExtraction{}, err
	}
	before := e
	var cols []string
	str := func(v *string, dst *string, col string) {
		if v != nil {
			*dst = *v
			cols = append(cols, col)
		}
	}
	str(p.ProviderName, &e.ProviderName, "provider_name")
	str(p.IndicatorType, &e.IndicatorType, "indicator_type")
	str(p.SourcePath, &e.SourcePath, "source_path")
	str(p.TargetKey, &e.TargetKey, "target_key")
	str(p.ValueType, &e.ValueType, "value_type")
	str(p.Description, &e.Description, "description")
	if p.IsActive != nil {
		e.IsActive = *p.IsActive
		cols = append(cols, "is_active")
	}
	if p.ProviderName != nil {
		if err := enrichment.CheckProvidersExist(ctx, s.providers, []string{*p.ProviderName}, func(int) []any { return []any{"provider_name"} }); err != nil {
			return store.FieldExtraction{}, err
		}
	}
	if len(cols) == 0 {
		return e, nil
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateFieldExtraction(ctx, &e, cols...)
		return extractionSubject(&before, &e), err
	})
	if err != nil {
		return store.FieldExtraction{}, taken(fmt.Errorf("update field extraction %s: %w", e.UUID, err), TakenExtraction, "")
	}
	return e, nil
}

// Delete removes extraction e (as read) with its audit event by actor. A system row is
// enrichment.ErrSystemExtraction; an extraction gone meanwhile store.ErrNotFound.
func (s *Extractions) Delete(ctx context.Context, actor store.Actor, e store.FieldExtraction) error {
	if err := enrichment.CheckExtractionDelete(e); err != nil {
		return err
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		return extractionSubject(&e, nil), tx.DeleteFieldExtraction(ctx, e.UUID)
	})
	if err != nil {
		return fmt.Errorf("delete field extraction %s: %w", e.UUID, err)
	}
	return nil
}

// extractionSubject is a field extraction's change as the audit trail records it (nil: absent).
func extractionSubject(before, after *store.FieldExtraction) audit.Subject {
	e := after
	if e == nil {
		e = before
	}
	subj := audit.Subject{Type: audit.FieldExtraction, UUID: e.UUID, Name: e.ProviderName + "/" + e.IndicatorType + "/" + e.TargetKey}
	if before != nil {
		subj.Before = *before
	}
	if after != nil {
		subj.After = *after
	}
	return subj
}
