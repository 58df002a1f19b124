package sources

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
)

// systemMappings reads the system indicator mappings from their one data file (package builtins embeds
// it; importing builtins here would be an import cycle: builtins imports sources).
func systemMappings(t testing.TB) []indicators.Mapping {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "domain", "builtins", "mappings.json"))
	require.NoError(t, err)
	ms, err := indicators.ParseMappings(data)
	require.NoError(t, err)
	// The pass-2 rows: the golden files pin what the plugins normalize, not the pass-3 vendor rows.
	var out []indicators.Mapping
	for _, m := range ms {
		if m.Target == indicators.TargetNormalized {
			out = append(out, m)
		}
	}
	return out
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

// goldenView is what a fixture's golden file records: the plugin output, the three-pass extraction with
// the system mappings, and the fingerprint.
type goldenView struct {
	Title          string                      `json:"title"`
	Severity       Severity                    `json:"severity"`
	SourceSeverity string                      `json:"source_severity"`
	OccurredAt     string                      `json:"occurred_at"`
	Description    string                      `json:"description"`
	Tags           []string                    `json:"tags"`
	RuleRef        *RuleRef                    `json:"rule_ref"`
	Fields         map[string]any              `json:"fields"`
	Pass1          []indicators.Indicator      `json:"pass1_candidates"`
	Extraction     indicators.ExtractionResult `json:"extraction"`
	Fingerprint    string                      `json:"fingerprint"`
}

func loadFixture(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestFixtures_Golden(t *testing.T) {
	reg := NewRegistry()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	var count int
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".golden.json") {
			continue
		}
		count++
		t.Run(name, func(t *testing.T) {
			source := strings.SplitN(name, "_", 2)[0]
			source = strings.TrimSuffix(source, ".json")
			p, ok := reg.Get(source)
			require.True(t, ok, "fixture %s names no plugin", name)
			payload := loadFixture(t, name)
			n := Normalize(p, payload, nil)

			res := indicators.Extract(n.Fields, payload, p.Name(), n.Indicators, systemMappings(t))
			view := goldenView{
				Title: n.Title, Severity: n.Severity, SourceSeverity: n.SourceSeverity,
				Description: n.Description, Tags: n.Tags, RuleRef: n.RuleRef, Fields: n.Fields,
				Pass1: n.Indicators, Extraction: res,
				Fingerprint: AlertFingerprint(n, p.Name(), res.FingerprintIndicators(), payload),
			}
			if !n.OccurredAt.IsZero() {
				view.OccurredAt = n.OccurredAt.Format(time.RFC3339Nano)
			}
			got, err := json.MarshalIndent(view, "", "  ")
			require.NoError(t, err)
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".json")+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./sources -run TestFixtures_Golden -update to create it")
			require.JSONEq(t, string(want), string(got))
		})
	}
	require.GreaterOrEqual(t, count, 7)
}

// The golden files pin everything; these assertions state the intent of each fixture so a careless
// -update cannot silently bless a regression.
func TestFixtures_Intent(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	ts := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return tm.UTC()
	}
	tests := []struct {
		file       string
		title      string
		severity   Severity
		occurredAt time.Time
		rule       *RuleRef
		tags       []string
		want       []indicators.Indicator // must all be in the extraction result
		notWant    []indicators.Indicator
	}{
		{
			file: "sentinel_incident.json", title: "Multiple failed sign-ins followed by a successful sign-in from a rare IP",
			severity: SeverityHigh, occurredAt: ts("2026-03-14T08:02:11.5113522Z"),
			rule: &RuleRef{SourceRuleID: "fab3d2d4-747e-46a1-9b94-2f9ff5d2e2a0"}, tags: []string{"brute-force", "identity"},
			want: []indicators.Indicator{
				{Type: indicators.TypeIP, Value: "203.0.113.45"},
				{Type: indicators.TypeAccount, Value: "j.doe@Contoso.com"},
				{Type: indicators.TypeEmail, Value: "j.doe@contoso.com"},
				{Type: indicators.TypeDomain, Value: "wks-0042.corp.contoso.com"},
				{Type: indicators.TypeURL, Value: "https://login.contoso-auth.example/oauth2/authorize?client_id=1"},
				{Type: indicators.TypeSHA256, Value: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
				{Type: indicators.TypeMD5, Value: "44d88612fea8a8f36de82e1278abb02f"},
				{Type: indicators.TypeDomain, Value: "c2.badcdn.example"},
			},
			notWant: []indicators.Indicator{{Type: indicators.TypeDomain, Value: "kiosk"}},
		},
		{
			file: "sentinel_logicapp.json", title: "Suspicious inbox forwarding rule", severity: SeverityMedium,
			occurredAt: ts("2026-03-15T12:00:05.12Z"), rule: &RuleRef{SourceRuleID: "8b1c7f0e-7d61-4c5a-a8a4-0c2d9f3e4b21"},
			tags: []string{},
			want: []indicators.Indicator{
				{Type: indicators.TypeEmail, Value: "finance@contoso.com"},
				{Type: indicators.TypeAccount, Value: "finance@contoso.com"},
				{Type: indicators.TypeIP, Value: "198.51.100.23"},
				{Type: indicators.TypeEmail, Value: "billing@invoices-contoso.example"},
			},
		},
		{
			file: "elastic_flat.json", title: "Suspicious PowerShell Spawned by Office", severity: SeverityHigh,
			occurredAt: ts("2026-03-14T09:29:58Z"),
			rule:       &RuleRef{SourceRuleID: "0c1f6b4e-8d2a-4f6e-9a3b-7e5d1c2b3a40", Name: "Suspicious PowerShell Spawned by Office"},
			tags:       []string{"Elastic", "Host", "Windows", "Tactic: Execution"},
			want: []indicators.Indicator{
				{Type: indicators.TypeIP, Value: "10.20.30.40"},
				{Type: indicators.TypeIP, Value: "192.0.2.200"},
				{Type: indicators.TypeDomain, Value: "wks-0042.corp.contoso.com"},
				{Type: indicators.TypeAccount, Value: "j.doe"},
				{Type: indicators.TypeMD5, Value: "7353f60b1739074eb17c5f4dddefe239"},
				{Type: indicators.TypeSHA256, Value: "de96a6e69944335375dc1ac238336066889d9ffc7d73628ef4fe1b1b160ab32c"},
				{Type: indicators.TypeURL, Value: "https://cdn.badcdn.example/stage2.ps1"},
				{Type: indicators.TypeDomain, Value: "cdn.badcdn.example"},
			},
			// A link-local address of the host is no indicator (issue 43: never a pass-1 candidate).
			notWant: []indicators.Indicator{{Type: indicators.TypeIP, Value: "fe80::a1b2:c3d4:e5f6:789"}},
		},
		{
			// Real payloads (testdata/SOURCES.md): an OCSF finding, the Falco alert it was made from,
			// and Splunk's documented webhook whose search_name is null (issue 43: once refused 422).
			file: "ocsf_falco.json", title: "Linux Kernel Module Injection Detected", severity: SeverityMedium,
			occurredAt: ts("2023-01-03T15:11:39.558Z"), tags: []string{"syscalls", "process", "Falco"},
			notWant: []indicators.Indicator{{Type: indicators.TypeDomain, Value: "host0.local"}},
		},
		{
			file: "generic_falco.json", title: "Linux Kernel Module Injection Detected", severity: SeverityMedium,
			occurredAt: ts("2023-01-03T15:11:39.558068644Z"), tags: []string{"process"},
		},
		{
			file: "splunk_docs_null_name.json", title: "Untitled splunk alert", severity: SeverityPending,
			tags: []string{},
		},
		{
			file: "elastic_nested.json", title: "Threat Intel IP Address Indicator Match", severity: SeverityCritical,
			occurredAt: ts("2026-03-16T22:10:00Z"),
			rule:       &RuleRef{SourceRuleID: "7a9f3c10-1b2d-4c3e-8f4a-5b6c7d8e9f01", Name: "Threat Intel IP Address Indicator Match"},
			tags:       []string{"Threat Intel", "Elastic"},
			want: []indicators.Indicator{
				{Type: indicators.TypeIP, Value: "10.1.2.3"},
				{Type: indicators.TypeIP, Value: "198.51.100.77"},
				{Type: indicators.TypeDomain, Value: "update.evil.example"},
				{Type: indicators.TypeAccount, Value: "svc-backup"},
				{Type: indicators.TypeEmail, Value: "svc-backup@contoso.com"},
				{Type: indicators.TypeURL, Value: "http://198.51.100.77:8443/gate.php"},
			},
		},
		{
			file: "splunk_webhook.json", title: "Excessive DNS Failures", severity: SeverityCritical,
			occurredAt: time.Unix(1773476400, 250_000_000).UTC(),
			rule:       &RuleRef{SourceRuleID: "Network - Excessive DNS Failures - Rule", Name: "Network - Excessive DNS Failures - Rule"},
			tags:       []string{"dns", "dga"},
			want: []indicators.Indicator{
				{Type: indicators.TypeIP, Value: "10.5.6.7"},
				{Type: indicators.TypeDomain, Value: "dns01.corp.contoso.com"},
				{Type: indicators.TypeAccount, Value: `CONTOSO\m.smith`},
				{Type: indicators.TypeEmail, Value: "m.smith@contoso.com"},
				{Type: indicators.TypeDomain, Value: "qxjvzkplw.example"},
			},
			notWant: []indicators.Indicator{{Type: indicators.TypeMD5, Value: "not-a-hash"}},
		},
		{
			file: "splunk_minimal.json", title: "Windows - Privileged Group Change", severity: SeverityHigh,
			occurredAt: time.Unix(1773480000, 0).UTC(),
			rule:       &RuleRef{SourceRuleID: "Windows - Privileged Group Change", Name: "Windows - Privileged Group Change"},
			tags:       []string{},
			want: []indicators.Indicator{
				{Type: indicators.TypeIP, Value: "172.16.0.9"},
				{Type: indicators.TypeSHA256, Value: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			},
		},
		{
			file: "generic.json", title: "Outbound connection to known C2", severity: SeverityCritical,
			occurredAt: ts("2026-03-17T02:05:06Z"),
			rule:       &RuleRef{SourceRuleID: "FW-C2-001", Name: "Firewall C2 block"},
			tags:       []string{"firewall", "c2"},
			want: []indicators.Indicator{
				{Type: indicators.TypeDomain, Value: "c2.evil.example"},
				{Type: indicators.TypeIP, Value: "45.33.32.156"},
				{Type: indicators.TypeIP, Value: "45.33.32.157"},
				{Type: indicators.TypeIP, Value: "10.9.8.7"},
				{Type: indicators.TypeSHA1, Value: "3395856ce81f2b7382dee72602f798b642f14140"},
				{Type: indicators.TypeAccount, Value: "svc-web"},
				{Type: indicators.TypeURL, Value: "http://c2.evil.example/beacon"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			source := strings.TrimSuffix(strings.SplitN(tc.file, "_", 2)[0], ".json")
			p, ok := reg.Get(source)
			require.True(t, ok)
			payload := loadFixture(t, tc.file)
			n := Normalize(p, payload, nil)
			require.Equal(t, tc.title, n.Title)
			require.Equal(t, tc.severity, n.Severity)
			require.True(t, tc.occurredAt.Equal(n.OccurredAt), "occurred_at %s, want %s", n.OccurredAt, tc.occurredAt)
			require.Equal(t, time.UTC, n.OccurredAt.Location())
			require.Equal(t, tc.rule, n.RuleRef)
			require.Equal(t, tc.tags, n.Tags)
			res := indicators.Extract(n.Fields, payload, p.Name(), n.Indicators, systemMappings(t))
			for _, w := range tc.want {
				require.Contains(t, res.Indicators, w)
			}
			for _, nw := range tc.notWant {
				require.NotContains(t, res.Indicators, nw)
			}
			require.Equal(t, len(indicators.Dedup(res.Indicators)), len(res.Indicators))
		})
	}
}
