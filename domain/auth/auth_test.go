package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vigil-soc/vigil/store"
)

func TestNewKeyFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k, err := NewKey()
		require.NoError(t, err)
		require.Len(t, k, 36)
		require.True(t, WellFormed(k), k)
		require.False(t, seen[k])
		seen[k] = true
		require.Equal(t, k[:8], Prefix(k))
		require.Len(t, Hash(k), 32)
	}
}

func TestWellFormed(t *testing.T) {
	for _, bad := range []string{"", "cai_", "cai_short", "xyz_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"cai_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "cai_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "cai_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé"} {
		require.False(t, WellFormed(bad), bad)
	}
}

func TestPrincipal(t *testing.T) {
	p := Principal{Scopes: []string{ScopeAlertsRead}}
	require.True(t, p.Has(ScopeAlertsRead))
	require.False(t, p.Has(ScopeAlertsWrite))
	require.Equal(t, []string{ScopeAlertsWrite, ScopeAdmin}, p.Missing(ScopeAlertsRead, ScopeAlertsWrite, ScopeAdmin))
	require.True(t, Principal{Scopes: []string{ScopeAdmin}}.Has(ScopeAgentsWrite))
	require.True(t, p.AllowsSource("splunk"))
	p.AllowedSources = []string{"elastic"}
	require.False(t, p.AllowsSource("splunk"))
	require.True(t, p.AllowsSource("elastic"))
	p.AllowedSources = []string{}
	require.False(t, p.AllowsSource("elastic"))
	now := time.Now()
	past := now.Add(-time.Second)
	require.True(t, Principal{ExpiresAt: &past}.Expired(now))
	require.False(t, Principal{}.Expired(now))
	require.True(t, ValidScope("workflows:write"))
	require.False(t, ValidScope("root"))
}

func TestPrincipalActor(t *testing.T) {
	agent := Principal{KeyPrefix: "cai_abcd", KeyType: KeyTypeAgent}
	require.Equal(t, store.Actor{Type: store.ActorMCP, KeyPrefix: "cai_abcd", Agent: true}, agent.Actor(store.ActorMCP))
	human := Principal{KeyPrefix: "cai_efgh", KeyType: KeyTypeHuman}
	require.Equal(t, store.Actor{Type: store.ActorAPI, KeyPrefix: "cai_efgh"}, human.Actor(store.ActorAPI))
	require.Nil(t, Principal{}.Actor(store.ActorAPI).KeyPrefixPtr(), "no key, no prefix")
	e := human.Actor(store.ActorAPI).Event("alert_tags_updated", map[string]any{"to": []string{}})
	require.Equal(t, "api", e.ActorType)
	require.Equal(t, "cai_efgh", *e.ActorKeyPrefix)
	require.Equal(t, "alert_tags_updated", e.EventType)
}
