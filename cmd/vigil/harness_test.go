package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address with a port free a moment ago, chosen below the kernel's
// ephemeral range (ip_local_port_range): every port-0 listener (vigil dev's own Postgres, a Temporal
// dev server, the tests' servers) draws from that range, so none of them can take the port between
// this call and the process under test binding it (a vigil dev once found its API port taken by the
// Postgres it had just started).
func freeAddr(t testing.TB) string {
	t.Helper()
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const from = 10000
	for range 100 {
		port := 0 // the kernel's choice when the ephemeral range leaves no room below it
		if low > from+1000 {
			port = from + rand.IntN(low-from)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: another
		}
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return addr
	}
	t.Fatal("no free loopback port")
	return ""
}

// createKey runs `vigil create-api-key args...` and returns the printed key and the whole output.
func createKey(t testing.TB, env func(string) string, args ...string) (key, output string) {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), append([]string{"create-api-key"}, args...), env, &out, io.Discard))
	key = regexp.MustCompile(`cai_[A-Za-z0-9_-]{32}`).FindString(out.String())
	require.NotEmpty(t, key, out.String())
	return key, out.String()
}

// serve runs each subcommand (api, worker) through run() until the test ends, then stops them and
// requires each to return nil.
func serve(t testing.TB, env func(string) string, subcommands ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var dones []chan error
	for _, sub := range subcommands {
		done := make(chan error, 1)
		dones = append(dones, done)
		go func() { done <- run(ctx, []string{sub}, env, io.Discard, io.Discard) }()
	}
	t.Cleanup(func() {
		cancel()
		for i, done := range dones {
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Errorf("vigil %s did not stop", subcommands[i])
			}
		}
	})
}

// waitHealthy waits until base/health answers 200.
func waitHealthy(t testing.TB, base string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond)
}
