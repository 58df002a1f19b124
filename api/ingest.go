package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/kit/validate"
)

func (s *Server) ingestRoutes() {
	write := []string{auth.ScopeAlertsWrite}
	s.add(route{Method: http.MethodPost, Path: "/v1/ingest/:source_name", Tag: "Ingestion", Summary: "Ingest a source's webhook payload",
		Description: "The body is the source's own payload (see GET /v1/sources for each shape and signature header). " +
			"Checks, in order: source known (404 UNKNOWN_SOURCE), key's allowed_sources (403 SOURCE_NOT_ALLOWED), integration active " +
			"(403 SOURCE_DISABLED), signature (401 INVALID_SIGNATURE), JSON (400), object (422 INVALID_PAYLOAD). Nothing else refuses " +
			"an alert: any JSON object is accepted, and what its shape lacks is a fallback listed in the alert's normalization_notes. " +
			"202 means the alert is committed; the pipeline `alert-<uuid>` starts from the outbox.",
		Scopes: write, Body: map[string]any{}, Response: ingestResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}}, s.ingestSource)
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts", Tag: "Ingestion", Summary: "Create an alert from a source payload",
		Description: "`{\"source_name\", \"payload\"}`: the same checks (no signature: the bearer key authenticates), pipeline and response as POST /v1/ingest/{source_name}.",
		Scopes:      write, Body: createAlertRequest{}, Response: ingestResponse{}, Status: http.StatusAccepted,
		Errors: []int{http.StatusForbidden, http.StatusNotFound}}, s.createAlert)
}

type ingestResponse struct {
	AlertUUID      uuid.UUID `json:"alert_uuid"`
	Status         string    `json:"status" enum:"queued,deduplicated"`
	IsDuplicate    bool      `json:"is_duplicate"`
	DuplicateCount int       `json:"duplicate_count"`
	WorkflowID     string    `json:"workflow_id" doc:"alert-<alert uuid>; for a duplicate, the original's pipeline."`
}

type createAlertRequest struct {
	SourceName string        `json:"source_name" required:"true" minLength:"1" maxLength:"100"`
	Payload    sourcePayload `json:"payload" required:"true" doc:"The source's payload object; hostile characters are replaced, not refused (docs/INGEST.md)."`
}

func errInvalidPayload(msg string, detail validate.Errors) *Error {
	e := NewError(http.StatusUnprocessableEntity, "INVALID_PAYLOAD", msg)
	e.Detail = detail
	return e
}

// ingestError maps the ingest service's errors to the contract's; loc is where the payload sat.
func (s *Server) ingestError(err error, name string, raw []byte, loc []any) error {
	var perr *ingest.PayloadError
	switch {
	case errors.Is(err, ingest.ErrUnknownSource):
		return NewError(http.StatusNotFound, "UNKNOWN_SOURCE", "Unknown source.").
			WithDetails(map[string]any{"source_name": validate.Truncate(name), "known_sources": s.sourceNames()})
	case errors.Is(err, ingest.ErrSourceNotAllowed):
		return NewError(http.StatusForbidden, "SOURCE_NOT_ALLOWED", "This API key may not ingest from this source.").
			WithDetails(map[string]any{"source_name": name})
	case errors.Is(err, ingest.ErrSourceDisabled):
		return NewError(http.StatusForbidden, "SOURCE_DISABLED", "This source's integration is inactive.").
			WithDetails(map[string]any{"source_name": name})
	case errors.Is(err, ingest.ErrInvalidJSON):
		return errInvalidJSON(raw)
	case errors.As(err, &perr):
		var errs validate.Errors
		errs.Merge(loc, perr.Detail)
		return errInvalidPayload(perr.Message, errs)
	}
	return err
}

func (s *Server) ingestSource(c *fiber.Ctx) error {
	name, err := pathText(c, "source_name")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	src, err := s.ingest.Source(ctx, name, principal(c).AllowsSource)
	if err != nil {
		return s.ingestError(err, name, nil, nil)
	}
	body := c.Request().Body()
	if err := src.VerifySignature(func(h string) string { return c.Get(h) }, body); err != nil {
		if errors.Is(err, ingest.ErrInvalidSignature) {
			return NewError(http.StatusUnauthorized, "INVALID_SIGNATURE", "The request signature is missing or wrong.").
				WithDetails(map[string]any{"header": src.Plugin.SignatureHeader()})
		}
		if errors.Is(err, ingest.ErrSourceMisconfigured) {
			// Fail closed: the sender retries while an admin fixes the integration.
			return NewError(http.StatusServiceUnavailable, "SOURCE_MISCONFIGURED",
				"This source's integration has inconsistent signature settings; an admin must fix it.").
				WithDetails(map[string]any{"source_name": name})
		}
		return err
	}
	if err := checkJSONBody(c); err != nil {
		return err
	}
	if !json.Valid(body) {
		return errInvalidJSON(body)
	}
	return s.commit(c, src, body, []any{"body"})
}

func (s *Server) createAlert(c *fiber.Ctx) error {
	var req createAlertRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	src, err := s.ingest.Source(c.UserContext(), req.SourceName, principal(c).AllowsSource)
	if err != nil {
		return s.ingestError(err, req.SourceName, nil, nil)
	}
	return s.commit(c, src, bytes.TrimSpace(req.Payload), []any{"body", "payload"})
}

// checkJSONBody refuses compressed and non-JSON bodies (an absent Content-Type is accepted).
func checkJSONBody(c *fiber.Ctx) error {
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Compressed request bodies are not accepted.")
	}
	if ct := string(c.Request().Header.ContentType()); ct != "" && !isJSONContentType(ct) {
		return errUnsupportedMediaType()
	}
	return nil
}

// commit ingests raw (valid JSON) and answers 202.
func (s *Server) commit(c *fiber.Ctx, src ingest.Source, raw []byte, loc []any) error {
	out, err := s.ingest.Ingest(c.UserContext(), src, raw, s.actor(c))
	if err != nil {
		return s.ingestError(err, src.Plugin.Name(), raw, loc)
	}
	s.deps.Telemetry.IngestAcked(src.Plugin.Name(), out.Duplicate)
	if out.SeverityUnmapped && !out.Duplicate {
		s.deps.Telemetry.SeverityUnmapped(src.Plugin.Name())
	}
	resp := ingestResponse{AlertUUID: out.AlertUUID, Status: "queued", WorkflowID: out.WorkflowID}
	if out.Duplicate {
		resp.Status, resp.IsDuplicate, resp.DuplicateCount = "deduplicated", true, out.DuplicateCount
	}
	return respond(c, http.StatusAccepted, resp)
}
