package api

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func (s *Server) workflowSecretRoutes() {
	admin := []string{auth.ScopeAdmin}
	const tag = "Workflow secrets"
	s.add(route{Method: http.MethodGet, Path: "/v1/workflow-secrets", Tag: tag, Summary: "List workflow secrets",
		Description: "Names and descriptions only: values are write-only.", Scopes: admin, Query: PageQuery{}, Response: workflowSecretResponse{}, List: true}, s.listWorkflowSecrets)
	s.add(route{Method: http.MethodPut, Path: "/v1/workflow-secrets/:name", Tag: tag, Summary: "Create or replace a workflow secret",
		Description: "Workflows reference it as {{secrets.NAME}}; a run receives only the secrets its workflow names, and a step may put it only into a request for one of its `allowed_hosts` (refused before sending with `SECRET_HOST_NOT_ALLOWED` otherwise). The value is sealed with AES-256-GCM and never returned. System workflows become active when all their secrets exist.",
		Scopes:      admin, Body: putWorkflowSecretRequest{}, Response: workflowSecretResponse{}}, s.putWorkflowSecret)
	s.add(route{Method: http.MethodDelete, Path: "/v1/workflow-secrets/:name", Tag: tag, Summary: "Delete a workflow secret",
		Scopes: admin, Status: http.StatusNoContent}, s.deleteWorkflowSecret)
}

type workflowSecretResponse struct {
	Name         string    `json:"name"`
	Description  *string   `json:"description"`
	AllowedHosts []string  `json:"allowed_hosts" doc:"Hosts a request carrying the secret may go to."`
	Created      bool      `json:"created,omitempty" doc:"PUT only: true when the name was new."`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type putWorkflowSecretRequest struct {
	Value        string   `json:"value" required:"true" minLength:"1" maxLength:"10000"`
	Description  *string  `json:"description" maxLength:"1000"`
	AllowedHosts []string `json:"allowed_hosts" required:"true" maxItems:"50" maxLength:"260" doc:"Where the secret may be sent: host names or IPs, \"*.example.com\" for any subdomain, each with an optional :port (without one, any port). At least one."`
}

// Validate applies the allowed_hosts rule (responses.ValidateAllowedHosts).
func (r putWorkflowSecretRequest) Validate() validate.Errors {
	var errs validate.Errors
	errs.Merge([]any{"allowed_hosts"}, responses.ValidateAllowedHosts(r.AllowedHosts))
	return errs
}

func secretName(c *fiber.Ctx) (string, error) {
	name := c.Params("name")
	if !responses.ValidSecretName(name) {
		var errs validate.Errors
		errs.AddCtx([]any{"path", "name"}, validate.TypePattern, "Secret names match ^[A-Z][A-Z0-9_]{0,63}$.", validate.Truncate(name),
			map[string]any{"pattern": responses.SecretNamePattern})
		return "", errs
	}
	return name, nil
}

func (s *Server) listWorkflowSecrets(c *fiber.Ctx) error {
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	secs, total, err := s.deps.Workflows.ListWorkflowSecrets(c.UserContext(), q.storePage())
	if err != nil {
		return err
	}
	out := make([]workflowSecretResponse, len(secs))
	for i, sec := range secs {
		out[i] = workflowSecretResponse{Name: sec.Name, Description: sec.Description, AllowedHosts: nonNil(sec.AllowedHosts),
			CreatedAt: sec.CreatedAt.UTC(), UpdatedAt: sec.UpdatedAt.UTC()}
	}
	return respondList(c, out, total, q)
}

func (s *Server) putWorkflowSecret(c *fiber.Ctx) error {
	name, err := secretName(c)
	if err != nil {
		return err
	}
	var req putWorkflowSecretRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	if s.deps.Secrets == nil {
		return NewError(http.StatusServiceUnavailable, "UNAVAILABLE", "Secrets are not available: ENCRYPTION_KEY is not configured.")
	}
	sealed, err := s.deps.Secrets.Seal([]byte(req.Value))
	if err != nil {
		return err
	}
	sec := store.WorkflowSecret{Name: name, ValueSealed: sealed, Description: req.Description, AllowedHosts: req.AllowedHosts}
	created, err := s.responses.PutSecret(c.UserContext(), s.responsesActor(c), &sec)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, workflowSecretResponse{Name: sec.Name, Description: sec.Description, AllowedHosts: sec.AllowedHosts, Created: created,
		CreatedAt: sec.CreatedAt.UTC(), UpdatedAt: sec.UpdatedAt.UTC()})
}

func (s *Server) deleteWorkflowSecret(c *fiber.Ctx) error {
	name, err := secretName(c)
	if err != nil {
		return err
	}
	if err := s.responses.DeleteSecret(c.UserContext(), s.responsesActor(c), name); err != nil {
		return definitionError(err)
	}
	return c.SendStatus(http.StatusNoContent)
}
