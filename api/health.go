package api

import (
	"context"
	"errors"
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

// Health runs the checks and returns the body and whether all passed.
func (s *Server) Health(ctx context.Context) (healthResponse, bool) {
	res := healthResponse{Status: "ok", Version: s.cfg.Version, Checks: map[string]string{}, EnrichmentProviders: map[string]string{}}
	checks := map[string]func(context.Context) error{"database": s.deps.Health.Database, "temporal": s.deps.Health.Temporal}
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
					s.log.WarnContext(ctx, "health check failed", "check", name, "err", err)
				}
			}
			mu.Lock()
			res.Checks[name] = status
			mu.Unlock()
		})
	}
	if s.deps.Health.Providers != nil {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if p, err := s.deps.Health.Providers(cctx); err == nil {
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
	return res, res.Status == "ok"
}

func (s *Server) health(c *fiber.Ctx) error {
	res, ok := s.Health(c.UserContext())
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
		res.Error = &errorObject{Code: "UNAVAILABLE", Message: "A dependency is unavailable.", Details: map[string]any{"checks": res.Checks}}
	}
	// /health answers its own body (monitoring tools read it as is), not the envelope.
	return c.Status(status).JSON(res)
}
