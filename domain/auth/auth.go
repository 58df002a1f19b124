// Package auth holds API-key rules shared by the REST API, the MCP server and the CLI: key format and
// generation, hashing, scopes and the authenticated principal.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/vigil-soc/vigil/store"
)

// Key format: "cai_" followed by 32 URL-safe random characters.
const (
	KeyPrefix     = "cai_"
	keyRandomLen  = 32
	KeyLength     = len(KeyPrefix) + keyRandomLen
	DisplayPrefix = 8 // characters kept for display, audit and rate limiting
)

// Scopes.
const (
	ScopeAlertsRead       = "alerts:read"
	ScopeAlertsWrite      = "alerts:write"
	ScopeEnrichmentsRead  = "enrichments:read"
	ScopeWorkflowsRead    = "workflows:read"
	ScopeWorkflowsWrite   = "workflows:write"
	ScopeWorkflowsExecute = "workflows:execute"
	ScopeApprovalsWrite   = "approvals:write"
	ScopeAgentsRead       = "agents:read"
	ScopeAgentsWrite      = "agents:write"
	ScopeAdmin            = "admin"
)

// AllScopes lists every scope a key may hold.
func AllScopes() []string {
	return []string{ScopeAlertsRead, ScopeAlertsWrite, ScopeEnrichmentsRead, ScopeWorkflowsRead,
		ScopeWorkflowsWrite, ScopeWorkflowsExecute, ScopeApprovalsWrite, ScopeAgentsRead, ScopeAgentsWrite, ScopeAdmin}
}

// ValidScope reports whether s is a known scope.
func ValidScope(s string) bool { return slices.Contains(AllScopes(), s) }

// Key types.
const (
	KeyTypeHuman = "human"
	KeyTypeAgent = "agent"
)

// KeyTypes returns every key type.
func KeyTypes() []string { return []string{KeyTypeHuman, KeyTypeAgent} }

// NewKey returns a fresh plaintext key from crypto/rand.
func NewKey() (string, error) {
	buf := make([]byte, 24) // 24 bytes → 32 base64url characters
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Hash returns the SHA-256 of the whole key, the only form in which keys are stored.
func Hash(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// Prefix returns the display prefix of a key.
func Prefix(key string) string {
	if len(key) < DisplayPrefix {
		return key
	}
	return key[:DisplayPrefix]
}

// WellFormed reports whether key has the key format, so garbage never reaches the database.
func WellFormed(key string) bool {
	if len(key) != KeyLength || !strings.HasPrefix(key, KeyPrefix) {
		return false
	}
	for _, r := range key[len(KeyPrefix):] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Principal is the authenticated caller.
type Principal struct {
	KeyUUID        uuid.UUID
	KeyPrefix      string
	Name           string
	Scopes         []string
	KeyType        string
	AllowedSources []string // nil = any source
	RateLimit      int      // per minute; 0 = the default
	IsActive       bool
	ExpiresAt      *time.Time
}

// Has reports whether the principal holds scope (admin holds every scope).
func (p Principal) Has(scope string) bool {
	return slices.Contains(p.Scopes, ScopeAdmin) || slices.Contains(p.Scopes, scope)
}

// Missing returns the scopes of required that the principal lacks.
func (p Principal) Missing(required ...string) []string {
	var out []string
	for _, s := range required {
		if !p.Has(s) {
			out = append(out, s)
		}
	}
	return out
}

// AllowsSource reports whether the principal may ingest from source.
func (p Principal) AllowsSource(source string) bool {
	return p.AllowedSources == nil || slices.Contains(p.AllowedSources, source)
}

// Expired reports whether the key has expired at now.
func (p Principal) Expired(now time.Time) bool {
	return p.ExpiresAt != nil && !now.Before(*p.ExpiresAt)
}

// IsAgent reports whether the principal is an agent key.
func (p Principal) IsAgent() bool { return p.KeyType == KeyTypeAgent }

// Actor is the principal acting through front door actorType (store.ActorAPI, store.ActorMCP): the
// actor the domain services record in the activity trail.
func (p Principal) Actor(actorType string) store.Actor {
	return store.Actor{Type: actorType, KeyPrefix: p.KeyPrefix, Agent: p.IsAgent(), KeyName: p.Name, AllowedSources: p.AllowedSources}
}
