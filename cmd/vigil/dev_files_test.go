package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 12 item 11: vigil dev keeps the first admin key in a 0600 file under .vigil/, and .vigil/'s
// files are 0600 and its directories 0700 even when they existed with wider modes.
func TestDevFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".vigil")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "postgres"), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "temporal.db"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, adminKeyFileName), []byte("old"), 0o644))

	path, err := writeAdminKeyFile(dir, "cai_example")
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "cai_example\n", string(raw))
	require.NoError(t, tightenDevDir(dir, 0o700))

	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	require.Equal(t, os.FileMode(0o700), mode(dir))
	require.Equal(t, os.FileMode(0o700), mode(filepath.Join(dir, "postgres")))
	require.Equal(t, os.FileMode(0o600), mode(filepath.Join(dir, "temporal.db")))
	require.Equal(t, os.FileMode(0o600), mode(path))
	_, err = devEncryptionKey(filepath.Join(dir, "encryption.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), mode(filepath.Join(dir, "encryption.key")))
}
