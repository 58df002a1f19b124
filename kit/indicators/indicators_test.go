package indicators

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxValueLen+1)
	tests := []struct {
		name  string
		typ   Type
		in    string
		want  string
		error string // substring of the error; "" = success
	}{
		{"ipv4", TypeIP, " 10.0.0.1 ", "10.0.0.1", ""},
		{"ipv6 canonical", TypeIP, "2001:DB8:0:0:0:0:0:1", "2001:db8::1", ""},
		{"ipv4-mapped unmapped", TypeIP, "::ffff:192.0.2.7", "192.0.2.7", ""},
		{"ipv4 leading zeros", TypeIP, "010.0.0.1", "", "not an IP"},
		{"ip with zone", TypeIP, "fe80::1%eth0", "", "zone"},
		{"ip with port", TypeIP, "10.0.0.1:80", "", "not an IP"},
		{"ip cidr", TypeIP, "10.0.0.0/8", "", "not an IP"},
		{"domain lower, trailing dot", TypeDomain, "Evil.Example.COM.", "evil.example.com", ""},
		{"domain underscore", TypeDomain, "_dmarc.example.com", "_dmarc.example.com", ""},
		{"domain unicode", TypeDomain, "BÜCHER.example", "bücher.example", ""},
		{"domain single label", TypeDomain, "localhost", "", "two labels"},
		{"domain empty label", TypeDomain, "a..b", "", "empty"},
		{"domain hyphen edge", TypeDomain, "-a.example.com", "", "hyphen"},
		{"domain bad char", TypeDomain, "a b.example.com", "", "contains"},
		{"domain slash", TypeDomain, "example.com/path", "", "contains"},
		{"domain numeric tld", TypeDomain, "1.2.3.4", "", "numeric"},
		{"domain too long", TypeDomain, strings.Repeat("a.", 127) + "com", "", "longer than 253"},
		{"domain label too long", TypeDomain, strings.Repeat("a", 64) + ".com", "", "label 0 is longer"},
		{"email lower", TypeEmail, "Alice.Smith+tag@Example.COM", "alice.smith+tag@example.com", ""},
		{"email no domain", TypeEmail, "alice@", "", "local part and a domain"},
		{"email no at", TypeEmail, "alice", "", "local part and a domain"},
		{"email display name", TypeEmail, "Alice <alice@example.com>", "", "contains"},
		{"email double dot", TypeEmail, "a..b@example.com", "", "misplaced dot"},
		{"email bad domain", TypeEmail, "a@localhost", "", "two labels"},
		{"md5", TypeMD5, "D41D8CD98F00B204E9800998ECF8427E", "d41d8cd98f00b204e9800998ecf8427e", ""},
		{"md5 wrong length", TypeMD5, "d41d8cd98f00b204e9800998ecf8427", "", "32 hex"},
		{"sha1", TypeSHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "da39a3ee5e6b4b0d3255bfef95601890afd80709", ""},
		{"sha1 non-hex", TypeSHA1, "za39a3ee5e6b4b0d3255bfef95601890afd80709", "", "non-hex"},
		{"sha256", TypeSHA256, strings.Repeat("AB", 32), strings.Repeat("ab", 32), ""},
		{"sha256 as md5", TypeMD5, strings.Repeat("ab", 32), "", "32 hex"},
		{"url kept as given", TypeURL, " https://Example.com/A?b=C ", "https://Example.com/A?b=C", ""},
		{"url ftp", TypeURL, "ftp://files.example.com/x", "ftp://files.example.com/x", ""},
		{"url bad scheme", TypeURL, "javascript:alert(1)", "", "scheme"},
		{"url no host", TypeURL, "http:///path", "", "no host"},
		{"url no scheme", TypeURL, "example.com/path", "", "scheme"},
		{"url space", TypeURL, "http://example.com/a b", "", "whitespace"},
		{"account", TypeAccount, "  CONTOSO\\alice ", "CONTOSO\\alice", ""},
		{"account too long", TypeAccount, strings.Repeat("x", MaxAccountLen+1), "", "longer than 512"},
		{"account control char", TypeAccount, "bob\x00", "", "control"},
		{"empty", TypeAccount, "   ", "", "empty"},
		{"too long", TypeURL, long, "", "longer than 2048"},
		{"invalid utf8", TypeAccount, "a\xff", "", "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize(tc.typ, tc.in)
			if tc.error != "" {
				require.Error(t, err)
				require.ErrorIs(t, err, ErrInvalidValue)
				require.Contains(t, err.Error(), tc.error)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := Normalize(tc.typ, got)
			require.NoError(t, err, "normalized value must normalize again")
			require.Equal(t, got, again, "normalization must be idempotent")
		})
	}
}

func TestNormalize_UnknownType(t *testing.T) {
	t.Parallel()
	_, err := Normalize("ipv4", "10.0.0.1")
	require.ErrorIs(t, err, ErrUnknownType)
}

func TestParseType(t *testing.T) {
	t.Parallel()
	for _, typ := range Types() {
		got, err := ParseType(string(typ))
		require.NoError(t, err)
		require.Equal(t, typ, got)
	}
	for _, bad := range []string{"", "IP", "sha256", "hash", " ip"} {
		_, err := ParseType(bad)
		require.ErrorIs(t, err, ErrUnknownType, bad)
	}
}

func TestInfer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Type
		ok   bool
	}{
		{"8.8.8.8", TypeIP, true},
		{"2001:db8::1", TypeIP, true},
		{"alice@example.com", TypeEmail, true},
		{"https://evil.example.com/x", TypeURL, true},
		{"d41d8cd98f00b204e9800998ecf8427e", TypeMD5, true},
		{"DA39A3EE5E6B4B0D3255BFEF95601890AFD80709", TypeSHA1, true},
		{strings.Repeat("0f", 32), TypeSHA256, true},
		{"evil.example.com", TypeDomain, true},
		{"evil.example.com.", TypeDomain, true},
		{"abcdef", "", false},              // hex of no hash length, not a domain
		{"1.2.3.999", "", false},           // not an IP, numeric TLD
		{"alice", "", false},               // could be an account, but accounts are never inferred
		{"javascript:alert(1)", "", false}, // not an allowed URL, not a domain
		{"", "", false},
		{"   ", "", false},
		{strings.Repeat("a", MaxValueLen+1), "", false},
	}
	for _, tc := range tests {
		got, ok := Infer(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		if ok {
			_, err := Normalize(got, tc.in)
			require.NoError(t, err, "an inferred type must normalize: %q", tc.in)
		}
	}
}

func TestDedup(t *testing.T) {
	t.Parallel()
	in := []Indicator{
		{TypeIP, "10.0.0.1"}, {TypeDomain, "a.com"}, {TypeIP, "10.0.0.1"},
		{TypeAccount, "a.com"}, {TypeDomain, "a.com"},
	}
	require.Equal(t, []Indicator{{TypeIP, "10.0.0.1"}, {TypeDomain, "a.com"}, {TypeAccount, "a.com"}}, Dedup(in))
	require.Empty(t, Dedup(nil))
	require.Equal(t, "ip:10.0.0.1", in[0].Key())
}

func TestMalice(t *testing.T) {
	t.Parallel()
	require.Equal(t, MalicePending, Worst())
	require.Equal(t, MalicePending, Worst(MalicePending, "bogus"))
	require.Equal(t, MaliceBenign, Worst(MalicePending, MaliceBenign))
	require.Equal(t, MaliceSuspicious, Worst(MaliceSuspicious, MaliceBenign, MalicePending))
	require.Equal(t, MaliceMalicious, Worst(MaliceBenign, MaliceMalicious, MaliceSuspicious))
	for _, m := range MaliceLevels() {
		got, err := ParseMalice(string(m))
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	_, err := ParseMalice("malicious")
	require.True(t, errors.Is(err, ErrUnknownMalice))
	_, err = ParseMalice("")
	require.ErrorIs(t, err, ErrUnknownMalice)
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "::ffff:1.2.3.4", "Example.COM.", "a@b.co", "http://x.y/z",
		"d41d8cd98f00b204e9800998ecf8427e", "\xff\xfe", "a..b", "@", "http://[::1]:80/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range Types() {
			got, err := Normalize(typ, s)
			if err != nil {
				continue
			}
			require.LessOrEqual(t, len(got), MaxValueLen)
			again, err := Normalize(typ, got)
			require.NoError(t, err, "type %s value %q normalized to %q which does not normalize", typ, s, got)
			require.Equal(t, got, again, "type %s: not idempotent", typ)
		}
		if typ, ok := Infer(s); ok {
			_, err := Normalize(typ, s)
			require.NoError(t, err, "inferred %s for %q but it does not normalize", typ, s)
		}
	})
}

// TestWorstOf moved here from store (TestWorstMalice) when store's copy of the rule was removed.
func TestWorstOf(t *testing.T) {
	require.Equal(t, "Pending", string(WorstOf()))
	require.Equal(t, "Benign", string(WorstOf("Pending", "Benign")))
	require.Equal(t, "Malicious", string(WorstOf("Suspicious", "Malicious", "Benign")))
	require.Equal(t, "Suspicious", string(WorstOf("bogus", "Suspicious")))
}

func TestResultsMalice(t *testing.T) {
	require.Equal(t, MalicePending, ResultsMalice(nil))
	require.Equal(t, MaliceSuspicious, ResultsMalice(map[string]any{
		"a": map[string]any{"success": true, "malice": "Suspicious"},
		"b": map[string]any{"success": false, "malice": "Malicious"}, // failed results do not count
		"c": map[string]any{"malice": "Malicious"},                   // no success flag
		"d": "not an object",
		"e": map[string]any{"success": true, "malice": 7},
		"f": map[string]any{"success": true, "malice": "bogus"},
	}))
}

func TestAlertMalice(t *testing.T) {
	benign := "Benign"
	require.Equal(t, MalicePending, AlertMalice(nil, nil))
	require.Equal(t, MaliceSuspicious, AlertMalice(nil, []string{"Benign", "Suspicious", "bogus"}))
	require.Equal(t, MaliceBenign, AlertMalice(&benign, []string{"Malicious"}), "the override wins")
}
