package temporal_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/vigil-soc/vigil/activities"
	"github.com/vigil-soc/vigil/api"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/alerts"
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/ids"
	"github.com/vigil-soc/vigil/kit/metrics"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/ratelimit"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/kit/sources"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/workflows"
)

// pipeEnv is the alert-pipeline harness: the real API on a loopback listener, a worker polling the
// pipeline and enrichment queues and a dispatcher, both restartable (fault tests stop them), and a
// loopback provider server that is the SSRF guard's only exception.
type pipeEnv struct {
	st      *store.Store
	box     *secretbox.Box
	c       client.Client
	queues  temporal.Queues
	apiURL  string
	key     string // alerts:read + alerts:write + enrichments:read
	baseURL string
	routes  sync.Map // path prefix → http.HandlerFunc
	acts    *activities.Activities
	agents  *agents.Service
	cases   *cases.Service       // the cases' rule owner (grouping tests open and close cases through it)
	log     *slog.Logger         // warnings and errors of the worker, dispatcher and SDK, for failing runs
	reg     *prometheus.Registry // the worker's own metrics (acts.Freshness)

	mu             sync.Mutex
	stopWorker     func()
	stopDispatcher func()
}

var (
	pipeOnce   sync.Once
	sharedPipe *pipeEnv
	pipeErr    error
)

func pipelineHarness(t *testing.T) *pipeEnv {
	t.Helper()
	dsn := testenv.DatabaseURL(t)
	addr := testenv.TemporalAddress(t)
	prefix := testenv.TaskQueuePrefix(t) + "-pipe"
	codec := testenv.PayloadCodec(t)
	pipeOnce.Do(func() { sharedPipe, pipeErr = startPipeEnv(dsn, addr, prefix, codec) })
	require.NoError(t, pipeErr)
	sharedPipe.startWorker()
	sharedPipe.startDispatcher(sharedPipe.c)
	return sharedPipe
}

func startPipeEnv(dsn, addr, prefix string, codec converter.PayloadCodec) (*pipeEnv, error) {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	reg := sources.NewRegistry()
	if err := builtins.SeedSources(ctx, st, reg); err != nil {
		return nil, err
	}
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		return nil, err
	}
	e := &pipeEnv{st: st, box: box, queues: temporal.NewQueues(prefix),
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if e.c, err = temporal.Dial(ctx, temporal.Config{HostPort: addr, Codec: codec}, e.log); err != nil {
		return nil, err
	}
	if err := temporal.RegisterSearchAttributes(ctx, e.c, ""); err != nil {
		return nil, err
	}
	provLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.baseURL = "http://" + provLn.Addr().String()
	go func() {
		_ = (&http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
			if h, ok := e.routes.Load(p); ok {
				h.(http.HandlerFunc)(w, r)
				return
			}
			http.NotFound(w, r)
		})}).Serve(provLn)
	}()
	guard := netguard.NewGuard([]string{provLn.Addr().String()})
	e.agents = agents.New(st, box, guard, agents.NewHTTPClient(guard))
	e.cases = cases.New(st, alerts.New(st, slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
	e.reg = metrics.NewRegistry()
	e.acts = &activities.Activities{Pipeline: st, Freshness: metrics.NewWorker(e.reg), CaseGroupingWindow: 24 * time.Hour,
		MaxIndicatorsPerAlert: pipeMaxIndicators,
		Enrichment: &enrichment.EngineDeps{Store: st, Box: box, HTTP: guard.HTTPClient(time.Minute),
			// A short cool-down so the outage test sees the circuit probe and close within seconds.
			Circuit: store.CircuitPolicy{Failures: 3, Cooldown: 2 * time.Second, ProbeFor: 15 * time.Second}},
		AgentEvents: &activities.AgentEventDeps{Store: st, Payloads: agents.NewPayloads(st, "http://vigil.test"), Deliverer: e.agents}}

	ingestSvc := ingest.New(st, reg, box, 24*time.Hour)
	srv := api.New(api.Config{RateLimitPerMinute: 1_000_000, AlertDedupWindow: 24 * time.Hour}, api.Deps{
		Log: slog.New(slog.DiscardHandler), Auth: auth.NewAuthenticator(st, slog.New(slog.DiscardHandler), 0),
		Limiter: ratelimit.NewMemory(), APIKeys: st, Audit: st, DetectionRules: st, ContextDocuments: st,
		SourceRegistry: reg, Secrets: box, Sources: st, Integrations: st, Alerts: st, Indicators: st, Mappings: st,
		Ingest: ingestSvc, Config: config.NewOwners(st, reg, box, ingestSvc),
		Agents: e.agents, AgentStore: st, AlertRules: alerts.New(st, slog.New(slog.DiscardHandler)),
		Responses: responses.New(responses.Deps{Store: st, Log: slog.New(slog.DiscardHandler)}),
	})
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.App().Listener(apiLn) }()
	e.apiURL = "http://" + apiLn.Addr().String()
	k, plain, err := apikeys.Build(apikeys.Fields{Name: "pipeline-tests", Scopes: []string{auth.ScopeAlertsRead, auth.ScopeAlertsWrite,
		auth.ScopeEnrichmentsRead, auth.ScopeAgentsWrite}})
	if err != nil {
		return nil, err
	}
	if err := st.CreateAPIKey(ctx, &k); err != nil {
		return nil, err
	}
	e.key = plain
	return e, nil
}

// startWorker runs the worker unless it runs already.
func (e *pipeEnv) startWorker() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopWorker != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = temporal.RunWorkers(ctx, e.c, e.queues, e.acts, e.log)
	}()
	e.stopWorker = func() { cancel(); <-done }
}

func (e *pipeEnv) killWorker() {
	e.mu.Lock()
	stop := e.stopWorker
	e.stopWorker = nil
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// startDispatcher runs a dispatcher on c unless one runs already.
func (e *pipeEnv) startDispatcher(c client.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopDispatcher != nil {
		return
	}
	e.stopDispatcher = runDispatcher(temporal.NewDispatcher(e.st, c, e.queues, e.log,
		temporal.DispatcherOptions{Poll: 200 * time.Millisecond, StartLimit: 2 * time.Second}))
}

// runDispatcher runs d until the returned stop is called (which waits for it to return).
func runDispatcher(d *temporal.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	return func() { cancel(); <-done }
}

func (e *pipeEnv) killDispatcher() {
	e.mu.Lock()
	stop := e.stopDispatcher
	e.stopDispatcher = nil
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (e *pipeEnv) handle(h http.HandlerFunc) string {
	p := "p" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	e.routes.Store(p, h)
	return e.baseURL + "/" + p
}

// provider creates an active provider for types whose single step GETs url/<value> with a step
// timeout; score ≥ 80 is Malicious, else Benign. It is deactivated at cleanup.
func (e *pipeEnv) provider(t *testing.T, url string, stepTimeout int, types ...string) string {
	t.Helper()
	ctx := context.Background()
	name := "pipe_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	p := &store.EnrichmentProvider{ProviderName: name, DisplayName: name, IsActive: true, SupportedIndicatorTypes: types,
		HTTPConfig: map[string]any{"steps": []any{map[string]any{"name": "lookup", "url": url + "/{{indicator.value}}", "timeout_seconds": stepTimeout}}},
		AuthType:   store.AuthNone, DefaultCacheTTLSeconds: 1,
		MaliceRules: map[string]any{"rules": []any{map[string]any{"field": "score", "operator": ">=", "value": 80, "verdict": "Malicious"}}, "default_verdict": "Benign"}}
	require.NoError(t, e.st.CreateProvider(ctx, p))
	t.Cleanup(func() {
		p.IsActive = false
		_ = e.st.UpdateProvider(context.Background(), p, "is_active")
	})
	var exts []*store.FieldExtraction
	for _, typ := range types {
		exts = append(exts, &store.FieldExtraction{ProviderName: name, IndicatorType: typ, SourcePath: "score", TargetKey: "score", ValueType: "any", IsActive: true})
	}
	require.NoError(t, e.st.CreateFieldExtractions(ctx, exts))
	return name
}

func (e *pipeEnv) do(t *testing.T, method, path string, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.apiURL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	}
	return resp.StatusCode, m
}

func (e *pipeEnv) ingest(t *testing.T, source, body string) uuid.UUID {
	t.Helper()
	status, m := e.do(t, http.MethodPost, "/v1/ingest/"+source, body)
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	return uuid.MustParse(m["data"].(map[string]any)["alert_uuid"].(string))
}

// waitEnriched waits until the alert leaves Pending and returns it.
func (e *pipeEnv) waitEnriched(t *testing.T, id uuid.UUID, limit time.Duration) store.Alert {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		a, err := e.st.GetAlert(context.Background(), id)
		require.NoError(t, err)
		if a.EnrichmentStatus != store.EnrichmentPending {
			return a
		}
		require.True(t, time.Now().Before(deadline), "alert %s still Pending after %s", id, limit)
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *pipeEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.st.DB().NewRaw(query, args...).Scan(context.Background(), &n))
	return n
}

func (e *pipeEnv) waitEvents(t *testing.T, id uuid.UUID, eventType string, want int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = ?", id, eventType) < want {
		require.True(t, time.Now().Before(deadline), "%d %s events of %s not seen within %s", want, eventType, id, limit)
		time.Sleep(100 * time.Millisecond)
	}
}

func scoreHandler(hits *atomic.Int32, score func(value string) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		v := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"score": score(v)})
	}
}

// freshIPs returns n public-looking IPs not used before in this process (indicators are global: a
// repeated test must not find the previous run's enrichment on them).
func freshIPs(n int) []string {
	out := make([]string, n)
	for i := range out {
		k := ipSeq.Add(1)
		out[i] = fmt.Sprintf("185.%d.%d.%d", 100+k/65536%100, k/256%256, k%256)
	}
	return out
}

var ipSeq atomic.Int64

// recordPipelineHistory, when set, makes TestPipeline_IngestToEnriched write its first pipeline's
// history there (workflows/testdata/alert_pipeline_v<PipelineVersion>_history.json feeds the replay
// test):
//
//	go test ./temporal -run TestPipeline_IngestToEnriched -record-pipeline-history=$PWD/workflows/testdata/alert_pipeline_v3_history.json
var recordPipelineHistory = flag.String("record-pipeline-history", "", "write the first pipeline's Temporal history to this file")

func TestPipeline_IngestToEnriched(t *testing.T) {
	e := pipelineHarness(t)
	ips := freshIPs(4)
	bad, h1, h2, extraIP := ips[0], ips[1], ips[2], ips[3]
	dom := "evil-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8] + ".com"
	var hits atomic.Int32
	url := e.handle(scoreHandler(&hits, func(v string) int {
		if v == bad {
			return 95
		}
		return 10
	}))
	prov := e.provider(t, url, 5, "ip", "domain")
	// A pass-3 mapping with fan-out over the raw payload.
	ruleID := "rule-" + uuid.NewString()[:8]
	m := &store.IndicatorMapping{SourceName: ptr("generic"), FieldPath: "extra.hosts.*.addr", IndicatorType: "ip", ExtractionTarget: "raw_payload", IsActive: true}
	require.NoError(t, e.st.CreateIndicatorMapping(context.Background(), m))
	t.Cleanup(func() {
		_, _ = e.st.DB().NewRaw("DELETE FROM indicator_mappings WHERE uuid = ?", m.UUID).Exec(context.Background())
	})

	title := "pipeline " + uuid.NewString()
	body := fmt.Sprintf(`{"title":%q,"severity":"High","rule_id":%q,"src_ip":%q,"domain":%q,
		"extra":{"hosts":[{"addr":%q},{"addr":%q},{"addr":"not-an-ip"}]}}`, title, ruleID, bad, strings.ToUpper(dom), h1, h2)
	start := time.Now()
	id := e.ingest(t, "generic", body)
	a := e.waitEnriched(t, id, 60*time.Second)
	t.Logf("ingest → %s in %s", a.EnrichmentStatus, time.Since(start))
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	require.True(t, a.IsEnriched)
	require.NotNil(t, a.EnrichedAt)

	status, detail := e.do(t, http.MethodGet, "/v1/alerts/"+id.String(), "")
	require.Equal(t, http.StatusOK, status)
	d := detail["data"].(map[string]any)
	require.Equal(t, "Malicious", d["malice"], "the worst indicator verdict")
	values := map[string]map[string]any{}
	for _, x := range d["indicators"].([]any) {
		ind := x.(map[string]any)
		values[ind["type"].(string)+":"+ind["value"].(string)] = ind
	}
	for _, k := range []string{"ip:" + bad, "domain:" + dom, "ip:" + h1, "ip:" + h2} {
		require.Contains(t, values, k)
		require.Equal(t, true, values[k]["is_enriched"], k)
		res := values[k]["enrichment_results"].(map[string]any)[prov].(map[string]any)
		require.Equal(t, "success", res["status"], k)
		require.NotContains(t, res, "raw_response", "alert detail strips raw responses")
	}
	require.Equal(t, "Malicious", values["ip:"+bad]["malice"])
	require.Equal(t, "Benign", values["domain:"+dom]["malice"])
	rule := d["detection_rule"].(map[string]any)
	require.Equal(t, ruleID, rule["source_rule_id"])
	meta := detail["meta"].(map[string]any)
	require.Equal(t, false, meta["detection_rule_matched"], "a stub rule is not a match")
	require.Equal(t, []any{prov}, meta["enrichment"].(map[string]any)["succeeded"])
	require.Equal(t, float64(len(values)), meta["indicator_count"])
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_created'", id))
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'", id))
	require.Equal(t, 0, e.count(t, "SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?", id))

	// Each link says which passes found it and where (pass 3: the mapping's path; pass 4: the string's).
	status, li := e.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/indicators", "")
	require.Equal(t, http.StatusOK, status)
	byValue := map[string]any{}
	for _, x := range li["data"].([]any) {
		byValue[x.(map[string]any)["value"].(string)] = x.(map[string]any)["extracted_by"]
	}
	require.Equal(t, []any{map[string]any{"pass": float64(3), "field_path": "extra.hosts.*.addr"},
		map[string]any{"pass": float64(4), "field_path": "extra.hosts.0.addr"}}, byValue[h1])

	// Search attributes for the Temporal UI.
	desc, err := e.c.DescribeWorkflowExecution(context.Background(), ids.Alert(id), "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	for name, want := range map[string]string{"VigilAlertUUID": id.String(), "VigilSource": "generic", "VigilSeverity": "High"} {
		require.Contains(t, sa, name)
		require.Contains(t, string(sa[name].GetData()), want)
	}

	if *recordPipelineHistory != "" {
		require.NoError(t, e.c.GetWorkflow(context.Background(), ids.Alert(id), "").Get(context.Background(), nil))
		testenv.WriteHistory(t, e.c, ids.Alert(id), *recordPipelineHistory)
	}

	// A second alert with the same rule reference reuses the stub rule.
	id2 := e.ingest(t, "generic", fmt.Sprintf(`{"title":"%s second","rule_id":%q,"src_ip":%q}`, title, ruleID, bad))
	e.waitEnriched(t, id2, 60*time.Second)
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM detection_rules WHERE source_name = 'generic' AND source_rule_id = ?", ruleID))
	_, g := e.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/relationship-graph", "")
	found := false
	for _, x := range g["data"].(map[string]any)["indicators"].([]any) {
		for _, r := range x.(map[string]any)["related_alerts"].([]any) {
			found = found || r.(map[string]any)["uuid"] == id2.String()
		}
	}
	require.True(t, found, "the shared IP relates the two alerts")

	// Re-running the pipeline is safe: a new run, no new links, one more event.
	links := e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id)
	status, rr := e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/enrich", "")
	require.Equal(t, http.StatusAccepted, status)
	require.Equal(t, "alert-"+id.String(), rr["data"].(map[string]any)["workflow_id"])
	e.waitEvents(t, id, "alert_enriched", 2, 60*time.Second)
	require.Equal(t, links, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id))
	a, err = e.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)

	// Indicators added through the API are enriched by EnrichIndicator.
	status, add := e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/indicators", `{"indicators":[{"value":"`+extraIP+`"}]}`)
	require.Equal(t, http.StatusCreated, status, "%v", add)
	added := add["data"].(map[string]any)
	require.Equal(t, float64(1), added["added_count"])
	require.Equal(t, true, added["enrich_requested"])
	indID := uuid.MustParse(added["indicators"].([]any)[0].(map[string]any)["uuid"].(string))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ind, err := e.st.GetIndicator(context.Background(), indID)
		require.NoError(t, err)
		if ind.IsEnriched {
			require.Equal(t, "Benign", ind.Malice)
			break
		}
		require.True(t, time.Now().Before(deadline), "added indicator not enriched")
		time.Sleep(100 * time.Millisecond)
	}
}

// pipeMaxIndicators is the harness worker's MAX_INDICATORS_PER_ALERT (no other test links as many).
const pipeMaxIndicators = 40

// TestPipeline_CapsIndicatorsWithANote: pass 4 finds every address of a free-text field; the pipeline
// links the first MAX_INDICATORS_PER_ALERT and notes the rest on the alert, once, even after a re-run.
func TestPipeline_CapsIndicatorsWithANote(t *testing.T) {
	e := pipelineHarness(t)
	ips := freshIPs(pipeMaxIndicators + 5)
	body := fmt.Sprintf(`{"title":"cap %s","severity":"Low","notes":%q}`, uuid.NewString(), "seen: "+strings.Join(ips, ", "))
	id := e.ingest(t, "generic", body)
	e.waitEnriched(t, id, 60*time.Second)
	require.Equal(t, pipeMaxIndicators, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id))
	note := fmt.Sprintf("%d indicators found; the first %d in pass order are linked (MAX_INDICATORS_PER_ALERT)", len(ips), pipeMaxIndicators)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM alerts, jsonb_array_elements(normalized->'normalization_notes') AS n
		WHERE uuid = ? AND n->>'field' = 'indicators' AND n->>'note' = ?`, id, note))
	status, li := e.do(t, http.MethodGet, "/v1/alerts/"+id.String()+"/indicators", "")
	require.Equal(t, http.StatusOK, status)
	for _, x := range li["data"].([]any) {
		require.Equal(t, []any{map[string]any{"pass": float64(4), "field_path": "notes"}}, x.(map[string]any)["extracted_by"])
	}

	status, _ = e.do(t, http.MethodPost, "/v1/alerts/"+id.String()+"/enrich", "")
	require.Equal(t, http.StatusAccepted, status)
	e.waitEvents(t, id, "alert_enriched", 2, 60*time.Second)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM alerts, jsonb_array_elements(normalized->'normalization_notes') AS n
		WHERE uuid = ? AND n->>'field' = 'indicators'`, id), "a re-run adds the note once")
}

// A pipeline that finished is Enriched, with no provider to call and with every provider call failed
// (API.md §7: Failed only when the pipeline itself could not finish; pipeline version 5 — before it,
// every call failing made the alert Failed). The failed provider is named on the alert.
func TestPipeline_NoProvidersAndFailedProvidersStillEnriched(t *testing.T) {
	e := pipelineHarness(t)
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"no providers %s","url":"https://x.example/a"}`, uuid.NewString()))
	a := e.waitEnriched(t, id, 60*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus, "nothing to call is not a failure")

	url := e.handle(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
	e.provider(t, url, 2, "domain")
	id = e.ingest(t, "generic", fmt.Sprintf(`{"title":"failing provider %s","domain":"f-%s.com"}`, uuid.NewString(), uuid.NewString()[:8]))
	a = e.waitEnriched(t, id, 90*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	require.True(t, a.IsEnriched)
	require.NotNil(t, a.EnrichedAt)
	require.Equal(t, 0, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enrichment_failed'", id))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched' AND jsonb_array_length("references"->'providers_failed') = 1`, id))
}

func TestPipeline_WorkerStoppedMidPipeline(t *testing.T) {
	e := pipelineHarness(t)
	release := make(chan struct{})
	var hits atomic.Int32
	url := e.handle(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"score": 90}`))
	})
	e.provider(t, url, 3, "ip")
	ips := freshIPs(2)
	body := fmt.Sprintf(`{"title":"restart %s","src_ip":%q,"dest_ip":%q,"rule_id":"restart-rule"}`, uuid.NewString(), ips[0], ips[1])
	id := e.ingest(t, "generic", body)

	// The local activities ran (indicators linked) and a provider call is in flight: stop the worker.
	deadline := time.Now().Add(30 * time.Second)
	for hits.Load() == 0 {
		require.True(t, time.Now().Before(deadline), "provider never called")
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, 2, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id))
	e.killWorker()
	a, err := e.st.GetAlert(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.EnrichmentPending, a.EnrichmentStatus)

	close(release)
	time.Sleep(500 * time.Millisecond)
	e.startWorker()
	a = e.waitEnriched(t, id, 90*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'", id), "Enriched exactly once")
	require.Equal(t, 2, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid = ?", id), "no duplicate links")
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM indicators WHERE type = 'ip' AND value = ?", ips[0]))
	inds, err := e.st.AlertIndicators(context.Background(), id)
	require.NoError(t, err)
	for _, ind := range inds {
		require.True(t, ind.IsEnriched, ind.Value)
		require.Equal(t, "Malicious", ind.Malice)
	}
}

func TestPipeline_TemporalUnreachableAtIngest(t *testing.T) {
	e := pipelineHarness(t)
	// A second Temporal server that is not running yet, on a port reserved now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	lazy, err := temporal.DialLazy(temporal.Config{HostPort: fmt.Sprintf("127.0.0.1:%d", port), Codec: testenv.PayloadCodec(t)}, nil)
	require.NoError(t, err)
	defer lazy.Close()
	e.killDispatcher()
	defer e.startDispatcher(e.c)
	e.startDispatcher(lazy)

	began := time.Now()
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"temporal down %s","src_ip":%q}`, uuid.NewString(), freshIPs(1)[0]))
	require.Less(t, time.Since(began), time.Second, "the 202 does not wait for Temporal")
	deadline := time.Now().Add(30 * time.Second)
	for e.count(t, "SELECT count(*) FROM alert_outbox WHERE alert_uuid = ? AND attempts >= 1 AND last_error IS NOT NULL", id) == 0 {
		require.True(t, time.Now().Before(deadline), "the dispatcher never tried")
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?", id), "the row waits")

	// Temporal comes up: the waiting row is started there and the alert finishes.
	srv := startSecondTemporal(t, port)
	defer func() { _ = srv.Stop() }()
	second, err := temporal.Dial(context.Background(), temporal.Config{HostPort: srv.Address(), Codec: testenv.PayloadCodec(t)}, nil)
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, temporal.RegisterSearchAttributes(context.Background(), second, ""))
	wctx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		_ = temporal.RunWorkers(wctx, second, e.queues, e.acts, nil)
	}()
	defer func() { stopWorker(); <-workerDone }()
	a := e.waitEnriched(t, id, 120*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	require.Equal(t, 0, e.count(t, "SELECT count(*) FROM alert_outbox WHERE alert_uuid = ?", id))
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM activity_events WHERE alert_uuid = ? AND event_type = 'alert_enriched'", id))
	e.killDispatcher()
}

func ptr[T any](v T) *T { return &v }

// The link step and the enrichment record each commit once for many rows: concurrent pipelines of
// alerts sharing a new rule and indicators (listed in opposite orders) make one stub rule, link
// every alert, and neither deadlock nor lose an indicator's results.
func TestPipeline_LinkAndRecordConcurrently(t *testing.T) {
	e := pipelineHarness(t)
	ctx := context.Background()
	ref := store.RuleReference{SourceRuleID: "race-" + uuid.NewString(), Name: "Race rule"}
	ips := freshIPs(2)
	keys := []store.IndicatorKey{{Type: "ip", Value: ips[0]}, {Type: "ip", Value: ips[1]}}
	const n = 64
	alerts := make([]uuid.UUID, n)
	for i := range alerts {
		res, err := e.st.Ingest(ctx, store.IngestAlert{Title: "race", Severity: "Low", SourceName: "generic",
			Fingerprint: uuid.NewString(), RawPayload: []byte(`{}`), ActorType: store.ActorSystem}, 0)
		require.NoError(t, err)
		alerts[i] = res.AlertUUID
	}
	flip := func(i int, k []store.IndicatorKey) []store.IndicatorKey {
		if i%2 == 1 {
			return []store.IndicatorKey{k[1], k[0]}
		}
		return k
	}
	links := make([]store.Linked, n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i, id := range alerts {
		wg.Go(func() {
			var err error
			links[i], err = e.st.LinkExtraction(ctx, id, store.ExtractionLinks{Keys: flip(i, keys)}, "extraction", "generic", &ref)
			errs <- err
		})
	}
	wg.Wait()
	for range n {
		require.NoError(t, <-errs)
	}
	require.Equal(t, 1, e.count(t, "SELECT count(*) FROM detection_rules WHERE source_name = 'generic' AND source_rule_id = ? AND is_stub", ref.SourceRuleID))
	require.Equal(t, n, e.count(t, `SELECT count(*) FROM alerts WHERE uuid IN (?) AND detection_rule_id =
		(SELECT id FROM detection_rules WHERE source_name = 'generic' AND source_rule_id = ?)`, bun.List(alerts), ref.SourceRuleID))
	require.Equal(t, 2*n, e.count(t, "SELECT count(*) FROM alert_indicators WHERE alert_uuid IN (?)", bun.List(alerts)))
	inds := links[0].Indicators
	require.Len(t, inds, 2)

	// Half the passes write only cache entries, half only indicators (the cache rows would otherwise
	// serialise the passes before they reach the indicators), each half in both orders.
	for i := range n {
		wg.Go(func() {
			if i%4 < 2 {
				cache := []store.CacheEntry{{Provider: "race", Type: "ip", Value: ips[i%2], Result: map[string]any{"n": i}, TTL: time.Minute},
					{Provider: "race", Type: "ip", Value: ips[1-i%2], Result: map[string]any{"n": i}, TTL: time.Minute}}
				errs <- e.st.RecordEnrichment(ctx, cache, nil)
				return
			}
			recs := []store.IndicatorEnrichment{
				{IndicatorUUID: inds[i%2].UUID, Results: map[string]any{fmt.Sprintf("p%d", i): map[string]any{"success": true, "malice": "Suspicious"}}},
				{IndicatorUUID: inds[1-i%2].UUID, Results: map[string]any{fmt.Sprintf("p%d", i): map[string]any{"success": true, "malice": "Benign"}}},
				{IndicatorUUID: uuid.New()}, // deleted meanwhile: left out
			}
			errs <- e.st.RecordEnrichment(ctx, nil, recs)
		})
	}
	wg.Wait()
	for range n {
		require.NoError(t, <-errs)
	}
	got, err := e.st.GetIndicators(ctx, []uuid.UUID{inds[0].UUID, inds[1].UUID})
	require.NoError(t, err)
	for _, ind := range got {
		require.Len(t, ind.EnrichmentResults, n/2, "every pass's result kept")
		require.Equal(t, "Suspicious", ind.Malice)
		require.True(t, ind.IsEnriched)
	}
	for _, ip := range ips {
		_, ok, err := e.st.GetCachedResult(ctx, "race", "ip", ip)
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// recordFallbackHistory, when set, makes TestPipeline_LocalStepFallsBackToActivity write its
// pipeline's history there (workflows/testdata/alert_pipeline_v2_fallback_history.json).
var recordFallbackHistory = flag.String("record-fallback-history", "", "write the fallback pipeline's Temporal history to this file")

// A provider step whose local first attempt fails (HTTP 500) or overruns workflows.LocalStepBudget
// is retried as a regular activity on the enrichment queue, and the alert ends Enriched with the
// provider's result.
func TestPipeline_LocalStepFallsBackToActivity(t *testing.T) {
	e := pipelineHarness(t)
	ips := freshIPs(2)
	flaky, slow := ips[0], ips[1]
	var mu sync.Mutex
	seen := map[string]int{}
	url := e.handle(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		mu.Lock()
		seen[v]++
		n := seen[v]
		mu.Unlock()
		switch {
		case v == flaky && n == 1:
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		case v == slow && n == 1:
			time.Sleep(workflows.LocalStepBudget + enrichment.InlineSlotWait + 500*time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"score": 10}`))
	})
	prov := e.provider(t, url, 30, "ip")
	id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"fallback %s","src_ip":%q,"dest_ip":%q}`, uuid.NewString(), flaky, slow))
	a := e.waitEnriched(t, id, 60*time.Second)
	require.Equal(t, store.EnrichmentEnriched, a.EnrichmentStatus)
	require.True(t, providerSucceededOn(t, e, id, prov))
	mu.Lock()
	require.Equal(t, map[string]int{flaky: 2, slow: 2}, seen, "one local attempt and one activity attempt each")
	mu.Unlock()

	ctx := context.Background()
	it := e.c.GetWorkflowHistory(ctx, ids.Alert(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled, timers := 0, 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled++
			require.Equal(t, e.queues.Enrichment, ev.GetActivityTaskScheduledEventAttributes().GetTaskQueue().GetName())
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			timers++
		}
	}
	require.Equal(t, 2, scheduled, "one regular activity per fallen-back step")
	require.Equal(t, 2, timers, "the pause before each fallback")
	if *recordFallbackHistory != "" {
		testenv.WriteHistory(t, e.c, ids.Alert(id), *recordFallbackHistory)
	}
}
