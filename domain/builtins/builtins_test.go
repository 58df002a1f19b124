package builtins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/fieldpath"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/sources"
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
		_, errs = enrichment.ParseMaliceRules(raw)
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
	paths := map[string]indicators.Type{}
	raw := map[string]bool{}
	known := map[string]bool{"": true}
	for _, p := range sources.NewRegistry().All() {
		known[p.Name()] = true
	}
	for _, m := range ms {
		require.Empty(t, m.Validate(), m.FieldPath)
		require.NotEmpty(t, m.Description)
		require.True(t, known[m.SourceName], "mapping %s names an unknown source %q", m.FieldPath, m.SourceName)
		if m.Target == indicators.TargetRawPayload {
			// pass 3 (ECS, Splunk CIM, Sentinel entities, Graph evidence, OCSF, cloud findings): one row per
			// (source, path, type), as the store's unique key wants.
			k := m.SourceName + "|" + m.FieldPath + "|" + string(m.Type)
			require.False(t, raw[k], "duplicate system mapping %s", k)
			raw[k] = true
			continue
		}
		require.Empty(t, m.SourceName)
		paths[m.FieldPath] = m.Type
	}
	require.Greater(t, len(raw), 100)
	for _, want := range []string{"elastic|process.parent.hash.sha256|hash_sha256", "elastic|threat.enrichments.*.indicator.ip|ip",
		"splunk|result.src_ip|ip", "splunk|result.file_hash|hash_sha1", "sentinel|Entities.*.Address|ip",
		"sentinel|evidence.*.imageFile.sha256|hash_sha256", "|evidences.*.src_endpoint.ip|ip"} {
		require.True(t, raw[want], want)
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

// Every system workflow passes the validation the API applies to custom ones, and is inactive
// until the secrets it names are stored (store.SeedSystemWorkflows derives the state from them).
func TestSystemWorkflows_AreValid(t *testing.T) {
	defs, err := builtins.SystemWorkflows()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, d := range defs {
		require.False(t, seen[d.Key], d.Key)
		seen[d.Key] = true
		require.Empty(t, responses.ValidateSteps(d.Workflow.Steps), d.Key)
		cfg, err := responses.ParseSteps(d.Workflow.Steps)
		require.NoError(t, err, d.Key)
		require.Equal(t, responses.SecretNames(cfg), d.RequiredSecrets, "%s: required_secrets are the secrets its steps name", d.Key)
		require.NotEmpty(t, d.RequiredSecrets, "%s: a system workflow is active only with its credentials", d.Key)
	}
	require.True(t, seen["falcon.contain_when_two_agree"])
	require.True(t, seen["entra.disable_alert_accounts"])
}

// systemSteps returns the parsed steps of system workflow key.
func systemSteps(t *testing.T, key string) httpsteps.Config {
	t.Helper()
	defs, err := builtins.SystemWorkflows()
	require.NoError(t, err)
	for _, d := range defs {
		if d.Key == key {
			cfg, err := responses.ParseSteps(d.Workflow.Steps)
			require.NoError(t, err)
			return cfg
		}
	}
	t.Fatalf("no system workflow %s", key)
	return httpsteps.Config{}
}

// answers serves the worked examples' requests by path prefix, counting them.
type answers struct {
	srv   *httptest.Server
	paths []string
}

func newAnswers(t *testing.T, byPrefix map[string]func(http.ResponseWriter, *http.Request)) *answers {
	a := &answers{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.paths = append(a.paths, r.Method+" "+r.URL.Path)
		for p, f := range byPrefix {
			if strings.HasPrefix(r.URL.Path, p) {
				f(w, r)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// rehost sends every request to srv whatever its URL says (the examples name the vendors' hosts).
type rehost struct{ srv *httptest.Server }

func (r rehost) Do(req *http.Request) (*http.Response, error) {
	req.URL.Scheme, req.URL.Host = "http", strings.TrimPrefix(r.srv.URL, "http://")
	return r.srv.Client().Do(req)
}

func jsonAnswer(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Worked example 1: the host is contained only when both providers agree.
func TestWorkedExample_ContainWhenTwoAgree(t *testing.T) {
	cfg := systemSteps(t, "falcon.contain_when_two_agree")
	for _, tc := range []struct {
		name          string
		vt, abuse     int
		contained     bool
		wantContained int
	}{
		{"both agree", 12, 97, true, 2},
		{"only VirusTotal", 12, 40, false, 0},
		{"only AbuseIPDB", 1, 100, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAnswers(t, map[string]func(http.ResponseWriter, *http.Request){
				"/api/v3/ip_addresses/": jsonAnswer(200, fmt.Sprintf(`{"data":{"attributes":{"last_analysis_stats":{"malicious":%d,"harmless":40}}}}`, tc.vt)),
				"/api/v2/check":         jsonAnswer(200, fmt.Sprintf(`{"data":{"ipAddress":"203.0.113.9","abuseConfidenceScore":%d}}`, tc.abuse)),
				"/oauth2/token":         jsonAnswer(201, `{"access_token":"falcon-token-123","token_type":"bearer"}`),
				"/devices/queries/":     jsonAnswer(200, `{"resources":["aid1","aid2"]}`),
				"/devices/entities/":    jsonAnswer(202, `{"resources":[{"id":"aid1"},{"id":"aid2"}]}`),
			})
			vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "203.0.113.9"},
				"secrets": map[string]any{"VIRUSTOTAL_API_KEY": "vt-k", "ABUSEIPDB_API_KEY": "ab-k", "FALCON_BASE_URL": "https://api.crowdstrike.com",
					"FALCON_CLIENT_ID": "cid", "FALCON_CLIENT_SECRET": "csecret"}}
			res := httpsteps.NewRunner(rehost{a.srv}).Run(context.Background(), cfg, vars, nil)
			require.True(t, res.Success, res.Error)
			require.Equal(t, tc.contained, !res.Steps[5].Skipped)
			require.Equal(t, tc.contained, slices.Contains(a.paths, "POST /devices/entities/devices-actions/v2"))
			// The record masks it whole: the output reads what the VirusTotal and AbuseIPDB keys bought.
			require.Equal(t, httpsteps.MaskedValue, res.Steps[6].Result)
			out := res.Results["output"].(map[string]any)
			require.Equal(t, tc.contained, out["providers_agree"])
			require.EqualValues(t, tc.wantContained, out["hosts_contained"])
			require.EqualValues(t, tc.abuse, out["abuse_score"])
			if !tc.contained {
				return
			}
			// Under each secret's hosts: Falcon's steps run only because two lookups made with the
			// VirusTotal and AbuseIPDB keys agree (their when reads them), so they leave those keys'
			// hosts only in a run a person approved (the workflow's approval_mode is always).
			policy := httpsteps.HostPolicy{}
			for name, host := range map[string]string{"VIRUSTOTAL_API_KEY": "www.virustotal.com", "ABUSEIPDB_API_KEY": "api.abuseipdb.com",
				"FALCON_BASE_URL": "api.crowdstrike.com", "FALCON_CLIENT_ID": "api.crowdstrike.com", "FALCON_CLIENT_SECRET": "api.crowdstrike.com"} {
				policy["secrets."+name] = netguard.NewHostList([]string{host})
			}
			res = httpsteps.NewRunner(rehost{a.srv}, httpsteps.WithHostPolicy(policy), httpsteps.WithApprovedRun(true)).Run(context.Background(), cfg, vars, nil)
			require.True(t, res.Success, res.Error)
			res = httpsteps.NewRunner(rehost{a.srv}, httpsteps.WithHostPolicy(policy)).Run(context.Background(), cfg, vars, nil)
			require.False(t, res.Success)
			require.Contains(t, res.Error, "only a run a person approved may send it to api.crowdstrike.com")
		})
	}
}

// Worked example 2: every account and e-mail of the alert is disabled, in order, never a
// break-glass account.
func TestWorkedExample_DisableEveryAccountOnTheAlert(t *testing.T) {
	cfg := systemSteps(t, "entra.disable_alert_accounts")
	a := newAnswers(t, map[string]func(http.ResponseWriter, *http.Request){
		"/tenant-1/oauth2/v2.0/token": jsonAnswer(200, `{"access_token":"graph-token","token_type":"Bearer"}`),
		"/v1.0/users/":                func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
	})
	alert := map[string]any{"uuid": "a1", "indicators": []any{
		map[string]any{"type": "account", "value": "ann"},
		map[string]any{"type": "account", "value": "breakglass-admin"},
		map[string]any{"type": "email", "value": "bob@example.com"},
		map[string]any{"type": "ip", "value": "203.0.113.9"},
	}}
	vars := map[string]any{"indicator": map[string]any{"type": "account", "value": "ann"}, "alert": alert,
		"secrets": map[string]any{"ENTRA_TENANT_ID": "tenant-1", "ENTRA_CLIENT_ID": "cid", "ENTRA_CLIENT_SECRET": "cs"}}
	res := httpsteps.NewRunner(rehost{a.srv}).Run(context.Background(), cfg, vars, nil)
	require.True(t, res.Success, res.Error)
	require.Equal(t, []string{"POST /tenant-1/oauth2/v2.0/token", "PATCH /v1.0/users/ann", "PATCH /v1.0/users/bob@example.com"}, a.paths)
	require.Len(t, res.Steps[1].Items, 3)
	require.True(t, res.Steps[1].Items[1].Skipped)
	require.Equal(t, httpsteps.MaskedValue, res.Steps[2].Result, "the output reads what the Entra secret bought: masked whole in the record")
	require.Equal(t, map[string]any{"disabled": []any{"ann", "bob@example.com"}, "left_alone": []any{"breakglass-admin"}}, res.Results["output"])
}
