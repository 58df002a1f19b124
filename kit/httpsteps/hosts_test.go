package httpsteps

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A provider's credential goes only to the hosts of its own written-out steps: a step whose host comes
// from a template (here the indicator) is refused before sending, and that server never sees it.
func TestOwnHostsPolicyKeepsCredentialsOnTheProvidersHosts(t *testing.T) {
	var ownHits, otherHits atomic.Int32
	var otherSawKey atomic.Bool
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ownHits.Add(1)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer own.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherSawKey.Store(r.Header.Get("X-Key") != "")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer other.Close()
	raw, _ := json.Marshal(map[string]any{"steps": []any{
		map[string]any{"name": "a", "url": own.URL + "/a", "headers": map[string]any{"X-Key": "{{auth.api_key}}"}},
		map[string]any{"name": "b", "url": "{{indicator.value}}/b", "headers": map[string]any{"X-Key": "{{auth.api_key}}"}},
		map[string]any{"name": "c", "url": "{{indicator.value}}/c"},
	}})
	cfg, errs := ParseConfig(raw)
	require.Empty(t, errs)
	require.Equal(t, []string{strings.TrimPrefix(own.URL, "http://")}, cfg.LiteralHosts())
	require.Equal(t, []string{"auth.api_key"}, cfg.StepCredentialRefs(1))
	require.Empty(t, cfg.StepCredentialRefs(2))

	vars := map[string]any{"indicator": map[string]any{"type": "url", "value": other.URL}, "auth": map[string]any{"api_key": "k-123456789"}}
	runner := NewRunner(http.DefaultClient, WithHostPolicy(cfg.OwnHostsPolicy([]string{"api_key"})))
	p, err := BuildRequest(cfg, 0, vars)
	require.NoError(t, err)
	_, err = runner.Do(context.Background(), p)
	require.NoError(t, err, "its own host")
	p, err = BuildRequest(cfg, 1, vars)
	require.NoError(t, err)
	out, err := runner.Do(context.Background(), p)
	var he *SecretHostError
	require.ErrorAs(t, err, &he)
	require.True(t, IsPermanent(err))
	require.Contains(t, out.Record.Error, CodeSecretHostNotAllowed)
	require.NotContains(t, out.Record.Error, "k-123456789")
	p, err = BuildRequest(cfg, 2, vars)
	require.NoError(t, err)
	_, err = runner.Do(context.Background(), p)
	require.NoError(t, err, "a step without credentials goes anywhere the SSRF guard allows")
	require.EqualValues(t, 1, ownHits.Load())
	require.EqualValues(t, 1, otherHits.Load(), "only the credential-free step reached the other host")
	require.False(t, otherSawKey.Load())

	// Without a policy nothing is checked (callers that hold no credentials).
	p, _ = BuildRequest(cfg, 1, vars)
	_, err = NewRunner(http.DefaultClient).Do(context.Background(), p)
	require.NoError(t, err)
}

func TestLiteralHost(t *testing.T) {
	for tpl, want := range map[string]string{
		"https://API.example.com/v1/{{indicator.value}}": "api.example.com",
		"http://10.0.0.5:8080?x={{a.b}}":                 "10.0.0.5:8080",
		"https://{{secrets.HOST}}/x":                     "",
		"https://api.{{indicator.value}}.com/":           "",
		"{{secrets.OKTA_ORG_URL}}/api/v1":                "",
		"https://user@evil.example.com/":                 "",
		"ftp://example.com/":                             "",
	} {
		require.Equal(t, want, LiteralHost(tpl), tpl)
	}
}
