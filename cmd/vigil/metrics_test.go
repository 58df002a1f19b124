package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/temporal"
)

func TestMetricsAndTemporalConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Empty(t, cfg.MetricsAddr, "metrics are off unless METRICS_ADDR is set")
	require.Equal(t, temporal.WorkerTuning{WorkflowTaskPollers: 2, ActivityTaskPollers: 2, MaxConcurrentWorkflowTasks: 1000,
		MaxConcurrentActivities: 1000, MaxConcurrentLocalActs: 1000}, cfg.WorkerTuning, "defaults are the SDK's")
	require.Equal(t, temporal.Config{}, cfg.Temporal)

	cert, key, ca := writeTestCert(t)
	cfg, err = loadConfig(envOf(map[string]string{"METRICS_ADDR": "127.0.0.1:9464", "TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": key,
		"TEMPORAL_TLS_CA": ca, "TEMPORAL_TLS_SERVER_NAME": "ns.tmprl.cloud", "TEMPORAL_API_KEY": "tk-1", "TEMPORAL_ADDRESS": "ns.tmprl.cloud:7233",
		"TEMPORAL_NAMESPACE": "ns.acct", "TEMPORAL_WORKER_WORKFLOW_TASK_POLLERS": "8", "TEMPORAL_WORKER_ACTIVITY_TASK_POLLERS": "16",
		"TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS": "50", "TEMPORAL_WORKER_MAX_CONCURRENT_ACTIVITIES": "200",
		"TEMPORAL_WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES": "300"}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9464", cfg.MetricsAddr)
	require.Equal(t, temporal.WorkerTuning{WorkflowTaskPollers: 8, ActivityTaskPollers: 16, MaxConcurrentWorkflowTasks: 50,
		MaxConcurrentActivities: 200, MaxConcurrentLocalActs: 300}, cfg.WorkerTuning)
	_, err = temporalConfig(cfg, nil)
	require.ErrorContains(t, err, "TEMPORAL_PAYLOAD_KEYS or ENCRYPTION_KEY", "no client without its payload codec")
	cfg.EncryptionKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	tc, err := temporalConfig(cfg, nil)
	require.NoError(t, err)
	require.NotNil(t, tc.Codec)
	tc.Codec = nil
	require.Equal(t, temporal.Config{HostPort: "ns.tmprl.cloud:7233", Namespace: "ns.acct", TaskQueuePrefix: "vigil",
		TLSCertFile: cert, TLSKeyFile: key, TLSCAFile: ca, TLSServerName: "ns.tmprl.cloud", APIKey: "tk-1"}, tc)
	tc, err = temporalConfig(cfg, nil)
	require.NoError(t, err)
	// The files parse into a client (lazy: nothing is dialled).
	c, err := temporal.DialLazy(tc, nil)
	require.NoError(t, err)
	c.Close()
	penv, err := providerEnv(envOf(map[string]string{"TEMPORAL_API_KEY": "tk-1"}), []string{"TEMPORAL_API_KEY"})
	require.NoError(t, err)
	require.Empty(t, penv("TEMPORAL_API_KEY"), "never readable by providers, not even when allow-listed")

	for name, env := range map[string]map[string]string{
		"cert without key":        {"TEMPORAL_TLS_CERT": cert},
		"key without cert":        {"TEMPORAL_TLS_KEY": key},
		"one workflow poller":     {"TEMPORAL_WORKER_WORKFLOW_TASK_POLLERS": "1"},
		"zero activities":         {"TEMPORAL_WORKER_MAX_CONCURRENT_ACTIVITIES": "0"},
		"not a number":            {"TEMPORAL_WORKER_ACTIVITY_TASK_POLLERS": "many"},
		"huge local activities":   {"TEMPORAL_WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES": "1e9"},
		"negative workflow tasks": {"TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS": "-3"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(envOf(env))
			require.Error(t, err)
		})
	}
	// Files that do not hold what they should fail the client, naming the problem.
	notPEM := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for name, bad := range map[string]temporal.Config{
		"missing cert file": {HostPort: "x:1", TLSCertFile: notPEM + ".nope", TLSKeyFile: key, Codec: tc.Codec},
		"junk cert":         {HostPort: "x:1", TLSCertFile: notPEM, TLSKeyFile: key, Codec: tc.Codec},
		"junk CA":           {HostPort: "x:1", TLSCAFile: notPEM, Codec: tc.Codec},
		"missing CA":        {HostPort: "x:1", TLSCAFile: notPEM + ".nope", Codec: tc.Codec},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := temporal.DialLazy(bad, nil)
			require.ErrorContains(t, err, "temporal TLS")
		})
	}
	// A taken METRICS_ADDR fails the start.
	taken := freeAddr(t)
	ln, err := net.Listen("tcp", taken)
	require.NoError(t, err)
	defer ln.Close()
	for _, addr := range []string{taken, "no-port", "127.0.0.1:99999", "[::1", "example.invalid:9464"} {
		_, err = newProcessMetrics(config{MetricsAddr: addr}, nil)
		require.ErrorContains(t, err, "METRICS_ADDR", addr)
	}
}

// TestMetricsEndpoints runs `vigil api` and `vigil worker` with METRICS_ADDR, ingests an alert until
// its pipeline completes, and scrapes both: the API's request, ingest-ack and outbox metrics, the
// worker's Temporal SDK latencies (a generic alert with no provider configured runs local
// activities only, so regular-activity latencies are not asserted) and pipelines in flight; the
// public listener has no /metrics.
func TestMetricsEndpoints(t *testing.T) {
	apiAddr, apiMetrics, workerMetrics := freeAddr(t), freeAddr(t), freeAddr(t)
	base := map[string]string{
		"DATABASE_URL":               testenv.DatabaseURL(t),
		"TEMPORAL_ADDRESS":           testenv.TemporalAddress(t),
		"TEMPORAL_TASK_QUEUE_PREFIX": testenv.TaskQueuePrefix(t) + "-metrics",
		"API_ADDR":                   apiAddr,
		"ENCRYPTION_KEY":             "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"LOG_LEVEL":                  "error",
	}
	apiEnv, workerEnv := maps.Clone(base), maps.Clone(base)
	apiEnv["METRICS_ADDR"], workerEnv["METRICS_ADDR"] = apiMetrics, workerMetrics
	key, _ := createKey(t, envOf(base), "--name", "metrics", "--scopes", "admin")
	serve(t, envOf(apiEnv), "api")
	serve(t, envOf(workerEnv), "worker")
	api := "http://" + apiAddr
	waitHealthy(t, api)

	body := fmt.Sprintf(`{"source_name":"generic","payload":{"title":"metrics %s","severity":"High","src_ip":"198.51.100.7"}}`, uuid.NewString())
	req, _ := http.NewRequest(http.MethodPost, api+"/v1/alerts", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	for _, p := range []string{"/v1/alerts/" + uuid.NewString(), "/no/such/" + uuid.NewString()} {
		req, _ := http.NewRequest(http.MethodGet, api+p, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}

	resp, err = http.Get(api + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no /metrics on the public listener")

	apiText := vigilLines(scrape(t, "http://"+apiMetrics+"/metrics"))
	require.Contains(t, apiText, `vigil_http_requests_total{method="POST",route="/v1/alerts",status="202"} 1`)
	require.Contains(t, apiText, `vigil_http_requests_total{method="GET",route="/v1/alerts/:uuid",status="404"} 1`)
	require.Contains(t, apiText, `vigil_http_requests_total{method="GET",route="unmatched",status="404"} 2`, "/no/such/... and /metrics on the public listener")
	require.NotContains(t, apiText, "/no/such/", "raw paths never become labels")
	require.Contains(t, apiText, `vigil_http_request_duration_seconds_bucket{method="POST",route="/v1/alerts",le="0.2"}`)
	require.Contains(t, apiText, `vigil_ingest_acks_total{outcome="queued",source="generic"} 1`)
	require.Contains(t, apiText, "vigil_queue_stats_up 1")
	require.Regexp(t, `(?m)^vigil_outbox_depth \d+$`, apiText)
	require.Regexp(t, `(?m)^vigil_outbox_oldest_age_seconds [0-9.e+-]+$`, apiText)
	require.Regexp(t, `(?m)^vigil_approvals_waiting \d+$`, apiText)

	// A probe workflow runs a regular activity on the actions queue (the pipeline of an alert with no
	// provider configured runs local activities only).
	runProbe(t, envOf(workerEnv))

	// The worker's SDK metrics appear once the pipeline ran (tally flushes every second).
	var w string
	ok := assert.Eventually(t, func() bool {
		w = tryScrape("http://" + workerMetrics + "/metrics")
		return strings.Contains(w, "temporal_workflow_task_execution_latency_seconds_bucket") &&
			strings.Contains(w, "temporal_workflow_task_schedule_to_start_latency_seconds_bucket") &&
			strings.Contains(w, "temporal_local_activity_execution_latency_seconds_bucket") &&
			strings.Contains(w, "temporal_activity_execution_latency_seconds_bucket") &&
			strings.Contains(w, "temporal_activity_schedule_to_start_latency_seconds_bucket") &&
			strings.Contains(w, "temporal_workflow_endtoend_latency_seconds_bucket") &&
			metricValue(w, "temporal_workflow_completed_total", `workflow_type="AlertPipeline"`) >= 1
	}, 60*time.Second, 250*time.Millisecond)
	require.True(t, ok, "temporal metrics: %s", metricNames(w, "temporal_"))
	w = scrape(t, "http://"+workerMetrics+"/metrics")
	require.Contains(t, w, "vigil_pipelines_max_in_flight 256")
	require.Contains(t, w, "vigil_pipelines_in_flight_up 1")
	require.Regexp(t, `(?m)^vigil_pipelines_in_flight \d+$`, w)
	require.Contains(t, w, "vigil_outbox_stale_starts_total 0")
	require.GreaterOrEqual(t, metricValue(w, "vigil_alert_enrichment_lag_seconds_count"), 1.0, "the alert's pipeline finish")
	require.Contains(t, w, "vigil_agent_delivery_lag_seconds_count 0", "no agent registered")
	require.NotContains(t, w, "vigil_http_requests_total", "the worker serves no API")
}

// vigilLines keeps the vigil_ samples of a scrape (short failure messages).
func vigilLines(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "vigil_") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// tryScrape is scrape for polling: "" when the endpoint does not answer yet.
func tryScrape(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricNames lists the metric families of a scrape whose names start with prefix.
func metricNames(text, prefix string) []string {
	var names []string
	for _, l := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(l, "# TYPE "); ok && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names
}

func scrape(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	return string(b)
}

// metricValue sums the samples of name whose labels contain every label in match (`k="v"`).
func metricValue(text, name string, match ...string) float64 {
	var sum float64
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.e+-]+)$`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		ok := true
		for _, l := range match {
			ok = ok && strings.Contains(m[1], l)
		}
		if v, err := strconv.ParseFloat(m[2], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// writeTestCert writes a self-signed certificate, its key and (the same certificate as) a CA file.
func writeTestCert(t *testing.T) (cert, key, ca string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(priv)
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key, ca = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"), filepath.Join(dir, "ca.pem")
	var cb, kb bytes.Buffer
	require.NoError(t, pem.Encode(&cb, &pem.Block{Type: "CERTIFICATE", Bytes: der}))
	require.NoError(t, pem.Encode(&kb, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, os.WriteFile(cert, cb.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(key, kb.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(ca, cb.Bytes(), 0o600))
	return cert, key, ca
}

// TestTemporalTLSAndAPIKey dials a loopback gRPC server that requires a client certificate: the
// client presents TEMPORAL_TLS_CERT, verifies the server with TEMPORAL_TLS_CA, and sends
// TEMPORAL_API_KEY as its bearer token, as Temporal Cloud expects.
func TestTemporalTLSAndAPIKey(t *testing.T) {
	cert, key, ca := writeTestCert(t)
	pair, err := tls.LoadX509KeyPair(cert, key)
	require.NoError(t, err)
	pem, err := os.ReadFile(ca)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))

	type seen struct {
		clientCN string
		auth     []string
	}
	calls := make(chan seen, 16)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12})),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var s seen
			if p, ok := peer.FromContext(stream.Context()); ok {
				if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
					s.clientCN = info.State.PeerCertificates[0].Subject.CommonName
				}
			}
			md, _ := metadata.FromIncomingContext(stream.Context())
			s.auth = md.Get("authorization")
			calls <- s
			return status.Error(codes.PermissionDenied, "test server")
		}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	cfg, err := loadConfig(envOf(map[string]string{"TEMPORAL_ADDRESS": ln.Addr().String(), "TEMPORAL_TLS_CERT": cert,
		"TEMPORAL_TLS_KEY": key, "TEMPORAL_TLS_CA": ca, "TEMPORAL_API_KEY": "tk-secret", "ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tcfg, err := temporalConfig(cfg, nil)
	require.NoError(t, err)
	_, err = temporal.Dial(ctx, tcfg, nil)
	require.Error(t, err, "the test server refuses every call")
	select {
	case s := <-calls:
		require.Equal(t, "vigil-test", s.clientCN, "the client presented TEMPORAL_TLS_CERT")
		require.Equal(t, []string{"Bearer tk-secret"}, s.auth)
	case <-time.After(10 * time.Second):
		t.Fatal("no call reached the TLS server")
	}
}
