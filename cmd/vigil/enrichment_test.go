package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenSecretBox(t *testing.T) {
	_, err := openSecretBox(config{})
	require.ErrorContains(t, err, "ENCRYPTION_KEY is required")
	for _, bad := range []string{"short", strings.Repeat("zz", 32), "MDEy", strings.Repeat("a", 63)} {
		_, err := openSecretBox(config{EncryptionKey: bad})
		require.ErrorContains(t, err, "ENCRYPTION_KEY is malformed", bad)
	}
	box, err := openSecretBox(config{EncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="})
	require.NoError(t, err)
	sealed, err := box.Seal([]byte("x"))
	require.NoError(t, err)
	plain, err := box.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "x", string(plain))
	_, err = openSecretBox(config{EncryptionKey: strings.Repeat("ab", 32)})
	require.NoError(t, err, "64 hex characters")
}

func TestProviderEnv_HidesVigilSettings(t *testing.T) {
	vars := map[string]string{"VIRUSTOTAL_API_KEY": "vt", "DATABASE_URL": "postgres://secret", "ENCRYPTION_KEY": "k", "SSRF_ALLOWED_HOSTS": "x"}
	env := providerEnv(func(n string) string { return vars[n] })
	require.Equal(t, "vt", env("VIRUSTOTAL_API_KEY"))
	require.Empty(t, env("DATABASE_URL"))
	require.Empty(t, env("ENCRYPTION_KEY"))
	require.Empty(t, env("SSRF_ALLOWED_HOSTS"))
	require.Empty(t, env("UNSET"))
	require.Empty(t, providerEnv(nil)("VIRUSTOTAL_API_KEY"))

	cfg, err := loadConfig(func(n string) string { return vars[n] })
	require.NoError(t, err)
	require.Equal(t, "vt", cfg.ProviderEnv("VIRUSTOTAL_API_KEY"))
	require.Empty(t, cfg.ProviderEnv("DATABASE_URL"))
}
