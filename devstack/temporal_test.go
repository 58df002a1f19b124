package devstack

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

func temporalBinary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	root, err := FindRepoRoot(".")
	require.NoError(t, err)
	bin, err := EnsureTemporalCLI(ctx, root, testLogger(t))
	require.NoError(t, err)
	return bin
}

func TestEnsureTemporalCLI_PrefersRepoBin(t *testing.T) {
	root := t.TempDir()
	fake := filepath.Join(root, "bin", "temporal")
	require.NoError(t, mkExecutable(fake))
	got, err := EnsureTemporalCLI(context.Background(), root, nil)
	require.NoError(t, err)
	require.Equal(t, fake, got)
}

func TestIsPinnedTemporalCLI(t *testing.T) {
	bin := temporalBinary(t)
	require.True(t, isPinnedTemporalCLI(context.Background(), bin), "the CLI EnsureTemporalCLI returns is the pinned one")
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	require.False(t, isPinnedTemporalCLI(context.Background(), goBin), "another Go binary is not the temporal CLI")
	require.False(t, isPinnedTemporalCLI(context.Background(), "/bin/true"))
}

func TestStartTemporal_WithUIAndPersistence(t *testing.T) {
	bin := temporalBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbFile := filepath.Join(t.TempDir(), "temporal.db")

	start := time.Now()
	srv, err := StartTemporal(ctx, TemporalOptions{Binary: bin, DBFile: dbFile, UICodecEndpoint: "http://127.0.0.1:8000/codec"})
	require.NoError(t, err)
	t.Logf("dev server with UI and SQLite file ready in %v", time.Since(start))
	t.Cleanup(func() { _ = srv.Stop() })
	require.True(t, strings.HasPrefix(srv.UIURL(), "http://127.0.0.1:"), srv.UIURL())
	require.FileExists(t, dbFile)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := http.Get(srv.UIURL())
		if !assert.NoError(c, err) {
			return
		}
		resp.Body.Close()
		assert.Equal(c, http.StatusOK, resp.StatusCode)
	}, 30*time.Second, 200*time.Millisecond)

	// The UI decodes payloads through the codec endpoint it was started with (vigil dev: the API's /codec).
	resp, err := http.Get(srv.UIURL() + "/api/v1/settings")
	require.NoError(t, err)
	var settings struct{ Codec struct{ Endpoint string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	resp.Body.Close()
	require.Equal(t, "http://127.0.0.1:8000/codec", settings.Codec.Endpoint)

	requireNamespace(t, srv.Address())
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "a second Stop is a no-op")
	_, err = listenOn(portOf(t, srv.Address()))
	require.NoError(t, err, "the gRPC port is free after Stop")
}

func TestStartTemporal_HeadlessInMemory(t *testing.T) {
	bin := temporalBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	srv, err := StartTemporal(ctx, TemporalOptions{Binary: bin, Headless: true})
	require.NoError(t, err)
	t.Logf("headless in-memory dev server ready in %v", time.Since(start))
	defer srv.Stop()
	require.Empty(t, srv.UIURL())
	requireNamespace(t, srv.Address())
}

func TestStartTemporal_Failures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, err := StartTemporal(ctx, TemporalOptions{})
	require.ErrorContains(t, err, "no CLI binary")

	_, err = StartTemporal(ctx, TemporalOptions{Binary: filepath.Join(t.TempDir(), "missing")})
	require.Error(t, err)

	// A binary that exits at once: the error says so and carries its output.
	script := filepath.Join(t.TempDir(), "temporal")
	require.NoError(t, writeScript(script, "#!/bin/sh\necho 'boom: port in use' >&2\nexit 3\n"))
	_, err = StartTemporal(ctx, TemporalOptions{Binary: script, Headless: true})
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "boom: port in use")

	// A fixed port that is already taken by someone else is reported, not retried forever.
	holder, err := listenOn(0)
	require.NoError(t, err)
	defer holder.Close()
	bin := temporalBinary(t)
	_, err = StartTemporal(ctx, TemporalOptions{Binary: bin, Headless: true, Port: portOf(t, holder.Addr().String())})
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "address already in use")
}

func requireNamespace(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: log.NewStructuredLogger(testLogger(t))})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, "default", resp.GetNamespaceInfo().GetName())
}

func mkExecutable(path string) error {
	return writeScript(path, "#!/bin/sh\nexit 0\n")
}

func writeScript(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o755)
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}
