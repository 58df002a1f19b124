package enrichment_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func locsOf(errs validate.Errors) []string {
	out := []string{}
	for _, e := range errs {
		b, _ := json.Marshal(e.Loc)
		out = append(out, string(b))
	}
	return out
}

func TestValidateProviderName(t *testing.T) {
	require.Equal(t, []string{`["provider_name"]`}, locsOf(enrichment.ValidateProviderName("indicator")), "reserved")
	require.Empty(t, enrichment.ValidateProviderName("virustotal-2"))
}

func TestValidateProviderParts(t *testing.T) {
	good := json.RawMessage(`{"steps":[{"name":"a","url":"https://x.example.com/{{indicator.value}}"}]}`)
	require.Empty(t, enrichment.ValidateProviderParts(enrichment.ProviderParts{HTTPConfig: good, HTTPConfigRequired: true,
		EnvVarMapping: map[string]string{"api_key": "VT_API_KEY"}, CacheTTLByType: map[string]int{"ip": 60}}))
	require.Equal(t, []string{`["http_config"]`}, locsOf(enrichment.ValidateProviderParts(enrichment.ProviderParts{HTTPConfigRequired: true})),
		"a new provider needs http_config")
	require.Empty(t, enrichment.ValidateProviderParts(enrichment.ProviderParts{}), "a change may leave it out")

	errs := enrichment.ValidateProviderParts(enrichment.ProviderParts{
		MaliceRules:    json.RawMessage(`{"rules":"x"}`),
		EnvVarMapping:  map[string]string{"api_key": "1BAD", "": "OK"},
		CacheTTLByType: map[string]int{"ip": 86401, "nope": 1, "url": -1},
	})
	require.Equal(t, []string{`["malice_rules","rules"]`, `["env_var_mapping",""]`, `["env_var_mapping","api_key"]`,
		`["cache_ttl_by_type","ip"]`, `["cache_ttl_by_type","nope"]`, `["cache_ttl_by_type","url"]`}, locsOf(errs))
	require.Equal(t, "ip,domain,hash_md5,hash_sha1,hash_sha256,url,email,account", errs[4].Ctx["expected"])

	many := map[string]string{}
	for i := range 51 {
		many[fmt.Sprintf("f%02d", i)] = "v"
	}
	many["f00"] = string(make([]byte, 8193))
	require.Equal(t, []string{`["auth_config"]`, `["auth_config","f00"]`},
		locsOf(enrichment.ValidateProviderParts(enrichment.ProviderParts{AuthConfig: many})))
}

func TestBuiltinProviderRules(t *testing.T) {
	builtin := store.EnrichmentProvider{ProviderName: "virustotal", IsBuiltin: true}
	custom := store.EnrichmentProvider{ProviderName: "mine"}
	change := []string{"display_name", "description", "http_config", "auth_config", "env_var_mapping", "rate_limit"}

	err := enrichment.CheckProviderChange(builtin, change)
	var br *enrichment.BuiltinRestrictedError
	require.ErrorAs(t, err, &br)
	require.Equal(t, []string{"display_name", "http_config", "env_var_mapping"}, br.Fields)
	require.NoError(t, enrichment.CheckProviderChange(builtin, []string{"is_active", "auth_config", "description", "malice_rules",
		"default_cache_ttl_seconds", "cache_ttl_by_type", "rate_limit"}))
	require.NoError(t, enrichment.CheckProviderChange(custom, change))

	require.ErrorIs(t, enrichment.CheckProviderDelete(builtin), enrichment.ErrBuiltinNotDeletable)
	require.NoError(t, enrichment.CheckProviderDelete(custom))
}

func TestExtractionRules(t *testing.T) {
	require.Empty(t, enrichment.ValidateSourcePath("data.attributes.stats.*.malicious"))
	require.Equal(t, []string{`["source_path"]`}, locsOf(enrichment.ValidateSourcePath("data..x")))

	system := store.FieldExtraction{ProviderName: "virustotal", IsSystem: true}
	custom := store.FieldExtraction{ProviderName: "mine"}
	require.NoError(t, enrichment.CheckExtractionChange(system, []string{"is_active"}))
	require.ErrorIs(t, enrichment.CheckExtractionChange(system, []string{"is_active", "description"}), enrichment.ErrSystemExtraction)
	require.NoError(t, enrichment.CheckExtractionChange(custom, []string{"source_path", "description"}))
	require.ErrorIs(t, enrichment.CheckExtractionDelete(system), enrichment.ErrSystemExtraction)
	require.NoError(t, enrichment.CheckExtractionDelete(custom))
}
