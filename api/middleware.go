package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/kit/ratelimit"
)

const (
	headerRequestID = "X-Request-ID"
	localsRequestID = "vigil.request_id" // the console reads it too (console.requestIDLocal)
	// localsClientRequestID holds the client's X-Request-ID, kept apart from the request's id.
	localsClientRequestID = "vigil.client_request_id"
	localsPrincipal       = "vigil.principal"
	localsAuthErr         = "vigil.auth_err"
	localsAuthDone        = "vigil.auth_done"
)

type ctxKey int

const ctxKeyRequestID ctxKey = iota

// requestContext sets the request id, the security headers and a request-scoped context with a
// deadline, so store and Temporal calls are bounded and carry the id.
func (s *Server) requestContext(c *fiber.Ctx) error {
	id := setRequestID(c)
	setSecurityHeaders(c)
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKeyRequestID, id), s.cfg.RequestTimeout)
	defer cancel()
	c.SetUserContext(ctx)
	err := c.Next()
	s.finishUnreadBody(c)
	return err
}

// finishUnreadBody handles a body the request never read (refused before readBody: 401, 403, 413,
// 429, an unknown route). A body of a declared length within the 8 KB fasthttp reads with the headers
// is already whole. Beyond that, a request without a valid key has nothing more read: the connection
// is closed after the answer, so an unauthenticated client makes the server read at most its headers
// and those 8 KB, and holds the connection no longer than that. An authenticated caller's body is
// discarded, never buffered, up to twice the body limit so that a client still sending gets the
// answer instead of a reset; a longer or broken one closes the connection.
func (s *Server) finishUnreadBody(c *fiber.Ctx) {
	req := c.Request()
	if !req.IsBodyStream() {
		return
	}
	defer func() { _ = req.CloseBodyStream() }()
	if n := req.Header.ContentLength(); n >= 0 && n <= prefetchedBody {
		return
	}
	if _, ok := c.Locals(localsPrincipal).(auth.Principal); !ok {
		c.Context().SetConnectionClose()
		return
	}
	budget := int64(2*s.cfg.MaxRequestBodyMB) << 20
	n, err := io.CopyN(io.Discard, req.BodyStream(), budget+1)
	if err != io.EOF || n > budget {
		c.Context().SetConnectionClose()
	}
}

// readBody reads the request body into memory, after the rate limit and authentication, bounded by
// MAX_REQUEST_BODY_SIZE_MB: a declared Content-Length over the limit is refused (413) before a byte
// is read; a chunked or longer-than-declared body is cut at limit+1 bytes and refused. Handlers then
// use c.Body() as usual.
func (s *Server) readBody(c *fiber.Ctx) error {
	req := c.Request()
	limit := s.cfg.MaxRequestBodyMB << 20
	if req.Header.ContentLength() > limit {
		return fiber.ErrRequestEntityTooLarge
	}
	if !req.IsBodyStream() {
		return c.Next()
	}
	// The body's own deadline: until now the request had the header deadline (ReadHeaderTimeout).
	if err := c.Context().Conn().SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)); err != nil {
		c.Context().SetConnectionClose()
		return fiber.NewError(http.StatusBadRequest, "request body could not be read")
	}
	body, err := io.ReadAll(io.LimitReader(req.BodyStream(), int64(limit)+1))
	if err != nil {
		c.Context().SetConnectionClose()
		return fiber.NewError(http.StatusBadRequest, "request body could not be read")
	}
	if len(body) > limit {
		return fiber.ErrRequestEntityTooLarge
	}
	req.SetBody(body)
	return c.Next()
}

// setRequestID gives the request the server's own id (a fresh uuid: what logs, error bodies and the
// audit trail name it by) and keeps the client's X-Request-ID, when it is 1..128 printable ASCII
// characters, apart: the response echoes it (API.md §0), the audit trail records it as
// client_request_id, never as the request's id (security review round 4, R4-10: a client chose the
// audit trail's request ids). Without one, the response carries the server's id.
func setRequestID(c *fiber.Ctx) string {
	id := uuid.NewString()
	c.Locals(localsRequestID, id)
	echo := id
	if client := audit.ClientRequestID(c.Get(headerRequestID)); client != "" {
		c.Locals(localsClientRequestID, client)
		echo = client
	}
	c.Set(headerRequestID, echo)
	return id
}

// requestID is the server's id of the request.
func requestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localsRequestID).(string); ok {
		return id
	}
	return ""
}

// clientRequestID is the X-Request-ID the client sent ("" when none or not valid).
func clientRequestID(c *fiber.Ctx) string {
	id, _ := c.Locals(localsClientRequestID).(string)
	return id
}

func setSecurityHeaders(c *fiber.Ctx) {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	c.Set("Cache-Control", "no-store")
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// resolvePrincipal authenticates the request once and remembers the outcome for the rate limiter and
// the auth check.
func (s *Server) resolvePrincipal(c *fiber.Ctx) (auth.Principal, error) {
	if c.Locals(localsAuthDone) != nil {
		p, _ := c.Locals(localsPrincipal).(auth.Principal)
		err, _ := c.Locals(localsAuthErr).(error)
		return p, err
	}
	c.Locals(localsAuthDone, true)
	token, ok := bearer(c)
	if !ok {
		err := NewError(http.StatusUnauthorized, "UNAUTHORIZED", "A bearer API key is required.")
		c.Locals(localsAuthErr, err)
		return auth.Principal{}, err
	}
	p, err := s.deps.Auth.Authenticate(c.UserContext(), token)
	if err != nil {
		if f, ok := errcode.Of(err); ok && f.Status == http.StatusUnauthorized {
			err = faultError(f)
		}
		c.Locals(localsAuthErr, err)
		return auth.Principal{}, err
	}
	c.Locals(localsPrincipal, p)
	return p, nil
}

// authenticate requires a valid key holding every scope in scopes.
func (s *Server) authenticate(scopes []string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := s.resolvePrincipal(c)
		if err != nil {
			var apiErr *Error
			if errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized {
				apiErr.Headers = map[string]string{"WWW-Authenticate": `Bearer realm="vigil"`}
			}
			return err
		}
		if missing := p.Missing(scopes...); len(missing) > 0 {
			return NewError(http.StatusForbidden, "FORBIDDEN", "The API key lacks a required scope.").
				WithDetails(map[string]any{"required_scopes": scopes, "missing_scopes": missing})
		}
		return c.Next()
	}
}

// principal returns the authenticated caller of a protected route.
func principal(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(localsPrincipal).(auth.Principal)
	return p
}

// clientIP is the request's client address by the doors' one proxy rule (ratelimit.Policy.ClientIP).
func (s *Server) clientIP(c *fiber.Ctx) string {
	return s.limits.ClientIP(c.Context().RemoteIP().String(), func() []string { return forwardedFor(c) })
}

// forwardedFor is the request's X-Forwarded-For header lines, copied out of fasthttp's buffers.
func forwardedFor(c *fiber.Ctx) []string {
	var xff []string
	for _, h := range c.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
		xff = append(xff, string(h))
	}
	return xff
}

// rateLimit counts the request against its key's budget (authenticated) or its client IP's, by the
// doors' one rule (ratelimit.Policy).
func (s *Server) rateLimit(c *fiber.Ctx) error {
	caller := ratelimit.Caller{IP: s.clientIP(c)}
	if _, ok := bearer(c); ok {
		if p, err := s.resolvePrincipal(c); err == nil {
			caller.KeyID, caller.KeyLimit = p.KeyUUID, p.RateLimit
		}
	}
	v := s.limits.Take(c.UserContext(), caller)
	for _, h := range v.Headers() {
		c.Set(h[0], h[1])
	}
	if !v.Allowed {
		s.deps.Telemetry.RateLimited(v.Kind)
		return NewError(http.StatusTooManyRequests, ratelimit.Code, v.Message()).WithDetails(v.Details())
	}
	return c.Next()
}
