// Package builtins holds Vigil's built-in definitions as data files embedded in the binary:
//
//   - providers.json: the builtin enrichment providers and their system field extractions;
//   - workflows.json: the system response workflows (Okta, Entra ID; API.md §8);
//   - mappings.json: the system indicator mappings (normalized field → indicator type, pass 2).
//
// Sources are the fourth built-in: a source is a plugin (package sources: parsing, signature, its
// documentation), so its row is derived from the plugin registry rather than from a data file.
//
// Seed makes the database mirror all four; cmd/vigil calls it once per process at start. The store
// owns how each kind is upserted (what users may change on a builtin is kept); this package owns what
// the built-ins are.
package builtins

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/store"
)

//go:embed providers.json workflows.json mappings.json
var files embed.FS

// decodeFile decodes the embedded file name into v strictly: unknown fields and trailing data are
// errors, so a typo in a data file fails its test instead of silently dropping a setting.
func decodeFile(name string, v any) error {
	data, err := files.ReadFile(name)
	if err != nil {
		return fmt.Errorf("read builtin %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode builtin %s: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("decode builtin %s: data after the top-level value", name)
	}
	return nil
}

type providerFile struct {
	ProviderName            string            `json:"provider_name"`
	DisplayName             string            `json:"display_name"`
	Description             string            `json:"description"`
	SupportedIndicatorTypes []string          `json:"supported_indicator_types"`
	AuthType                string            `json:"auth_type"`
	HTTPConfig              map[string]any    `json:"http_config"`
	EnvVarMapping           map[string]string `json:"env_var_mapping"`
	DefaultCacheTTLSeconds  int               `json:"default_cache_ttl_seconds"`
	MaliceRules             map[string]any    `json:"malice_rules"`
	RateLimit               *store.RateLimit  `json:"rate_limit"`
	Extractions             []struct {
		IndicatorTypes []string `json:"indicator_types"`
		SourcePath     string   `json:"source_path"`
		TargetKey      string   `json:"target_key"`
		ValueType      string   `json:"value_type"`
		Description    string   `json:"description"`
	} `json:"extractions"`
}

// ProviderEnvNames lists the environment variables the builtin providers document in their
// env_var_mapping, sorted: the names an env_var_mapping may read without PROVIDER_ENV_ALLOWLIST.
func ProviderEnvNames() ([]string, error) {
	providers, err := Providers()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range providers {
		for _, name := range b.Provider.EnvVarMapping {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Providers returns the builtin provider definitions (providers.json), in seeding order. Their
// http_config uses the providers' public APIs; credentials come from auth_config or the environment
// variables of env_var_mapping. {{indicator.base64url}} is the indicator value in unpadded base64url
// (VirusTotal's URL identifier), supplied by the enrichment activities alongside indicator.value and
// .type.
func Providers() ([]store.BuiltinProvider, error) {
	var rows []providerFile
	if err := decodeFile("providers.json", &rows); err != nil {
		return nil, err
	}
	out := make([]store.BuiltinProvider, 0, len(rows))
	for _, r := range rows {
		b := store.BuiltinProvider{Provider: store.EnrichmentProvider{
			ProviderName: r.ProviderName, DisplayName: r.DisplayName, Description: r.Description,
			SupportedIndicatorTypes: r.SupportedIndicatorTypes, AuthType: r.AuthType, HTTPConfig: r.HTTPConfig,
			EnvVarMapping: r.EnvVarMapping, DefaultCacheTTLSeconds: r.DefaultCacheTTLSeconds,
			MaliceRules: r.MaliceRules, RateLimit: r.RateLimit,
		}}
		for _, e := range r.Extractions {
			b.Extractions = append(b.Extractions, store.BuiltinExtraction{Types: e.IndicatorTypes, SourcePath: e.SourcePath,
				TargetKey: e.TargetKey, ValueType: e.ValueType, Description: e.Description})
		}
		out = append(out, b)
	}
	return out, nil
}

type workflowFile struct {
	Key                         string          `json:"key"`
	Name                        string          `json:"name"`
	Description                 string          `json:"description"`
	WorkflowType                string          `json:"workflow_type"`
	IndicatorTypes              []string        `json:"indicator_types"`
	RequiredSecrets             []string        `json:"required_secrets"`
	RiskLevel                   string          `json:"risk_level"`
	ApprovalMode                string          `json:"approval_mode"`
	ApprovalTimeoutSeconds      int             `json:"approval_timeout_seconds"`
	RequiredApprovals           int             `json:"required_approvals"`
	TimeoutSeconds              int             `json:"timeout_seconds"`
	RetryMaxAttempts            int             `json:"retry_max_attempts"`
	RetryInitialIntervalSeconds int             `json:"retry_initial_interval_seconds"`
	Tags                        []string        `json:"tags"`
	Steps                       json.RawMessage `json:"steps"`
}

// SystemWorkflows returns the system response workflows (workflows.json): Okta and Entra ID response
// actions against an account indicator (the user's login / id / UPN) or an e-mail. They cannot be
// deleted or redefined, and are active only while every secret they name is stored
// (PUT /v1/workflow-secrets/{name}):
//
//	Okta:  OKTA_ORG_URL (https://<org>.okta.com), OKTA_API_TOKEN (an SSWS API token)
//	Entra: ENTRA_TENANT_ID, ENTRA_CLIENT_ID, ENTRA_CLIENT_SECRET (app with User.ReadWrite.All,
//	       UserAuthenticationMethod.ReadWrite.All)
func SystemWorkflows() ([]store.SystemWorkflow, error) {
	var rows []workflowFile
	if err := decodeFile("workflows.json", &rows); err != nil {
		return nil, err
	}
	out := make([]store.SystemWorkflow, 0, len(rows))
	for _, r := range rows {
		desc := r.Description
		out = append(out, store.SystemWorkflow{Key: r.Key, RequiredSecrets: r.RequiredSecrets, Workflow: store.Workflow{
			Name: r.Name, Description: &desc, WorkflowType: r.WorkflowType, IndicatorTypes: r.IndicatorTypes,
			Steps: r.Steps, TimeoutSeconds: r.TimeoutSeconds, RetryMaxAttempts: r.RetryMaxAttempts,
			RetryInitialIntervalSeconds: r.RetryInitialIntervalSeconds, ApprovalMode: r.ApprovalMode,
			ApprovalTimeoutSeconds: r.ApprovalTimeoutSeconds, RequiredApprovals: r.RequiredApprovals,
			RiskLevel: r.RiskLevel, Tags: r.Tags}})
	}
	return out, nil
}

// SystemMappings returns the system indicator mappings (mappings.json): pass-2 rows from normalized
// fields to indicator types, for every source. They are seeded as read-only system mappings.
func SystemMappings() ([]indicators.Mapping, error) {
	data, err := files.ReadFile("mappings.json")
	if err != nil {
		return nil, fmt.Errorf("read builtin mappings.json: %w", err)
	}
	ms, err := indicators.ParseMappings(data)
	if err != nil {
		return nil, fmt.Errorf("builtin mappings.json: %w", err)
	}
	return ms, nil
}

// ProviderSeeder writes the builtin providers (*store.Store).
type ProviderSeeder interface {
	SeedBuiltinProviders(ctx context.Context, defs []store.BuiltinProvider) error
}

// SourceSeeder writes the sources rows and the system indicator mappings (*store.Store).
type SourceSeeder interface {
	SeedSources(ctx context.Context, srcs []store.Source) error
	SeedSystemMappings(ctx context.Context, ms []store.IndicatorMapping) error
	SeedExclusions(ctx context.Context, entries []string) error
}

// WorkflowSeeder writes the system workflows (*store.Store).
type WorkflowSeeder interface {
	SeedSystemWorkflows(ctx context.Context, defs []store.SystemWorkflow) error
}

// Seeder writes the rows that mirror every built-in (*store.Store).
type Seeder interface {
	ProviderSeeder
	SourceSeeder
	WorkflowSeeder
}

// Seed makes the database mirror every built-in: providers, sources and system mappings, system
// workflows. Idempotent and safe for processes starting together.
func Seed(ctx context.Context, st Seeder, reg *sources.Registry) error {
	if err := SeedProviders(ctx, st); err != nil {
		return err
	}
	if err := SeedSources(ctx, st, reg); err != nil {
		return err
	}
	return SeedWorkflows(ctx, st)
}

// SeedProviders inserts or refreshes the builtin providers and their system extractions.
func SeedProviders(ctx context.Context, st ProviderSeeder) error {
	defs, err := Providers()
	if err != nil {
		return err
	}
	if err := st.SeedBuiltinProviders(ctx, defs); err != nil {
		return fmt.Errorf("seed builtin providers: %w", err)
	}
	return nil
}

// SeedSources writes one sources row per plugin of reg (so GET /v1/sources lists them with stable
// uuids), the system indicator mappings (which read the plugins' normalized fields) and, when none
// was ever stored, the default never-indicator list (indicators.DefaultExclusions).
func SeedSources(ctx context.Context, st SourceSeeder, reg *sources.Registry) error {
	plugins := reg.All()
	rows := make([]store.Source, len(plugins))
	for i, p := range plugins {
		rows[i] = store.Source{SourceName: p.Name(), DisplayName: p.DisplayName(), AuthType: p.DefaultAuthType(), Documentation: p.Documentation()}
	}
	if err := st.SeedSources(ctx, rows); err != nil {
		return fmt.Errorf("seed sources: %w", err)
	}
	defaults, err := SystemMappings()
	if err != nil {
		return err
	}
	ms := make([]store.IndicatorMapping, len(defaults))
	for i, m := range defaults {
		desc := m.Description
		ms[i] = store.IndicatorMapping{FieldPath: m.FieldPath, IndicatorType: string(m.Type), ExtractionTarget: string(m.Target), Description: &desc}
		if m.SourceName != "" {
			src := m.SourceName
			ms[i].SourceName = &src
		}
	}
	if err := st.SeedSystemMappings(ctx, ms); err != nil {
		return fmt.Errorf("seed system indicator mappings: %w", err)
	}
	// The never-indicator list starts as the vendors' consoles and documentation, once: an admin's
	// list is never reset.
	if err := st.SeedExclusions(ctx, indicators.DefaultExclusions); err != nil {
		return err
	}
	return nil
}

// SeedWorkflows inserts the system workflows that are missing and re-derives their states.
func SeedWorkflows(ctx context.Context, st WorkflowSeeder) error {
	defs, err := SystemWorkflows()
	if err != nil {
		return err
	}
	if err := st.SeedSystemWorkflows(ctx, defs); err != nil {
		return fmt.Errorf("seed system workflows: %w", err)
	}
	return nil
}

// OktaSecrets are the workflow secrets of the built-in Okta workflows.
var OktaSecrets = []string{"OKTA_API_TOKEN", "OKTA_ORG_URL"}

// SecretBinder binds secrets nobody bound to hosts (*store.Store).
type SecretBinder interface {
	BindUnboundSecrets(ctx context.Context, names, hosts []string) (int, error)
}

// BindOktaSecrets gives the Okta workflow secrets that have no allowed hosts the tenant's own host,
// read from domain (OKTA_DOMAIN: "acme.okta.com" or "https://acme.okta.com/"), never a pattern that
// matches other tenants. An empty domain binds nothing: an admin sets the hosts with PUT
// /v1/workflow-secrets/{name}. Hosts an admin set are kept.
func BindOktaSecrets(ctx context.Context, st SecretBinder, domain string) error {
	if strings.TrimSpace(domain) == "" {
		return nil
	}
	host, err := OktaHost(domain)
	if err != nil {
		return err
	}
	if _, err := st.BindUnboundSecrets(ctx, OktaSecrets, []string{host}); err != nil {
		return fmt.Errorf("bind the Okta secrets to %s: %w", host, err)
	}
	return nil
}

// OktaHost is the tenant host of domain (OKTA_DOMAIN): a host name with an optional port (optionally
// given as an https URL with no path), lower-cased; a wildcard, a path or anything
// netguard.ParseHostPattern refuses is an error.
func OktaHost(domain string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(domain))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "https://"), "/")
	if h == "" || strings.ContainsAny(h, "*/") {
		return "", fmt.Errorf("OKTA_DOMAIN %q: want the tenant's host name, e.g. acme.okta.com", domain)
	}
	if err := netguard.ParseHostPattern(h); err != nil {
		return "", fmt.Errorf("OKTA_DOMAIN %q: %w", domain, err)
	}
	return h, nil
}
