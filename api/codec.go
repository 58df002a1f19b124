package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
)

// The codec endpoint (API.md §16): Temporal's remote codec protocol for the Temporal UI and CLI,
// POST /codec/decode and /codec/encode with a body {"payloads": [...]} (temporal.api.common.v1.Payloads
// in protobuf JSON) answered in the same form. Only an admin key may use it: a decoded payload is what
// the history holds in clear (indicator values, titles, agents' reasons). The browser calls it from
// the Temporal UI's origin, so it answers CORS for TEMPORAL_UI_URL's origin alone, preflight included.

// codecPaths are the two operations; the UI calls <endpoint>/decode and <endpoint>/encode.
const (
	codecDecodePath = "/codec/decode"
	codecEncodePath = "/codec/encode"
)

// codecPayloads documents the body of both operations (it is parsed with protojson, not bindBody:
// the protocol is the protobuf JSON form, bytes as base64).
type codecPayloads struct {
	Payloads []codecPayload `json:"payloads" doc:"temporal.api.common.v1.Payload in protobuf JSON"`
}

type codecPayload struct {
	Metadata map[string]string `json:"metadata" doc:"metadata values, base64 (encoding: binary/encrypted, encryption-key-id)"`
	Data     string            `json:"data" doc:"base64"`
}

func (s *Server) codecRoutes() {
	if s.deps.PayloadCodec == nil {
		return
	}
	s.app.Use("/codec", s.codecCORS)
	s.app.Options(codecDecodePath, s.rateLimit, s.codecPreflight)
	s.app.Options(codecEncodePath, s.rateLimit, s.codecPreflight)
	s.add(route{Method: http.MethodPost, Path: codecDecodePath, Tag: "Temporal", Summary: "Decode Temporal payloads (codec server)",
		Description: "Temporal's remote codec protocol for the Temporal UI and CLI: decrypts the payloads Vigil wrote to Temporal " +
			"(API.md §16). Payloads written before encryption come back as they are. Admin only; CORS for TEMPORAL_UI_URL's origin.",
		Scopes: []string{auth.ScopeAdmin}, Body: codecPayloads{}, ContentType: fiber.MIMEApplicationJSON}, s.codec(false))
	s.add(route{Method: http.MethodPost, Path: codecEncodePath, Tag: "Temporal", Summary: "Encode Temporal payloads (codec server)",
		Description: "Encrypts payloads with the current key, e.g. a signal's input typed in the Temporal UI. Admin only.",
		Scopes:      []string{auth.ScopeAdmin}, Body: codecPayloads{}, ContentType: fiber.MIMEApplicationJSON}, s.codec(true))
}

// codecOrigin reports whether the request comes from the Temporal UI's origin.
func (s *Server) codecOrigin(c *fiber.Ctx) (string, bool) {
	origin := c.Get(fiber.HeaderOrigin)
	return origin, origin != "" && s.cfg.CodecAllowedOrigin != "" && origin == s.cfg.CodecAllowedOrigin
}

// codecCORS adds the CORS answer for the Temporal UI's origin to every /codec response, errors
// included (so the UI can tell a refusal from a network failure); other origins get none.
func (s *Server) codecCORS(c *fiber.Ctx) error {
	c.Vary(fiber.HeaderOrigin)
	if origin, ok := s.codecOrigin(c); ok {
		c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
		c.Set(fiber.HeaderAccessControlAllowCredentials, "true")
	}
	return c.Next()
}

// codecPreflight answers the browser's preflight: 204 with the allowed method and headers for the
// Temporal UI's origin, 403 for any other.
func (s *Server) codecPreflight(c *fiber.Ctx) error {
	if _, ok := s.codecOrigin(c); !ok {
		return NewError(http.StatusForbidden, "FORBIDDEN", "This origin may not call the codec endpoint (only TEMPORAL_UI_URL's).")
	}
	c.Set(fiber.HeaderAccessControlAllowMethods, http.MethodPost)
	c.Set(fiber.HeaderAccessControlAllowHeaders, "Authorization, Content-Type, X-Namespace")
	c.Set(fiber.HeaderAccessControlMaxAge, "600")
	return c.SendStatus(http.StatusNoContent)
}

// codec decodes (or encodes) every payload of the body, one by one so a refusal names the payload.
func (s *Server) codec(encode bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		in, err := codecBody(c)
		if err != nil {
			return err
		}
		out := make([]*commonpb.Payload, len(in.GetPayloads()))
		var errs validate.Errors
		for i, p := range in.GetPayloads() {
			var res []*commonpb.Payload
			if encode {
				res, err = s.deps.PayloadCodec.Encode([]*commonpb.Payload{p})
			} else {
				res, err = s.deps.PayloadCodec.Decode([]*commonpb.Payload{p})
			}
			if err != nil {
				errs.Add([]any{"body", "payloads", i}, validate.TypeValue, codecMessage(err, encode), nil)
				continue
			}
			out[i] = res[0]
		}
		if err := errs.Err(); err != nil {
			return err
		}
		raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Status(http.StatusOK).Send(raw)
	}
}

// codecBody reads the protocol's body: temporal.api.common.v1.Payloads in protobuf JSON.
func codecBody(c *fiber.Ctx) (*commonpb.Payloads, error) {
	body := c.Request().Body()
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Compressed request bodies are not accepted.")
	}
	if ct := string(c.Request().Header.ContentType()); ct != "" && !isJSONContentType(ct) {
		return nil, errUnsupportedMediaType()
	}
	if len(bytes.TrimSpace(body)) == 0 {
		var errs validate.Errors
		errs.Add([]any{"body"}, validate.TypeMissing, "Request body is required.", nil)
		return nil, errs
	}
	if !json.Valid(body) {
		return nil, errInvalidJSON(body)
	}
	var in commonpb.Payloads
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, &in); err != nil {
		var errs validate.Errors
		errs.Add([]any{"body"}, validate.TypeObject, `Want {"payloads": [{"metadata": {name: base64}, "data": base64}, ...]}.`, nil)
		return nil, errs
	}
	return &in, nil
}

// codecMessage says why a payload was refused without repeating its content.
func codecMessage(err error, encode bool) string {
	if encode {
		return "The payload could not be encoded."
	}
	msg := err.Error()
	if i := strings.Index(msg, "payload codec: "); i >= 0 {
		msg = msg[i+len("payload codec: "):]
	}
	return "The payload could not be decoded: " + msg + "."
}

// PayloadCodec is what the codec endpoint calls (temporal/payloadcodec.Codec).
type PayloadCodec = converter.PayloadCodec
