package builtins_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// Every builtin definition must pass the same validation the API applies to custom providers.
func TestBuiltinProviders_AreValid(t *testing.T) {
	seen := map[string]bool{}
	covered := map[string]bool{}
	defs, err := builtins.Providers()
	require.NoError(t, err)
	for _, b := range defs {
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

func TestDefaultMappings(t *testing.T) {
	t.Parallel()
	ms, err := builtins.SystemMappings()
	require.NoError(t, err)
	require.Len(t, ms, 14)
	paths := map[string]indicators.Type{}
	for _, m := range ms {
		require.Empty(t, m.Validate(), m.FieldPath)
		require.Equal(t, indicators.TargetNormalized, m.Target)
		require.Empty(t, m.SourceName)
		require.NotEmpty(t, m.Description)
		paths[m.FieldPath] = m.Type
	}
	require.Equal(t, map[string]indicators.Type{
		"src_ip": indicators.TypeIP, "dst_ip": indicators.TypeIP, "src_hostname": indicators.TypeDomain, "dst_hostname": indicators.TypeDomain,
		"file_hash_md5": indicators.TypeMD5, "file_hash_sha1": indicators.TypeSHA1, "file_hash_sha256": indicators.TypeSHA256,
		"actor_email": indicators.TypeEmail, "actor_username": indicators.TypeAccount, "dns_query": indicators.TypeDomain,
		"http_url": indicators.TypeURL, "http_hostname": indicators.TypeDomain, "email_from": indicators.TypeEmail, "email_reply_to": indicators.TypeEmail,
	}, paths)
}

// TestOktaHost: OKTA_DOMAIN gives one tenant's host, never a pattern matching other tenants.
func TestOktaHost(t *testing.T) {
	for in, want := range map[string]string{"acme.okta.com": "acme.okta.com", " https://ACME.okta.com/ ": "acme.okta.com", "acme.oktapreview.com": "acme.oktapreview.com", "acme.okta.com:8443": "acme.okta.com:8443"} {
		got, err := builtins.OktaHost(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"*.okta.com", "https://acme.okta.com/path", "http://x/y", "*", "a b"} {
		_, err := builtins.OktaHost(bad)
		require.Error(t, err, bad)
	}
}
