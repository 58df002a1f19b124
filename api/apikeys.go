package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// APIKeyStore is what the API-key routes need.
type APIKeyStore interface {
	GetAPIKey(ctx context.Context, id uuid.UUID) (store.APIKey, error)
	ListAPIKeys(ctx context.Context, f store.APIKeyFilter) ([]store.APIKey, int, error)
}

func (s *Server) apiKeyRoutes() {
	admin := []string{auth.ScopeAdmin}
	s.add(route{Method: http.MethodGet, Path: "/v1/api-keys", Tag: "API keys", Summary: "List API keys",
		Description: "Newest first. The key value is never returned after creation.",
		Scopes:      admin, Query: listAPIKeysQuery{}, Response: apiKeyResponse{}, List: true}, s.listAPIKeys)
	s.add(route{Method: http.MethodPost, Path: "/v1/api-keys", Tag: "API keys", Summary: "Create an API key",
		Description: "Returns the plaintext key once, in `key`; only its SHA-256 is stored.",
		Scopes:      admin, Body: createAPIKeyRequest{}, Response: createdAPIKeyResponse{}, Status: http.StatusCreated}, s.createAPIKey)
	s.add(route{Method: http.MethodGet, Path: "/v1/api-keys/:uuid", Tag: "API keys", Summary: "Get an API key",
		Scopes: admin, Response: apiKeyResponse{}}, s.getAPIKey)
	s.add(route{Method: http.MethodPatch, Path: "/v1/api-keys/:uuid", Tag: "API keys", Summary: "Update an API key",
		Description: "An explicit null for `allowed_sources` clears it (any source); null elsewhere leaves the field unchanged.",
		Scopes:      admin, Body: updateAPIKeyRequest{}, Response: apiKeyResponse{}}, s.updateAPIKey)
	s.add(route{Method: http.MethodDelete, Path: "/v1/api-keys/:uuid", Tag: "API keys", Summary: "Revoke an API key",
		Description: "Sets is_active to false; the record stays for audit.", Scopes: admin, Status: http.StatusNoContent}, s.revokeAPIKey)
}

type apiKeyResponse struct {
	UUID               uuid.UUID  `json:"uuid"`
	Name               string     `json:"name"`
	KeyPrefix          string     `json:"key_prefix" doc:"First 8 characters of the key, for display and audit."`
	Scopes             []string   `json:"scopes"`
	KeyType            string     `json:"key_type" enum:"$key_type"`
	AllowedSources     []string   `json:"allowed_sources" doc:"null: any source may be ingested."`
	RateLimitPerMinute *int       `json:"rate_limit_per_minute" doc:"null: RATE_LIMIT_DEFAULT_PER_MINUTE."`
	IsActive           bool       `json:"is_active"`
	ExpiresAt          *time.Time `json:"expires_at"`
	LastUsedAt         *time.Time `json:"last_used_at"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
}

type createdAPIKeyResponse struct {
	apiKeyResponse
	Key string `json:"key" doc:"The plaintext key. Shown once; it cannot be retrieved later."`
}

func toAPIKeyResponse(k store.APIKey) apiKeyResponse {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return apiKeyResponse{UUID: k.UUID, Name: k.Name, KeyPrefix: k.KeyPrefix, Scopes: scopes, KeyType: k.KeyType,
		AllowedSources: k.AllowedSources, RateLimitPerMinute: k.RateLimitPerMinute, IsActive: k.IsActive,
		ExpiresAt: utcPtr(k.ExpiresAt), LastUsedAt: utcPtr(k.LastUsedAt), CreatedAt: k.CreatedAt.UTC(), UpdatedAt: k.UpdatedAt.UTC()}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type listAPIKeysQuery struct {
	PageQuery
	IsActive *bool `query:"is_active" doc:"Only active (true) or revoked (false) keys."`
}

func (s *Server) listAPIKeys(c *fiber.Ctx) error {
	var q listAPIKeysQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	keys, total, err := s.deps.APIKeys.ListAPIKeys(c.UserContext(), store.APIKeyFilter{IsActive: q.IsActive, Page: q.storePage()})
	if err != nil {
		return err
	}
	out := mapSlice(keys, toAPIKeyResponse)
	return respondList(c, out, total, q.PageQuery)
}

func (p PageQuery) storePage() store.Page { return store.Page{Number: p.Page, Size: p.PageSize} }

type createAPIKeyRequest struct {
	Name               string     `json:"name" required:"true" minLength:"1" maxLength:"200"`
	Scopes             []string   `json:"scopes" required:"true" minItems:"1" maxItems:"20" enum:"$scope"`
	KeyType            *string    `json:"key_type" enum:"$key_type" doc:"Default human. Agent keys trigger workflows as agents and face agent_only approval gates."`
	ExpiresAt          *time.Time `json:"expires_at"`
	AllowedSources     []string   `json:"allowed_sources" maxItems:"100" maxLength:"100" doc:"null (default): any source."`
	RateLimitPerMinute *int       `json:"rate_limit_per_minute" minimum:"1" maximum:"1000000"`
}

// Validate checks rules beyond the tags (the expiry rule is the key service's).
func (r createAPIKeyRequest) Validate() validate.Errors {
	return apikeys.CheckExpiry(r.ExpiresAt, time.Now())
}

func (s *Server) createAPIKey(c *fiber.Ctx) error {
	var req createAPIKeyRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	keyType := ""
	if req.KeyType != nil {
		keyType = *req.KeyType
	}
	k, plain, err := s.apiKeys.Create(c.UserContext(), s.actor(c), apikeys.Fields{Name: req.Name, Scopes: req.Scopes,
		KeyType: keyType, AllowedSources: req.AllowedSources, ExpiresAt: req.ExpiresAt, RateLimitPerMinute: req.RateLimitPerMinute})
	if err != nil {
		return inBody(err)
	}
	return respond(c, http.StatusCreated, createdAPIKeyResponse{apiKeyResponse: toAPIKeyResponse(k), Key: plain})
}

func (s *Server) getAPIKey(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	k, err := s.deps.APIKeys.GetAPIKey(c.UserContext(), id)
	if err != nil {
		return notFoundAs(err, "API key")
	}
	return respond(c, http.StatusOK, toAPIKeyResponse(k))
}

type updateAPIKeyRequest struct {
	Name               *string             `json:"name" minLength:"1" maxLength:"200"`
	Scopes             []string            `json:"scopes" minItems:"1" maxItems:"20" enum:"$scope"`
	AllowedSources     Optional[[]string]  `json:"allowed_sources" maxItems:"100" maxLength:"100" doc:"An explicit null clears the restriction."`
	IsActive           *bool               `json:"is_active" doc:"false revokes the key. Revocation is final: true on a revoked key → 409 KEY_REVOKED."`
	ExpiresAt          Optional[time.Time] `json:"expires_at" doc:"An explicit null removes the expiry."`
	RateLimitPerMinute Optional[int]       `json:"rate_limit_per_minute" minimum:"1" maximum:"1000000" doc:"An explicit null restores the default."`
}

func (s *Server) updateAPIKey(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req updateAPIKeyRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	k, err := s.apiKeys.Update(c.UserContext(), s.actor(c), id, apikeys.Patch{Name: req.Name, Scopes: req.Scopes,
		AllowedSources: req.AllowedSources.kit(), IsActive: req.IsActive, ExpiresAt: req.ExpiresAt.kit(),
		RateLimitPerMinute: req.RateLimitPerMinute.kit()})
	if err != nil {
		return notFoundAs(err, "API key")
	}
	return respond(c, http.StatusOK, toAPIKeyResponse(k))
}

func (s *Server) revokeAPIKey(c *fiber.Ctx) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	if err := s.apiKeys.Revoke(c.UserContext(), s.actor(c), id); err != nil {
		return notFoundAs(err, "API key")
	}
	return c.SendStatus(http.StatusNoContent)
}

// notFoundAs names the missing resource in a store.ErrNotFound.
func notFoundAs(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound(what)
	}
	return err
}
