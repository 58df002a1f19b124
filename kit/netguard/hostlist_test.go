package netguard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostList(t *testing.T) {
	l := NewHostList([]string{"api.example.com", "*.okta.com", "10.0.0.5:8443", "[::1]:9000", "Partner.Example.org."})
	for _, c := range []struct {
		host, port string
		want       bool
	}{
		{"api.example.com", "443", true},
		{"API.EXAMPLE.COM", "8080", true},
		{"x.api.example.com", "443", false},
		{"example.com", "443", false},
		{"acme.okta.com", "443", true},
		{"a.b.okta.com", "443", true},
		{"okta.com", "443", false},
		{"evilokta.com", "443", false},
		{"acme.okta.com.evil.net", "443", false},
		{"10.0.0.5", "8443", true},
		{"10.0.0.5", "443", false},
		{"::1", "9000", true},
		{"partner.example.org", "443", true},
	} {
		require.Equal(t, c.want, l.Matches(c.host, c.port), "%s:%s", c.host, c.port)
	}
	require.False(t, NewHostList(nil).Matches("api.example.com", "443"), "an empty list allows nothing")
	for _, bad := range []string{"", " ", "https://api.example.com", "api.example.com/path", "*", "*.com", "a.*.example.com",
		"user@host", "host:0", "host:99999", "host:abc", "*example.com"} {
		require.Error(t, ParseHostPattern(bad), bad)
	}
	for _, good := range []string{"api.example.com", "*.example.com", "127.0.0.1:8080", "[::1]:9000", "localhost"} {
		require.NoError(t, ParseHostPattern(good), good)
	}
	h, p := HostPort("https", "api.example.com")
	require.Equal(t, []string{"api.example.com", "443"}, []string{h, p})
	h, p = HostPort("http", "api.example.com:8080")
	require.Equal(t, []string{"api.example.com", "8080"}, []string{h, p})
}
