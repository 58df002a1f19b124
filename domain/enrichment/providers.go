package enrichment

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// The rules of enrichment providers as configured through a front door: what a definition must
// satisfy (ValidateProviderName, ValidateProviderParts), and what a builtin provider lets change
// (CheckProviderChange, CheckProviderDelete). Front doors check with these before writing through
// the store.

// ReservedProviderNames would make workflow ids ambiguous.
var ReservedProviderNames = []string{"indicator"}

// EnvVarNamePattern is what a variable named in env_var_mapping matches.
const EnvVarNamePattern = `^[A-Za-z_][A-Za-z0-9_]{0,127}$`

var envVarNameRE = regexp.MustCompile(EnvVarNamePattern)

// Bounds of a provider's credentials and TTLs.
const (
	MaxCredentialFields   = 50
	MaxCredentialNameLen  = 100
	MaxCredentialValueLen = 8192
	MaxCacheTTLSeconds    = 86400
)

// BuiltinFixedFields are the fields of a builtin provider that cannot change (is_active,
// auth_config, description, malice_rules, TTLs and rate_limit can).
var BuiltinFixedFields = []string{"display_name", "supported_indicator_types", "http_config", "auth_type", "env_var_mapping"}

// ErrBuiltinNotDeletable: a builtin provider cannot be deleted, only deactivated (400
// BUILTIN_RESTRICTED).
var ErrBuiltinNotDeletable = errors.New("builtin providers cannot be deleted")

// BuiltinRestrictedError: a change names Fields a builtin provider does not let change (400
// BUILTIN_RESTRICTED with the fields).
type BuiltinRestrictedError struct{ Fields []string }

func (e *BuiltinRestrictedError) Error() string {
	return "builtin providers do not accept changes to " + strings.Join(e.Fields, ", ")
}

// ValidateProviderName refuses a reserved name (location "provider_name").
func ValidateProviderName(name string) validate.Errors {
	var errs validate.Errors
	if slices.Contains(ReservedProviderNames, name) {
		errs.Add([]any{"provider_name"}, validate.TypeValue, fmt.Sprintf("%q is reserved.", name), name)
	}
	return errs
}

// ProviderParts are the parts of a provider definition checked beyond their JSON shape, as given
// (HTTPConfig and MaliceRules raw; empty when not given).
type ProviderParts struct {
	HTTPConfig         json.RawMessage
	HTTPConfigRequired bool // a new provider must have one; a change may leave it out
	MaliceRules        json.RawMessage
	AuthConfig         map[string]string
	EnvVarMapping      map[string]string
	CacheTTLByType     map[string]int
}

// ValidateProviderParts checks the parts with the engine's parsers (http_config, malice_rules) and
// the bounds of credentials, variable names and TTLs, with locations relative to the definition
// (["http_config", "steps", 0, "url"]).
func ValidateProviderParts(p ProviderParts) validate.Errors {
	var errs validate.Errors
	if len(p.HTTPConfig) > 0 || p.HTTPConfigRequired {
		if _, perrs := httpsteps.ParseConfig([]byte(p.HTTPConfig)); perrs != nil {
			errs.Merge([]any{"http_config"}, perrs)
		}
	}
	if len(p.MaliceRules) > 0 {
		if _, merrs := ParseMaliceRules([]byte(p.MaliceRules)); merrs != nil {
			errs.Merge([]any{"malice_rules"}, merrs)
		}
	}
	if len(p.AuthConfig) > MaxCredentialFields {
		errs.Add([]any{"auth_config"}, validate.TypeTooLong, "auth_config has at most 50 fields.", nil)
	}
	for _, k := range sortedKeys(p.AuthConfig) {
		if k == "" || len(k) > MaxCredentialNameLen || len(p.AuthConfig[k]) > MaxCredentialValueLen {
			errs.Add([]any{"auth_config", k}, validate.TypeValue, "auth_config fields are named (≤ 100 characters) with values of at most 8192 characters.", nil)
		}
	}
	if len(p.EnvVarMapping) > MaxCredentialFields {
		errs.Add([]any{"env_var_mapping"}, validate.TypeTooLong, "env_var_mapping has at most 50 fields.", nil)
	}
	for _, k := range sortedKeys(p.EnvVarMapping) {
		if k == "" || len(k) > MaxCredentialNameLen {
			errs.Add([]any{"env_var_mapping", k}, validate.TypeValue, "auth field names are 1..100 characters.", k)
		}
		if !envVarNameRE.MatchString(p.EnvVarMapping[k]) {
			errs.AddCtx([]any{"env_var_mapping", k}, validate.TypePattern, "Environment variable names match ^[A-Za-z_][A-Za-z0-9_]*$.", p.EnvVarMapping[k],
				map[string]any{"pattern": EnvVarNamePattern})
		}
	}
	types := indicators.TypeNames()
	for _, k := range sortedKeys(p.CacheTTLByType) {
		if !slices.Contains(types, k) {
			errs.AddCtx([]any{"cache_ttl_by_type", k}, validate.TypeEnum, "Unknown indicator type.", k, map[string]any{"expected": strings.Join(types, ",")})
			continue
		}
		if v := p.CacheTTLByType[k]; v < 0 || v > MaxCacheTTLSeconds {
			errs.AddCtx([]any{"cache_ttl_by_type", k}, validate.TypeLessThanEqual, "TTL must be between 0 and 86400 seconds.", v,
				map[string]any{"ge": 0, "le": MaxCacheTTLSeconds})
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CheckProviderChange refuses, for a builtin provider p, a change naming any of BuiltinFixedFields
// (*BuiltinRestrictedError listing them, in the order given).
func CheckProviderChange(p store.EnrichmentProvider, fields []string) error {
	if fixed := validate.Among(fields, BuiltinFixedFields); p.IsBuiltin && len(fixed) > 0 {
		return &BuiltinRestrictedError{Fields: fixed}
	}
	return nil
}

// CheckProviderDelete refuses deleting a builtin provider (ErrBuiltinNotDeletable); the store's
// delete refuses it too.
func CheckProviderDelete(p store.EnrichmentProvider) error {
	if p.IsBuiltin {
		return ErrBuiltinNotDeletable
	}
	return nil
}
