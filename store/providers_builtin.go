package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// BuiltinExtraction is one system field extraction of a builtin provider.
type BuiltinExtraction struct {
	Types       []string
	SourcePath  string
	TargetKey   string
	ValueType   string
	Description string
}

// BuiltinProvider is the definition of a builtin provider and its system extractions.
type BuiltinProvider struct {
	Provider    EnrichmentProvider
	Extractions []BuiltinExtraction
}

func intp(n int) *int { return &n }

func rule(field, op string, value any, verdict string) map[string]any {
	return map[string]any{"field": field, "operator": op, "value": value, "verdict": verdict}
}

func step(name, method, url string, extra map[string]any) map[string]any {
	s := map[string]any{"name": name, "method": method, "url": url}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

var hashTypes = []string{"hash_md5", "hash_sha1", "hash_sha256"}

// BuiltinProviders returns the builtin provider definitions, in seeding order. Their http_config uses
// the providers' public APIs; credentials come from auth_config or the environment variables of
// env_var_mapping. {{indicator.base64url}} is the indicator value in unpadded base64url (VirusTotal's
// URL identifier), supplied by the enrichment activities alongside indicator.value and .type.
func BuiltinProviders() []BuiltinProvider {
	vtTypes := append([]string{"ip", "domain", "url"}, hashTypes...)
	const vt = "https://www.virustotal.com/api/v3"
	return []BuiltinProvider{
		{
			Provider: EnrichmentProvider{
				ProviderName: "virustotal", DisplayName: "VirusTotal",
				Description:             "VirusTotal v3 reputation for IP addresses, domains, URLs and file hashes.",
				SupportedIndicatorTypes: vtTypes, AuthType: AuthAPIKey,
				HTTPConfig: map[string]any{
					"steps": []any{step("lookup", "GET", vt+"/files/{{indicator.value}}", map[string]any{
						"headers":          map[string]any{"x-apikey": "{{auth.api_key}}", "Accept": "application/json"},
						"not_found_status": []any{404},
					})},
					"url_templates_by_type": map[string]any{
						"ip":     vt + "/ip_addresses/{{indicator.value}}",
						"domain": vt + "/domains/{{indicator.value}}",
						"url":    vt + "/urls/{{indicator.base64url}}",
					},
				},
				EnvVarMapping:          map[string]string{"api_key": "VIRUSTOTAL_API_KEY"},
				DefaultCacheTTLSeconds: 3600,
				MaliceRules: map[string]any{
					"rules": []any{
						rule("malicious_count", ">=", 5, "Malicious"),
						rule("malicious_count", ">=", 1, "Suspicious"),
						rule("suspicious_count", ">=", 3, "Suspicious"),
					},
					"default_verdict": "Benign", "not_found_verdict": "Pending",
				},
				RateLimit: &RateLimit{Requests: 4, PerSeconds: 60, DailyQuota: intp(500)},
			},
			Extractions: []BuiltinExtraction{
				{vtTypes, "data.attributes.last_analysis_stats.malicious", "malicious_count", "int", "Engines flagging the indicator as malicious."},
				{vtTypes, "data.attributes.last_analysis_stats.suspicious", "suspicious_count", "int", "Engines flagging the indicator as suspicious."},
				{vtTypes, "data.attributes.last_analysis_stats.harmless", "harmless_count", "int", "Engines finding the indicator harmless."},
				{vtTypes, "data.attributes.reputation", "reputation", "int", "VirusTotal community reputation score."},
				{[]string{"ip"}, "data.attributes.country", "country", "string", "Country of the IP address."},
				{[]string{"ip"}, "data.attributes.as_owner", "as_owner", "string", "Owner of the autonomous system."},
				{[]string{"domain"}, "data.attributes.registrar", "registrar", "string", "Domain registrar."},
				{[]string{"domain"}, "data.attributes.categories", "categories", "dict", "Categories assigned by vendors."},
				{hashTypes, "data.attributes.meaningful_name", "file_name", "string", "Most meaningful file name seen."},
				{hashTypes, "data.attributes.type_description", "file_type", "string", "File type."},
				{[]string{"url"}, "data.attributes.last_final_url", "final_url", "string", "URL after redirects."},
			},
		},
		{
			Provider: EnrichmentProvider{
				ProviderName: "abuseipdb", DisplayName: "AbuseIPDB",
				Description:             "AbuseIPDB abuse confidence score and report history for IP addresses.",
				SupportedIndicatorTypes: []string{"ip"}, AuthType: AuthAPIKey,
				HTTPConfig: map[string]any{"steps": []any{step("check", "GET", "https://api.abuseipdb.com/api/v2/check", map[string]any{
					"headers":      map[string]any{"Key": "{{auth.api_key}}", "Accept": "application/json"},
					"query_params": map[string]any{"ipAddress": "{{indicator.value}}", "maxAgeInDays": "90"},
				})}},
				EnvVarMapping:          map[string]string{"api_key": "ABUSEIPDB_API_KEY"},
				DefaultCacheTTLSeconds: 3600,
				MaliceRules: map[string]any{
					"rules": []any{
						rule("abuse_confidence_score", ">=", 75, "Malicious"),
						rule("abuse_confidence_score", ">=", 25, "Suspicious"),
					},
					"default_verdict": "Benign", "not_found_verdict": "Pending",
				},
				RateLimit: &RateLimit{Requests: 30, PerSeconds: 60, DailyQuota: intp(1000)},
			},
			Extractions: []BuiltinExtraction{
				{[]string{"ip"}, "data.abuseConfidenceScore", "abuse_confidence_score", "int", "Abuse confidence, 0..100."},
				{[]string{"ip"}, "data.totalReports", "total_reports", "int", "Reports in the last 90 days."},
				{[]string{"ip"}, "data.countryCode", "country", "string", "Country code."},
				{[]string{"ip"}, "data.isp", "isp", "string", "Internet service provider."},
				{[]string{"ip"}, "data.usageType", "usage_type", "string", "Usage type (e.g. Data Center/Web Hosting/Transit)."},
				{[]string{"ip"}, "data.isWhitelisted", "is_whitelisted", "bool", "Whether AbuseIPDB whitelists the address."},
				{[]string{"ip"}, "data.isTor", "is_tor", "bool", "Whether the address is a Tor exit node."},
			},
		},
		{
			Provider: EnrichmentProvider{
				ProviderName: "okta", DisplayName: "Okta",
				Description:             "Okta user directory: status, profile and last login of an account (login or email).",
				SupportedIndicatorTypes: []string{"account"}, AuthType: AuthAPIKey,
				HTTPConfig: map[string]any{"steps": []any{step("user", "GET", "https://{{auth.domain}}/api/v1/users/{{indicator.value}}", map[string]any{
					"headers":          map[string]any{"Authorization": "SSWS {{auth.api_token}}", "Accept": "application/json"},
					"not_found_status": []any{404},
				})}},
				EnvVarMapping:          map[string]string{"domain": "OKTA_DOMAIN", "api_token": "OKTA_API_TOKEN"},
				DefaultCacheTTLSeconds: 900,
				MaliceRules: map[string]any{
					"rules": []any{
						rule("status", "in", []any{"LOCKED_OUT", "SUSPENDED"}, "Suspicious"),
						rule("status", "==", "DEPROVISIONED", "Suspicious"),
					},
					"default_verdict": "Benign", "not_found_verdict": "Suspicious",
				},
				RateLimit: &RateLimit{Requests: 10, PerSeconds: 1},
			},
			Extractions: []BuiltinExtraction{
				{[]string{"account"}, "id", "user_id", "string", "Okta user id."},
				{[]string{"account"}, "status", "status", "string", "ACTIVE, LOCKED_OUT, SUSPENDED, DEPROVISIONED, ..."},
				{[]string{"account"}, "profile.login", "login", "string", "Login name."},
				{[]string{"account"}, "profile.email", "email", "string", "Primary email."},
				{[]string{"account"}, "profile.department", "department", "string", "Department."},
				{[]string{"account"}, "profile.title", "title", "string", "Job title."},
				{[]string{"account"}, "lastLogin", "last_login", "string", "Last login time."},
				{[]string{"account"}, "passwordChanged", "password_changed", "string", "Last password change."},
			},
		},
		{
			Provider: EnrichmentProvider{
				ProviderName: "entra", DisplayName: "Microsoft Entra ID",
				Description:             "Microsoft Entra ID (Graph) user lookup with the client-credentials flow: token step, then the user.",
				SupportedIndicatorTypes: []string{"account"}, AuthType: AuthOAuth2ClientCredentials,
				HTTPConfig: map[string]any{"steps": []any{
					step("token", "POST", "https://login.microsoftonline.com/{{auth.tenant_id}}/oauth2/v2.0/token", map[string]any{
						"form_body": map[string]any{
							"client_id": "{{auth.client_id}}", "client_secret": "{{auth.client_secret}}",
							"scope": "https://graph.microsoft.com/.default", "grant_type": "client_credentials",
						},
					}),
					step("user", "GET", "https://graph.microsoft.com/v1.0/users/{{indicator.value}}", map[string]any{
						"headers": map[string]any{"Authorization": "Bearer {{steps.token.response.access_token}}"},
						"query_params": map[string]any{
							"$select": "id,displayName,userPrincipalName,mail,accountEnabled,jobTitle,department,createdDateTime,lastPasswordChangeDateTime",
						},
						"not_found_status": []any{404},
					}),
				}},
				EnvVarMapping:          map[string]string{"tenant_id": "ENTRA_TENANT_ID", "client_id": "ENTRA_CLIENT_ID", "client_secret": "ENTRA_CLIENT_SECRET"},
				DefaultCacheTTLSeconds: 900,
				MaliceRules: map[string]any{
					"rules":           []any{rule("account_enabled", "==", false, "Suspicious")},
					"default_verdict": "Benign", "not_found_verdict": "Suspicious",
				},
				RateLimit: &RateLimit{Requests: 20, PerSeconds: 1},
			},
			Extractions: []BuiltinExtraction{
				{[]string{"account"}, "id", "object_id", "string", "Entra object id."},
				{[]string{"account"}, "displayName", "display_name", "string", "Display name."},
				{[]string{"account"}, "userPrincipalName", "user_principal_name", "string", "User principal name."},
				{[]string{"account"}, "mail", "email", "string", "Mail address."},
				{[]string{"account"}, "accountEnabled", "account_enabled", "bool", "Whether sign-in is enabled."},
				{[]string{"account"}, "jobTitle", "job_title", "string", "Job title."},
				{[]string{"account"}, "department", "department", "string", "Department."},
				{[]string{"account"}, "createdDateTime", "created_at", "string", "Account creation time."},
				{[]string{"account"}, "lastPasswordChangeDateTime", "password_changed", "string", "Last password change."},
			},
		},
		{
			Provider: EnrichmentProvider{
				ProviderName: "urlscan", DisplayName: "urlscan.io",
				Description:             "urlscan.io: latest public scan of a URL or domain (search, then the scan result).",
				SupportedIndicatorTypes: []string{"url", "domain"}, AuthType: AuthAPIKey,
				HTTPConfig: map[string]any{"steps": []any{
					step("search", "GET", "https://urlscan.io/api/v1/search/", map[string]any{
						"headers":      map[string]any{"API-Key": "{{auth.api_key}}", "Accept": "application/json"},
						"query_params": map[string]any{"q": "\"{{indicator.value}}\"", "size": "1"},
					}),
					step("result", "GET", "https://urlscan.io/api/v1/result/{{steps.search.response.results.0._id}}/", map[string]any{
						"headers":          map[string]any{"API-Key": "{{auth.api_key}}", "Accept": "application/json"},
						"not_found_status": []any{404},
						"optional":         true,
					}),
				}},
				EnvVarMapping:          map[string]string{"api_key": "URLSCAN_API_KEY"},
				DefaultCacheTTLSeconds: 1800,
				MaliceRules: map[string]any{
					"rules": []any{
						rule("verdict_malicious", "==", true, "Malicious"),
						rule("verdict_score", ">=", 50, "Suspicious"),
						rule("verdict_malicious", "==", false, "Benign"),
					},
					"default_verdict": "Pending", "not_found_verdict": "Pending",
				},
				RateLimit: &RateLimit{Requests: 2, PerSeconds: 1, DailyQuota: intp(1000)},
			},
			Extractions: []BuiltinExtraction{
				{[]string{"url", "domain"}, "verdicts.overall.malicious", "verdict_malicious", "bool", "urlscan's overall verdict."},
				{[]string{"url", "domain"}, "verdicts.overall.score", "verdict_score", "int", "Overall score (-100..100)."},
				{[]string{"url", "domain"}, "verdicts.overall.categories", "categories", "list", "Threat categories."},
				{[]string{"url", "domain"}, "page.domain", "page_domain", "string", "Domain of the scanned page."},
				{[]string{"url", "domain"}, "page.ip", "page_ip", "string", "IP the page was served from."},
				{[]string{"url", "domain"}, "page.country", "page_country", "string", "Country of that IP."},
				{[]string{"url", "domain"}, "task.time", "scanned_at", "string", "Time of the scan."},
			},
		},
		{
			Provider: EnrichmentProvider{
				ProviderName: "emailrep", DisplayName: "EmailRep",
				Description:             "EmailRep (Sublime Security) reputation of an email address.",
				SupportedIndicatorTypes: []string{"email"}, AuthType: AuthAPIKey,
				HTTPConfig: map[string]any{"steps": []any{step("query", "GET", "https://emailrep.io/{{indicator.value}}", map[string]any{
					"headers": map[string]any{"Key": "{{auth.api_key}}", "User-Agent": "vigil", "Accept": "application/json"},
				})}},
				EnvVarMapping:          map[string]string{"api_key": "EMAILREP_API_KEY"},
				DefaultCacheTTLSeconds: 3600,
				MaliceRules: map[string]any{
					"rules": []any{
						rule("malicious_activity", "==", true, "Malicious"),
						rule("blacklisted", "==", true, "Suspicious"),
						rule("suspicious", "==", true, "Suspicious"),
					},
					"default_verdict": "Benign", "not_found_verdict": "Pending",
				},
				RateLimit: &RateLimit{Requests: 10, PerSeconds: 60, DailyQuota: intp(250)},
			},
			Extractions: []BuiltinExtraction{
				{[]string{"email"}, "reputation", "reputation", "string", "none, low, medium or high."},
				{[]string{"email"}, "suspicious", "suspicious", "bool", "EmailRep's suspicious flag."},
				{[]string{"email"}, "references", "references", "int", "Sources referencing the address."},
				{[]string{"email"}, "details.blacklisted", "blacklisted", "bool", "On a blocklist."},
				{[]string{"email"}, "details.malicious_activity", "malicious_activity", "bool", "Seen in malicious activity."},
				{[]string{"email"}, "details.credentials_leaked", "credentials_leaked", "bool", "Credentials seen in leaks."},
				{[]string{"email"}, "details.disposable", "disposable", "bool", "Disposable address."},
				{[]string{"email"}, "details.spam", "spam", "bool", "Seen sending spam."},
			},
		},
	}
}

// SeedBuiltinProviders inserts or refreshes the builtin providers and their system extractions in one
// transaction. Idempotent: what users may change on a builtin (is_active, auth_config, description,
// malice_rules, TTLs, rate_limit) and the is_active of system extractions are kept; the definition
// (display name, types, http_config, auth_type, env_var_mapping) follows the code. A custom provider
// that already holds a builtin's name is left alone.
func (s *Store) SeedBuiltinProviders(ctx context.Context) error {
	now := s.Now()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// One seeder at a time across replicas starting together.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7361204920)"); err != nil {
			return fmt.Errorf("seed lock: %w", err)
		}
		for _, b := range BuiltinProviders() {
			p := b.Provider
			p.UUID, p.IsBuiltin, p.IsActive, p.CreatedAt, p.UpdatedAt = uuid.New(), true, true, now, now
			fillProviderDefaults(&p)
			_, err := tx.NewInsert().Model(&p).
				On("CONFLICT (provider_name) DO UPDATE").
				Set("display_name = EXCLUDED.display_name").
				Set("supported_indicator_types = EXCLUDED.supported_indicator_types").
				Set("http_config = EXCLUDED.http_config").
				Set("auth_type = EXCLUDED.auth_type").
				Set("env_var_mapping = EXCLUDED.env_var_mapping").
				Where("enrichment_provider.is_builtin").
				Exec(ctx)
			if err != nil {
				return fmt.Errorf("seed provider %s: %w", p.ProviderName, mapErr(err))
			}
			for _, e := range b.Extractions {
				for _, t := range e.Types {
					row := FieldExtraction{UUID: uuid.New(), ProviderName: p.ProviderName, IndicatorType: t, SourcePath: e.SourcePath,
						TargetKey: e.TargetKey, ValueType: e.ValueType, Description: e.Description, IsSystem: true, IsActive: true,
						CreatedAt: now, UpdatedAt: now}
					_, err := tx.NewInsert().Model(&row).
						On("CONFLICT (provider_name, indicator_type, target_key) DO UPDATE").
						Set("source_path = EXCLUDED.source_path").
						Set("value_type = EXCLUDED.value_type").
						Set("description = EXCLUDED.description").
						Set("is_system = true").
						Exec(ctx)
					if err != nil {
						return fmt.Errorf("seed extraction %s/%s/%s: %w", p.ProviderName, t, e.TargetKey, mapErr(err))
					}
				}
			}
		}
		return nil
	})
}
