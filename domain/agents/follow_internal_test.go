package agents

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// KeyLoss (round 4, R4-6): an agent is paused when its registering key is gone, revoked, expired or no
// longer holds a scope one of its events needs; admin counts as every scope on either side.
func TestKeyLoss(t *testing.T) {
	now := time.Now()
	id := uuid.New()
	agent := func(scopes ...string) store.Agent {
		return store.Agent{RegisteredKeyUUID: &id, RegisteredScopes: scopes, Events: []string{EventAlertEnriched}}
	}
	key := func(scopes ...string) *store.APIKey { return &store.APIKey{UUID: id, IsActive: true, Scopes: scopes} }
	past := now.Add(-time.Second)
	expired := key(auth.ScopeAlertsRead)
	expired.ExpiresAt = &past
	revoked := key(auth.ScopeAlertsRead)
	revoked.IsActive = false
	for name, tc := range map[string]struct {
		a    store.Agent
		k    *store.APIKey
		lost bool
	}{
		"standing":                    {agent(auth.ScopeAlertsRead), key(auth.ScopeAlertsRead, auth.ScopeAgentsWrite), false},
		"gone":                        {agent(auth.ScopeAlertsRead), nil, true},
		"revoked":                     {agent(auth.ScopeAlertsRead), revoked, true},
		"expired":                     {agent(auth.ScopeAlertsRead), expired, true},
		"reduced":                     {agent(auth.ScopeAlertsRead), key(auth.ScopeAgentsRead), true},
		"admin registration, reduced": {agent(auth.ScopeAdmin), key(auth.ScopeAlertsRead), false},
		"admin key":                   {agent(auth.ScopeAlertsRead), key(auth.ScopeAdmin), false},
		"follows no key":              {store.Agent{RegisteredScopes: []string{auth.ScopeAlertsRead}, Events: []string{EventAlertEnriched}}, nil, false},
	} {
		require.Equal(t, tc.lost, KeyLoss(tc.a, tc.k, now) != "", name)
	}
	require.Equal(t, []string{auth.ScopeAlertsRead}, effectiveScopes(agent(auth.ScopeAdmin), *key(auth.ScopeAlertsRead)))
	require.Equal(t, []string{auth.ScopeAlertsRead, auth.ScopeWorkflowsRead},
		effectiveScopes(agent(auth.ScopeWorkflowsRead, auth.ScopeAlertsRead), *key(auth.ScopeAdmin)))
}
