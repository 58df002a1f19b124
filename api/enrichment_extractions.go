package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

type extractionResponse struct {
	UUID          uuid.UUID `json:"uuid"`
	ProviderName  string    `json:"provider_name"`
	IndicatorType string    `json:"indicator_type"`
	SourcePath    string    `json:"source_path"`
	TargetKey     string    `json:"target_key"`
	ValueType     string    `json:"value_type" enum:"string,int,float,bool,list,dict,any"`
	Description   string    `json:"description"`
	IsSystem      bool      `json:"is_system"`
	IsActive      bool      `json:"is_active"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func toExtractionResponse(e store.FieldExtraction) extractionResponse {
	return extractionResponse{UUID: e.UUID, ProviderName: e.ProviderName, IndicatorType: e.IndicatorType, SourcePath: e.SourcePath,
		TargetKey: e.TargetKey, ValueType: e.ValueType, Description: e.Description, IsSystem: e.IsSystem, IsActive: e.IsActive,
		CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
}

type listExtractionsQuery struct {
	PageQuery
	ProviderName  string `query:"provider_name" maxLength:"100"`
	IndicatorType string `query:"indicator_type" enum:"$indicator_type"`
	IsActive      *bool  `query:"is_active"`
	IsSystem      *bool  `query:"is_system"`
}

func (s *Server) listExtractions(c *fiber.Ctx) error {
	st, err := s.enrichStore()
	if err != nil {
		return err
	}
	var q listExtractionsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	exts, total, err := st.ListFieldExtractions(c.UserContext(), store.FieldExtractionFilter{ProviderName: q.ProviderName,
		IndicatorType: q.IndicatorType, IsActive: q.IsActive, IsSystem: q.IsSystem, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(exts, toExtractionResponse)
	return respondList(c, out, total, q.PageQuery)
}

type extractionRequest struct {
	ProviderName  string  `json:"provider_name" required:"true" minLength:"1" maxLength:"100" pattern:"^[a-z0-9_]+$"`
	IndicatorType string  `json:"indicator_type" required:"true" enum:"$indicator_type"`
	SourcePath    string  `json:"source_path" required:"true" minLength:"1" maxLength:"500" doc:"Dot path into the provider's final response; * fans out over lists."`
	TargetKey     string  `json:"target_key" required:"true" minLength:"1" maxLength:"200"`
	ValueType     string  `json:"value_type" required:"true" enum:"string,int,float,bool,list,dict,any"`
	Description   *string `json:"description" maxLength:"2000"`
	IsActive      *bool   `json:"is_active" doc:"Default true."`
}

func (r extractionRequest) Validate() validate.Errors {
	return enrichment.ValidateSourcePath(r.SourcePath)
}

func (r extractionRequest) toStore() *store.FieldExtraction {
	e := &store.FieldExtraction{ProviderName: r.ProviderName, IndicatorType: r.IndicatorType, SourcePath: r.SourcePath,
		TargetKey: r.TargetKey, ValueType: r.ValueType, IsActive: true}
	if r.Description != nil {
		e.Description = *r.Description
	}
	if r.IsActive != nil {
		e.IsActive = *r.IsActive
	}
	return e
}

type bulkExtractionRequest struct {
	Extractions []extractionRequest `json:"extractions" required:"true" minItems:"1" maxItems:"500"`
}

func (r bulkExtractionRequest) Validate() validate.Errors {
	var errs validate.Errors
	for i, e := range r.Extractions {
		errs.Merge([]any{"extractions", i}, e.Validate())
	}
	return errs
}

func errDuplicateExtraction() *Error {
	return NewError(http.StatusConflict, "DUPLICATE_EXTRACTION", "An extraction with this provider_name, indicator_type and target_key already exists.")
}

func (s *Server) createExtraction(c *fiber.Ctx) error {
	st, err := s.enrichStore()
	if err != nil {
		return err
	}
	var req extractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	if err := enrichment.CheckProvidersExist(c.UserContext(), st, []string{req.ProviderName}, func(int) []any { return []any{"body", "provider_name"} }); err != nil {
		return err
	}
	e := req.toStore()
	err = s.record(c, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.CreateFieldExtractions(ctx, []*store.FieldExtraction{e})
		return extractionSubject(nil, e), err
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return errDuplicateExtraction()
		}
		return err
	}
	return respond(c, http.StatusCreated, toExtractionResponse(*e))
}

func (s *Server) bulkCreateExtractions(c *fiber.Ctx) error {
	st, err := s.enrichStore()
	if err != nil {
		return err
	}
	var req bulkExtractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	names := make([]string, len(req.Extractions))
	exts := make([]*store.FieldExtraction, len(req.Extractions))
	for i, r := range req.Extractions {
		names[i], exts[i] = r.ProviderName, r.toStore()
	}
	if err := enrichment.CheckProvidersExist(c.UserContext(), st, names, func(i int) []any { return []any{"body", "extractions", i, "provider_name"} }); err != nil {
		return err
	}
	err = audit.RecordEach(c.UserContext(), s.deps.Audit, s.actor(c), store.AuditCreated, func(ctx context.Context, tx *store.Store) ([]audit.Subject, error) {
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
		if errors.Is(err, store.ErrConflict) {
			return errDuplicateExtraction()
		}
		return err
	}
	out := make([]extractionResponse, len(exts))
	for i, e := range exts {
		out[i] = toExtractionResponse(*e)
	}
	return respondMeta(c, http.StatusCreated, out, ListMeta{Total: len(out), Page: 1, PageSize: len(out), TotalPages: 1})
}

func (s *Server) loadExtraction(c *fiber.Ctx) (EnrichmentStore, store.FieldExtraction, error) {
	st, err := s.enrichStore()
	if err != nil {
		return nil, store.FieldExtraction{}, err
	}
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return nil, store.FieldExtraction{}, err
	}
	e, err := st.GetFieldExtraction(c.UserContext(), id)
	if err != nil {
		return nil, store.FieldExtraction{}, notFoundAs(err, "Field extraction")
	}
	return st, e, nil
}

func (s *Server) getExtraction(c *fiber.Ctx) error {
	_, e, err := s.loadExtraction(c)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, toExtractionResponse(e))
}

type updateExtractionRequest struct {
	ProviderName  *string `json:"provider_name" minLength:"1" maxLength:"100" pattern:"^[a-z0-9_]+$"`
	IndicatorType *string `json:"indicator_type" enum:"$indicator_type"`
	SourcePath    *string `json:"source_path" minLength:"1" maxLength:"500"`
	TargetKey     *string `json:"target_key" minLength:"1" maxLength:"200"`
	ValueType     *string `json:"value_type" enum:"string,int,float,bool,list,dict,any"`
	Description   *string `json:"description" maxLength:"2000"`
	IsActive      *bool   `json:"is_active"`
}

func (r updateExtractionRequest) Validate() validate.Errors {
	var errs validate.Errors
	if r.SourcePath != nil {
		errs = enrichment.ValidateSourcePath(*r.SourcePath)
	}
	return errs
}

// fields lists the fields r sets.
func (r updateExtractionRequest) fields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"provider_name", r.ProviderName != nil}, {"indicator_type", r.IndicatorType != nil}, {"source_path", r.SourcePath != nil},
		{"target_key", r.TargetKey != nil}, {"value_type", r.ValueType != nil}, {"description", r.Description != nil},
		{"is_active", r.IsActive != nil}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// extractionError maps the extraction rules' refusals to the contract's codes.
func extractionError(err error) error {
	if errors.Is(err, enrichment.ErrSystemExtraction) {
		return NewError(http.StatusForbidden, "SYSTEM_EXTRACTION_RESTRICTED", "System extractions can only be activated or deactivated.")
	}
	return err
}

func (s *Server) updateExtraction(c *fiber.Ctx) error {
	st, e, err := s.loadExtraction(c)
	if err != nil {
		return err
	}
	var req updateExtractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	if err := enrichment.CheckExtractionChange(e, req.fields()); err != nil {
		return extractionError(err)
	}
	before := e
	var cols []string
	str := func(v *string, dst *string, col string) {
		if v != nil {
			*dst = *v
			cols = append(cols, col)
		}
	}
	str(req.ProviderName, &e.ProviderName, "provider_name")
	str(req.IndicatorType, &e.IndicatorType, "indicator_type")
	str(req.SourcePath, &e.SourcePath, "source_path")
	str(req.TargetKey, &e.TargetKey, "target_key")
	str(req.ValueType, &e.ValueType, "value_type")
	str(req.Description, &e.Description, "description")
	if req.IsActive != nil {
		e.IsActive = *req.IsActive
		cols = append(cols, "is_active")
	}
	if req.ProviderName != nil {
		if err := enrichment.CheckProvidersExist(c.UserContext(), st, []string{*req.ProviderName}, func(int) []any { return []any{"body", "provider_name"} }); err != nil {
			return err
		}
	}
	if len(cols) > 0 {
		err := s.record(c, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
			err := tx.UpdateFieldExtraction(ctx, &e, cols...)
			return extractionSubject(&before, &e), err
		})
		if err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errDuplicateExtraction()
			}
			return notFoundAs(err, "Field extraction")
		}
	}
	return respond(c, http.StatusOK, toExtractionResponse(e))
}

func (s *Server) deleteExtraction(c *fiber.Ctx) error {
	_, e, err := s.loadExtraction(c)
	if err != nil {
		return err
	}
	if err := enrichment.CheckExtractionDelete(e); err != nil {
		return extractionError(err)
	}
	err = s.record(c, store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		return extractionSubject(&e, nil), tx.DeleteFieldExtraction(ctx, e.UUID)
	})
	if err != nil {
		return notFoundAs(err, "Field extraction")
	}
	return c.SendStatus(http.StatusNoContent)
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
