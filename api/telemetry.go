package api

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Telemetry receives what the API counts for /metrics (metrics.API implements it with Prometheus).
type Telemetry interface {
	// ObserveRequest counts one answered request; route is the matched route template.
	ObserveRequest(method, route string, status int, elapsed time.Duration)
	// RateLimited counts one 429 of the rate limiter; bucket is "key" or "ip".
	RateLimited(bucket string)
	// IngestAcked counts one 202 of an ingest route.
	IngestAcked(source string, duplicate bool)
	// SeverityUnmapped counts one ingested alert whose severity value no mapping knows.
	SeverityUnmapped(source string)
}

type noTelemetry struct{}

func (noTelemetry) ObserveRequest(string, string, int, time.Duration) {}
func (noTelemetry) RateLimited(string)                                {}
func (noTelemetry) IngestAcked(string, bool)                          {}
func (noTelemetry) SeverityUnmapped(string)                           {}

// unmatchedRoute labels requests no route matched (404, 405, a body refused before routing), so a
// scan of random paths cannot grow the metrics without bound.
const unmatchedRoute = "unmatched"

// observe times every request and counts it by method, route template (Fiber's matched route,
// never the raw path) and final status. It runs the error funnel itself, as Fiber's logger
// middleware does, so the status it records is the one the client gets.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := s.app.ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(http.StatusInternalServerError)
		}
	}
	route, method := c.Route().Path, c.Method()
	if !s.routePaths[route] {
		route = unmatchedRoute
		if !knownMethod(method) {
			method = "OTHER"
		}
	}
	s.deps.Telemetry.ObserveRequest(method, route, c.Response().StatusCode(), time.Since(start))
	return nil
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return true
	}
	return false
}
