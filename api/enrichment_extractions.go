package api

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/config"
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
	ValueType     string    `json:"value_type" enum:"$extraction_value_type"`
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
	ValueType     string  `json:"value_type" required:"true" enum:"$extraction_value_type"`
	Description   *string `json:"description" maxLength:"2000"`
	IsActive      *bool   `json:"is_active" doc:"Default true."`
}

func (r extractionRequest) Validate() validate.Errors {
	return enrichment.ValidateSourcePath(r.SourcePath)
}

func (r extractionRequest) fields() config.ExtractionFields {
	return config.ExtractionFields{ProviderName: r.ProviderName, IndicatorType: r.IndicatorType, SourcePath: r.SourcePath,
		TargetKey: r.TargetKey, ValueType: r.ValueType, Description: r.Description, IsActive: r.IsActive}
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

// extractionError names a missing extraction and places validation errors in the body; every code
// is domain/errcode's.
func extractionError(err error) error {
	return notFoundAs(inBody(err), "Field extraction")
}

func (s *Server) createExtraction(c *fiber.Ctx) error {
	if _, err := s.enrichStore(); err != nil {
		return err
	}
	var req extractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	e, err := s.config.Extractions.Create(c.UserContext(), s.actor(c), req.fields())
	if err != nil {
		return extractionError(err)
	}
	return respond(c, http.StatusCreated, toExtractionResponse(e))
}

func (s *Server) bulkCreateExtractions(c *fiber.Ctx) error {
	if _, err := s.enrichStore(); err != nil {
		return err
	}
	var req bulkExtractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	exts, err := s.config.Extractions.CreateMany(c.UserContext(), s.actor(c), mapSlice(req.Extractions, extractionRequest.fields))
	if err != nil {
		return extractionError(err)
	}
	out := mapSlice(exts, toExtractionResponse)
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
	ValueType     *string `json:"value_type" enum:"$extraction_value_type"`
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

func (s *Server) updateExtraction(c *fiber.Ctx) error {
	_, e, err := s.loadExtraction(c)
	if err != nil {
		return err
	}
	var req updateExtractionRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	e, err = s.config.Extractions.Update(c.UserContext(), s.actor(c), e, config.ExtractionPatch{ProviderName: req.ProviderName,
		IndicatorType: req.IndicatorType, SourcePath: req.SourcePath, TargetKey: req.TargetKey, ValueType: req.ValueType,
		Description: req.Description, IsActive: req.IsActive})
	if err != nil {
		return extractionError(err)
	}
	return respond(c, http.StatusOK, toExtractionResponse(e))
}

func (s *Server) deleteExtraction(c *fiber.Ctx) error {
	_, e, err := s.loadExtraction(c)
	if err != nil {
		return err
	}
	if err := s.config.Extractions.Delete(c.UserContext(), s.actor(c), e); err != nil {
		return extractionError(err)
	}
	return c.SendStatus(http.StatusNoContent)
}
