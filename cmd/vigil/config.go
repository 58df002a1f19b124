package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/retention"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

// config is every setting of every subcommand, read once from the environment. README.md's
// configuration table lists the same variables; keep the two together.
type config struct {
	DatabaseURL           string
	DatabaseMaxConns      int
	AutoMigrate           bool
	APIAddr               string
	MCPAddr               string
	MCPPort               int // MCP_PORT (API.md §11): the port of MCPAddr when MCP_ADDR is unset; 0 when unset
	PublicBaseURL         string
	TemporalAddress       string
	TemporalNamespace     string
	TemporalUIURL         string // TEMPORAL_UI_URL: the Temporal Web UI the console links runs to; empty links none
	TaskQueuePrefix       string
	RateLimitPerMinute    int
	RateLimitStore        string
	TrustedProxyCount     int
	MaxBodyMB             int
	MaxConnsPerIP         int
	EncryptionKey         string
	SSRFAllowedHosts      []string
	ProviderEnvAllow      []string  // PROVIDER_ENV_ALLOWLIST: variables env_var_mapping may read beyond the builtins' names
	ProviderEnv           store.Env // environment lookups for providers' env_var_mapping (allowed names only, Vigil's own settings hidden)
	AlertDedupHours       int
	MaxIndicatorsPerAlert int // MAX_INDICATORS_PER_ALERT: links extraction keeps per alert
	CaseGroupingHours     int // CASE_GROUPING_WINDOW_HOURS: a finished alert joins the open case it shares a Malicious/Suspicious indicator with; 0 turns grouping off
	PipelineMaxFlight     int
	PipelineRerunMax      int              // PIPELINE_RERUN_MAX_IN_FLIGHT: re-runs among PipelineMaxFlight
	PipelineBusyFlight    int              // PIPELINE_BUSY_IN_FLIGHT: pipelines while ingest is busy (0: none; ≥ PipelineMaxFlight: no pacing), when PipelineLatencyMS is 0
	PipelineLatencyMS     int              // PIPELINE_INGEST_LATENCY_TARGET_MS: ingest latency the busy cap follows (AIMD; default 25); 0: the fixed PIPELINE_BUSY_IN_FLIGHT
	CircuitFailures       int              // consecutive failed calls that open a provider's circuit
	CircuitCooldownSec    int              // seconds an open circuit refuses calls before a probe
	Retention             retention.Policy // RAW_PAYLOAD_RETENTION_DAYS, ALERT_RETENTION_DAYS, AUDIT_RETENTION_DAYS (0: keep)
	Version               string
	LogLevel              slog.Level
	LogFormat             string
	Approvals             approvals.Config   // APPROVAL_NOTIFIER and its channel settings (PublicBaseURL filled from PUBLIC_BASE_URL)
	SlackSigningSecret    string             // verifies Slack approval callbacks
	MetricsAddr           string             // METRICS_ADDR: /metrics listener; empty serves none
	Temporal              temporal.Config    // TLS files and API key (address, namespace and prefix above)
	PayloadKeys           []payloadcodec.Key // TEMPORAL_PAYLOAD_KEYS: the codec's ring; empty: one key derived from ENCRYPTION_KEY
	PayloadPlaintext      bool               // TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT: the codec passes unencrypted payloads through (upgrade window)
	WorkerTuning          temporal.WorkerTuning
}

// setting describes one environment variable; the table drives parsing and `vigil help`.
type setting struct {
	name, def, doc string
	apply          func(c *config, v string) error
}

func settings() []setting {
	return []setting{
		{"DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "Postgres connection URL.", func(c *config, v string) error { c.DatabaseURL = v; return nil }},
		{"DATABASE_MAX_CONNS", "20", "Connection pool size per process.", intSetting(func(c *config) *int { return &c.DatabaseMaxConns }, 1, 1000)},
		{"VIGIL_AUTO_MIGRATE", "true", "api and worker apply migrations at start.", boolSetting(func(c *config) *bool { return &c.AutoMigrate })},
		{"API_ADDR", ":8000", "Listen address of `vigil api`.", func(c *config, v string) error { c.APIAddr = v; return nil }},
		{"MCP_ADDR", ":8001", "Listen address of `vigil mcp` (MCP over streamable HTTP at /mcp, SSE at /sse).", func(c *config, v string) error { c.MCPAddr = v; return nil }},
		{"MCP_PORT", "", "The contract's name for the MCP listener's port (API.md §11): with MCP_ADDR unset, `vigil mcp` listens on :MCP_PORT (`vigil dev` on 127.0.0.1:MCP_PORT); with both set they must name the same port.", func(c *config, v string) error {
			if v == "" {
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return errors.New("not a port number (1-65535)")
			}
			c.MCPPort = n
			return nil
		}},
		{"PUBLIC_BASE_URL", "http://127.0.0.1:8000", "Base URL people reach the API at (links in approval messages).", func(c *config, v string) error { c.PublicBaseURL = strings.TrimRight(v, "/"); return nil }},
		{"TEMPORAL_ADDRESS", "127.0.0.1:7233", "Temporal frontend host:port.", func(c *config, v string) error { c.TemporalAddress = v; return nil }},
		{"TEMPORAL_NAMESPACE", "default", "Temporal namespace.", func(c *config, v string) error { c.TemporalNamespace = v; return nil }},
		{"TEMPORAL_UI_URL", "", "Base URL of the Temporal Web UI people reach (the console links alerts and runs to their Temporal workflow there); `vigil dev` sets it to its dev server's UI; empty shows no link.", func(c *config, v string) error {
			return setTemporalUIURL(c, v)
		}},
		{"TEMPORAL_TASK_QUEUE_PREFIX", "vigil", "Prefix of the task queues (<prefix>-pipeline, -enrichment, -actions).", func(c *config, v string) error { c.TaskQueuePrefix = v; return nil }},
		{"TEMPORAL_TLS_CERT", "", "PEM client certificate for mTLS to Temporal (with TEMPORAL_TLS_KEY).", func(c *config, v string) error { c.Temporal.TLSCertFile = v; return nil }},
		{"TEMPORAL_TLS_KEY", "", "PEM private key of TEMPORAL_TLS_CERT.", func(c *config, v string) error { c.Temporal.TLSKeyFile = v; return nil }},
		{"TEMPORAL_TLS_CA", "", "PEM CA bundle verifying the Temporal server (the system roots when empty).", func(c *config, v string) error { c.Temporal.TLSCAFile = v; return nil }},
		{"TEMPORAL_TLS_SERVER_NAME", "", "Server name checked in the Temporal server's certificate (default: the host of TEMPORAL_ADDRESS).", func(c *config, v string) error { c.Temporal.TLSServerName = v; return nil }},
		{"TEMPORAL_API_KEY", "", "Temporal Cloud API key (turns TLS on).", func(c *config, v string) error { c.Temporal.APIKey = v; return nil }},
		{"TEMPORAL_PAYLOAD_KEYS", "", "Keys encrypting what Vigil writes to Temporal (AES-256-GCM): comma-separated id:base64key (32 bytes each); the first encrypts, every one decrypts (rotation: put the new key first, keep the old ones while histories need them). Empty: one key derived from ENCRYPTION_KEY (HKDF, its own label).", func(c *config, v string) error {
			if v == "" {
				c.PayloadKeys = nil
				return nil
			}
			keys, err := payloadcodec.ParseKeys(v)
			if err != nil {
				return err
			}
			c.PayloadKeys = keys
			return nil
		}},
		{"TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT", "false", "Accept Temporal payloads that are not encrypted (histories written before payload encryption). Off: a plaintext payload, which any client of the Temporal frontend can write, is refused. Turn on only while such histories are still running.", boolSetting(func(c *config) *bool { return &c.PayloadPlaintext })},
		{"TEMPORAL_WORKER_WORKFLOW_TASK_POLLERS", "2", "Concurrent workflow task polls per task queue worker (at least 2).", intSetting(func(c *config) *int { return &c.WorkerTuning.WorkflowTaskPollers }, 2, 1000)},
		{"TEMPORAL_WORKER_ACTIVITY_TASK_POLLERS", "2", "Concurrent activity task polls per task queue worker.", intSetting(func(c *config) *int { return &c.WorkerTuning.ActivityTaskPollers }, 1, 1000)},
		{"TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS", "1000", "Workflow tasks executing at once per task queue worker.", intSetting(func(c *config) *int { return &c.WorkerTuning.MaxConcurrentWorkflowTasks }, 1, 100_000)},
		{"TEMPORAL_WORKER_MAX_CONCURRENT_ACTIVITIES", "1000", "Activities executing at once per task queue worker.", intSetting(func(c *config) *int { return &c.WorkerTuning.MaxConcurrentActivities }, 1, 100_000)},
		{"TEMPORAL_WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES", "1000", "Local activities executing at once per task queue worker.", intSetting(func(c *config) *int { return &c.WorkerTuning.MaxConcurrentLocalActs }, 1, 100_000)},
		{"METRICS_ADDR", "", "Listen address of GET /metrics (Prometheus), apart from the API; empty serves none.", func(c *config, v string) error { c.MetricsAddr = v; return nil }},
		{"RATE_LIMIT_DEFAULT_PER_MINUTE", "60", "Requests per minute per API key (or client IP when unauthenticated).", intSetting(func(c *config) *int { return &c.RateLimitPerMinute }, 1, 10_000_000)},
		{"RATE_LIMIT_STORE", "memory", "memory (one API replica) or postgres (shared by replicas).", enumSetting(func(c *config) *string { return &c.RateLimitStore }, "memory", "postgres")},
		{"TRUSTED_PROXY_COUNT", "0", "Proxies in front of the API, the console and MCP; >0 reads the client IP from X-Forwarded-For (and the console its X-Forwarded-Proto/-Host).", intSetting(func(c *config) *int { return &c.TrustedProxyCount }, 0, 10)},
		{"MAX_REQUEST_BODY_SIZE_MB", "10", "Largest accepted request body.", intSetting(func(c *config) *int { return &c.MaxBodyMB }, 1, 1024)},
		{"MAX_CONNS_PER_IP", "256", "Concurrent connections one client IP may hold on the API and MCP listeners (0: no cap); behind a proxy every client shares its IP, so raise it or cap at the proxy.", intSetting(func(c *config) *int { return &c.MaxConnsPerIP }, 0, 1_000_000)},
		{"ENCRYPTION_KEY", "", "32-byte key (base64 or hex) sealing secrets at rest with AES-256-GCM. Required by api and worker.", func(c *config, v string) error { c.EncryptionKey = v; return nil }},
		{"SSRF_ALLOWED_HOSTS", "", "Comma-separated hosts exempt from the SSRF guard (development only).", func(c *config, v string) error { c.SSRFAllowedHosts = splitList(v); return nil }},
		{"PROVIDER_ENV_ALLOWLIST", "", "Comma-separated environment variables a provider's env_var_mapping may read besides the builtin providers' documented names (VIRUSTOTAL_API_KEY, …); any other name reads as unset.", func(c *config, v string) error {
			c.ProviderEnvAllow = splitList(v)
			return nil
		}},
		{"ALERT_DEDUP_WINDOW_HOURS", "24", "Window in which a repeated alert is deduplicated; 0 disables.", intSetting(func(c *config) *int { return &c.AlertDedupHours }, 0, 24*365)},
		{"MAX_INDICATORS_PER_ALERT", "500", "Worker: the most indicators extraction links to one alert, the first in pass order (the plugin's, then the mappings', then pass 4's); when more were found the alert gets a normalization note. At most 2000.", intSetting(func(c *config) *int { return &c.MaxIndicatorsPerAlert }, 1, 2000)},
		{"CASE_GROUPING_WINDOW_HOURS", "24", "Worker: a finished alert sharing a Malicious or Suspicious indicator with an alert of an open case (Open or Investigating) seen within this many hours joins that case (the oldest such case); 0 turns grouping off.", intSetting(func(c *config) *int { return &c.CaseGroupingHours }, 0, 24*365)},
		{"PIPELINE_MAX_IN_FLIGHT", "256", "Alert pipelines started and not yet finished, over every worker; past it new alerts wait in the outbox.", intSetting(func(c *config) *int { return &c.PipelineMaxFlight }, 1, 100_000)},
		{"PIPELINE_RERUN_MAX_IN_FLIGHT", "8", "Re-runs (POST /v1/alerts/{uuid}/enrich, the healer's after a provider outage) among the pipelines in flight, over every worker, while alerts arrive (one created in the last 10 s): new alerts' first runs are claimed first and share the machine with at most this many re-runs. With no new alert for 10 s re-runs may take every place.", intSetting(func(c *config) *int { return &c.PipelineRerunMax }, 1, 100_000)},
		{"PIPELINE_INGEST_LATENCY_TARGET_MS", "25", "Above 0 (default 25): while alerts keep arriving, the pipelines in flight follow the ingest's own latency instead of PIPELINE_BUSY_IN_FLIGHT: an ingest statement slower than this halves the cap (at most every 0.5 s, never below 1), and it grows back by 8 a second while none is, up to PIPELINE_MAX_IN_FLIGHT. 0: the fixed PIPELINE_BUSY_IN_FLIGHT (the pause while alerts arrive). Under vigil dev on its own Postgres, unless this or PIPELINE_BUSY_IN_FLIGHT is set, the worker runs with 0 and pacing off (CPU priority protects the 202).", intSetting(func(c *config) *int { return &c.PipelineLatencyMS }, 0, 60_000)},
		{"PIPELINE_BUSY_IN_FLIGHT", "0", "Only with PIPELINE_INGEST_LATENCY_TARGET_MS=0: alert pipelines allowed at once while alerts keep arriving (5 a second or more, the last under 1 s ago); 0 starts none: the 202s keep the machine, the backlog waits in the outbox and drains at PIPELINE_MAX_IN_FLIGHT once ingest pauses (after 30 s without a pause the cap grows 1, 2, 4, … every 10 s). PIPELINE_MAX_IN_FLIGHT or more turns pacing off.", intSetting(func(c *config) *int { return &c.PipelineBusyFlight }, 0, 100_000)},
		{"PROVIDER_CIRCUIT_FAILURES", "5", "Consecutive failed calls (no answer, timeout, 5xx) that open an enrichment provider's circuit: calls stop until a probe succeeds.", intSetting(func(c *config) *int { return &c.CircuitFailures }, 1, 10_000)},
		{"PROVIDER_CIRCUIT_COOLDOWN_SECONDS", "30", "Seconds an open provider circuit refuses calls before one probe call (again after each failed probe).", intSetting(func(c *config) *int { return &c.CircuitCooldownSec }, 1, 86_400)},
		{"RAW_PAYLOAD_RETENTION_DAYS", "0", "Days an alert's raw payload (and the body as received, when sanitized) is kept after ingest; the hourly retention pass clears older ones. 0 keeps them.", intSetting(func(c *config) *int { return &c.Retention.RawPayloadDays }, 0, 36_500)},
		{"ALERT_RETENTION_DAYS", "0", "Days a Closed alert is kept after its close; the hourly retention pass deletes older ones with their indicator links, findings, comments, activity and agent events (indicators no other alert links go too). 0 keeps them.", intSetting(func(c *config) *int { return &c.Retention.AlertDays }, 0, 36_500)},
		{"AUDIT_RETENTION_DAYS", "400", "Days an audit event is kept; the hourly retention pass deletes older ones. 0 keeps them.", intSetting(func(c *config) *int { return &c.Retention.AuditDays }, 0, 36_500)},
		{"VIGIL_VERSION", "dev", "Version reported by /health and the OpenAPI document.", func(c *config, v string) error { c.Version = v; return nil }},
		{"LOG_LEVEL", "info", "debug, info, warn or error.", func(c *config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
		{"LOG_FORMAT", "json", "json or text.", enumSetting(func(c *config) *string { return &c.LogFormat }, "json", "text")},
		{"APPROVAL_NOTIFIER", "none", "Where workflow approval requests are sent: none, slack, teams or webhook.", enumSetting(func(c *config) *string { return &c.Approvals.Type }, approvals.NotifierTypes()...)},
		{"SLACK_BOT_TOKEN", "", "Slack bot token (chat:write) posting approval messages.", func(c *config, v string) error { c.Approvals.SlackBotToken = v; return nil }},
		{"SLACK_APPROVAL_CHANNEL", "", "Default Slack channel id for approvals (a workflow's approval_channel overrides it).", func(c *config, v string) error { c.Approvals.SlackChannel = v; return nil }},
		{"SLACK_SIGNING_SECRET", "", "Slack signing secret verifying POST /v1/approvals/callback/slack (v0, 5-minute window).", func(c *config, v string) error { c.SlackSigningSecret = v; return nil }},
		{"SLACK_API_BASE_URL", "https://slack.com/api", "Slack Web API base URL.", func(c *config, v string) error { c.Approvals.SlackAPIBaseURL = strings.TrimRight(v, "/"); return nil }},
		{"TEAMS_WEBHOOK_URL", "", "Teams incoming-webhook URL for approval cards (links to the decide page).", func(c *config, v string) error { c.Approvals.TeamsWebhookURL = v; return nil }},
		{"APPROVAL_WEBHOOK_URL", "", "Generic webhook receiving signed approval.requested events.", func(c *config, v string) error { c.Approvals.WebhookURL = v; return nil }},
		{"APPROVAL_WEBHOOK_SECRET", "", "HMAC secret of the approval webhook (X-Vigil-Signature: v1=...).", func(c *config, v string) error { c.Approvals.WebhookSecret = v; return nil }},
	}
}

// secretSetting tells the settings whose value an error never repeats (errors are printed at start).
func secretSetting(name string) bool { return name == "TEMPORAL_PAYLOAD_KEYS" }

// loadConfig reads every setting from getenv, reporting all bad values at once.
func loadConfig(getenv func(string) string) (config, error) {
	var c config
	var errs []error
	for _, s := range settings() {
		v := strings.TrimSpace(getenv(s.name))
		if v == "" {
			v = s.def
		}
		if err := s.apply(&c, v); err != nil {
			if secretSetting(s.name) {
				errs = append(errs, fmt.Errorf("%s (value not shown): %w", s.name, err))
				continue
			}
			errs = append(errs, fmt.Errorf("%s=%q: %w", s.name, v, err))
		}
	}
	if err := reconcileMCPPort(&c, strings.TrimSpace(getenv("MCP_ADDR")) != ""); err != nil {
		errs = append(errs, err)
	}
	env, err := providerEnv(getenv, c.ProviderEnvAllow)
	c.ProviderEnv = env
	if (c.Temporal.TLSCertFile == "") != (c.Temporal.TLSKeyFile == "") {
		errs = append(errs, errors.New("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both or neither"))
	}
	return c, errors.Join(append(errs, err)...)
}

func intSetting(field func(*config) *int, lo, hi int) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func boolSetting(field func(*config) *bool) func(*config, string) error {
	return func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("not a boolean")
		}
		*field(c) = b
		return nil
	}
}

func enumSetting(field func(*config) *string, allowed ...string) func(*config, string) error {
	return func(c *config, v string) error {
		for _, a := range allowed {
			if v == a {
				*field(c) = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// setTemporalUIURL accepts an http(s) URL without query or fragment (the console builds links on it).
func setTemporalUIURL(c *config, v string) error {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	if v == "" {
		c.TemporalUIURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("want an http(s) URL such as http://127.0.0.1:8233, got %q", v)
	}
	c.TemporalUIURL = v
	return nil
}

// payloadCodec is the codec of every Temporal client of the process (API.md §16): the
// TEMPORAL_PAYLOAD_KEYS ring, or one key derived from ENCRYPTION_KEY when none is set.
func payloadCodec(c config) (*payloadcodec.Codec, error) {
	keys := c.PayloadKeys
	if len(keys) == 0 {
		if c.EncryptionKey == "" {
			return nil, errors.New("the Temporal payload codec needs TEMPORAL_PAYLOAD_KEYS or ENCRYPTION_KEY (to derive its key from)")
		}
		master, err := secretbox.ParseKey(c.EncryptionKey)
		if err != nil {
			return nil, fmt.Errorf("ENCRYPTION_KEY is malformed: %w", err)
		}
		k, err := payloadcodec.Derive(master)
		if err != nil {
			return nil, err
		}
		keys = []payloadcodec.Key{k}
	}
	codec, err := payloadcodec.New(keys)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_PAYLOAD_KEYS: %w", err)
	}
	if c.PayloadPlaintext {
		codec = codec.AllowPlaintext()
	}
	return codec, nil
}

// urlOrigin is the origin (scheme://host[:port]) of a URL setTemporalUIURL accepted; "" for "".
func urlOrigin(v string) string {
	u, err := url.Parse(v)
	if err != nil || v == "" {
		return ""
	}
	host := strings.ToLower(u.Host)
	if (u.Scheme == "http" && u.Port() == "80") || (u.Scheme == "https" && u.Port() == "443") {
		host = strings.ToLower(u.Hostname()) // the browser's Origin leaves the default port out
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return u.Scheme + "://" + host
}

// reconcileMCPPort applies MCP_PORT: the listen address becomes :MCP_PORT when MCP_ADDR was not set
// (addrSet false); when both are set, MCP_ADDR's port must be MCP_PORT.
func reconcileMCPPort(c *config, addrSet bool) error {
	if c.MCPPort == 0 {
		return nil
	}
	if !addrSet {
		c.MCPAddr = ":" + strconv.Itoa(c.MCPPort)
		return nil
	}
	_, port, err := net.SplitHostPort(c.MCPAddr)
	if err != nil || port != strconv.Itoa(c.MCPPort) {
		return fmt.Errorf("MCP_ADDR=%q and MCP_PORT=%d name different ports: set one of them", c.MCPAddr, c.MCPPort)
	}
	return nil
}
