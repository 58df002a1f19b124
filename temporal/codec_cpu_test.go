package temporal_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/kit/payloadcodec"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
)

var codecCPUAlerts = flag.Int("codec-cpu-alerts", 0, "TestPipelineCPU_Codec: alerts per round (0 skips the measurement)")
var codecCPURounds = flag.Int("codec-cpu-rounds", 3, "TestPipelineCPU_Codec: rounds, each running both modes")

// TestPipelineCPU_Codec measures this process's CPU seconds per enriched alert (ingest through the
// API, dispatcher, worker, a loopback provider: everything but Postgres and the Temporal server)
// with the AES-256-GCM payload codec and with a codec that changes nothing, alternating the two in
// one run so that both see the same machine. docs/PERFORMANCE.md "Temporal payload codec":
//
//	go test ./temporal -count=1 -run TestPipelineCPU_Codec -codec-cpu-alerts=200 -codec-cpu-rounds=3 -v
func TestPipelineCPU_Codec(t *testing.T) {
	n := *codecCPUAlerts
	if n == 0 {
		t.Skip("a measurement: run with -codec-cpu-alerts=N (docs/PERFORMANCE.md)")
	}
	e := pipelineHarness(t)
	e.killDispatcher()
	e.killWorker()
	t.Cleanup(func() { e.startWorker(); e.startDispatcher(e.c) })

	secret := make([]byte, payloadcodec.KeySize)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	aes, err := payloadcodec.New([]payloadcodec.Key{{ID: "cpu", Secret: secret}})
	require.NoError(t, err)
	counted := &countingCodec{inner: aes}
	modes := []struct {
		name  string
		codec converter.PayloadCodec
	}{{"aes-gcm", counted}, {"identity", identityCodec{}}}
	clients := make([]client.Client, len(modes))
	for i, m := range modes {
		c, err := temporal.Dial(context.Background(), temporal.Config{HostPort: testenv.TemporalAddress(t), Codec: m.codec}, e.log)
		require.NoError(t, err)
		t.Cleanup(c.Close)
		clients[i] = c
	}
	var hits atomic.Int32
	e.provider(t, e.handle(scoreHandler(&hits, func(string) int { return 10 })), 5, "ip")

	round := func(mode int, prefix string) float64 {
		queues := temporal.NewQueues(prefix)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = temporal.RunWorkers(ctx, clients[mode], queues, e.acts, e.log)
		}()
		stopDispatcher := runDispatcher(temporal.NewDispatcher(e.st, clients[mode], queues, e.log,
			temporal.DispatcherOptions{Poll: 50 * time.Millisecond, StartLimit: 2 * time.Second}))
		defer func() { stopDispatcher(); cancel(); <-done }()

		before := cpuSeconds(t)
		ids := make([]string, 0, n)
		for i := range n {
			ips := freshIPs(2)
			id := e.ingest(t, "generic", fmt.Sprintf(`{"title":"cpu %s %d","severity":"High","indicators":[{"type":"ip","value":%q},{"type":"ip","value":%q}]}`,
				modes[mode].name, i, ips[0], ips[1]))
			ids = append(ids, id.String())
		}
		deadline := time.Now().Add(5 * time.Minute)
		for e.count(t, "SELECT count(*) FROM alerts WHERE uuid::text IN (?) AND enrichment_status = ?", bun.In(ids), store.EnrichmentEnriched) < n {
			require.True(t, time.Now().Before(deadline), "%s: alerts not enriched within 5 minutes", modes[mode].name)
			time.Sleep(50 * time.Millisecond)
		}
		return cpuSeconds(t) - before
	}

	cpu := make([]float64, len(modes))
	perRound := make([][]float64, len(modes))
	for r := range *codecCPURounds {
		for k := range modes {
			mode := (k + r) % len(modes) // alternate which mode goes first
			s := round(mode, fmt.Sprintf("%s-cpu-%d-%d", testenv.TaskQueuePrefix(t), r, mode))
			cpu[mode] += s
			perRound[mode] = append(perRound[mode], 1000*s/float64(n))
		}
	}
	alerts := float64(n * *codecCPURounds)
	with, without := 1000*cpu[0]/alerts, 1000*cpu[1]/alerts
	report, _ := json.Marshal(map[string]any{"alerts_per_mode": int(alerts), "rounds": *codecCPURounds,
		"cpu_ms_per_enriched_alert":  map[string]float64{"aes-gcm": round2(with), "identity": round2(without)},
		"per_round_ms":               map[string][]float64{"aes-gcm": perRound[0], "identity": perRound[1]},
		"codec_over_identity":        round2(with / without),
		"payloads_encoded_per_alert": round2(float64(counted.encoded.Load()) / alerts),
		"payloads_decoded_per_alert": round2(float64(counted.decoded.Load()) / alerts)})
	t.Log(string(report))
	require.LessOrEqual(t, with/without, 1.10, "the codec costs more than 10%% CPU per enriched alert: %s", report)
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// cpuSeconds is this process's user and system CPU time so far.
func cpuSeconds(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// identityCodec changes nothing: the "without" side of the measurement (never a Vigil client's codec).
type identityCodec struct{}

func (identityCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) { return p, nil }
func (identityCodec) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) { return p, nil }

// countingCodec counts the payloads its codec encodes and decodes.
type countingCodec struct {
	inner            converter.PayloadCodec
	encoded, decoded atomic.Int64
}

func (c *countingCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	c.encoded.Add(int64(len(p)))
	return c.inner.Encode(p)
}

func (c *countingCodec) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	c.decoded.Add(int64(len(p)))
	return c.inner.Decode(p)
}
