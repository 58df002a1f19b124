package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

func TestProvider_CredentialsAndConfigured(t *testing.T) {
	env := store.MapEnv(map[string]string{"A": "1", "B": "2", "EMPTY": ""})
	cases := []struct {
		name       string
		p          store.EnrichmentProvider
		creds, cfg bool
	}{
		{"sealed", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey, AuthConfigSealed: []byte{1}}, true, true},
		{"env all set", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey, EnvVarMapping: map[string]string{"x": "A", "y": "B"}}, true, true},
		{"env one missing", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey, EnvVarMapping: map[string]string{"x": "A", "y": "C"}}, false, false},
		{"env empty value", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey, EnvVarMapping: map[string]string{"x": "EMPTY"}}, false, false},
		{"nothing", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey}, false, false},
		{"auth none", store.EnrichmentProvider{IsActive: true, AuthType: store.AuthNone}, false, true},
		{"inactive", store.EnrichmentProvider{IsActive: false, AuthType: store.AuthNone, AuthConfigSealed: []byte{1}}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.creds, tc.p.HasCredentials(env))
			require.Equal(t, tc.cfg, tc.p.IsConfigured(env))
		})
	}
	var nilEnv store.Env
	require.False(t, store.EnrichmentProvider{IsActive: true, AuthType: store.AuthAPIKey, EnvVarMapping: map[string]string{"x": "A"}}.HasCredentials(nilEnv))
}

func TestProvider_CacheTTL(t *testing.T) {
	p := store.EnrichmentProvider{DefaultCacheTTLSeconds: 42, CacheTTLByType: map[string]int{"ip": 10, "url": 0}}
	require.Equal(t, 10*time.Second, p.CacheTTL("ip"))
	require.Equal(t, time.Duration(0), p.CacheTTL("url"), "0 disables caching for the type")
	require.Equal(t, 6*time.Hour, p.CacheTTL("domain"))
	require.Equal(t, 24*time.Hour, p.CacheTTL("hash_sha256"))
	require.Equal(t, 15*time.Minute, p.CacheTTL("account"))
	require.Equal(t, 42*time.Second, p.CacheTTL("unknown"))
}

func TestRateLimit_Interval(t *testing.T) {
	require.Equal(t, 500*time.Millisecond, store.RateLimit{Requests: 2, PerSeconds: 1}.Interval())
	require.Equal(t, 15*time.Second, store.RateLimit{Requests: 4, PerSeconds: 60}.Interval())
	require.Equal(t, time.Duration(0), store.RateLimit{}.Interval())
	require.Equal(t, time.Duration(0), store.RateLimit{Requests: -1, PerSeconds: 5}.Interval())
}
