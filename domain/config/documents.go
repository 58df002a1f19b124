package config

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/store"
)

// DocumentReader reads one context document (store.Store.GetContextDocument).
type DocumentReader interface {
	GetContextDocument(ctx context.Context, id uuid.UUID) (store.ContextDocument, error)
}

// Documents applies the rules of context documents (API.md §5).
type Documents struct {
	docs    DocumentReader
	changes audit.Store
}

// NewDocuments is the context-document service over docs (reads) and changes (writes with their
// audit events).
func NewDocuments(docs DocumentReader, changes audit.Store) *Documents {
	return &Documents{docs: docs, changes: changes}
}

// DocumentFields are a new context document. IsGlobal nil is false; the tags lose their repeated
// elements; nil TargetingRules: none. The creator is the actor's key prefix.
type DocumentFields struct {
	Title          string
	DocumentType   string
	IsGlobal       *bool
	Description    *string
	Tags           []string
	Content        string
	TargetingRules *targeting.Rules
}

// Create stores a new document with its audit event by actor.
func (s *Documents) Create(ctx context.Context, actor store.Actor, f DocumentFields) (store.ContextDocument, error) {
	if errs := CheckDocument(f); len(errs) > 0 {
		return store.ContextDocument{}, errs
	}
	d := store.ContextDocument{Title: f.Title, DocumentType: f.DocumentType, IsGlobal: f.IsGlobal != nil && *f.IsGlobal,
		Description: f.Description, Tags: Unique(f.Tags), Content: f.Content, TargetingRules: f.TargetingRules}
	if p := actor.KeyPrefix; p != "" {
		d.CreatedBy = &p
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateContextDocument(ctx, &d)
		return audit.Subject{Type: audit.ContextDocument, UUID: d.UUID, Name: d.Title, After: d}, err
	})
	if err != nil {
		return store.ContextDocument{}, fmt.Errorf("create context document: %w", err)
	}
	return d, nil
}

// DocumentPatch is a document update: nil and unset fields are unchanged; a null description or
// targeting rules clears them; Tags non-nil replaces the tags (without repeats). A content change
// bumps the version (store.Store.UpdateContextDocument).
type DocumentPatch struct {
	Title          *string
	DocumentType   *string
	IsGlobal       *bool
	Description    optional.Value[string]
	Content        *string
	Tags           []string
	TargetingRules optional.Value[*targeting.Rules] // a nil value: no rules
}

// Update applies p to document id with its audit event by actor (none when nothing changed). A
// missing document is store.ErrNotFound.
func (s *Documents) Update(ctx context.Context, actor store.Actor, id uuid.UUID, p DocumentPatch) (store.ContextDocument, error) {
	if errs := CheckDocumentPatch(p); len(errs) > 0 {
		return store.ContextDocument{}, errs
	}
	d, err := s.docs.GetContextDocument(ctx, id)
	if err != nil {
		return store.ContextDocument{}, fmt.Errorf("get context document %s: %w", id, err)
	}
	before := d
	var cols []string
	cols = setValue(p.Title, &d.Title, "title", cols)
	cols = setValue(p.DocumentType, &d.DocumentType, "document_type", cols)
	cols = setValue(p.IsGlobal, &d.IsGlobal, "is_global", cols)
	cols = setNullable(p.Description, &d.Description, "description", cols)
	cols = setValue(p.Content, &d.Content, "content", cols)
	if p.Tags != nil {
		d.Tags, cols = Unique(p.Tags), append(cols, "tags")
	}
	if p.TargetingRules.Set {
		d.TargetingRules, cols = nil, append(cols, "targeting_rules")
		if !p.TargetingRules.Null {
			d.TargetingRules = p.TargetingRules.Value
		}
	}
	if len(cols) == 0 {
		return d, nil
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateContextDocument(ctx, &d, cols...)
		return audit.Subject{Type: audit.ContextDocument, UUID: d.UUID, Name: d.Title, Before: before, After: d}, err
	})
	if err != nil {
		return store.ContextDocument{}, fmt.Errorf("update context document %s: %w", id, err)
	}
	return d, nil
}

// Delete removes document id with its audit event by actor. A missing document is
// store.ErrNotFound.
func (s *Documents) Delete(ctx context.Context, actor store.Actor, id uuid.UUID) error {
	return deleteAudited(ctx, s.changes, actor, "context document", id, (*store.Store).GetContextDocument, (*store.Store).DeleteContextDocument,
		func(old store.ContextDocument) audit.Subject {
			return audit.Subject{Type: audit.ContextDocument, UUID: id, Name: old.Title, Before: old}
		})
}
