package httpsteps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
)

func TestMask(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":                   "****",
		"abc":                "****",
		"12345678":           "****",
		"123456789":          "****",
		"abcdefghijkl":       "****", // issue 27: 8 of a 12-character key were shown
		"abcdefghijklmno":    "****",
		"0123456789abcdef":   "****cdef",
		"abcdefghijklmnwxyz": "****wxyz",
		"ééééééééé":          "****",
		"éééééééééééééééé":   "****éééé",
	}
	for in, want := range cases {
		require.Equal(t, want, httpsteps.Mask(in), in)
	}
}

func TestMasker(t *testing.T) {
	t.Parallel()
	m := httpsteps.NewMasker([]string{"abcdefghijklmnop", "a/b c+d=e&f", "xy", "", "abcdefgh"})
	require.Equal(t, "key=****mnop!", m.String("key=abcdefghijklmnop!"))
	require.Equal(t, "****!", m.String("abcdefgh!"), "short secret")
	require.Equal(t, "xy stays", m.String("xy stays"), "secrets under 4 chars are not replaced")
	// URL-encoded forms are masked too.
	require.Equal(t, "q=a/b ****=e&f", m.String("q=a/b ****=e&f"))
	require.Equal(t, "q=****", m.String("q=a%2Fb+c%2Bd%3De%26f"))
	require.Equal(t, "p=****", m.String("p=a%2Fb%20c+d=e&f"))

	headers := m.Headers(map[string]string{
		"Authorization": "Bearer some-opaque-token-value",
		"X-Apikey":      "plainkeyvalue123",
		"Cookie":        "sid=1",
		"SSWS-Auth":     "SSWS 00abcdefghijklmn",
		"Accept":        "application/json",
		"X-Custom":      "contains abcdefghijklmnop inside",
	})
	require.Equal(t, map[string]string{
		"Authorization": "Bearer ****alue",
		"X-Apikey":      "****e123",
		"Cookie":        "****",
		"SSWS-Auth":     "SSWS ****klmn",
		"Accept":        "application/json",
		"X-Custom":      "contains ****mnop inside",
	}, headers)

	require.Equal(t, map[string]string{"api_key": "****", "client-secret": "****", "q": "****mnop", "x": "1"},
		m.Params(map[string]string{"api_key": "k1", "client-secret": "s", "q": "abcdefghijklmnop", "x": "1"}))

	v := m.Value(map[string]any{
		"access_token": "tttttttttttttttt",
		"nested":       []any{map[string]any{"password": "p"}, "abcdefghijklmnop", 3.0},
		"n":            1.0,
	})
	require.Equal(t, map[string]any{
		"access_token": "****tttt",
		"nested":       []any{map[string]any{"password": "****"}, "****mnop", 3.0},
		"n":            1.0,
	}, v)

	require.Equal(t, "https://user:****@x.com/p?token=****mnop&q=1",
		m.URL("https://user:pw@x.com/p?token=abcdefghijklmnop&q=1"))
	require.Equal(t, "https://x.com/****mnop", m.URL("https://x.com/abcdefghijklmnop"))
	require.Equal(t, "https://x.com/?sig=****", m.URL("https://x.com/?sig=short"))

	var nilMasker *httpsteps.Masker
	require.Equal(t, "x", nilMasker.String("x"))
}
