package config

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// MappingReader reads one indicator mapping (store.Store.GetIndicatorMapping).
type MappingReader interface {
	GetIndicatorMapping(ctx context.Context, id uuid.UUID) (store.IndicatorMapping, error)
}

// SourceRegistry names the known sources (sources.Registry).
type SourceRegistry interface {
	Get(name string) (sources.Plugin, bool)
	All() []sources.Plugin
}

// CacheInvalidator drops what ingestion cached of the integrations and mappings (ingest.Service).
type CacheInvalidator interface {
	Invalidate()
}

// Mappings applies the rules of indicator mappings (API.md §6): a mapping names a known source (or
// every source), system mappings are read-only but for is_active and description
// (ingest.CheckMappingChange), the mapping stays valid as a whole (ingest.ValidateMapping), an
// identical mapping is a store.ErrConflict; a change commits with its audit event and drops
// ingestion's cache.
type Mappings struct {
	mappings MappingReader
	changes  audit.Store
	sources  SourceRegistry
	cache    CacheInvalidator
}

// NewMappings is the indicator-mapping service over mappings (reads), changes (writes with their
// audit events), the source registry and ingestion's cache.
func NewMappings(mappings MappingReader, changes audit.Store, sources SourceRegistry, cache CacheInvalidator) *Mappings {
	return &Mappings{mappings: mappings, changes: changes, sources: sources, cache: cache}
}

// CheckSource refuses a source name the registry does not know (nil: every source); location
// "source_name", relative to the request.
func (s *Mappings) CheckSource(name *string) error {
	if name == nil {
		return nil
	}
	if _, ok := s.sources.Get(*name); !ok {
		var errs validate.Errors
		errs.AddCtx([]any{"source_name"}, validate.TypeEnum, "Unknown source.", *name, map[string]any{"allowed": SourceNames(s.sources)})
		return errs
	}
	return nil
}

// SourceNames lists the registry's sources by name.
func SourceNames(r SourceRegistry) []string {
	var out []string
	for _, p := range r.All() {
		out = append(out, p.Name())
	}
	return out
}

// MappingFields are a new mapping (already checked by ingest.ValidateMapping). IsActive nil is
// true.
type MappingFields struct {
	SourceName       *string
	FieldPath        string
	IndicatorType    string
	ExtractionTarget string
	IsActive         *bool
	Description      *string
}

// Create stores a new mapping with its audit event by actor. An unknown source or a mapping
// ingest.ValidateMapping refuses is a validate.Errors; an identical mapping store.ErrConflict.
func (s *Mappings) Create(ctx context.Context, actor store.Actor, f MappingFields) (store.IndicatorMapping, error) {
	if errs := ingest.ValidateMapping(f.FieldPath, f.IndicatorType, f.ExtractionTarget, f.Description); len(errs) > 0 {
		return store.IndicatorMapping{}, errs
	}
	if err := s.CheckSource(f.SourceName); err != nil {
		return store.IndicatorMapping{}, err
	}
	m := store.IndicatorMapping{SourceName: f.SourceName, FieldPath: f.FieldPath, IndicatorType: f.IndicatorType,
		ExtractionTarget: f.ExtractionTarget, IsActive: f.IsActive == nil || *f.IsActive, Description: f.Description}
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateIndicatorMapping(ctx, &m)
		return mappingSubject(nil, &m), err
	})
	if err != nil {
		return store.IndicatorMapping{}, taken(fmt.Errorf("create indicator mapping: %w", err), TakenMapping, "")
	}
	s.cache.Invalidate()
	return m, nil
}

// MappingPatch is a mapping update: nil and unset fields are unchanged; a null source_name applies
// the mapping to every source, a null description clears it.
type MappingPatch struct {
	SourceName       optional.Value[string]
	FieldPath        *string
	IndicatorType    *string
	ExtractionTarget *string
	IsActive         *bool
	Description      optional.Value[string]
}

// Update applies p to mapping id with its audit event by actor (none when nothing changed). A
// missing mapping is store.ErrNotFound; a read-only field of a system mapping an
// *ingest.SystemMappingError; an unknown source or a mapping invalid as a whole a validate.Errors
// (locations relative to the request); an identical mapping store.ErrConflict.
func (s *Mappings) Update(ctx context.Context, actor store.Actor, id uuid.UUID, p MappingPatch) (store.IndicatorMapping, error) {
	m, err := s.mappings.GetIndicatorMapping(ctx, id)
	if err != nil {
		return store.IndicatorMapping{}, fmt.Errorf("get indicator mapping %s: %w", id, err)
	}
	before := m
	var cols []string
	cols = setNullable(p.SourceName, &m.SourceName, "source_name", cols)
	cols = setValue(p.FieldPath, &m.FieldPath, "field_path", cols)
	cols = setValue(p.IndicatorType, &m.IndicatorType, "indicator_type", cols)
	cols = setValue(p.ExtractionTarget, &m.ExtractionTarget, "extraction_target", cols)
	if err := ingest.CheckMappingChange(m, cols); err != nil {
		return store.IndicatorMapping{}, err
	}
	if err := s.CheckSource(m.SourceName); err != nil {
		return store.IndicatorMapping{}, err
	}
	desc := m.Description
	if p.Description.Set {
		desc, cols = p.Description.Ptr(), append(cols, "description")
	}
	cols = setValue(p.IsActive, &m.IsActive, "is_active", cols)
	if errs := ingest.ValidateMapping(m.FieldPath, m.IndicatorType, m.ExtractionTarget, desc); len(errs) > 0 {
		return store.IndicatorMapping{}, errs
	}
	m.Description = desc
	if len(cols) == 0 {
		return m, nil
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateIndicatorMapping(ctx, &m, cols...)
		return mappingSubject(&before, &m), err
	})
	if err != nil {
		return store.IndicatorMapping{}, taken(fmt.Errorf("update indicator mapping %s: %w", id, err), TakenMapping, "")
	}
	s.cache.Invalidate()
	return m, nil
}

// Delete removes mapping id with its audit event by actor. A missing mapping is store.ErrNotFound;
// a system mapping an *ingest.SystemMappingError.
func (s *Mappings) Delete(ctx context.Context, actor store.Actor, id uuid.UUID) error {
	m, err := s.mappings.GetIndicatorMapping(ctx, id)
	if err != nil {
		return fmt.Errorf("get indicator mapping %s: %w", id, err)
	}
	if err := ingest.CheckMappingChange(m, []string{"delete"}); err != nil {
		return err
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		return mappingSubject(&m, nil), tx.DeleteIndicatorMapping(ctx, id)
	})
	if err != nil {
		return fmt.Errorf("delete indicator mapping %s: %w", id, err)
	}
	s.cache.Invalidate()
	return nil
}

// mappingSubject is an indicator mapping's change as the audit trail records it (nil: absent).
func mappingSubject(before, after *store.IndicatorMapping) audit.Subject {
	m := after
	if m == nil {
		m = before
	}
	name := m.FieldPath
	if m.SourceName != nil {
		name = *m.SourceName + ": " + name
	}
	subj := audit.Subject{Type: audit.IndicatorMapping, UUID: m.UUID, Name: name}
	if before != nil {
		subj.Before = *before
	}
	if after != nil {
		subj.After = *after
	}
	return subj
}

// ErrNotAPass4Origin: a mapping from an indicator's origin names a path where pass 4 did not find it.
var ErrNotAPass4Origin = errors.New("that is not a path where pass 4 found this indicator")

// FromOrigin is the mapping that makes a pass-4 find of an indicator a mapped field for source: a
// raw_payload mapping of the indicator's type at the origin's path with its array indexes as `*`
// (evidence.0.ipAddress → evidence.*.ipAddress), so later alerts of the source take it from every
// element. path must be one of the indicator's pass-4 origins (ErrNotAPass4Origin).
func FromOrigin(source string, ind store.Indicator, path string, description string) (MappingFields, error) {
	found := false
	for _, o := range ind.ExtractedBy {
		found = found || o.Pass == 4 && o.FieldPath == path && path != ""
	}
	if !found {
		return MappingFields{}, ErrNotAPass4Origin
	}
	segs := strings.Split(path, ".")
	for i, s := range segs {
		if _, err := strconv.Atoi(s); err == nil && s != "" && s[0] != '-' && s[0] != '+' {
			segs[i] = "*"
		}
	}
	return MappingFields{SourceName: &source, FieldPath: strings.Join(segs, "."), IndicatorType: ind.Type,
		ExtractionTarget: string(indicators.TargetRawPayload), Description: &description}, nil
}
