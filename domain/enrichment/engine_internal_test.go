package enrichment

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

func testBox(t *testing.T) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	return box
}

func TestProviderCredentials(t *testing.T) {
	box := testBox(t)
	sealed, err := box.SealJSON(map[string]string{"api_key": "sealed-key", "extra": "x"})
	require.NoError(t, err)
	env := store.MapEnv(map[string]string{"K": "env-key", "D": "tenant.example.com"})
	p := store.EnrichmentProvider{ProviderName: "p", EnvVarMapping: map[string]string{"api_key": "K", "domain": "D", "missing": "NOPE"}}

	got, err := ProviderCredentials(p, box, env)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"api_key": "env-key", "domain": "tenant.example.com"}, got, "unset variables are left out")

	p.AuthConfigSealed = sealed
	got, err = ProviderCredentials(p, box, env)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"api_key": "sealed-key", "domain": "tenant.example.com", "extra": "x"}, got, "auth_config overrides env")

	got, err = ProviderCredentials(p, box, nil)
	require.NoError(t, err)
	require.Equal(t, "sealed-key", got["api_key"])

	_, err = ProviderCredentials(p, nil, env)
	require.ErrorContains(t, err, "no encryption key")
	other, err := secretbox.New(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	_, err = ProviderCredentials(p, other, env)
	require.ErrorIs(t, err, secretbox.ErrOpen, "a wrong key never yields credentials")
	p.AuthConfigSealed = []byte("garbage")
	_, err = ProviderCredentials(p, box, env)
	require.Error(t, err)
}

func TestEnrichState_SealedRoundTripAndTamper(t *testing.T) {
	d := &EngineDeps{Box: testBox(t)}
	st, err := d.openState(nil)
	require.NoError(t, err)
	require.Empty(t, st.Steps)
	sealed, err := d.Box.SealJSON(enrichState{Steps: map[string]map[string]any{"a": {"response": map[string]any{"id": 12345678901234567}}}, Final: "a"})
	require.NoError(t, err)
	require.NotContains(t, string(sealed), "12345678901234567", "state is ciphertext in history")
	st, err = d.openState(sealed)
	require.NoError(t, err)
	require.Equal(t, "a", st.Final)
	id := st.Steps["a"]["response"].(map[string]any)["id"]
	require.Equal(t, "12345678901234567", id.(interface{ String() string }).String(), "numbers keep every digit")
	sealed[len(sealed)-1] ^= 1
	_, err = d.openState(sealed)
	require.Error(t, err)
}

func TestEnrichIndicatorVars(t *testing.T) {
	v := enrichIndicatorVars(Target{Type: "url", Value: "https://evil.example.com/a?b=c"})
	require.Equal(t, "url", v["type"])
	require.Equal(t, "https://evil.example.com/a?b=c", v["value"])
	require.Equal(t, base64.RawURLEncoding.EncodeToString([]byte("https://evil.example.com/a?b=c")), v["base64url"])
	require.NotContains(t, v["base64url"], "=")
}

func TestEnrichBoundedRaw(t *testing.T) {
	require.Nil(t, enrichBoundedRaw(nil))
	small := map[string]any{"a": "b"}
	require.Equal(t, small, enrichBoundedRaw(small))
	big := map[string]any{"blob": strings.Repeat("é", httpsteps.MaxRecordedBodyBytes)}
	out, ok := enrichBoundedRaw(big).(string)
	require.True(t, ok)
	require.True(t, strings.HasSuffix(out, httpsteps.TruncatedMarker))
	require.LessOrEqual(t, len(out), httpsteps.MaxRecordedBodyBytes+len(httpsteps.TruncatedMarker))
	require.True(t, strings.ToValidUTF8(out, "?") == out, "cut on a rune boundary")
}

func TestEnrichParseMalice(t *testing.T) {
	r, err := enrichParseMalice(nil)
	require.NoError(t, err)
	require.Equal(t, "Pending", r.Evaluate(map[string]any{}, false))
	r, err = enrichParseMalice(map[string]any{"rules": []any{map[string]any{"field": "n", "operator": ">", "value": 1, "verdict": "Malicious"}}, "default_verdict": "Benign"})
	require.NoError(t, err)
	require.Equal(t, "Malicious", r.Evaluate(map[string]any{"n": int64(2)}, false))
	require.Equal(t, "Benign", r.Evaluate(map[string]any{"n": int64(0)}, false))
	_, err = enrichParseMalice(map[string]any{"rules": "x"})
	require.Error(t, err)
}

func TestAnswer_MapRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC)
	r := Answer{Provider: "p", Status: store.EnrichSuccess, Success: true, Extracted: map[string]any{"n": float64(3)},
		Malice: "Benign", EnrichedAt: &now, RawResponse: map[string]any{"a": "b"}}
	back, err := AnswerFromMap(r.Map())
	require.NoError(t, err)
	require.Equal(t, r.Provider, back.Provider)
	require.Equal(t, r.Extracted, back.Extracted)
	require.True(t, now.Equal(*back.EnrichedAt))
	_, err = AnswerFromMap(map[string]any{"success": "yes"})
	require.Error(t, err)
}
