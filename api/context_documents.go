package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/kit/targeting"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// ContextDocumentStore is what the context-document routes need.
type ContextDocumentStore interface {
	GetContextDocument(ctx context.Context, id uuid.UUID) (store.ContextDocument, error)
	ListContextDocuments(ctx context.Context, f store.ContextDocumentFilter) ([]store.ContextDocument, int, error)
	AlertSubject(ctx context.Context, alertUUID uuid.UUID) (targeting.Subject, error)
	ApplicableContextDocuments(ctx context.Context, s targeting.Subject) ([]store.ContextDocument, error)
}

// Limits of context documents.
const (
	// MaxContextDocumentBytes bounds a document's content (JSON content or uploaded file), in UTF-8 bytes.
	MaxContextDocumentBytes = config.MaxDocumentBytes
	maxMultipartParts       = 64
	maxMultipartFieldBytes  = 256 << 10
)

func (s *Server) contextDocumentRoutes() {
	// Writes need admin: documents attach to alerts and go to agents, so an ingest key must not author them.
	read, write := []string{auth.ScopeAlertsRead}, []string{auth.ScopeAdmin}
	const tag = "Context documents"
	s.add(route{Method: http.MethodGet, Path: "/v1/context-documents", Tag: tag, Summary: "List context documents",
		Description: "Summaries: every field but `content`.",
		Scopes:      read, Query: listContextDocumentsQuery{}, Response: contextDocumentSummary{}, List: true}, s.listContextDocuments)
	s.add(route{Method: http.MethodPost, Path: "/v1/context-documents", Tag: tag, Summary: "Create a context document",
		Description: "JSON body, or `multipart/form-data` with the same fields as form fields plus `file` (markdown or plain " +
			"text: .md, .markdown, .txt, or a text/plain or text/markdown part; UTF-8; at most 1 MiB) instead of `content`. " +
			"In a form, `is_global` is true/false, `tags` is repeated or comma-separated, `targeting_rules` is a JSON string, " +
			"and `title` defaults to the file name without its extension. `targeting_rules` is validated (422 naming the " +
			"bad rule). A non-global document without rules applies to no alert.",
		Scopes: write, Body: createContextDocumentRequest{}, Response: contextDocumentResponse{}, Status: http.StatusCreated,
		Errors: []int{http.StatusUnsupportedMediaType}}, s.createContextDocument)
	s.add(route{Method: http.MethodGet, Path: "/v1/context-documents/:uuid", Tag: tag, Summary: "Get a context document",
		Scopes: read, Response: contextDocumentResponse{}}, s.getContextDocument)
	s.add(route{Method: http.MethodPatch, Path: "/v1/context-documents/:uuid", Tag: tag, Summary: "Update a context document",
		Description: "Absent fields are unchanged; an explicit null clears `description` and `targeting_rules`. `version` goes up " +
			"by one when `content` changes.",
		Scopes: write, Body: updateContextDocumentRequest{}, Response: contextDocumentResponse{}}, s.updateContextDocument)
	s.add(route{Method: http.MethodDelete, Path: "/v1/context-documents/:uuid", Tag: tag, Summary: "Delete a context document",
		Scopes: write, Status: http.StatusNoContent}, s.deleteContextDocument)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/context", Tag: tag, Summary: "Context documents of an alert",
		Description: "Every global document, then the targeted documents whose rules match the alert (source_name, severity, " +
			"title, tags, detection rule name and tactics); each group by title. `meta.total` counts them.",
		Scopes: read, Response: contextDocumentResponse{}}, s.alertContext)
}

type contextDocumentSummary struct {
	UUID           uuid.UUID        `json:"uuid"`
	Title          string           `json:"title"`
	DocumentType   string           `json:"document_type" enum:"$document_type"`
	IsGlobal       bool             `json:"is_global"`
	Description    *string          `json:"description"`
	Tags           []string         `json:"tags"`
	Version        int              `json:"version"`
	TargetingRules *targeting.Rules `json:"targeting_rules" doc:"null: no rules."`
	CreatedBy      *string          `json:"created_by" doc:"Key prefix of the creator."`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
}

type contextDocumentResponse struct {
	contextDocumentSummary
	Content string `json:"content"`
}

func toContextDocumentSummary(d store.ContextDocument) contextDocumentSummary {
	tags := d.Tags
	if tags == nil {
		tags = []string{}
	}
	return contextDocumentSummary{UUID: d.UUID, Title: d.Title, DocumentType: d.DocumentType, IsGlobal: d.IsGlobal,
		Description: d.Description, Tags: tags, Version: d.Version, TargetingRules: d.TargetingRules, CreatedBy: d.CreatedBy,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

// toContextDocumentResponse renders SEED-SPEC §2.4's ContextDocumentResponse (also for alert detail).
func toContextDocumentResponse(d store.ContextDocument) contextDocumentResponse {
	return contextDocumentResponse{contextDocumentSummary: toContextDocumentSummary(d), Content: d.Content}
}

type listContextDocumentsQuery struct {
	PageQuery
	DocumentType []string `query:"document_type" enum:"$document_type" doc:"Any of these types."`
	IsGlobal     *bool    `query:"is_global"`
	Q            string   `query:"q" maxLength:"500" doc:"Case-insensitive substring of the title or description."`
	SortBy       string   `query:"sort_by" enum:"title,document_type,updated_at,created_at" default:"updated_at"`
	SortOrder    string   `query:"sort_order" enum:"asc,desc" doc:"Default: asc for title and document_type, desc for the dates."`
}

// Validate refuses text the database cannot hold.
func (q listContextDocumentsQuery) Validate() validate.Errors {
	var errs validate.Errors
	errs.Text([]any{"q"}, q.Q)
	return errs
}

func (s *Server) listContextDocuments(c *fiber.Ctx) error {
	var q listContextDocumentsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	f := store.ContextDocumentFilter{DocumentTypes: q.DocumentType, IsGlobal: q.IsGlobal, Q: q.Q, SortBy: q.SortBy,
		Desc: sortDesc(q.SortOrder, q.SortBy == store.DocSortTitle || q.SortBy == store.DocSortDocumentType), Page: q.storePage()}
	docs, total, err := s.deps.ContextDocuments.ListContextDocuments(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := mapSlice(docs, toContextDocumentSummary)
	return respondList(c, out, total, q.PageQuery)
}

type createContextDocumentRequest struct {
	Title          string          `json:"title" required:"true" minLength:"1" maxLength:"500"`
	DocumentType   string          `json:"document_type" required:"true" enum:"$document_type"`
	IsGlobal       *bool           `json:"is_global" doc:"Default false. A global document applies to every alert."`
	Description    *string         `json:"description" maxLength:"5000"`
	Content        string          `json:"content" required:"true" minLength:"1" doc:"Markdown or plain text, at most 1 MiB of UTF-8."`
	Tags           []string        `json:"tags" maxItems:"50" minLength:"1" maxLength:"100"`
	TargetingRules json.RawMessage `json:"targeting_rules" doc:"{\"match_any\": [rule], \"match_all\": [rule]}, rule = {field, op, value}; null or {}: no rules."`
}

// Validate applies the owner's checks (config.CheckDocument) and parses the targeting rules.
func (r createContextDocumentRequest) Validate() validate.Errors {
	errs := config.CheckDocument(config.DocumentFields{Title: r.Title, Description: r.Description, Content: r.Content, Tags: r.Tags})
	if _, rerrs := targeting.Parse(r.TargetingRules); len(rerrs) > 0 {
		errs.Merge([]any{"targeting_rules"}, rerrs)
	}
	return errs
}

// parseRules parses already validated targeting rules; nil for none.
func parseRules(raw json.RawMessage) *targeting.Rules {
	rules, errs := targeting.Parse(raw)
	if len(errs) > 0 || rules.Empty() {
		return nil
	}
	return &rules
}

func (s *Server) createContextDocument(c *fiber.Ctx) error {
	var req createContextDocumentRequest
	ct := string(c.Request().Header.ContentType())
	if mt, _, _ := mime.ParseMediaType(ct); mt == "multipart/form-data" {
		if err := bindMultipartDocument(c, &req); err != nil {
			return err
		}
	} else if err := bindBody(c, &req); err != nil {
		return err
	}
	d, err := s.config.Documents.Create(c.UserContext(), s.actor(c), config.DocumentFields{Title: req.Title,
		DocumentType: req.DocumentType, IsGlobal: req.IsGlobal, Description: req.Description, Tags: req.Tags,
		Content: req.Content, TargetingRules: parseRules(req.TargetingRules)})
	if err != nil {
		return err
	}
	return respond(c, http.StatusCreated, toContextDocumentResponse(d))
}

// bindMultipartDocument reads a multipart/form-data upload into req: the form fields become the JSON
// body's fields and the `file` part its content, then the body goes through the JSON binder so both
// forms are validated alike. Problems with the file are reported at ["body", "file"]; every problem
// of the form is reported at once.
func bindMultipartDocument(c *fiber.Ctx, req *createContextDocumentRequest) error {
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Compressed request bodies are not accepted.")
	}
	_, params, err := mime.ParseMediaType(string(c.Request().Header.ContentType()))
	if err != nil || params["boundary"] == "" {
		return errInvalidMultipart("missing or malformed multipart boundary")
	}
	form, fileName, errs, err := readDocumentForm(c.Request().Body(), params["boundary"])
	if err != nil {
		return err
	}
	failed := map[string]bool{}
	for _, e := range errs {
		failed[validate.LocString(e.Loc)] = true
	}
	fail := func(loc []any, typ, msg string, input any) {
		errs.Add(loc, typ, msg, input)
		failed[validate.LocString(loc)] = true
	}
	body := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(form)) {
		vals := form[name]
		loc := []any{"body", name}
		switch name {
		case "tags":
			tags := []string{}
			for _, v := range vals {
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						tags = append(tags, t)
					}
				}
			}
			body[name] = tags
			continue
		case "title", "document_type", "is_global", "description", "content", "targeting_rules", "file":
		default:
			fail(loc, validate.TypeExtraForbidden, "Extra inputs are not permitted.", nil)
			continue
		}
		if len(vals) > 1 {
			fail(loc, validate.TypeValue, "Field given more than once.", nil)
			continue
		}
		v := vals[0]
		switch name {
		case "is_global":
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				fail(loc, validate.TypeBoolParsing, "Input should be a valid boolean.", validate.Truncate(v))
				continue
			}
			body[name] = b
		case "targeting_rules":
			if !json.Valid([]byte(v)) {
				fail(loc, validate.TypeValue, "targeting_rules should be a JSON object.", validate.Truncate(v))
				continue
			}
			body[name] = json.RawMessage(v)
		case "file":
			if _, dup := form["content"]; dup {
				fail(loc, validate.TypeValue, "Send either file or content, not both.", nil)
				continue
			}
			body["content"] = v
		default:
			body[name] = v
		}
	}
	fileLoc := validate.LocString([]any{"body", "file"})
	_, hasFile := form["file"]
	hasFile = hasFile || failed[fileLoc]
	if _, ok := body["title"]; !ok && fileName != "" && !failed[validate.LocString([]any{"body", "title"})] {
		body["title"] = fileName
	}
	if _, hasContent := form["content"]; !hasFile && !hasContent {
		fail([]any{"body", "file"}, validate.TypeMissing, "Field required: upload the document as file.", nil)
		hasFile = true
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("re-encode multipart form: %w", err)
	}
	err = decodeJSONObject(raw, req, []any{"body"})
	var verrs validate.Errors
	if err != nil && !errors.As(err, &verrs) {
		return err
	}
	for _, e := range verrs {
		if hasFile && len(e.Loc) == 2 && e.Loc[1] == "content" {
			e.Loc = []any{"body", "file"}
		}
		if !failed[validate.LocString(e.Loc)] {
			errs = append(errs, e)
		}
	}
	return errs.Err()
}

func errInvalidMultipart(why string) *Error {
	return NewError(http.StatusBadRequest, "INVALID_MULTIPART", "Request body is not a valid multipart/form-data body.").
		WithDetails(map[string]any{"reason": why})
}

// readDocumentForm parses the multipart body with bounded parts: field values as text, the `file`
// part checked as a UTF-8 markdown or plain-text document. It returns the values by field name (parts
// with problems left out and reported in errs), the upload's file name without extension (a title
// default), and an error for a body that is not multipart at all.
func readDocumentForm(body []byte, boundary string) (map[string][]string, string, validate.Errors, error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	form := map[string][]string{}
	var errs validate.Errors
	fileName := ""
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", nil, errInvalidMultipart(err.Error())
		}
		if n >= maxMultipartParts {
			return nil, "", nil, errInvalidMultipart(fmt.Sprintf("more than %d parts", maxMultipartParts))
		}
		name := part.FormName()
		if name == "" {
			_ = part.Close()
			return nil, "", nil, errInvalidMultipart("a part has no form name")
		}
		loc := []any{"body", name}
		limit := maxMultipartFieldBytes
		if name == "file" || name == "content" {
			limit = MaxContextDocumentBytes
		}
		data, err := io.ReadAll(io.LimitReader(part, int64(limit)+1))
		_ = part.Close()
		if err != nil {
			return nil, "", nil, errInvalidMultipart(err.Error())
		}
		if name == "file" && fileName == "" {
			fileName = titleFromFileName(part.FileName())
		}
		switch {
		case len(data) > limit:
			errs.AddCtx(loc, validate.TypeTooLong, fmt.Sprintf("Part should have at most %d bytes.", limit), nil,
				map[string]any{"max_bytes": limit})
			continue
		case name == "file":
			text, problem := documentFileText(part, data)
			if problem != "" {
				errs.Add(loc, validate.TypeValue, problem, nil)
				continue
			}
			data = []byte(text)
		case !utf8.Valid(data):
			errs.Add(loc, validate.TypeString, "String should be valid UTF-8.", nil)
			continue
		}
		form[name] = append(form[name], string(data))
	}
	return form, fileName, errs, nil
}

// Accepted uploads: by file extension or, without a known one, by the part's content type.
func textExtensions() []string    { return []string{".md", ".markdown", ".txt", ".text"} }
func textMediaTypes() []string    { return []string{"text/plain", "text/markdown", "text/x-markdown"} }
func genericMediaTypes() []string { return []string{"", "application/octet-stream"} }

// documentFileText checks an uploaded document and returns its text, or a message saying what is wrong.
func documentFileText(part *multipart.Part, data []byte) (string, string) {
	ext := strings.ToLower(path.Ext(part.FileName()))
	mt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
	mt = strings.ToLower(mt)
	knownExt := containsString(textExtensions(), ext)
	switch {
	case knownExt && (containsString(textMediaTypes(), mt) || containsString(genericMediaTypes(), mt)):
	case !knownExt && ext == "" && containsString(textMediaTypes(), mt):
	default:
		return "", "The file should be markdown or plain text (.md, .markdown, .txt; text/markdown or text/plain)."
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch {
	case len(data) == 0:
		return "", "The file is empty."
	case !utf8.Valid(data):
		return "", "The file should be UTF-8 text."
	case bytes.IndexByte(data, 0) >= 0:
		return "", "The file should be text, not binary (it contains NUL bytes)."
	}
	return string(data), ""
}

// titleFromFileName turns an upload's file name into a title: base name without extension, or "" when
// nothing usable remains.
func titleFromFileName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	base := path.Base(name)
	base = strings.TrimSpace(strings.TrimSuffix(base, path.Ext(base)))
	if base == "" || base == "." || base == "/" || !utf8.ValidString(base) || validate.HasNUL(base) {
		return ""
	}
	if r := []rune(base); len(r) > 500 {
		base = string(r[:500])
	}
	return base
}

func (s *Server) getContextDocument(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	d, err := s.deps.ContextDocuments.GetContextDocument(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "Context document")
	}
	return respond(c, http.StatusOK, toContextDocumentResponse(d))
}

type updateContextDocumentRequest struct {
	Title          *string                   `json:"title" minLength:"1" maxLength:"500"`
	DocumentType   *string                   `json:"document_type" enum:"$document_type"`
	IsGlobal       *bool                     `json:"is_global"`
	Description    Optional[string]          `json:"description" maxLength:"5000" doc:"An explicit null clears it."`
	Content        *string                   `json:"content" minLength:"1" doc:"At most 1 MiB of UTF-8; a change bumps version."`
	Tags           []string                  `json:"tags" maxItems:"50" minLength:"1" maxLength:"100" doc:"Replaces the list."`
	TargetingRules Optional[json.RawMessage] `json:"targeting_rules" doc:"Replaces the rules; an explicit null removes them."`
}

// Validate applies the owner's checks (config.CheckDocumentPatch) and parses the targeting rules.
func (r updateContextDocumentRequest) Validate() validate.Errors {
	errs := config.CheckDocumentPatch(config.DocumentPatch{Title: r.Title, Description: r.Description.kit(), Content: r.Content, Tags: r.Tags})
	if r.TargetingRules.Set && !r.TargetingRules.Null {
		if _, rerrs := targeting.Parse(r.TargetingRules.Value); len(rerrs) > 0 {
			errs.Merge([]any{"targeting_rules"}, rerrs)
		}
	}
	return errs
}

func (s *Server) updateContextDocument(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateContextDocumentRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	rules := optional.Value[*targeting.Rules]{Set: req.TargetingRules.Set, Null: req.TargetingRules.Null}
	if rules.Set && !rules.Null {
		rules.Value = parseRules(req.TargetingRules.Value)
	}
	d, err := s.config.Documents.Update(c.UserContext(), s.actor(c), id, config.DocumentPatch{Title: req.Title,
		DocumentType: req.DocumentType, IsGlobal: req.IsGlobal, Description: req.Description.kit(), Content: req.Content,
		Tags: req.Tags, TargetingRules: rules})
	if err != nil {
		return notFoundAs(err, "Context document")
	}
	return respond(c, http.StatusOK, toContextDocumentResponse(d))
}

func (s *Server) deleteContextDocument(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.config.Documents.Delete(c.UserContext(), s.actor(c), id); err != nil {
		return notFoundAs(err, "Context document")
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Server) alertContext(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	subj, err := s.deps.ContextDocuments.AlertSubject(ctx, id)
	if err != nil {
		return notFoundAs(err, "Alert")
	}
	docs, err := s.deps.ContextDocuments.ApplicableContextDocuments(ctx, subj)
	if err != nil {
		return err
	}
	out := mapSlice(docs, toContextDocumentResponse)
	return respondMeta(c, http.StatusOK, out, map[string]any{"total": len(out)})
}
