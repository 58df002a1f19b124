package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/netguard/netguardtest"
)

func TestClassifyIP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ip     string
		reason string // "" = public
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.32.0.1", ""},
		{"127.0.0.1", netguard.ReasonLoopback},
		{"127.255.255.254", netguard.ReasonLoopback},
		{"10.1.2.3", netguard.ReasonPrivate},
		{"172.16.0.1", netguard.ReasonPrivate},
		{"172.31.255.255", netguard.ReasonPrivate},
		{"192.168.1.1", netguard.ReasonPrivate},
		{"100.64.0.1", netguard.ReasonCGNAT},
		{"100.127.255.255", netguard.ReasonCGNAT},
		{"169.254.1.1", netguard.ReasonLinkLocal},
		{"169.254.169.254", netguard.ReasonMetadata},
		{"0.0.0.0", netguard.ReasonUnspecified},
		{"0.1.2.3", netguard.ReasonReserved},
		{"224.0.0.1", netguard.ReasonMulticast},
		{"239.255.255.250", netguard.ReasonMulticast},
		{"240.0.0.1", netguard.ReasonReserved},
		{"255.255.255.255", netguard.ReasonBroadcast},
		{"192.0.2.10", netguard.ReasonReserved},
		{"198.18.0.1", netguard.ReasonReserved},
		{"::", netguard.ReasonUnspecified},
		{"::1", netguard.ReasonLoopback},
		{"fe80::1", netguard.ReasonLinkLocal},
		{"fe80::1%eth0", netguard.ReasonLinkLocal},
		{"fc00::1", netguard.ReasonPrivate},
		{"fd12:3456::1", netguard.ReasonPrivate},
		{"fd00:ec2::254", netguard.ReasonMetadata},
		{"ff02::1", netguard.ReasonMulticast},
		{"2001:db8::1", netguard.ReasonReserved},
		{"::ffff:127.0.0.1", netguard.ReasonLoopback},
		{"::ffff:7f00:1", netguard.ReasonLoopback},
		{"::ffff:10.0.0.1", netguard.ReasonPrivate},
		{"::ffff:169.254.169.254", netguard.ReasonMetadata},
		{"::ffff:8.8.8.8", ""},
		{"::127.0.0.1", netguard.ReasonReserved},
		{"64:ff9b::a00:1", netguard.ReasonPrivate + " (embedded IPv4)"},
		{"64:ff9b::808:808", ""},
		{"2002:7f00:1::1", netguard.ReasonLoopback + " (embedded IPv4)"},
		{"2002:808:808::1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.ip, func(t *testing.T) {
			require.Equal(t, tc.reason, netguard.ClassifyIP(netip.MustParseAddr(tc.ip)))
		})
	}
	require.NotEmpty(t, netguard.ClassifyIP(netip.Addr{}))
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	g := netguard.NewGuard([]string{"127.0.0.1:9000", "internal.corp", " ", ""})
	cases := []struct {
		url     string
		blocked string // substring of the reason; "" = allowed
	}{
		{"https://www.virustotal.com/api/v3/ip_addresses/8.8.8.8", ""},
		{"http://8.8.8.8:8080/x", ""},
		{"https://user:pass@example.com/", ""},
		{"http://127.0.0.1:9000/ok", ""},
		{"http://internal.corp/x", ""},
		{"http://INTERNAL.CORP./x", ""},
		{"ftp://example.com/", "scheme"},
		{"file:///etc/passwd", "scheme"},
		{"gopher://example.com/", "scheme"},
		{"//example.com/", "scheme"},
		{"example.com/path", "scheme"},
		{"http://", "no host"},
		{"http:///path", "no host"},
		{"http://%zz/", "unparseable"},
		{"http://127.0.0.1/", "loopback"},
		{"http://127.0.0.1:9001/", "loopback"},
		{"http://[::1]:9000/", "loopback"},
		{"http://[::ffff:127.0.0.1]/", "loopback"},
		{"http://[::ffff:a9fe:a9fe]/", "metadata"},
		{"http://169.254.169.254/latest/meta-data/", "metadata"},
		{"http://[fd00:ec2::254]/", "metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", "metadata"},
		{"http://METADATA.GOOGLE.INTERNAL./", "metadata"},
		{"http://10.0.0.1/", "private"},
		{"http://[fc00::1]/", "private"},
		{"http://[fe80::1%25eth0]/", "link-local"},
		{"http://100.64.0.1/", "carrier-grade"},
		{"http://0.0.0.0/", "unspecified"},
		{"http://[::]/", "unspecified"},
		{"http://224.0.0.1/", "multicast"},
		{"http://255.255.255.255/", "broadcast"},
		{"http://2130706433/", "numeric"},
		{"http://0x7f.0.0.1/", "numeric"},
		{"http://0x7f000001/", "numeric"},
		{"http://0177.0.0.1/", "numeric"},
		{"http://017700000001/", "numeric"},
		{"http://127.1/", "numeric"},
		{"http://1e100.net/", ""},
		{"http://0xdeadbeef.example.com/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			err := g.CheckURL(tc.url)
			if tc.blocked == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, netguard.IsBlocked(err))
			require.Contains(t, err.Error(), tc.blocked)
		})
	}
	// Credentials in the URL never appear in the error.
	err := g.CheckURL("http://user:hunter2@10.0.0.1/")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestControl(t *testing.T) {
	t.Parallel()
	g := netguard.NewGuard([]string{"127.0.0.1:8080", "::1", "localhost"})
	cases := []struct {
		network, addr string
		ok            bool
	}{
		{"tcp", "8.8.8.8:443", true},
		{"tcp6", "[2606:4700:4700::1111]:443", true},
		{"tcp", "127.0.0.1:8080", true},
		{"tcp", "127.0.0.1:8081", false},
		{"tcp", "[::1]:1234", true},
		{"tcp", "[::ffff:127.0.0.1]:8080", true},
		{"tcp", "[::ffff:127.0.0.1]:22", false},
		{"tcp", "10.0.0.1:80", false},
		{"tcp", "169.254.169.254:80", false},
		{"tcp", "[fe80::1%eth0]:80", false},
		{"udp", "8.8.8.8:53", false},
		{"tcp", "not-an-address", false},
	}
	for _, tc := range cases {
		t.Run(tc.network+" "+tc.addr, func(t *testing.T) {
			err := g.Control(tc.network, tc.addr, nil)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.True(t, netguard.IsBlocked(err), "got %v", err)
		})
	}
}

func newServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return srv, port
}

func okHandler(hits *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "reached")
	}
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	return string(b), nil
}

func TestHTTPClient_LoopbackByName(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	_, port := newServer(t, okHandler(&hits))
	target := "http://localhost:" + port + "/"

	// localhost passes CheckURL (it is a name) but resolves to loopback: refused at dial time.
	blocked := netguard.NewGuard(nil)
	require.NoError(t, blocked.CheckURL(target))
	_, err := get(t, blocked.HTTPClient(5*time.Second), target)
	require.Error(t, err)
	require.True(t, netguard.IsBlocked(err), "got %v", err)
	require.Contains(t, err.Error(), "loopback")
	require.Zero(t, hits.Load())

	for _, allow := range []string{"localhost", "localhost:" + port, "LOCALHOST", "127.0.0.1"} {
		body, err := get(t, netguard.NewGuard([]string{allow}).HTTPClient(5*time.Second), "http://127.0.0.1:"+port+"/")
		if allow == "localhost" || allow == "LOCALHOST" || allow == "localhost:"+port {
			// The name is allowed, not the address: a literal 127.0.0.1 stays blocked.
			require.True(t, netguard.IsBlocked(err), "allow %q: %v", allow, err)
			body, err = get(t, netguard.NewGuard([]string{allow}).HTTPClient(5*time.Second), target)
		}
		require.NoError(t, err, "allow %q", allow)
		require.Equal(t, "reached", body)
	}
	// A port-specific entry does not open other ports.
	_, err = get(t, netguard.NewGuard([]string{"localhost:1"}).HTTPClient(5*time.Second), target)
	require.True(t, netguard.IsBlocked(err), "got %v", err)
}

// fakeDNS answers every A query with ip and every other query with no records: the shape of a
// rebinding attack where an attacker-controlled public name resolves to an internal address.

func TestHTTPClient_DNSRebinding(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	_, port := newServer(t, okHandler(&hits))
	resolver := netguardtest.Resolver(t, netip.MustParseAddr("127.0.0.1"))
	target := "http://rebind.attacker-example.com:" + port + "/"

	addrs, err := resolver.LookupHost(context.Background(), "rebind.attacker-example.com")
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1"}, addrs)

	g := netguard.NewGuard(nil).WithResolver(resolver)
	require.NoError(t, g.CheckURL(target), "the URL itself looks public")
	_, err = get(t, g.HTTPClient(5*time.Second), target)
	require.True(t, netguard.IsBlocked(err), "got %v", err)
	require.Contains(t, err.Error(), "rebind.attacker-example.com:"+port+": loopback")
	require.NotContains(t, err.Error(), "127.0.0.1", "the resolved address is not revealed")
	require.Zero(t, hits.Load())

	// Explicitly allowed, by name or by resolved address, the same connection goes through.
	for _, allow := range []string{"rebind.attacker-example.com", "127.0.0.1:" + port} {
		body, err := get(t, netguard.NewGuard([]string{allow}).WithResolver(resolver).HTTPClient(5*time.Second), target)
		require.NoError(t, err, "allow %q", allow)
		require.Equal(t, "reached", body)
	}
	require.Equal(t, int32(2), hits.Load())

	// Resolution to a private or metadata address is refused the same way.
	for _, ip := range []string{"10.0.0.5", "169.254.169.254", "100.64.1.1", "0.0.0.0"} {
		g := netguard.NewGuard(nil).WithResolver(netguardtest.Resolver(t, netip.MustParseAddr(ip)))
		_, err := get(t, g.HTTPClient(2*time.Second), target)
		require.True(t, netguard.IsBlocked(err), "%s: got %v", ip, err)
	}
}

func TestHTTPClient_Redirects(t *testing.T) {
	t.Parallel()
	var hitsB atomic.Int32
	_, portB := newServer(t, okHandler(&hitsB))

	redirectTo := func(loc string) (*httptest.Server, string) {
		return newServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, loc, http.StatusFound)
		})
	}
	_, portMeta := redirectTo("http://169.254.169.254/latest/meta-data/")
	_, portPriv := redirectTo("http://10.0.0.1/admin")
	_, portFile := redirectTo("file:///etc/passwd")
	_, portB2 := redirectTo("http://127.0.0.1:" + portB + "/")
	_, portLocal := redirectTo("http://localhost:" + portB + "/")

	cases := []struct {
		name, port string
		allow      []string
		reason     string
	}{
		{"metadata", portMeta, []string{"127.0.0.1:" + portMeta}, "metadata"},
		{"private", portPriv, []string{"127.0.0.1:" + portPriv}, "private"},
		{"scheme", portFile, []string{"127.0.0.1:" + portFile}, "scheme"},
		{"other loopback port", portB2, []string{"127.0.0.1:" + portB2}, "loopback"},
		{"loopback by name", portLocal, []string{"127.0.0.1:" + portLocal}, "loopback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := netguard.NewGuard(tc.allow).HTTPClient(5 * time.Second)
			_, err := get(t, c, "http://127.0.0.1:"+tc.port+"/")
			require.Error(t, err)
			if tc.reason == "scheme" {
				require.True(t, netguard.IsBlocked(err) || strings.Contains(err.Error(), "unsupported protocol"), "got %v", err)
				return
			}
			require.True(t, netguard.IsBlocked(err), "got %v", err)
			require.Contains(t, err.Error(), tc.reason)
		})
	}
	require.Zero(t, hitsB.Load())

	// With both ends allowed the redirect is followed.
	c := netguard.NewGuard([]string{"127.0.0.1"}).HTTPClient(5 * time.Second)
	body, err := get(t, c, "http://127.0.0.1:"+portB2+"/")
	require.NoError(t, err)
	require.Equal(t, "reached", body)
}

func TestHTTPClient_RedirectLimit(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	_, port := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/r%d", n), http.StatusFound)
	})
	c := netguard.NewGuard([]string{"127.0.0.1"}).HTTPClient(5 * time.Second)
	_, err := get(t, c, "http://127.0.0.1:"+port+"/")
	require.ErrorContains(t, err, "stopped after 5 redirects")
	require.Equal(t, int32(netguard.MaxRedirects+1), hits.Load())
}

func TestHTTPClient_FirstRequestChecked(t *testing.T) {
	t.Parallel()
	c := netguard.NewGuard(nil).HTTPClient(time.Second)
	for _, u := range []string{"http://169.254.169.254/", "http://metadata.google.internal/", "http://2130706433/"} {
		_, err := get(t, c, u)
		require.True(t, netguard.IsBlocked(err), "%s: %v", u, err)
	}
}

func TestHTTPClient_IgnoresProxyEnvironment(t *testing.T) {
	var proxyHits atomic.Int32
	_, proxyPort := newServer(t, okHandler(&proxyHits))
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:"+proxyPort)
	t.Setenv("http_proxy", "http://127.0.0.1:"+proxyPort)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	var hits atomic.Int32
	_, port := newServer(t, okHandler(&hits))
	resolver := netguardtest.Resolver(t, netip.MustParseAddr("127.0.0.1"))
	g := netguard.NewGuard([]string{"api.provider-example.com"}).WithResolver(resolver)
	body, err := get(t, g.HTTPClient(5*time.Second), "http://api.provider-example.com:"+port+"/")
	require.NoError(t, err)
	require.Equal(t, "reached", body)
	require.Equal(t, int32(1), hits.Load())
	require.Zero(t, proxyHits.Load())
}

func TestDialContext_BadAddress(t *testing.T) {
	t.Parallel()
	_, err := netguard.NewGuard(nil).DialContext(context.Background(), "tcp", "no-port")
	require.Error(t, err)
	_, err = netguard.NewGuard(nil).DialContext(context.Background(), "tcp", "metadata.google.internal:80")
	require.True(t, netguard.IsBlocked(err))
}

// Issue 12 item 11: a loopback allowance for a test provider (127.0.0.1:<port>) reached the Temporal
// UI's API on another port. An entry with a port allows only that port, for IP literals as for names.
func TestHTTPClient_PortAllowanceIsOnlyThatPort(t *testing.T) {
	t.Parallel()
	var allowedHits, otherHits atomic.Int32
	_, allowedPort := newServer(t, okHandler(&allowedHits))
	_, otherPort := newServer(t, okHandler(&otherHits))
	c := netguard.NewGuard([]string{"127.0.0.1:" + allowedPort}).HTTPClient(5 * time.Second)
	body, err := get(t, c, "http://127.0.0.1:"+allowedPort+"/")
	require.NoError(t, err)
	require.Equal(t, "reached", body)
	for _, target := range []string{"http://127.0.0.1:" + otherPort + "/", "http://localhost:" + otherPort + "/"} {
		_, err = get(t, c, target)
		require.True(t, netguard.IsBlocked(err), "%s: %v", target, err)
	}
	require.Zero(t, otherHits.Load())
}

// TestDialErrorsRevealNoResolvedAddress: whatever a dial through the guard fails on (a blocked
// resolution, a refused connection, a failed lookup), its error names the host as written and never
// the address it resolved to or the resolver's (issue 27 item 5: outbound errors revealed internal DNS
// results to whoever configured the URL).
func TestDialErrorsRevealNoResolvedAddress(t *testing.T) {
	t.Parallel()
	const host = "internal-only.attacker-example.com"
	// Resolves to a private address: blocked, naming the host only.
	g := netguard.NewGuard(nil).WithResolver(netguardtest.Resolver(t, netip.MustParseAddr("10.20.30.40")))
	_, err := get(t, g.HTTPClient(2*time.Second), "http://"+host+":8080/")
	require.True(t, netguard.IsBlocked(err), "got %v", err)
	require.Contains(t, err.Error(), host+":8080")
	require.NotContains(t, err.Error(), "10.20.30.40")

	// Allowed by name, resolves to loopback, nothing listens: refused, naming the host only.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	g = netguard.NewGuard([]string{host}).WithResolver(netguardtest.Resolver(t, netip.MustParseAddr("127.0.0.1")))
	_, err = get(t, g.HTTPClient(2*time.Second), "http://"+host+":"+closedPort+"/")
	require.Error(t, err)
	require.Contains(t, err.Error(), host+":"+closedPort+": connection refused")
	require.NotContains(t, err.Error(), "127.0.0.1")

	// The lookup itself fails: the resolver's address is not named either.
	broken := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "udp", Addr: &net.UDPAddr{IP: net.ParseIP("10.9.9.9"), Port: 53}, Err: errors.New("no route")}
	}}
	_, err = get(t, netguard.NewGuard(nil).WithResolver(broken).HTTPClient(2*time.Second), "http://"+host+"/")
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot resolve the host")
	require.NotContains(t, err.Error(), "10.9.9.9")
}
