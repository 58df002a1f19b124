package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/secretbox"
)

func testKey(fill byte) []byte { return bytes.Repeat([]byte{fill}, secretbox.KeySize) }

func mustBox(t *testing.T, key []byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(key)
	require.NoError(t, err)
	return b
}

func TestSealOpen_RoundTrip(t *testing.T) {
	t.Parallel()
	box := mustBox(t, testKey(7))
	for _, pt := range [][]byte{nil, {}, []byte("x"), []byte("api-key-1234567890"), bytes.Repeat([]byte("z"), 1<<16)} {
		sealed, err := box.Seal(pt)
		require.NoError(t, err)
		require.Len(t, sealed, secretbox.Overhead+len(pt))
		require.Equal(t, secretbox.Version, sealed[0])
		got, err := box.Open(sealed)
		require.NoError(t, err)
		require.Equal(t, len(pt), len(got))
		require.True(t, bytes.Equal(pt, got))
	}
}

func TestSeal_FreshNonce(t *testing.T) {
	t.Parallel()
	box := mustBox(t, testKey(1))
	a, err := box.Seal([]byte("same"))
	require.NoError(t, err)
	b, err := box.Seal([]byte("same"))
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.NotEqual(t, a[1:13], b[1:13])
	require.NotContains(t, string(a), "same")
}

func TestOpen_TamperDetection(t *testing.T) {
	t.Parallel()
	box := mustBox(t, testKey(2))
	sealed, err := box.Seal([]byte("top secret value"))
	require.NoError(t, err)
	for i := range sealed {
		mod := bytes.Clone(sealed)
		mod[i] ^= 0x01
		_, err := box.Open(mod)
		require.Error(t, err, "flipping byte %d must be detected", i)
		require.True(t, errors.Is(err, secretbox.ErrOpen))
	}
	// Truncation and extension are detected too.
	_, err = box.Open(sealed[:len(sealed)-1])
	require.ErrorIs(t, err, secretbox.ErrOpen)
	_, err = box.Open(append(bytes.Clone(sealed), 0))
	require.ErrorIs(t, err, secretbox.ErrOpen)
}

func TestOpen_WrongKey(t *testing.T) {
	t.Parallel()
	sealed, err := mustBox(t, testKey(3)).Seal([]byte("hello"))
	require.NoError(t, err)
	_, err = mustBox(t, testKey(4)).Open(sealed)
	require.ErrorIs(t, err, secretbox.ErrOpen)
	require.NotContains(t, err.Error(), "hello")
}

func TestOpen_ShortInput(t *testing.T) {
	t.Parallel()
	box := mustBox(t, testKey(5))
	for _, n := range []int{0, 1, 12, 13, secretbox.Overhead - 1} {
		_, err := box.Open(make([]byte, n))
		require.ErrorIs(t, err, secretbox.ErrOpen, "len %d", n)
	}
	bad := make([]byte, secretbox.Overhead+4)
	bad[0] = 9
	_, err := box.Open(bad)
	require.ErrorContains(t, err, "unknown version")
}

func TestNew_BadKeys(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 16, 24, 31, 33, 64} {
		_, err := secretbox.New(make([]byte, n))
		require.Error(t, err, "len %d", n)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i*7 + 250) // includes bytes that produce + / - _ in base64
	}
	good := map[string]string{
		"hex lower":       hex.EncodeToString(key),
		"hex upper":       strings.ToUpper(hex.EncodeToString(key)),
		"std padded":      base64.StdEncoding.EncodeToString(key),
		"std raw":         base64.RawStdEncoding.EncodeToString(key),
		"url padded":      base64.URLEncoding.EncodeToString(key),
		"url raw":         base64.RawURLEncoding.EncodeToString(key),
		"with whitespace": "  " + base64.StdEncoding.EncodeToString(key) + "\n",
	}
	for name, s := range good {
		t.Run(name, func(t *testing.T) {
			got, err := secretbox.ParseKey(s)
			require.NoError(t, err)
			require.Equal(t, key, got)
		})
	}
	bad := map[string]string{
		"empty":             "",
		"blank":             "   ",
		"short hex":         hex.EncodeToString(key[:16]),
		"long base64":       base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 48)),
		"short base64":      base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"not an encoding":   "this is not a key!!",
		"hex with bad char": strings.Repeat("g", 64),
		"plain passphrase":  "correct horse battery staple",
	}
	for name, s := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := secretbox.ParseKey(s)
			require.Error(t, err)
			require.Contains(t, err.Error(), "secretbox: key")
		})
	}
}

func TestSealJSON(t *testing.T) {
	t.Parallel()
	box := mustBox(t, testKey(6))
	in := map[string]any{"api_key": "abc", "n": 3.0}
	sealed, err := box.SealJSON(in)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, box.OpenJSON(sealed, &out))
	require.Equal(t, in, out)

	_, err = box.SealJSON(func() {})
	require.Error(t, err)

	sealedText, err := box.Seal([]byte("not json"))
	require.NoError(t, err)
	require.ErrorContains(t, box.OpenJSON(sealedText, &out), "unmarshal")
	require.ErrorIs(t, box.OpenJSON(sealedText[:5], &out), secretbox.ErrOpen)
}
