package sources

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/validate"
)

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	var names []string
	for _, p := range r.All() {
		names = append(names, p.Name())
		require.NotEmpty(t, p.DisplayName())
		require.Contains(t, p.Documentation(), p.SignatureHeader())
		require.Contains(t, AuthTypes(), p.DefaultAuthType())
		require.True(t, strings.HasPrefix(p.SignatureHeader(), "X-"))
	}
	require.Equal(t, []string{"elastic", "generic", "ocsf", "sentinel", "splunk"}, names)
	p, ok := r.Get("sentinel")
	require.True(t, ok)
	require.Equal(t, "X-Sentinel-Signature", p.SignatureHeader())
	_, ok = r.Get("Sentinel")
	require.False(t, ok, "names are exact")
	_, ok = r.Get("qradar")
	require.False(t, ok)

	require.Error(t, r.Add(Generic{}), "duplicate name")
	require.NoError(t, r.Add(renamed{Generic{}, "custom"}))
	require.Len(t, r.All(), 6)
	require.Error(t, r.Add(renamed{Generic{}, ""}))
}

type renamed struct {
	Generic
	name string
}

func (r renamed) Name() string { return r.name }

func TestDefaultAuthAndHeaders(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	want := map[string][2]string{
		"sentinel": {AuthHMACSHA256, "X-Sentinel-Signature"},
		"elastic":  {AuthHMACSHA256, "X-Elastic-Signature"},
		"splunk":   {AuthSharedToken, "X-Splunk-Webhook-Secret"},
		"generic":  {AuthNone, "X-Vigil-Signature"},
	}
	for name, w := range want {
		p, ok := r.Get(name)
		require.True(t, ok)
		require.Equal(t, w[0], p.DefaultAuthType(), name)
		require.Equal(t, w[1], p.SignatureHeader(), name)
	}
}

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	body := []byte(`{"title":"x"}`)
	const secret = "s3cr3t"
	sig := hex.EncodeToString(SignHMAC(secret, body))
	// Known-answer check so SignHMAC itself cannot silently drift.
	require.Equal(t, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
		hex.EncodeToString(SignHMAC("key", []byte("The quick brown fox jumps over the lazy dog"))))

	hdr := func(kv ...string) func(string) string {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h.Get
	}
	const H = "X-Sentinel-Signature"
	tests := []struct {
		name     string
		authType string
		secret   string
		headers  func(string) string
		body     []byte
		wantErr  error
	}{
		{"hmac ok", AuthHMACSHA256, secret, hdr(H, sig), body, nil},
		{"hmac ok with prefix", AuthHMACSHA256, secret, hdr(H, "sha256="+sig), body, nil},
		{"hmac ok upper-case hex and prefix", AuthHMACSHA256, secret, hdr(H, "SHA256="+strings.ToUpper(sig)), body, nil},
		{"hmac header name case-insensitive", AuthHMACSHA256, secret, hdr("x-sentinel-signature", sig), body, nil},
		{"hmac missing", AuthHMACSHA256, secret, hdr(), body, ErrInvalidSignature},
		{"hmac wrong", AuthHMACSHA256, secret, hdr(H, hex.EncodeToString(SignHMAC("other", body))), body, ErrInvalidSignature},
		{"hmac body changed", AuthHMACSHA256, secret, hdr(H, sig), []byte(`{"title":"y"}`), ErrInvalidSignature},
		{"hmac not hex", AuthHMACSHA256, secret, hdr(H, "zz"+sig[2:]), body, ErrInvalidSignature},
		{"hmac truncated", AuthHMACSHA256, secret, hdr(H, sig[:32]), body, ErrInvalidSignature},
		{"hmac only prefix", AuthHMACSHA256, secret, hdr(H, "sha256="), body, ErrInvalidSignature},
		{"hmac huge header", AuthHMACSHA256, secret, hdr(H, strings.Repeat("a", 5000)), body, ErrInvalidSignature},
		{"hmac other header", AuthHMACSHA256, secret, hdr("X-Elastic-Signature", sig), body, ErrInvalidSignature},
		{"hmac no secret configured fails closed", AuthHMACSHA256, "", hdr(), body, ErrMisconfigured},
		{"token no secret configured fails closed", AuthSharedToken, "", hdr(H, ""), body, ErrMisconfigured},
		{"none without secret accepts", AuthNone, "", hdr(), body, nil},
		{"token ok", AuthSharedToken, secret, hdr(H, secret), body, nil},
		{"token ok trimmed", AuthSharedToken, secret, hdr(H, " "+secret+" "), body, nil},
		{"token wrong", AuthSharedToken, secret, hdr(H, secret+"x"), body, ErrInvalidSignature},
		{"token is the hmac", AuthSharedToken, secret, hdr(H, sig), body, ErrInvalidSignature},
		{"token missing", AuthSharedToken, secret, hdr(), body, ErrInvalidSignature},
		{"none with a secret fails closed", AuthNone, secret, hdr(), body, ErrMisconfigured},
		{"unknown auth type", "basic", secret, hdr(H, secret), body, ErrUnknownAuthType},
		{"empty auth type", "", secret, hdr(H, secret), body, ErrUnknownAuthType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := VerifySignature(tc.authType, H, tc.secret, tc.headers, tc.body)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			require.NotContains(t, err.Error(), secret, "errors must not leak the secret")
		})
	}
}

func FuzzVerifySignature(f *testing.F) {
	f.Add("sha256=00", []byte("{}"), "k")
	f.Add("", []byte(""), "")
	f.Fuzz(func(t *testing.T, header string, body []byte, secret string) {
		h := func(string) string { return header }
		for _, at := range AuthTypes() {
			err := VerifySignature(at, "X-Vigil-Signature", secret, h, body)
			if err == nil && at != AuthNone && secret != "" {
				// Accepted: the header must really be the HMAC or the token.
				if at == AuthSharedToken {
					require.Equal(t, secret, strings.TrimSpace(header))
				} else {
					got := strings.TrimSpace(header)
					if len(got) > 7 && strings.EqualFold(got[:7], "sha256=") {
						got = got[7:]
					}
					require.True(t, strings.EqualFold(hex.EncodeToString(SignHMAC(secret, body)), got))
				}
			}
		}
	})
}

func TestSeverityOverrides(t *testing.T) {
	t.Parallel()
	payload := decode(t, `{"properties": {"title": "t", "severity": "Medium"}}`)
	n := Normalize(Sentinel{}, payload, nil)
	require.Equal(t, SeverityMedium, n.Severity)

	n = Normalize(Sentinel{}, payload, map[string]string{" medium ": "Critical"})
	require.Equal(t, SeverityCritical, n.Severity, "keys match trimmed and case-insensitively")
	require.Equal(t, "Medium", n.SourceSeverity)

	n = Normalize(Sentinel{}, payload, map[string]string{"Medium": "Severe"})
	require.Equal(t, SeverityMedium, n.Severity, "an invalid override value is ignored")

	// The vendors' words map by default (Splunk urgency P1 is Critical); the integration's mapping
	// still wins.
	splunk := decode(t, `{"search_name": "s", "result": {"urgency": "P1"}}`)
	n = Normalize(Splunk{}, splunk, nil)
	require.Equal(t, SeverityCritical, n.Severity)
	require.False(t, n.SeverityUnmapped)
	n = Normalize(Splunk{}, splunk, map[string]string{"p1": "High"})
	require.Equal(t, SeverityHigh, n.Severity)

	// A value nothing knows stays Pending and is reported as unmapped, until the integration maps it.
	odd := decode(t, `{"search_name": "s", "result": {"urgency": "Purple"}}`)
	n = Normalize(Splunk{}, odd, nil)
	require.Equal(t, SeverityPending, n.Severity)
	require.True(t, n.SeverityUnmapped)
	require.Equal(t, "Purple", n.SourceSeverity)
	n = Normalize(Splunk{}, odd, map[string]string{"purple": "Medium"})
	require.Equal(t, SeverityMedium, n.Severity)
	require.False(t, n.SeverityUnmapped)
	// "Pending" and no severity at all are not unmapped values.
	n = Normalize(Generic{}, decode(t, `{"title":"t","severity":"pending"}`), nil)
	require.False(t, n.SeverityUnmapped)
	n = Normalize(Generic{}, decode(t, `{"title":"t"}`), nil)
	require.False(t, n.SeverityUnmapped)

	// A Sentinel "Critical" (set through an automation rule) is Critical (issue 29).
	crit := decode(t, `{"properties": {"title": "t", "severity": "Critical"}}`)
	n = Normalize(Sentinel{}, crit, nil)
	require.Equal(t, SeverityCritical, n.Severity)

	// An empty object is an alert too: every fallback, each noted.
	n = Normalize(Sentinel{}, map[string]any{}, map[string]string{"x": "High"})
	require.Equal(t, "Untitled sentinel alert", n.Title)
	require.Equal(t, SeverityPending, n.Severity)
	require.False(t, n.SeverityUnmapped)
	require.Equal(t, []string{"severity", "title", "occurred_at"}, noteFields(n))
}

func noteFields(n Normalized) []string {
	out := []string{}
	for _, x := range n.Notes {
		out = append(out, x.Field)
	}
	return out
}

func TestValidateSeverityMapping(t *testing.T) {
	t.Parallel()
	require.Empty(t, ValidateSeverityMapping(nil))
	require.Empty(t, ValidateSeverityMapping(map[string]string{"P1": "Critical", "5": "High"}))
	errs := ValidateSeverityMapping(map[string]string{"P1": "critical", " ": "High", strings.Repeat("k", 101): "Low"})
	require.Len(t, errs, 3)
	require.Equal(t, []any{" "}, errs[0].Loc)
	require.Equal(t, validate.TypeStringTooShort, errs[0].Type)
	require.Equal(t, []any{"P1"}, errs[1].Loc)
	require.Equal(t, validate.TypeEnum, errs[1].Type)
	require.Equal(t, validate.TypeStringTooLong, errs[2].Type)
}

func TestSeverityMappings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plugin  Plugin
		payload string
		want    Severity
	}{
		{"sentinel high", Sentinel{}, `{"properties":{"title":"t","severity":"HIGH"}}`, SeverityHigh},
		{"sentinel informational", Sentinel{}, `{"properties":{"title":"t","severity":"informational"}}`, SeverityInformational},
		{"sentinel low", Sentinel{}, `{"properties":{"title":"t","severity":"Low"}}`, SeverityLow},
		{"sentinel sev2", Sentinel{}, `{"properties":{"title":"t","severity":"Sev2"}}`, SeverityHigh},
		{"sentinel unknown", Sentinel{}, `{"properties":{"title":"t","severity":"Ultraviolet"}}`, SeverityPending},
		{"sentinel number", Sentinel{}, `{"properties":{"title":"t","severity":3}}`, SeverityPending},
		{"sentinel absent", Sentinel{}, `{"properties":{"title":"t"}}`, SeverityPending},
		{"elastic rule severity", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.severity":"critical"}`, SeverityCritical},
		{"elastic alert severity", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.severity":"low"}`, SeverityLow},
		{"elastic rule severity wins", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.severity":"medium","kibana.alert.severity":"high"}`, SeverityMedium},
		{"elastic risk 0", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":0}`, SeverityLow},
		{"elastic risk 21", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":21}`, SeverityLow},
		{"elastic risk 22", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":22}`, SeverityMedium},
		{"elastic risk 47", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.risk_score":47}`, SeverityMedium},
		{"elastic risk 48", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.risk_score":48}`, SeverityHigh},
		{"elastic risk 73", Elastic{}, `{"kibana":{"alert":{"rule":{"name":"r","risk_score":73}}}}`, SeverityHigh},
		{"elastic risk 74", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":74}`, SeverityCritical},
		{"elastic risk 100", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":100}`, SeverityCritical},
		{"elastic risk 101", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":101}`, SeverityPending},
		{"elastic risk negative", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":-1}`, SeverityPending},
		{"elastic risk string", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":"50"}`, SeverityHigh},
		{"elastic unknown word falls back to score", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.severity":"bogus","kibana.alert.rule.risk_score":90}`, SeverityCritical},
		{"elastic vendor word", Elastic{}, `{"kibana.alert.rule.name":"r","kibana.alert.rule.severity":"Moderate","kibana.alert.rule.risk_score":90}`, SeverityMedium},
		{"elastic nothing", Elastic{}, `{"kibana.alert.rule.name":"r"}`, SeverityPending},
		{"splunk urgency", Splunk{}, `{"search_name":"s","result":{"urgency":"High","severity":"low"}}`, SeverityHigh},
		{"splunk severity", Splunk{}, `{"search_name":"s","result":{"severity":"informational"}}`, SeverityInformational},
		{"splunk info", Splunk{}, `{"search_name":"s","result":{"severity":"info"}}`, SeverityInformational},
		{"splunk numeric 1", Splunk{}, `{"search_name":"s","result":{"severity":"1"}}`, SeverityInformational},
		{"splunk numeric 5 number", Splunk{}, `{"search_name":"s","result":{"severity":5}}`, SeverityCritical},
		{"splunk numeric 6 (fatal)", Splunk{}, `{"search_name":"s","result":{"severity":"6"}}`, SeverityCritical},
		{"splunk numeric 7", Splunk{}, `{"search_name":"s","result":{"severity":"7"}}`, SeverityPending},
		{"splunk urgency p2", Splunk{}, `{"search_name":"s","result":{"urgency":"p2"}}`, SeverityHigh},
		{"splunk numeric 3.5", Splunk{}, `{"search_name":"s","result":{"severity":3.5}}`, SeverityPending},
		{"generic name", Generic{}, `{"title":"t","severity":"medium"}`, SeverityMedium},
		{"generic exact", Generic{}, `{"title":"t","severity":"Informational"}`, SeverityInformational},
		{"generic pending", Generic{}, `{"title":"t","severity":"Pending"}`, SeverityPending},
		{"generic sev1", Generic{}, `{"title":"t","severity":"sev1"}`, SeverityCritical},
		{"generic SEV 3", Generic{}, `{"title":"t","severity":"SEV 3"}`, SeverityMedium},
		{"generic crit", Generic{}, `{"title":"t","severity":"CRIT"}`, SeverityCritical},
		{"generic unknown", Generic{}, `{"title":"t","severity":"sev9"}`, SeverityPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.plugin.Normalize(decode(t, tc.payload))
			require.Equal(t, tc.want, n.Severity)
		})
	}
}

// Shapes the plugins once refused (422) are alerts: a wrong type is ignored and noted, a missing
// title falls back, and nothing is lost.
func TestWrongShapesAreNoted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plugin  Plugin
		payload string
		title   string
		notes   []string // note fields, in order
	}{
		{"sentinel empty", Sentinel{}, `{}`, "Untitled sentinel alert", []string{"severity", "title", "occurred_at"}},
		{"sentinel title number", Sentinel{}, `{"properties":{"title":5}}`, "5", []string{"severity", "occurred_at"}},
		{"sentinel title blank", Sentinel{}, `{"properties":{"title":"  ","description":"\n first line \nsecond"}}`, "first line", []string{"severity", "title", "occurred_at"}},
		{"sentinel title null", Sentinel{}, `{"properties":{"title":null}}`, "Untitled sentinel alert", []string{"severity", "title", "occurred_at"}},
		{"sentinel properties string", Sentinel{}, `{"properties":"x"}`, "Untitled sentinel alert", []string{"properties", "severity", "title", "occurred_at"}},
		{"sentinel title object", Sentinel{}, `{"properties":{"title":{"x":1}},"AlertName":"row"}`, "row", []string{"properties.title", "severity", "occurred_at"}},
		{"elastic empty", Elastic{}, `{}`, "Untitled elastic alert", []string{"severity", "title", "occurred_at"}},
		{"elastic name object", Elastic{}, `{"kibana.alert.rule.name":{"x":1},"signal":{"rule":{"name":"seven"}}}`, "seven", []string{"kibana.alert.rule.name", "severity", "occurred_at"}},
		{"splunk empty", Splunk{}, `{}`, "Untitled splunk alert", []string{"severity", "title", "occurred_at"}},
		{"splunk search_name list", Splunk{}, `{"search_name":["a"]}`, "Untitled splunk alert", []string{"search_name", "result.search_name", "severity", "title", "occurred_at"}},
		{"splunk result string", Splunk{}, `{"search_name":"s","result":"x"}`, "s", []string{"result", "severity", "occurred_at"}},
		{"splunk null search_name", Splunk{}, `{"search_name":null,"result":{"signature":"Port scan","urgency":"high","_time":"1700000000"}}`, "Port scan", []string{}},
		{"generic empty", Generic{}, `{}`, "Untitled generic alert", []string{"severity", "title", "occurred_at"}},
		{
			"generic every wrong type", Generic{},
			`{"title":1,"severity":true,"occurred_at":3,"description":[],"tags":"x","rule_id":{},"src_ip":5,"md5":[1,"a"]}`,
			"1", []string{"description", "severity", "rule_id", "src_ip", "md5", "severity"},
		},
		{"generic bad time", Generic{}, `{"title":"t","severity":"low","occurred_at":"yesterday"}`, "t", []string{"occurred_at"}},
		{"generic no offset", Generic{}, `{"title":"t","severity":"low","occurred_at":"2026-01-01T00:00:00"}`, "t", []string{"occurred_at"}},
		{"generic tags element", Generic{}, `{"title":"t","severity":"low","occurred_at":1700000000,"tags":["a",1]}`, "t", []string{"tags"}},
		{
			"generic indicators", Generic{},
			`{"title":"t","severity":"low","occurred_at":1700000000,"indicators":[{"type":"ipv4","value":"1.1.1.1"},{"value":5},{},"x",{"value":"plainword"},{"type":7,"value":"a"}]}`,
			"t", []string{"indicators", "indicators", "indicators", "indicators", "indicators"},
		},
		{"generic indicators object", Generic{}, `{"title":"t","severity":"low","occurred_at":1700000000,"indicators":{"type":"ip"}}`, "t", []string{"indicators"}},
		{"ocsf empty", OCSF{}, `{}`, "Untitled ocsf alert", []string{"severity", "title", "occurred_at"}},
		{"ocsf severity_id text", OCSF{}, `{"finding_info":{"title":"f"},"severity_id":"x","time":1700000000000}`, "f", []string{"severity_id", "severity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := Normalize(tc.plugin, decode(t, tc.payload), nil)
			require.Equal(t, tc.title, n.Title)
			require.Equal(t, tc.notes, noteFields(n), "%+v", n.Notes)
			for _, x := range n.Notes {
				require.NotEmpty(t, x.Note)
			}
		})
	}
}

func TestGeneric_TooManyIndicators(t *testing.T) {
	t.Parallel()
	list := make([]any, maxGenericIndicators+1)
	for i := range list {
		list[i] = map[string]any{"type": "ip", "value": "10.0.0.1"}
	}
	n := Generic{}.Normalize(map[string]any{"title": "t", "indicators": list})
	require.Len(t, n.Indicators, maxGenericIndicators)
	require.Equal(t, []string{"indicators"}, noteFields(n))
}

func TestLimitsAndCleaning(t *testing.T) {
	t.Parallel()
	tags := make([]any, 0, 80)
	for i := 0; i < 80; i++ {
		tags = append(tags, fmt.Sprintf("%02d", i)+strings.Repeat("x", 150))
	}
	payload := map[string]any{
		"title":       "  " + strings.Repeat("é", 600) + "  ",
		"description": strings.Repeat("d", MaxDescriptionLen+10),
		"tags":        append(tags, "", "  "),
	}
	n := Generic{}.Normalize(payload)
	require.Equal(t, strings.Repeat("é", MaxTitleLen), n.Title)
	require.Len(t, []rune(n.Description), MaxDescriptionLen)
	require.Len(t, n.Tags, MaxTags)
	for _, tag := range n.Tags {
		require.LessOrEqual(t, len([]rune(tag)), MaxTagLen)
		require.NotEmpty(t, tag)
	}

	n = Generic{}.Normalize(map[string]any{"title": "line1\nline2\x00\tend\xff"})
	require.Equal(t, "line1 line2  end\uFFFD", n.Title)
	require.NotNil(t, n.Tags)
	require.NotNil(t, n.Fields)
	require.NotNil(t, n.Indicators)
	require.True(t, n.OccurredAt.IsZero())
	require.Nil(t, n.RuleRef)
}

func TestTimestamps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plugin  Plugin
		payload string
		want    time.Time
	}{
		{"sentinel created fallback", Sentinel{}, `{"properties":{"title":"t","firstActivityTimeUtc":"bogus","createdTimeUtc":"2026-01-02T03:04:05+01:00"}}`, time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)},
		{"sentinel no offset read as UTC", Sentinel{}, `{"properties":{"title":"t","createdTimeUtc":"2026-01-02T03:04:05"}}`, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"sentinel epoch", Sentinel{}, `{"properties":{"title":"t","createdTimeUtc":1700000000}}`, time.Unix(1700000000, 0).UTC()},
		{"ocsf epoch ms", OCSF{}, `{"time":1700000000123}`, time.Unix(1700000000, 123e6).UTC()},
		{"generic epoch µs", Generic{}, `{"time":1700000000123456}`, time.Unix(1700000000, 123456e3).UTC()},
		{"generic epoch ns text", Generic{}, `{"time":"1700000000123456000"}`, time.Unix(1700000000, 123456e3).UTC()},
		{"generic space and offset", Generic{}, `{"created":"2026-01-02 03:04:05+02:00"}`, time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC)},
		{"generic after 9999", Generic{}, `{"time":"1e30"}`, time.Time{}},
		{"elastic @timestamp", Elastic{}, `{"kibana.alert.rule.name":"r","@timestamp":"2026-01-02T03:04:05.123Z"}`, time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC)},
		{"splunk epoch string", Splunk{}, `{"search_name":"s","result":{"_time":"1700000000"}}`, time.Unix(1700000000, 0).UTC()},
		{"splunk epoch fraction", Splunk{}, `{"search_name":"s","result":{"_time":1700000000.5}}`, time.Unix(1700000000, 5e8).UTC()},
		{"splunk rfc3339", Splunk{}, `{"search_name":"s","result":{"_time":"2026-01-02T03:04:05Z"}}`, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"splunk negative", Splunk{}, `{"search_name":"s","result":{"_time":-5}}`, time.Time{}},
		{"splunk huge", Splunk{}, `{"search_name":"s","result":{"_time":1e300}}`, time.Time{}},
		{"splunk NaN text", Splunk{}, `{"search_name":"s","result":{"_time":"NaN"}}`, time.Time{}},
		{"splunk bool", Splunk{}, `{"search_name":"s","result":{"_time":true}}`, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.plugin.Normalize(decode(t, tc.payload))
			require.True(t, tc.want.Equal(n.OccurredAt), "got %s want %s", n.OccurredAt, tc.want)
		})
	}
}

func TestSentinel_EntitiesAsJSONString(t *testing.T) {
	t.Parallel()
	entities := `[{"Type":"ip","Address":"192.0.2.1"},{"Type":"account","Name":"bob"},{"Type":"filehash","Algorithm":"SHA1","Value":"da39a3ee5e6b4b0d3255bfef95601890afd80709"},5,"x",{"Type":7}]`
	payload := map[string]any{"properties": map[string]any{"title": "t"}, "Entities": entities}
	n := Sentinel{}.Normalize(payload)
	require.Equal(t, []indicators.Indicator{
		{Type: indicators.TypeIP, Value: "192.0.2.1"},
		{Type: indicators.TypeAccount, Value: "bob"},
		{Type: indicators.TypeSHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
	}, n.Indicators)
	require.Equal(t, "bob", n.Fields[indicators.FieldActorUsername])
	require.NotContains(t, n.Fields, indicators.FieldActorEmail, "bob is not an e-mail address")

	// Not JSON, or JSON of the wrong shape: ignored.
	for _, bad := range []any{"[not json", `{"Type":"ip"}`, 42.0, true} {
		n = Sentinel{}.Normalize(map[string]any{"properties": map[string]any{"title": "t"}, "Entities": bad})
		require.Empty(t, n.Indicators)
	}
}

func TestSentinel_ManyEntitiesBounded(t *testing.T) {
	t.Parallel()
	ents := make([]any, 5000)
	for i := range ents {
		ents[i] = map[string]any{"Type": "ip", "Address": "10.0.0.1"}
	}
	n := Sentinel{}.Normalize(map[string]any{"properties": map[string]any{"title": "t"}, "Entities": ents})
	require.Len(t, n.Indicators, maxEntities)
	require.Equal(t, "10.0.0.1", n.Fields[indicators.FieldSrcIP])
}

func TestElastic_FlatAndNestedAgree(t *testing.T) {
	t.Parallel()
	flat := decode(t, `{"kibana.alert.rule.name":"R","kibana.alert.rule.uuid":"u1","kibana.alert.rule.tags":["a"],
		"source.ip":"10.0.0.1","file.hash.sha1":"da39a3ee5e6b4b0d3255bfef95601890afd80709","@timestamp":"2026-01-01T00:00:00Z",
		"threat.indicator.ip":"192.0.2.9"}`)
	nested := decode(t, `{"kibana":{"alert":{"rule":{"name":"R","uuid":"u1","tags":["a"]}}},
		"source":{"ip":"10.0.0.1"},"file":{"hash":{"sha1":"da39a3ee5e6b4b0d3255bfef95601890afd80709"}},"@timestamp":"2026-01-01T00:00:00Z",
		"threat":{"indicator":[{"ip":"192.0.2.9"}]}}`)
	a := Elastic{}.Normalize(flat)
	b := Elastic{}.Normalize(nested)
	require.Equal(t, a, b)
	require.Contains(t, a.Indicators, indicators.Indicator{Type: indicators.TypeIP, Value: "192.0.2.9"})
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	inds := []indicators.Indicator{{Type: indicators.TypeIP, Value: "10.0.0.1"}, {Type: indicators.TypeDomain, Value: "a.example"}}
	fp := Fingerprint("t", "generic", inds)
	require.Len(t, fp, 64)
	_, err := hex.DecodeString(fp)
	require.NoError(t, err)

	reordered := []indicators.Indicator{inds[1], inds[0], inds[1]}
	require.Equal(t, fp, Fingerprint("t", "generic", reordered), "order and repeats do not matter")
	require.NotEqual(t, fp, Fingerprint("t2", "generic", inds))
	require.NotEqual(t, fp, Fingerprint("t", "splunk", inds))
	require.NotEqual(t, fp, Fingerprint("t", "generic", inds[:1]))
	require.NotEqual(t, fp, Fingerprint("t", "generic", []indicators.Indicator{{Type: indicators.TypeAccount, Value: "10.0.0.1"}, inds[1]}))
	// Component boundaries cannot be shifted.
	require.NotEqual(t, Fingerprint("ab", "c", nil), Fingerprint("a", "bc", nil))
	require.Equal(t, Fingerprint("t", "generic", nil), Fingerprint("t", "generic", []indicators.Indicator{}))
}

func fuzzPlugin(f *testing.F, p Plugin, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"title":null,"properties":null,"result":null,"kibana.alert.rule.name":null}`))
	mappings := systemMappings(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var payload map[string]any
		if json.Unmarshal(data, &payload) != nil {
			return
		}
		n := Normalize(p, payload, map[string]string{"high": "Critical"})
		require.NotEmpty(t, n.Title)
		require.NotNil(t, n.Notes)
		require.LessOrEqual(t, len(n.Notes), maxNotes)
		require.LessOrEqual(t, len([]rune(n.Title)), MaxTitleLen)
		require.LessOrEqual(t, len(n.Tags), MaxTags)
		require.True(t, n.Severity.Valid())
		require.NotNil(t, n.Fields)
		for k, v := range n.Fields {
			switch v.(type) {
			case string, []string:
			default:
				t.Fatalf("field %s has type %T", k, v)
			}
		}
		res := indicators.Extract(n.Fields, payload, p.Name(), n.Indicators, mappings)
		_ = Fingerprint(n.Title, p.Name(), res.FingerprintIndicators())
	})
}

func FuzzSentinelNormalize(f *testing.F) {
	fuzzPlugin(f, Sentinel{},
		`{"properties":{"title":"t","severity":"High","labels":[{"labelName":"x"}]},"Entities":[{"Type":"ip","Address":"1.2.3.4"},{"Type":"account","Name":"a","UPNSuffix":"b.c"}]}`,
		`{"object":{"properties":{"title":"t","relatedEntities":[{"kind":"Host","properties":{"hostName":"h","dnsDomain":"d.e"}}]}}}`,
		`{"properties":{"title":"t"},"Entities":"[{\"Type\":\"url\",\"Url\":\"http://x.y\"}]"}`)
}

func FuzzElasticNormalize(f *testing.F) {
	fuzzPlugin(f, Elastic{},
		`{"kibana.alert.rule.name":"r","kibana.alert.rule.risk_score":50,"source.ip":["1.2.3.4"],"threat.indicator":[{"ip":"5.6.7.8"}]}`,
		`{"kibana":{"alert":{"rule":{"name":"r","severity":"high","tags":["a"]}}},"threat":{"enrichments":[{"indicator":{"url":{"full":"http://a.b"}}}]}}`)
}

func FuzzSplunkNormalize(f *testing.F) {
	fuzzPlugin(f, Splunk{},
		`{"search_name":"s","result":{"_time":"1700000000.1","urgency":"high","src":"1.2.3.4","dest":"h.example","user":["a","b@c.de"]}}`,
		`{"search_name":"s","result":{"severity":3,"md5":["x"]}}`)
}

func FuzzOCSFNormalize(f *testing.F) {
	fuzzPlugin(f, OCSF{},
		`{"finding_info":{"title":"t","analytic":{"uid":"a"}},"severity_id":4,"time":1700000000000,"observables":[{"type_id":2,"value":"1.2.3.4"},{"type_id":8,"value":"x"}],"evidences":[{"src_endpoint":{"ip":"5.6.7.8"}}]}`)
}

func FuzzGenericNormalize(f *testing.F) {
	fuzzPlugin(f, Generic{},
		`{"title":"t","severity":"high","occurred_at":"2026-01-01T00:00:00Z","tags":["a"],"indicators":[{"value":"1.2.3.4"},{"type":"url","value":"http://x.y"}],"src_ip":["1.1.1.1"]}`,
		`{"title":"t","rule_id":"r","rule_name":"n","sha256":"x"}`)
}
