package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/fieldpath"
	"github.com/vigil-soc/vigil/httpsteps"
	"github.com/vigil-soc/vigil/store"
)

// Every builtin definition must pass the same validation the API applies to custom providers.
func TestBuiltinProviders_AreValid(t *testing.T) {
	seen := map[string]bool{}
	covered := map[string]bool{}
	for _, b := range store.BuiltinProviders() {
		p := b.Provider
		require.Regexp(t, `^[a-z0-9_]+$`, p.ProviderName)
		require.False(t, seen[p.ProviderName], "duplicate builtin %s", p.ProviderName)
		seen[p.ProviderName] = true
		raw, err := json.Marshal(p.HTTPConfig)
		require.NoError(t, err)
		cfg, errs := httpsteps.ParseConfig(raw)
		require.Nil(t, errs, "%s http_config: %v", p.ProviderName, errs)
		require.NotEmpty(t, cfg.Steps)
		raw, err = json.Marshal(p.MaliceRules)
		require.NoError(t, err)
		_, errs = httpsteps.ParseMaliceRules(raw)
		require.Nil(t, errs, "%s malice_rules: %v", p.ProviderName, errs)
		require.NotEmpty(t, p.EnvVarMapping, "%s needs an env fallback", p.ProviderName)
		require.NotEqual(t, store.AuthNone, p.AuthType)
		require.NotNil(t, p.RateLimit)
		require.Positive(t, p.RateLimit.Interval())
		for _, e := range b.Extractions {
			require.NoError(t, fieldpath.Validate(e.SourcePath), "%s %s", p.ProviderName, e.SourcePath)
			require.NoError(t, httpsteps.ValidateExtraction(httpsteps.Extraction{SourcePath: e.SourcePath, TargetKey: e.TargetKey, ValueType: e.ValueType}))
			for _, typ := range e.Types {
				require.True(t, p.Supports(typ), "%s extraction for unsupported type %s", p.ProviderName, typ)
			}
		}
		for _, typ := range p.SupportedIndicatorTypes {
			covered[typ] = true
		}
	}
	for _, name := range []string{"virustotal", "abuseipdb", "okta", "entra"} {
		require.True(t, seen[name], name)
	}
	for _, typ := range httpsteps.IndicatorTypes() {
		require.True(t, covered[typ], "no builtin covers %s", typ)
	}
}

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

func TestEnrichmentResult_MapRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC)
	r := store.EnrichmentResult{Provider: "p", Status: store.EnrichSuccess, Success: true, Extracted: map[string]any{"n": float64(3)},
		Malice: "Benign", EnrichedAt: &now, RawResponse: map[string]any{"a": "b"}}
	back, err := store.EnrichmentResultFromMap(r.Map())
	require.NoError(t, err)
	require.Equal(t, r.Provider, back.Provider)
	require.Equal(t, r.Extracted, back.Extracted)
	require.True(t, now.Equal(*back.EnrichedAt))
	_, err = store.EnrichmentResultFromMap(map[string]any{"success": "yes"})
	require.Error(t, err)
}
