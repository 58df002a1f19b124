package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

// enrichEnv is the per-binary enrichment harness: the real store, a real worker polling the
// enrichment and pipeline queues, and one loopback HTTP server whose address is the only SSRF
// exception (so any other loopback address is refused at dial time).
type enrichEnv struct {
	st       *store.Store
	box      *secretbox.Box
	c        client.Client
	queues   temporal.Queues
	enricher *temporal.Enricher
	router   *router
	baseURL  string // http://127.0.0.1:<allowed port>
	env      sync.Map
}

type router struct {
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
}

func (r *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	prefix := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 2)[0]
	r.mu.Lock()
	h := r.routes[prefix]
	r.mu.Unlock()
	if h == nil {
		http.NotFound(w, req)
		return
	}
	h(w, req)
}

var (
	enrichOnce   sync.Once
	sharedEnrich *enrichEnv
	enrichErr    error
)

const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func enrichHarness(t testing.TB) *enrichEnv {
	t.Helper()
	dsn := testenv.DatabaseURL(t)
	addr := testenv.TemporalAddress(t)
	prefix := testenv.TaskQueuePrefix(t) + "-enrich"
	codec := testenv.PayloadCodec(t)
	enrichOnce.Do(func() {
		sharedEnrich, enrichErr = startEnrichEnv(dsn, addr, prefix, codec)
	})
	require.NoError(t, enrichErr)
	return sharedEnrich
}

func startEnrichEnv(dsn, addr, prefix string, codec converter.PayloadCodec) (*enrichEnv, error) {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	if err := builtins.SeedProviders(ctx, st); err != nil {
		return nil, err
	}
	key, err := secretbox.ParseKey(testKey)
	if err != nil {
		return nil, err
	}
	box, err := secretbox.New(key)
	if err != nil {
		return nil, err
	}
	e := &enrichEnv{st: st, box: box, router: &router{routes: map[string]http.HandlerFunc{}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: e.router, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	e.baseURL = "http://" + ln.Addr().String()
	guard := netguard.NewGuard([]string{ln.Addr().String()})
	env := func(name string) string {
		if v, ok := e.env.Load(name); ok {
			return v.(string)
		}
		return ""
	}
	acts := &activities.Activities{Enrichment: &enrichment.EngineDeps{Store: st, Box: box, Env: env, HTTP: guard.HTTPClient(time.Minute)}}
	e.c, err = temporal.Dial(ctx, temporal.Config{HostPort: addr, Codec: codec}, nil)
	if err != nil {
		return nil, err
	}
	e.queues = temporal.NewQueues(prefix)
	go func() { _ = temporal.RunWorkers(context.Background(), e.c, e.queues, acts, nil) }()
	e.enricher = temporal.NewEnricher(e.c, e.queues, acts)
	return e, nil
}

// handle registers h under a fresh path prefix and returns the prefix's base URL.
func (e *enrichEnv) handle(h http.HandlerFunc) (string, string) {
	prefix := "p" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	e.router.mu.Lock()
	e.router.routes[prefix] = h
	e.router.mu.Unlock()
	return prefix, e.baseURL + "/" + prefix
}

type providerSpec struct {
	types      []string
	steps      []map[string]any
	authType   string
	authConfig map[string]string
	envMap     map[string]string
	malice     map[string]any
	rateLimit  *store.RateLimit
	extract    map[string]string // target_key → source_path (type any)
}

func (e *enrichEnv) provider(t testing.TB, spec providerSpec) string {
	t.Helper()
	ctx := context.Background()
	name := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	steps := make([]any, len(spec.steps))
	for i, s := range spec.steps {
		steps[i] = s
	}
	if spec.authType == "" {
		spec.authType = store.AuthNone
	}
	if spec.types == nil {
		spec.types = []string{"domain"}
	}
	p := &store.EnrichmentProvider{ProviderName: name, DisplayName: name, IsActive: true, SupportedIndicatorTypes: spec.types,
		HTTPConfig: map[string]any{"steps": steps}, AuthType: spec.authType, EnvVarMapping: spec.envMap,
		DefaultCacheTTLSeconds: 3600, MaliceRules: spec.malice, RateLimit: spec.rateLimit}
	if spec.authConfig != nil {
		sealed, err := e.box.SealJSON(spec.authConfig)
		require.NoError(t, err)
		p.AuthConfigSealed = sealed
	}
	require.NoError(t, e.st.CreateProvider(ctx, p))
	t.Cleanup(func() { // later tests' enrichments must not call this test's provider
		p.IsActive = false
		_ = e.st.UpdateProvider(context.Background(), p, "is_active")
	})
	var exts []*store.FieldExtraction
	for _, typ := range spec.types {
		for k, path := range spec.extract {
			exts = append(exts, &store.FieldExtraction{ProviderName: name, IndicatorType: typ, SourcePath: path, TargetKey: k, ValueType: "any", IsActive: true})
		}
	}
	require.NoError(t, e.st.CreateFieldExtractions(ctx, exts))
	return name
}

func resultFor(t testing.TB, results []enrichment.Answer, provider string) enrichment.Answer {
	t.Helper()
	for _, r := range results {
		if r.Provider == provider {
			return r
		}
	}
	require.Failf(t, "no result", "provider %s not in %+v", provider, results)
	return enrichment.Answer{}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestEnrich_TwoStepsPassValues_ThenCacheHit(t *testing.T) {
	e := enrichHarness(t)
	const secret = "client-secret-0123456789"
	var hits atomic.Int32
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/token"):
			if r.ParseForm() != nil || r.PostForm.Get("secret") != secret {
				writeJSON(w, 401, map[string]any{"error": "bad secret"})
				return
			}
			writeJSON(w, 200, map[string]any{"access_token": "tok-abcdefghijkl"})
		case strings.Contains(r.URL.Path, "/lookup/"):
			if r.Header.Get("Authorization") != "Bearer tok-abcdefghijkl" {
				writeJSON(w, 401, map[string]any{"error": "bad token"})
				return
			}
			writeJSON(w, 200, map[string]any{"data": map[string]any{"score": 91, "domain": strings.TrimPrefix(r.URL.Path[strings.LastIndex(r.URL.Path, "/"):], "/")}})
		default:
			http.NotFound(w, r)
		}
	})
	name := e.provider(t, providerSpec{
		authType: store.AuthOAuth2ClientCredentials, authConfig: map[string]string{"secret": secret},
		steps: []map[string]any{
			{"name": "token", "method": "POST", "url": base + "/token", "form_body": map[string]any{"secret": "{{auth.secret}}"}},
			{"name": "lookup", "url": base + "/lookup/{{indicator.value}}", "headers": map[string]any{"Authorization": "Bearer {{steps.token.response.access_token}}"}},
		},
		extract: map[string]string{"score": "data.score", "seen_domain": "data.domain"},
		malice:  map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 80, "verdict": "Malicious"}}, "default_verdict": "Benign"},
	})

	value := "two-step-" + name + ".com"
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	r := resultFor(t, results, name)
	require.Equal(t, store.EnrichSuccess, r.Status, r.ErrorMessage)
	require.True(t, r.Success)
	require.False(t, r.CacheHit)
	require.EqualValues(t, 91, r.Extracted["score"])
	require.Equal(t, value, r.Extracted["seen_domain"])
	require.Equal(t, "Malicious", r.Malice)
	require.NotNil(t, r.EnrichedAt)
	require.EqualValues(t, 2, hits.Load())

	// Second call: served from the Postgres cache, no HTTP request at all.
	results, err = e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	r = resultFor(t, results, name)
	require.True(t, r.CacheHit)
	require.Equal(t, "Malicious", r.Malice)
	require.EqualValues(t, 91, r.Extracted["score"])
	require.EqualValues(t, 2, hits.Load(), "a cache hit makes no request")
}

func TestEnrich_ThreeStepsWithTestRecords(t *testing.T) {
	e := enrichHarness(t)
	const apiKey = "key-ABCDEFGHIJKLMNOP"
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != apiKey {
			writeJSON(w, 401, map[string]any{"error": "no key"})
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/search"):
			writeJSON(w, 200, map[string]any{"results": []any{map[string]any{"id": "job-7"}}})
		case strings.HasSuffix(r.URL.Path, "/jobs/job-7"):
			writeJSON(w, 200, map[string]any{"report": "rep-42", "echo_key": apiKey})
		case strings.HasSuffix(r.URL.Path, "/reports/rep-42"):
			writeJSON(w, 200, map[string]any{"verdict": "bad", "q": r.URL.Query().Get("q")})
		default:
			http.NotFound(w, r)
		}
	})
	hdr := map[string]any{"X-Api-Key": "{{auth.api_key}}"}
	name := e.provider(t, providerSpec{
		authType: store.AuthAPIKey, authConfig: map[string]string{"api_key": apiKey},
		steps: []map[string]any{
			{"name": "search", "url": base + "/search", "headers": hdr, "query_params": map[string]any{"q": "{{indicator.value}}"}},
			{"name": "job", "url": base + "/jobs/{{steps.search.response.results.0.id}}", "headers": hdr},
			{"name": "report", "url": base + "/reports/{{steps.job.response.report}}", "headers": hdr, "query_params": map[string]any{"q": "{{indicator.value}}"}},
		},
		extract: map[string]string{"verdict": "verdict", "q": "q"},
		malice:  map[string]any{"rules": []any{map[string]any{"field": "verdict", "operator": "==", "value": "bad", "verdict": "Suspicious"}}},
	})
	res, steps, err := e.enricher.TestProvider(ctxFor(t, 30*time.Second), name, "domain", "three.example.org")
	require.NoError(t, err)
	require.True(t, res.Success, res.ErrorMessage)
	require.Equal(t, "Suspicious", res.Malice)
	require.Equal(t, "bad", res.Extracted["verdict"])
	require.Equal(t, "three.example.org", res.Extracted["q"])
	require.Len(t, steps, 3)
	for i, s := range steps {
		require.Equal(t, i, s.StepIndex)
		require.Equal(t, 200, s.ResponseStatusCode)
		require.Empty(t, s.Error)
		require.False(t, s.Skipped)
		require.Equal(t, "three.example.org", s.IndicatorValue)
		require.Equal(t, "****MNOP", s.RequestHeaders["X-Api-Key"])
	}
	require.Equal(t, []string{"search", "job", "report"}, []string{steps[0].StepName, steps[1].StepName, steps[2].StepName})
	require.Contains(t, steps[1].RequestURL, "/jobs/job-7")
	// The secret appears nowhere in the records, not even where the provider echoed it back.
	raw, err := json.Marshal(map[string]any{"steps": steps, "raw": res.RawResponse})
	require.NoError(t, err)
	require.NotContains(t, string(raw), apiKey)
	require.NotNil(t, steps[2].ResponseBody)

	// Test mode never fills the cache.
	_, ok, err := e.st.GetCachedResult(context.Background(), name, "domain", "three.example.org")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestEnrich_TestProviderFailureIsReportedInResult(t *testing.T) {
	e := enrichHarness(t)
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/first") {
			writeJSON(w, 200, map[string]any{"ok": true})
			return
		}
		writeJSON(w, 403, map[string]any{"error": "forbidden"})
	})
	name := e.provider(t, providerSpec{steps: []map[string]any{
		{"name": "first", "url": base + "/first"},
		{"name": "second", "url": base + "/second"},
	}})
	start := time.Now()
	res, steps, err := e.enricher.TestProvider(ctxFor(t, 30*time.Second), name, "domain", "fail.example.org")
	require.NoError(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "a 403 is not retried")
	require.False(t, res.Success)
	require.Equal(t, store.EnrichFailed, res.Status)
	require.Contains(t, res.ErrorMessage, "HTTP 403")
	require.Len(t, steps, 2)
	require.Empty(t, steps[0].Error)
	require.Equal(t, 403, steps[1].ResponseStatusCode)
	require.Contains(t, steps[1].Error, "403")
	require.False(t, steps[1].Skipped)
}

func TestEnrich_NotFoundIsSuccessAndCached(t *testing.T) {
	e := enrichHarness(t)
	var hits atomic.Int32
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 404, map[string]any{"error": "unknown"})
	})
	name := e.provider(t, providerSpec{
		steps:  []map[string]any{{"name": "get", "url": base + "/x/{{indicator.value}}", "not_found_status": []any{404}}},
		malice: map[string]any{"not_found_verdict": "Benign", "default_verdict": "Suspicious"},
	})
	value := "nf-" + name + ".net"
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	r := resultFor(t, results, name)
	require.True(t, r.Success)
	require.True(t, r.NotFound)
	require.Equal(t, map[string]any{"found": false}, r.Extracted)
	require.Equal(t, "Benign", r.Malice)
	results, err = e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	require.True(t, resultFor(t, results, name).CacheHit, "not-found answers are cached")
	require.EqualValues(t, 1, hits.Load())
}

func TestEnrich_OptionalStepFailingIsSkipped(t *testing.T) {
	e := enrichHarness(t)
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/main") {
			writeJSON(w, 200, map[string]any{"score": 3})
			return
		}
		writeJSON(w, 400, map[string]any{"error": "nope"})
	})
	name := e.provider(t, providerSpec{
		steps: []map[string]any{
			{"name": "main", "url": base + "/main"},
			{"name": "extra", "url": base + "/extra", "optional": true},
		},
		extract: map[string]string{"score": "score"},
	})
	res, steps, err := e.enricher.TestProvider(ctxFor(t, 30*time.Second), name, "domain", "opt.example.org")
	require.NoError(t, err)
	require.True(t, res.Success, res.ErrorMessage)
	require.EqualValues(t, 3, res.Extracted["score"], "extraction reads the last step that succeeded")
	require.Len(t, steps, 2)
	require.True(t, steps[1].Skipped)
	require.Contains(t, steps[1].Error, "400")

	// Same through the normal path: success, and the skip does not fail the call.
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", "opt-"+name+".org")
	require.NoError(t, err)
	require.Equal(t, store.EnrichSuccess, resultFor(t, results, name).Status)
}

func TestEnrich_RetryAfterHonoured(t *testing.T) {
	e := enrichHarness(t)
	var hits atomic.Int32
	var first, second time.Time
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "2")
			writeJSON(w, 429, map[string]any{"error": "slow down"})
			return
		}
		second = time.Now()
		writeJSON(w, 200, map[string]any{"ok": true})
	})
	name := e.provider(t, providerSpec{steps: []map[string]any{{"name": "get", "url": base + "/x"}}, extract: map[string]string{"ok": "ok"}})
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", "ra-"+name+".com")
	require.NoError(t, err)
	r := resultFor(t, results, name)
	require.True(t, r.Success, r.ErrorMessage)
	require.Equal(t, true, r.Extracted["ok"])
	require.EqualValues(t, 2, hits.Load())
	require.GreaterOrEqual(t, second.Sub(first), 2*time.Second-50*time.Millisecond, "Retry-After: 2 was honoured")
}

func TestEnrich_RateLimitSpacesCallsWithoutFailing(t *testing.T) {
	e := enrichHarness(t)
	var mu sync.Mutex
	var arrivals []time.Time
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		writeJSON(w, 200, map[string]any{"ok": true})
	})
	name := e.provider(t, providerSpec{
		steps:     []map[string]any{{"name": "get", "url": base + "/x/{{indicator.value}}"}},
		rateLimit: &store.RateLimit{Requests: 2, PerSeconds: 1},
	})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	out := make([]enrichment.Answer, n)
	for i := range n {
		wg.Go(func() {
			results, err := e.enricher.Enrich(ctxFor(t, 60*time.Second), "domain", fmt.Sprintf("rl%d-%s.com", i, name))
			errs[i] = err
			if err == nil {
				out[i] = resultFor(t, results, name)
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.True(t, out[i].Success, "call %d: %s", i, out[i].ErrorMessage)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, arrivals, n)
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	// At most 2 requests in any 1 s window: the 3rd request after any one arrives ≥ 1 s later. Requests
	// leave on their slots (a slot missed by more than 50 ms is re-reserved); the slack covers the
	// delay between leaving and this handler running when CI loads both cores with other packages.
	const jitter = 250 * time.Millisecond
	for i := 0; i+2 < n; i++ {
		require.GreaterOrEqual(t, arrivals[i+2].Sub(arrivals[i]), time.Second-jitter, "requests %d and %d", i, i+2)
	}
	// 20 requests at 2/s span 9.5 s.
	require.GreaterOrEqual(t, arrivals[n-1].Sub(arrivals[0]), 9500*time.Millisecond-jitter)
}

func TestEnrich_UnconfiguredProviderSkippedUntilEnvSet(t *testing.T) {
	e := enrichHarness(t)
	var hits atomic.Int32
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, map[string]any{"k": r.Header.Get("Key") != ""})
	})
	envName := "TEST_KEY_" + strings.ToUpper(strings.ReplaceAll(uuid.NewString(), "-", "")[:8])
	name := e.provider(t, providerSpec{
		authType: store.AuthAPIKey, envMap: map[string]string{"api_key": envName},
		steps:   []map[string]any{{"name": "get", "url": base + "/x", "headers": map[string]any{"Key": "{{auth.api_key}}"}}},
		extract: map[string]string{"k": "k"},
	})
	value := "unconf-" + name + ".com"
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	for _, r := range results {
		require.NotEqual(t, name, r.Provider, "an unconfigured provider is left out without error")
	}
	require.Zero(t, hits.Load())
	health, err := e.st.ProviderHealth(context.Background(), func(n string) string { v, _ := e.env.Load(n); s, _ := v.(string); return s })
	require.NoError(t, err)
	require.Equal(t, "unconfigured", health[name])

	e.env.Store(envName, "env-secret-value-123")
	results, err = e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", value)
	require.NoError(t, err)
	r := resultFor(t, results, name)
	require.True(t, r.Success, r.ErrorMessage)
	require.Equal(t, true, r.Extracted["k"], "the env var was sent as {{auth.api_key}}")
	require.EqualValues(t, 1, hits.Load())
}

func TestEnrich_NonRoutableValueSkippedWithReason(t *testing.T) {
	e := enrichHarness(t)
	var hits atomic.Int32
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, map[string]any{})
	})
	name := e.provider(t, providerSpec{types: []string{"ip", "domain"}, steps: []map[string]any{{"name": "get", "url": base + "/x/{{indicator.value}}"}}})
	for _, tc := range []struct{ typ, value, reason string }{
		{"ip", "10.1.2.3", "private"},
		{"ip", "127.0.0.1", "loopback"},
		{"ip", "169.254.169.254", "metadata"},
		{"ip", "169.254.10.1", "link-local"},
		{"domain", "db.internal", "internal"},
	} {
		results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), tc.typ, tc.value)
		require.NoError(t, err)
		r := resultFor(t, results, name)
		require.Equal(t, store.EnrichSkipped, r.Status, tc.value)
		require.False(t, r.Success)
		require.Contains(t, strings.ToLower(r.ErrorMessage), tc.reason, tc.value)
	}
	require.Zero(t, hits.Load())
}

func TestEnrich_LoopbackDestinationRefusedAtDialTime(t *testing.T) {
	e := enrichHarness(t)
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, map[string]any{"leak": "internal"})
	}))
	t.Cleanup(other.Close)
	port := other.URL[strings.LastIndex(other.URL, ":")+1:]
	// "localhost" passes the URL check (it is a name) and resolves to 127.0.0.1 only when dialled,
	// where the guard refuses it: this port is not in SSRF_ALLOWED_HOSTS.
	name := e.provider(t, providerSpec{steps: []map[string]any{{"name": "get", "url": "http://localhost:" + port + "/x"}}})
	res, steps, err := e.enricher.TestProvider(ctxFor(t, 30*time.Second), name, "domain", "ssrf.example.org")
	require.NoError(t, err)
	require.False(t, res.Success)
	require.Contains(t, res.ErrorMessage, "ssrf guard")
	require.Len(t, steps, 1)
	require.Contains(t, steps[0].Error, "loopback")
	require.Zero(t, hits.Load())

	// The normal path records the refusal as the provider's failure and goes on.
	results, err := e.enricher.Enrich(ctxFor(t, 30*time.Second), "domain", "ssrf-"+name+".org")
	require.NoError(t, err)
	r := resultFor(t, results, name)
	require.Equal(t, store.EnrichFailed, r.Status)
	require.Contains(t, r.ErrorMessage, "ssrf guard")
	require.Zero(t, hits.Load())
	_, cached, err := e.st.GetCachedResult(context.Background(), name, "domain", "ssrf-"+name+".org")
	require.NoError(t, err)
	require.False(t, cached, "errors are not cached")
}

func TestEnrichIndicator_RecordsOnIndicatorWithStickyOverride(t *testing.T) {
	e := enrichHarness(t)
	ctx := context.Background()
	_, base := e.handle(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"score": 50})
	})
	e.provider(t, providerSpec{types: []string{"hash_sha256"}, steps: []map[string]any{{"name": "get", "url": base + "/h/{{indicator.value}}"}},
		extract: map[string]string{"score": "score"},
		malice:  map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 40, "verdict": "Suspicious"}}}})
	sha := strings.Repeat(strings.ReplaceAll(uuid.NewString(), "-", ""), 2)
	now := time.Now().UTC().Truncate(time.Microsecond)
	before := store.Indicator{UUID: uuid.New(), Type: "hash_sha256", Value: sha, FirstSeen: now, LastSeen: now, Malice: "Pending", CreatedAt: now, UpdatedAt: now}
	_, err := e.st.DB().NewInsert().Model(&before).Exec(ctx)
	require.NoError(t, err)

	id, err := temporal.StartEnrichIndicator(ctx, e.c, e.queues, before.UUID)
	require.NoError(t, err)
	require.Equal(t, "enrich-indicator-"+before.UUID.String(), id)
	require.NoError(t, e.c.GetWorkflow(ctx, id, "").Get(ctxFor(t, 30*time.Second), nil))

	after, err := e.st.GetIndicator(ctx, before.UUID)
	require.NoError(t, err)
	require.True(t, after.IsEnriched)
	require.Equal(t, "Suspicious", after.Malice)
	require.False(t, after.LastSeen.Before(before.LastSeen))
	require.NotEmpty(t, after.EnrichmentResults)

	// An analyst override is sticky: a later enrichment does not change malice.
	_, err = e.st.DB().NewUpdate().Table("indicators").Set("malice = 'Benign', malice_overridden_at = now()").Where("uuid = ?", before.UUID).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, e.st.RecordEnrichment(ctx, nil, []store.IndicatorEnrichment{{IndicatorUUID: before.UUID,
		Results: map[string]any{"other": map[string]any{"success": true, "malice": "Malicious"}}}}))
	after, err = e.st.GetIndicator(ctx, before.UUID)
	require.NoError(t, err)
	require.Equal(t, "Benign", after.Malice)
}

func TestProviders_AuthConfigIsCiphertext(t *testing.T) {
	e := enrichHarness(t)
	const secret = "very-secret-credential-xyz"
	name := e.provider(t, providerSpec{authType: store.AuthAPIKey, authConfig: map[string]string{"api_key": secret},
		steps: []map[string]any{{"name": "get", "url": e.baseURL + "/none"}}})
	var raw []byte
	require.NoError(t, e.st.DB().NewSelect().Table("enrichment_providers").Column("auth_config_sealed").
		Where("provider_name = ?", name).Scan(context.Background(), &raw))
	require.NotEmpty(t, raw)
	require.NotContains(t, string(raw), secret)
	var opened map[string]string
	require.NoError(t, e.box.OpenJSON(raw, &opened))
	require.Equal(t, secret, opened["api_key"])
}

func TestSeedBuiltinProviders_IdempotentAndKeepsUserChanges(t *testing.T) {
	e := enrichHarness(t)
	ctx := context.Background()
	vt, err := e.st.GetProviderByName(ctx, "virustotal")
	require.NoError(t, err)
	vt.IsActive, vt.DefaultCacheTTLSeconds = false, 123
	require.NoError(t, e.st.UpdateProvider(ctx, &vt, "is_active", "default_cache_ttl_seconds"))
	require.NoError(t, builtins.SeedProviders(ctx, e.st))
	require.NoError(t, builtins.SeedProviders(ctx, e.st))
	again, err := e.st.GetProviderByName(ctx, "virustotal")
	require.NoError(t, err)
	require.Equal(t, vt.UUID, again.UUID)
	require.False(t, again.IsActive)
	require.Equal(t, 123, again.DefaultCacheTTLSeconds)
	builtin := true
	ps, total, err := e.st.ListProviders(ctx, store.ProviderFilter{IsBuiltin: &builtin})
	require.NoError(t, err)
	defs, err := builtins.Providers()
	require.NoError(t, err)
	require.Equal(t, len(defs), total)
	covered := map[string]bool{}
	for _, p := range ps {
		for _, typ := range p.SupportedIndicatorTypes {
			covered[typ] = true
		}
	}
	for _, typ := range []string{"ip", "domain", "hash_md5", "hash_sha1", "hash_sha256", "url", "email", "account"} {
		require.True(t, covered[typ], "builtins cover %s", typ)
	}
	sys := true
	exts, _, err := e.st.ListFieldExtractions(ctx, store.FieldExtractionFilter{ProviderName: "abuseipdb", IsSystem: &sys})
	require.NoError(t, err)
	require.NotEmpty(t, exts)
	vt.IsActive = true
	require.NoError(t, e.st.UpdateProvider(ctx, &vt, "is_active"))
}

func TestReserveProviderSlot_SpacingAndDailyQuota(t *testing.T) {
	e := enrichHarness(t)
	ctx := context.Background()
	name := "slot_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	quota := 3
	limit := store.RateLimit{Requests: 10, PerSeconds: 1, DailyQuota: &quota}
	var slots []time.Time
	var now time.Time
	for range 4 {
		s, n, err := e.st.ReserveProviderSlot(ctx, name, limit)
		require.NoError(t, err)
		slots = append(slots, s)
		now = n
	}
	require.False(t, slots[0].Before(now.Add(-time.Second)))
	require.Equal(t, 100*time.Millisecond, slots[1].Sub(slots[0]))
	require.Equal(t, 100*time.Millisecond, slots[2].Sub(slots[1]))
	y, m, d := slots[2].UTC().Date()
	require.Equal(t, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC), slots[3], "the 4th request of the day waits for the next UTC day")

	// No limit: now. Concurrent reservations never share a slot.
	s, n, err := e.st.ReserveProviderSlot(ctx, name+"_free", store.RateLimit{})
	require.NoError(t, err)
	require.Equal(t, n, s)
	var mu sync.Mutex
	seen := map[time.Time]bool{}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			s, _, err := e.st.ReserveProviderSlot(ctx, name+"_conc", store.RateLimit{Requests: 100, PerSeconds: 1})
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			require.False(t, seen[s], "slot %v handed out twice", s)
			seen[s] = true
		})
	}
	wg.Wait()
}

func TestRegister_EnrichmentQueues(t *testing.T) {
	acts := &activities.Activities{}
	enrich, pipeline := &recorder{}, &recorder{}
	temporal.Register(temporal.QueueEnrichment, enrich, acts)
	temporal.Register(temporal.QueuePipeline, pipeline, acts)
	require.Subset(t, enrich.workflows, []string{"ProviderCall", "EnrichIndicator"})
	require.Subset(t, enrich.activities, []string{"EnrichPlan", "EnrichStep", "EnrichRecord"})
	// The pipeline calls EnrichIndicators inline: its worker runs the local activities, the first
	// (local) attempt of each HTTP step among them; regular step attempts go to the enrichment queue.
	require.Subset(t, pipeline.activities, []string{"EnrichPlan", "EnrichRecord", "EnrichStep"})
}

func TestWorkflowIDs(t *testing.T) {
	id := uuid.MustParse("6c1f0a43-0d2b-4a53-9d3c-1b6f0c1de001")
	require.Equal(t, "enrich-virustotal-6c1f0a43-0d2b-4a53-9d3c-1b6f0c1de001", ids.ProviderCall("virustotal", id))
	require.Equal(t, "enrich-indicator-6c1f0a43-0d2b-4a53-9d3c-1b6f0c1de001", ids.EnrichIndicator(id))
	a, b := ids.AdHocProviderCall("okta"), ids.AdHocProviderCall("okta")
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "enrich-okta-adhoc-"))
}

func TestEnrichmentCache_TTLAndPurge(t *testing.T) {
	e := enrichHarness(t)
	ctx := context.Background()
	name := "cache_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	put := func(value string, result map[string]any, ttl time.Duration) error {
		return e.st.RecordEnrichment(ctx, []store.CacheEntry{{Provider: name, Type: "ip", Value: value, Result: result, TTL: ttl}}, nil)
	}
	require.NoError(t, put("1.1.1.1", map[string]any{"success": true}, time.Hour))
	require.NoError(t, put("2.2.2.2", map[string]any{"success": true}, time.Millisecond))
	require.NoError(t, put("3.3.3.3", map[string]any{"success": true}, 0), "ttl 0 stores nothing")
	time.Sleep(5 * time.Millisecond)
	hit, ok, err := e.st.GetCachedResult(ctx, name, "ip", "1.1.1.1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, true, hit.Result["success"])
	for _, v := range []string{"2.2.2.2", "3.3.3.3", "4.4.4.4"} {
		_, ok, err := e.st.GetCachedResult(ctx, name, "ip", v)
		require.NoError(t, err)
		require.False(t, ok, v)
	}
	// Overwrite refreshes the entry.
	require.NoError(t, put("1.1.1.1", map[string]any{"success": false}, time.Hour))
	hit, _, err = e.st.GetCachedResult(ctx, name, "ip", "1.1.1.1")
	require.NoError(t, err)
	require.Equal(t, false, hit.Result["success"])
	n, err := e.st.PurgeExpiredCache(ctx, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	var left int
	require.NoError(t, e.st.DB().NewSelect().Table("enrichment_cache").ColumnExpr("count(*)").Where("provider_name = ?", name).Scan(ctx, &left))
	require.Equal(t, 1, left)
}
