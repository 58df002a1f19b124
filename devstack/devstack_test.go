package devstack

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindRepoRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	for _, start := range []string{root, deep, filepath.Join(root, "a")} {
		got, err := FindRepoRoot(start)
		require.NoError(t, err, start)
		require.Equal(t, root, got)
	}

	// The project's own root is found from this package's directory.
	got, err := FindRepoRoot(".")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(got, "go.mod"))
	require.DirExists(t, filepath.Join(got, "devstack"))
}

func TestFindRepoRoot_NoModule(t *testing.T) {
	// "/" has no go.mod on any sane machine; a temp dir outside any module must fail, not loop.
	dir := t.TempDir()
	if _, err := os.Stat("/go.mod"); err == nil {
		t.Fatal("a /go.mod exists on this machine; the test cannot tell a miss from a hit")
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "go.mod")); err == nil {
		t.Fatalf("a go.mod exists in %s; the test cannot tell a miss from a hit", os.TempDir())
	}
	_, err := FindRepoRoot(dir)
	require.Error(t, err)
	require.Contains(t, err.Error(), "no go.mod")
}

func TestWithDatabase(t *testing.T) {
	const admin = "postgres://postgres:secret@127.0.0.1:5432/postgres?sslmode=disable"
	tests := []struct {
		name, db, want, errPart string
	}{
		{name: "plain", db: "vigil_t_store_ab12", want: "postgres://postgres:secret@127.0.0.1:5432/vigil_t_store_ab12?sslmode=disable"},
		{name: "leading underscore", db: "_x", want: "postgres://postgres:secret@127.0.0.1:5432/_x?sslmode=disable"},
		{name: "63 chars", db: strings.Repeat("a", 63), want: "postgres://postgres:secret@127.0.0.1:5432/" + strings.Repeat("a", 63) + "?sslmode=disable"},
		{name: "64 chars", db: strings.Repeat("a", 64), errPart: "invalid database name"},
		{name: "empty", db: "", errPart: "invalid database name"},
		{name: "upper case", db: "Vigil", errPart: "invalid database name"},
		{name: "leading digit", db: "1x", errPart: "invalid database name"},
		{name: "quote injection", db: `x"; DROP DATABASE postgres; --`, errPart: "invalid database name"},
		{name: "space", db: "a b", errPart: "invalid database name"},
		{name: "slash", db: "a/b", errPart: "invalid database name"},
		{name: "unicode", db: "bäd", errPart: "invalid database name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withDatabase(admin, tt.db)
			if tt.errPart != "" {
				require.ErrorContains(t, err, tt.errPart)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestWithDatabase_BadAdminDSN(t *testing.T) {
	for _, dsn := range []string{"host=127.0.0.1 user=postgres", "mysql://root@x/db", "://nope", ""} {
		_, err := withDatabase(dsn, "ok")
		require.Error(t, err, dsn)
	}
}

func TestNewConnector_BadDSNIsAnError(t *testing.T) {
	// pgdriver panics on these; we must return an error instead.
	for _, dsn := range []string{"postgres://x@127.0.0.1/db?sslmode=bogus", "mysql://x@127.0.0.1/db"} {
		_, err := newConnector(dsn)
		require.Error(t, err, dsn)
	}
	_, err := newConnector("postgres://postgres@127.0.0.1:1/postgres?sslmode=disable")
	require.NoError(t, err)
}

func TestTailBuffer(t *testing.T) {
	tb := NewTailBuffer(8)
	_, _ = tb.Write([]byte("hello "))
	_, _ = tb.Write([]byte("world!"))
	require.Equal(t, "o world!", tb.String())
	_, _ = tb.Write([]byte(strings.Repeat("x", 100)))
	require.Equal(t, strings.Repeat("x", 8), tb.String())
}

func TestChoosePort(t *testing.T) {
	dir := t.TempDir()

	// No record: some free port.
	p, err := choosePort(dir)
	require.NoError(t, err)
	require.Positive(t, p)

	// A free recorded port is reused.
	free, err := freePort()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, pgPortFile), []byte("  "+strconv.Itoa(free)+"\n"), 0o644))
	p, err = choosePort(dir)
	require.NoError(t, err)
	require.Equal(t, free, p)

	// Garbage or out-of-range records are ignored.
	for _, junk := range []string{"abc", "-5", "0", "70000", "", "99999999999999999999"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, pgPortFile), []byte(junk), 0o644))
		p, err = choosePort(dir)
		require.NoError(t, err, junk)
		require.True(t, p > 0 && p < 65536, junk)
	}
}

func itoaPort(p int) string { return strconv.Itoa(p) }

func listenOn(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}
