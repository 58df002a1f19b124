package temporal_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
	"github.com/vigil-soc/vigil/temporal"
	"github.com/vigil-soc/vigil/temporal/payloadcodec"
)

var codecCPUAlerts = flag.Int("codec-cpu-alerts", 0, "TestPipelineCPU_Codec: alerts per round (0 skips the measurement)")
var codecCPURounds = flag.Int("codec-cpu-rounds", 3, "TestPipelineCPU_Codec: rounds, each running every mode")

// TestPipelineCPU_Codec measures this process's CPU seconds per enriched alert (ingest through the
// API, dispatcher, worker, a loopback provider: everything but Postgres and the Temporal server)
// with the AES-256-GCM payload codec and with a codec that changes nothing (twice: the second,
// identical, mode measures the noise of the comparison), rotating the three in one run so that all
// see the same machine (after one uncounted warm-up round each); then the codec
// alone, on the very payloads those rounds encoded and decoded. docs/PERFORMANCE.md "Temporal
// payload codec":
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
	}{{"aes-gcm", counted}, {"identity", identityCodec{}}, {"identity-control", identityCodec{}}}
	var hits atomic.Int32
	e.provider(t, e.handle(scoreHandler(&hits, func(string) int { return 10 })), 5, "ip")

	round := func(mode int, prefix string, n int) float64 {
		queues := temporal.NewQueues(prefix)
		// A client of its own per round (dialled before the CPU count starts): no mode keeps a
		// client, a connection or SDK state of earlier rounds.
		c, err := temporal.Dial(context.Background(), temporal.Config{HostPort: testenv.TemporalAddress(t), Codec: modes[mode].codec}, e.log)
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = temporal.RunWorkers(ctx, c, queues, e.acts, e.log)
		}()
		stopDispatcher := runDispatcher(temporal.NewDispatcher(e.st, c, queues, e.log,
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
		for e.count(t, "SELECT count(*) FROM alerts WHERE uuid::text IN (?) AND enrichment_status = ?", bun.List(ids), store.EnrichmentEnriched) < n {
			require.True(t, time.Now().Before(deadline), "%s: alerts not enriched within 5 minutes", modes[mode].name)
			time.Sleep(50 * time.Millisecond)
		}
		return cpuSeconds(t) - before
	}

	// A warm-up round per mode, not counted (first connections, caches, the provider's first calls).
	for mode := range modes {
		round(mode, fmt.Sprintf("%s-cpu-warm-%d", testenv.TaskQueuePrefix(t), mode), min(n, 20))
	}
	counted.reset()
	cpu := make([]float64, len(modes))
	perRound := make([][]float64, len(modes))
	for r := range *codecCPURounds {
		for k := range modes {
			mode := (k + r) % len(modes) // alternate which mode goes first
			s := round(mode, fmt.Sprintf("%s-cpu-%d-%d", testenv.TaskQueuePrefix(t), r, mode), n)
			cpu[mode] += s
			perRound[mode] = append(perRound[mode], round2(1000*s/float64(n)))
		}
	}
	alerts := float64(n * *codecCPURounds)
	with, without, control := 1000*cpu[0]/alerts, 1000*cpu[1]/alerts, 1000*cpu[2]/alerts

	// The codec alone, on exactly the payloads the measured rounds encoded and decoded, run again in
	// a loop on one goroutine: its CPU per enriched alert without the rest of the pipeline's noise.
	plain, sealed := counted.recorded()
	const repeat = 20
	before := cpuSeconds(t)
	for range repeat {
		for _, p := range plain {
			_, err := aes.Encode([]*commonpb.Payload{p})
			require.NoError(t, err)
		}
		for _, p := range sealed {
			_, err := aes.Decode([]*commonpb.Payload{p})
			require.NoError(t, err)
		}
	}
	codecMS := 1000 * (cpuSeconds(t) - before) / (alerts * repeat)
	var bytesPerAlert int
	for _, p := range plain {
		bytesPerAlert += len(p.Data)
	}

	report, _ := json.Marshal(map[string]any{"alerts_per_mode": int(alerts), "rounds": *codecCPURounds,
		"cpu_ms_per_enriched_alert": map[string]float64{"aes-gcm": round2(with), "identity": round2(without),
			"identity-control": round2(control)},
		"per_round_ms": map[string][]float64{"aes-gcm": perRound[0], "identity": perRound[1], "identity-control": perRound[2]},
		// The codec's A/B, and the same comparison between two identical modes: the noise floor.
		"ab_codec_over_identity":     round2(with / without),
		"ab_control_over_identity":   round2(control / without),
		"codec_alone_ms_per_alert":   round3(codecMS),
		"codec_alone_share":          round3(codecMS / without),
		"payloads_encoded_per_alert": round2(float64(len(plain)) / alerts),
		"payloads_decoded_per_alert": round2(float64(len(sealed)) / alerts),
		"plain_bytes_per_alert":      bytesPerAlert / int(alerts)})
	t.Log(string(report))
	// The codec's own CPU is the figure that holds on a shared machine; the A/B pair is reported
	// beside it (each mode's rounds vary by more than the codec costs there: docs/PERFORMANCE.md).
	require.LessOrEqual(t, codecMS/without, 0.10, "the codec costs more than 10%% of the CPU per enriched alert: %s", report)
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

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

// countingCodec records copies of the payloads its codec encodes (their plain form) and decodes
// (their encrypted form).
type countingCodec struct {
	inner         converter.PayloadCodec
	mu            sync.Mutex
	plain, sealed []*commonpb.Payload
}

func (c *countingCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	c.record(&c.plain, p)
	return c.inner.Encode(p)
}

func (c *countingCodec) Decode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	c.record(&c.sealed, p)
	return c.inner.Decode(p)
}

func (c *countingCodec) record(into *[]*commonpb.Payload, ps []*commonpb.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		*into = append(*into, proto.Clone(p).(*commonpb.Payload))
	}
}

func (c *countingCodec) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plain, c.sealed = nil, nil
}

func (c *countingCodec) recorded() (plain, sealed []*commonpb.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plain, c.sealed
}
