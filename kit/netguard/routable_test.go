package netguard_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/netguard"
)

func TestNonRoutable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ, value string
		skip       bool
	}{
		{"ip", "8.8.8.8", false},
		{"ip", "2606:4700:4700::1111", false},
		{"ip", "10.0.0.1", true},
		{"ip", "192.168.0.10", true},
		{"ip", "127.0.0.1", true},
		{"ip", "169.254.10.10", true},
		{"ip", "100.64.0.1", true},
		{"ip", "224.0.0.251", true},
		{"ip", "240.1.1.1", true},
		{"ip", "0.0.0.0", true},
		{"ip", "::1", true},
		{"ip", "fe80::1", true},
		{"ip", "fd00::1", true},
		{"ip", "::ffff:192.168.1.1", true},
		{"ip", " 10.0.0.1 ", true},
		{"IP", "10.0.0.1", true},
		{"ip", "not-an-ip", false},
		{"ip", "", false},
		{"domain", "evil.com", false},
		{"domain", "localhost", true},
		{"domain", "LOCALHOST.", true},
		{"domain", "printer.local", true},
		{"domain", "db.internal", true},
		{"domain", "nas.lan", true},
		{"domain", "dc01.corp", true},
		{"domain", "router.home.arpa", true},
		{"domain", "foo.test", true},
		{"domain", "foo.example", true},
		{"domain", "foo.invalid", true},
		{"domain", "app.localhost", true},
		{"domain", "example.com", false},
		{"domain", "corp.com", false},
		{"domain", "mylocal", false},
		{"domain", "notinternal", false},
		{"domain", "10.0.0.1", true},
		{"url", "https://evil.com/path", false},
		{"url", "http://localhost:8080/x", true},
		{"url", "http://intranet.corp/login", true},
		{"url", "http://192.168.1.1/admin", true},
		{"url", "http://[::1]/", true},
		{"url", "evil.com/path?q=1", false},
		{"url", "sharepoint.internal/x", true},
		{"url", "http://%zz", false},
		{"email", "bob@evil.com", false},
		{"email", "alice@corp.local", true},
		{"email", "root@localhost", true},
		{"email", "weird@[127.0.0.1]", true},
		{"email", "no-at-sign", false},
		{"hash_sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", false},
		{"account", "admin@corp.local", false},
	}
	for _, tc := range cases {
		t.Run(tc.typ+"/"+tc.value, func(t *testing.T) {
			reason, skip := netguard.NonRoutable(tc.typ, tc.value)
			require.Equal(t, tc.skip, skip, "reason %q", reason)
			if skip {
				require.NotEmpty(t, reason)
			} else {
				require.Empty(t, reason)
			}
		})
	}
}
