package enrichment

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/secretbox"
)

// memDoer answers every request with the same JSON body, without a network.
type memDoer struct{ body []byte }

func (d memDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(d.body)), Request: req}, nil
}

// BenchmarkEngineStep is what one EnrichStep does besides the database: render the step's templates
// (reading an earlier step's response and credentials), send it through an in-memory Doer, record it
// with secrets masked, decode a ~3 KB JSON response, seal the state for the next step, then extract 6
// fields and evaluate malice rules.
func BenchmarkEngineStep(b *testing.B) {
	cfg, errs := httpsteps.ParseConfig([]byte(`{"steps":[
	  {"name":"token","method":"POST","url":"https://auth.example.com/token","form_body":{"secret":"{{auth.secret}}"}},
	  {"name":"lookup","url":"https://api.example.com/v3/domains/{{indicator.value}}","query_params":{"q":"{{indicator.value}}","limit":"5"},
	   "headers":{"Authorization":"Bearer {{steps.token.response.access_token}}","x-apikey":"{{auth.api_key}}"}}]}`))
	require.Nil(b, errs)
	rules, errs := ParseMaliceRules([]byte(`{"rules":[{"field":"malicious","operator":">=","value":5,"verdict":"Malicious"},
	  {"field":"malicious","operator":">=","value":1,"verdict":"Suspicious"}],"default_verdict":"Benign"}`))
	require.Nil(b, errs)
	engines := map[string]any{}
	for i := range 60 {
		engines[string(rune('a'+i%26))+string(rune('a'+i/26))] = map[string]any{"category": "harmless", "result": "clean", "method": "blacklist"}
	}
	body, err := json.Marshal(map[string]any{"data": map[string]any{"attributes": map[string]any{
		"last_analysis_stats": map[string]any{"malicious": 2, "suspicious": 1, "harmless": 70},
		"reputation":          -3, "registrar": "Example Registrar", "categories": map[string]any{"a": "b"}, "last_analysis_results": engines}}})
	require.NoError(b, err)
	exts := []httpsteps.Extraction{
		{SourcePath: "data.attributes.last_analysis_stats.malicious", TargetKey: "malicious", ValueType: "int"},
		{SourcePath: "data.attributes.last_analysis_stats.suspicious", TargetKey: "suspicious", ValueType: "int"},
		{SourcePath: "data.attributes.last_analysis_stats.harmless", TargetKey: "harmless", ValueType: "int"},
		{SourcePath: "data.attributes.reputation", TargetKey: "reputation", ValueType: "int"},
		{SourcePath: "data.attributes.registrar", TargetKey: "registrar", ValueType: "string"},
		{SourcePath: "data.attributes.categories", TargetKey: "categories", ValueType: "dict"},
	}
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(b, err)
	runner := httpsteps.NewRunner(memDoer{body: body}, httpsteps.WithMaxResponseBytes(MaxEnrichResponseBytes))
	vars := map[string]any{
		"indicator": enrichIndicatorVars(Target{Type: "domain", Value: "bench.example.com"}),
		"auth":      map[string]any{"secret": "client-secret-0123456789", "api_key": "api-key-abcdefghijkl"},
		"steps":     map[string]any{"token": map[string]any{"response": map[string]any{"access_token": "tok-abcdefghijklmnop"}}},
	}
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := httpsteps.BuildRequest(cfg, 1, vars)
		if err != nil {
			b.Fatal(err)
		}
		out, err := runner.Do(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		state := enrichState{Steps: map[string]map[string]any{"lookup": out.Vars()}, Final: "lookup"}
		plain, err := json.Marshal(state)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := box.Seal(plain); err != nil {
			b.Fatal(err)
		}
		extracted := httpsteps.Extract(out.Response, nil, exts)
		if rules.Evaluate(extracted, false) != "Suspicious" {
			b.Fatal("unexpected verdict")
		}
	}
}
