package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/store"
)

// tool is one MCP tool: its scopes are checked, then its arguments, before run is called. A tool
// that changes something (writes) is annotated as such; the others read-only and idempotent.
type tool struct {
	name, title, description string
	scopes                   []string
	writes                   bool
	args                     []arg
	run                      func(ctx context.Context, p auth.Principal, a args) (any, error)
}

func (s *Server) addTool(srv *sdk.Server, who principalSource, t tool) {
	annotations := &sdk.ToolAnnotations{Title: t.title, ReadOnlyHint: true, IdempotentHint: true}
	if t.writes {
		notDestructive := false // updates and appends; nothing is deleted
		annotations = &sdk.ToolAnnotations{Title: t.title, DestructiveHint: &notDestructive}
	}
	srv.AddTool(&sdk.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: schemaOf(t.args),
		Annotations: annotations},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p, err := who(ctx, req)
			if err != nil {
				return s.toolError(ctx, err), nil
			}
			if err := requireScopes(p, t.scopes); err != nil {
				return s.toolError(ctx, err), nil
			}
			a, verrs := parseArgs(req.Params.Arguments, t.args)
			if len(verrs) > 0 {
				return s.toolError(ctx, verrs), nil
			}
			out, err := t.run(ctx, p, a)
			if err != nil {
				return s.toolError(ctx, err), nil
			}
			return toolResult(out)
		})
}

// resource is one MCP resource or resource template (uri holds {name} placeholders for a template).
type resource struct {
	uri, name, title, description string
	scopes                        []string
	read                          func(ctx context.Context, p auth.Principal, params map[string]string) (any, error)
}

func (s *Server) addResource(srv *sdk.Server, who principalSource, r resource) {
	match := uriMatcher(r.uri)
	h := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		params, ok := match(uri)
		if !ok {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		p, err := who(ctx, req)
		if err == nil {
			err = requireScopes(p, r.scopes)
		}
		var out any
		if err == nil {
			out, err = r.read(ctx, p, params)
		}
		if err != nil {
			return nil, s.resourceError(ctx, uri, err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", uri, err)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	if strings.Contains(r.uri, "{") {
		srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: r.uri, Name: r.name, Title: r.title, Description: r.description, MIMEType: "application/json"}, h)
		return
	}
	srv.AddResource(&sdk.Resource{URI: r.uri, Name: r.name, Title: r.title, Description: r.description, MIMEType: "application/json"}, h)
}

// uriMatcher matches a URI against a template such as vigil://alerts/{uuid}/context.
func uriMatcher(template string) func(string) (map[string]string, bool) {
	var names []string
	pattern := regexp.MustCompile(`\\\{(\w+)\\\}`).ReplaceAllStringFunc(regexp.QuoteMeta(template), func(m string) string {
		names = append(names, strings.Trim(m, `\{}`))
		return `([^/?#]+)`
	})
	re := regexp.MustCompile("^" + pattern + "$")
	return func(uri string) (map[string]string, bool) {
		m := re.FindStringSubmatch(uri)
		if m == nil {
			return nil, false
		}
		out := map[string]string{}
		for i, n := range names {
			out[n] = m[i+1]
		}
		return out, true
	}
}

// errForbidden is a scope refusal.
type errForbidden struct{ required, missing []string }

func (e errForbidden) Error() string {
	return "the API key lacks the required scope " + strings.Join(e.missing, ", ")
}

// requireScopes is the scope check of every tool and resource: auth.Principal owns the rule.
func requireScopes(p auth.Principal, scopes []string) error {
	if missing := p.Missing(scopes...); len(missing) > 0 {
		return errForbidden{required: scopes, missing: missing}
	}
	return nil
}

// fault is an error already in the contract's terms.
type fault struct{ errcode.Fault }

func (e fault) Error() string { return e.Message }

// notFoundAs turns store.ErrNotFound into a named not-found error ("Alert not found.").
func notFoundAs(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fault{errcode.NotFound(what)}
	}
	return err
}

// errorFor answers an error with API.md §0's error body by the one error table (errcode); internal
// errors are logged, not shown.
func (s *Server) errorFor(ctx context.Context, err error) errorBody {
	var (
		forb errForbidden
		f    fault
	)
	switch {
	case errors.As(err, &forb):
		return newErrorBody("FORBIDDEN", "The API key lacks a required scope: "+strings.Join(forb.missing, ", ")+".",
			map[string]any{"required_scopes": forb.required, "missing_scopes": forb.missing})
	case errors.As(err, &f):
		return faultBody(f.Fault)
	}
	if f, ok := errcode.Of(err); ok {
		return faultBody(f)
	}
	s.cfg.Log.ErrorContext(ctx, "mcp call failed", "err", err)
	return newErrorBody("INTERNAL_ERROR", "An internal error occurred.", nil)
}

// faultBody is f's error body; a validation failure names every problem in its message, since a
// tool's caller reads the text.
func faultBody(f errcode.Fault) errorBody {
	if f.Code == "VALIDATION_ERROR" {
		b := newErrorBody(f.Code, "Tool arguments failed validation: "+f.Fields.Error(), nil)
		b.Detail = f.Fields
		return b
	}
	return newErrorBody(f.Code, f.Message, f.Details)
}

// toolError is a failed call as an MCP tool error: isError, the error body as structured content and
// as text.
func (s *Server) toolError(ctx context.Context, err error) *sdk.CallToolResult {
	body := s.errorFor(ctx, err)
	b, _ := json.Marshal(body)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// MCP error codes for resource reads (JSON-RPC application range).
const (
	codeForbidden    = -32003
	codeUnauthorized = -32001
)

// resourceError is a failed read as a JSON-RPC error carrying the error body as data.
func (s *Server) resourceError(ctx context.Context, uri string, err error) error {
	body := s.errorFor(ctx, err)
	data, _ := json.Marshal(body)
	code := int64(jsonrpc.CodeInternalError)
	switch body.Error.Code {
	case "NOT_FOUND":
		return sdk.ResourceNotFoundError(uri)
	case "VALIDATION_ERROR":
		code = jsonrpc.CodeInvalidParams
	case "FORBIDDEN":
		code = codeForbidden
	case "UNAUTHORIZED", "KEY_EXPIRED":
		code = codeUnauthorized
	}
	return &jsonrpc.Error{Code: code, Message: body.Error.Code + ": " + body.Error.Message, Data: data}
}

// toolResult is a successful call: v as structured content and the same JSON as text.
func toolResult(v any) (*sdk.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}
