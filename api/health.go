package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// HealthChecks are the dependency checks of GET /health. Each is bounded to 2 s.
type HealthChecks struct {
	Database  func(ctx context.Context) error
	Temporal  func(ctx context.Context) error
	Providers func(ctx context.Context) (map[string]string, error) // provider name → configured|unconfigured|circuit_open
}

type healthResponse struct {
	Status              string            `json:"status" enum:"ok,degraded"`
	Version             string            `json:"version"`
	Checks              map[string]string `json:"checks"`
	EnrichmentProviders map[string]string `json:"enrichment_providers"`
	Error               *errorObject      `json:"error,omitempty" doc:"Present when degraded (503)."`
}

func (s *Server) metaRoutes() {
	s.add(route{Method: http.MethodGet, Path: "/health", Tag: "Meta", Summary: "Health of the API and its dependencies",
		Description: "200 when Postgres and Temporal answer within 2 s each, else 503 with status degraded.",
		Public:      true, NoRateLimit: true, Response: healthResponse{}, Errors: []int{http.StatusServiceUnavailable}}, s.health)
	s.add(route{Method: http.MethodGet, Path: "/openapi.json", Tag: "Meta", Summary: "OpenAPI 3.1 document",
		Public: true, ContentType: "application/json"}, s.openAPI)
	s.add(route{Method: http.MethodGet, Path: "/docs", Tag: "Meta", Summary: "API reference page",
		Public: true, ContentType: "text/html"}, s.docs)
}

// Report runs the checks and returns the status code and body of GET /health (API.md §12): 200 when
// every check passed, else 503 with status degraded and the error object. The API and the MCP server
// both answer /health with it.
func (h HealthChecks) Report(ctx context.Context, version string, log *slog.Logger) (int, healthResponse) {
	res := healthResponse{Status: "ok", Version: version, Checks: map[string]string{}, EnrichmentProviders: map[string]string{}}
	checks := map[string]func(context.Context) error{"database": h.Database, "temporal": h.Temporal}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range checks {
		wg.Go(func() {
			status := "ok"
			if check == nil {
				status = "not configured"
			} else {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				if err := check(cctx); err != nil {
					status = "unavailable"
					if errors.Is(err, context.DeadlineExceeded) {
						status = "timeout"
					}
					log.WarnContext(ctx, "health check failed", "check", name, "err", err)
				}
			}
			mu.Lock()
			res.Checks[name] = status
			mu.Unlock()
		})
	}
	if h.Providers != nil {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if p, err := h.Providers(cctx); err == nil {
				mu.Lock()
				res.EnrichmentProviders = p
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, v := range res.Checks {
		if v != "ok" {
			res.Status = "degraded"
		}
	}
	if res.Status != "ok" {
		res.Error = &errorObject{Code: "UNAVAILABLE", Message: "A dependency is unavailable.", Details: map[string]any{"checks": res.Checks}}
		return http.StatusServiceUnavailable, res
	}
	return http.StatusOK, res
}

// HealthHandler answers GET /health on a net/http server (the MCP server) exactly as the API does.
func HealthHandler(h HealthChecks, version string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, res := h.Report(r.Context(), version, log)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(res)
	})
}

func (s *Server) health(c *fiber.Ctx) error {
	status, res := s.deps.Health.Report(c.UserContext(), s.cfg.Version, s.log)
	// /health answers its own body (monitoring tools read it as is), not the envelope.
	return c.Status(status).JSON(res)
}
