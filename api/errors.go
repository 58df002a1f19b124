package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/vigil-soc/vigil/domain/errcode"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Error is an API error answered with API.md's error body.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	Headers map[string]string
	// Detail, when set, is the seed's field-error list written beside the error object (422s with a
	// route-specific code, e.g. INVALID_PAYLOAD).
	Detail validate.Errors
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// NewError builds an API error.
func NewError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// WithDetails returns e with details set.
func (e *Error) WithDetails(d map[string]any) *Error {
	e.Details = d
	return e
}

func errNotFound(what string) *Error { return faultError(errcode.NotFound(what)) }

// faultError is the API error of a fault of the one error table (errcode).
func faultError(f errcode.Fault) *Error {
	return &Error{Status: f.Status, Code: f.Code, Message: f.Message, Details: f.Details, Detail: f.Fields}
}

func errInvalidJSON(raw []byte) *Error {
	var x any
	err := json.Unmarshal(raw, &x)
	details := map[string]any{}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		details["offset"] = se.Offset
	}
	return NewError(http.StatusBadRequest, "INVALID_JSON", "Request body is not valid JSON.").WithDetails(details)
}

func errUnsupportedMediaType() *Error {
	return NewError(http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Request body must be application/json.")
}

type errorBody struct {
	Detail validate.Errors `json:"detail,omitempty"`
	Error  errorObject     `json:"error"`
}

type errorObject struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// fiberCodes names the statuses Fiber itself produces.
var fiberCodes = map[int]string{
	http.StatusBadRequest:                  "BAD_REQUEST",
	http.StatusNotFound:                    "NOT_FOUND",
	http.StatusMethodNotAllowed:            "METHOD_NOT_ALLOWED",
	http.StatusRequestTimeout:              "REQUEST_TIMEOUT",
	http.StatusRequestEntityTooLarge:       "PAYLOAD_TOO_LARGE",
	http.StatusRequestHeaderFieldsTooLarge: "HEADERS_TOO_LARGE",
	http.StatusUnsupportedMediaType:        "UNSUPPORTED_MEDIA_TYPE",
	http.StatusServiceUnavailable:          "UNAVAILABLE",
	http.StatusBadGateway:                  "BAD_GATEWAY",
}

// errorHandler is the single funnel from a handler's error to API.md's error body.
func errorHandler(log *slog.Logger, maxBodyMB int) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		body := errorBody{Error: errorObject{Details: map[string]any{}}}
		status := http.StatusInternalServerError
		var (
			apiErr *Error
			verrs  validate.Errors
			ferr   *fiber.Error
		)
		switch {
		case errors.As(err, &verrs):
			status = http.StatusUnprocessableEntity
			body.Detail = verrs
			body.Error.Code, body.Error.Message = "VALIDATION_ERROR", "Request validation failed."
		case errors.As(err, &apiErr):
			status = apiErr.Status
			body.Error.Code, body.Error.Message = apiErr.Code, apiErr.Message
			if apiErr.Details != nil {
				body.Error.Details = apiErr.Details
			}
			if len(apiErr.Detail) > 0 {
				body.Detail = apiErr.Detail
			}
			for k, v := range apiErr.Headers {
				c.Set(k, v)
			}
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrQueryTimeout):
			// The request's deadline passed in a dependency (an overloaded database or Temporal), or
			// Postgres cancelled a bounded read (a list filter too costly right now).
			f, _ := errcode.Of(err)
			status = f.Status
			body.Error.Code, body.Error.Message = f.Code, f.Message
			body.Error.Details = map[string]any{"request_id": requestID(c)}
			c.Set("Retry-After", "1")
			log.WarnContext(c.UserContext(), "request deadline exceeded or query cancelled", "err", err, "method", c.Method(), "path", c.Path(), "request_id", requestID(c))
		case errors.As(err, &ferr) && ferr.Code < 500 || errors.As(err, &ferr) && ferr.Code == 503:
			status = ferr.Code
			code, ok := fiberCodes[status]
			if !ok {
				code = "HTTP_" + strconv.Itoa(status)
			}
			body.Error.Code, body.Error.Message = code, http.StatusText(status)+"."
			if status == http.StatusRequestEntityTooLarge {
				body.Error.Message = "Request body exceeds " + strconv.Itoa(maxBodyMB) + " MB."
				body.Error.Details = map[string]any{"max_bytes": maxBodyMB << 20}
			}
		default:
			// Every rule owner's and the store's errors, by the one table.
			if f, ok := errcode.Of(err); ok {
				status = f.Status
				body.Error.Code, body.Error.Message = f.Code, f.Message
				if f.Details != nil {
					body.Error.Details = f.Details
				}
			}
		}
		if status >= 500 && status != http.StatusServiceUnavailable && apiErr == nil {
			body.Error.Code, body.Error.Message = "INTERNAL_ERROR", "An internal error occurred. Quote the request id when reporting it."
			body.Error.Details = map[string]any{"request_id": requestID(c)}
			log.ErrorContext(c.UserContext(), "request failed", "err", err, "method", c.Method(), "path", c.Path(), "request_id", requestID(c))
		}
		// Errors raised outside the middleware chain (body too large, malformed requests) still carry the
		// request id and security headers.
		if len(c.Response().Header.Peek(headerRequestID)) == 0 {
			setRequestID(c)
			setSecurityHeaders(c)
		}
		return c.Status(status).JSON(body)
	}
}
