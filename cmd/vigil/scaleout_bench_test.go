package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// BenchmarkBacklogDrain measures, in one run, how fast one and then two `vigil worker` processes
// drain a backlog of alerts waiting in the outbox (workers stopped while it is ingested), scraping
// every process's /metrics once a second meanwhile, and then the CPU cost of serving /metrics
// (100 scrapes of the api and of a worker, process CPU from /proc). docs/PERFORMANCE.md records
// its output. Run it alone:
//
//	go test ./cmd/vigil/ -run '^$' -bench BacklogDrain -benchtime 1x -v   (VIGIL_DRAIN_N=1000 alerts per phase)
func BenchmarkBacklogDrain(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DRAIN_N")); err == nil && v > 0 {
		n = v
	}
	b.Logf("load before: %s", loadavg())
	c := newCluster(b, 1, 0, map[string]string{"LOG_LEVEL": "error"})
	for _, workers := range []int{1, 2} {
		tag := fmt.Sprintf("drain-%d-%s", workers, uuid.NewString()[:8])
		c.ingestMany(b, n, tag, nil)
		depth := metricValue(scrape(b, c.apis[0].metrics), "vigil_outbox_depth")
		var ws []*proc
		for i := range workers {
			ws = append(ws, c.launch(fmt.Sprintf("drain-worker-%d-%d", workers, i+1), "worker"))
		}
		start := time.Now()
		scrapes, lastScrape := 0, time.Time{}
		var maxInFlight float64
		for c.enriched(b, tag) < n {
			if time.Since(lastScrape) >= time.Second {
				lastScrape = time.Now()
				for _, p := range append([]*proc{c.apis[0]}, ws...) {
					if text := tryScrape(p.metrics); text != "" {
						scrapes++
						maxInFlight = max(maxInFlight, metricValue(text, "vigil_pipelines_in_flight"))
					}
				}
			}
			require.Less(b, time.Since(start), 20*time.Minute, "backlog not drained")
			time.Sleep(100 * time.Millisecond)
		}
		elapsed := time.Since(start)
		w := scrape(b, ws[0].metrics)
		e2eSum := metricValue(w, "temporal_workflow_endtoend_latency_seconds_sum", `workflow_type="AlertPipeline"`)
		e2eCount := metricValue(w, "temporal_workflow_endtoend_latency_seconds_count", `workflow_type="AlertPipeline"`)
		b.ReportMetric(float64(n)/elapsed.Seconds(), fmt.Sprintf("alerts/s-%dworker", workers))
		b.Logf("%d worker(s): %d alerts (outbox depth %.0f at start) Enriched in %s = %.1f alerts/s; %d scrapes during the drain; "+
			"max pipelines in flight %.0f; worker-1 mean pipeline end-to-end %.2f s over %.0f runs; load %s",
			workers, n, depth, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), scrapes, maxInFlight,
			e2eSum/max(e2eCount, 1), e2eCount, loadavg())
		if workers == 2 {
			for _, p := range []*proc{c.apis[0], ws[0]} {
				cpu, size := scrapeCost(b, p, 100)
				b.Logf("/metrics of %s: 100 scrapes cost %s process CPU (%.2f ms each), %d bytes per scrape", p.name, cpu, float64(cpu.Microseconds())/100/1000, size)
			}
		}
		for _, p := range ws {
			p.stop(b)
		}
	}
}

// scrapeCost scrapes p n times in a row and returns the process CPU it spent (user+system, from
// /proc/<pid>/stat) and the size of the last answer.
func scrapeCost(b *testing.B, p *proc, n int) (time.Duration, int) {
	b.Helper()
	before := procCPU(b, p.cmd.Process.Pid)
	size := 0
	for range n {
		size = len(scrape(b, p.metrics))
	}
	return procCPU(b, p.cmd.Process.Pid) - before, size
}

// procCPU is the user+system CPU time of pid (clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	fields := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
	utime, err1 := strconv.Atoi(fields[11])
	stime, err2 := strconv.Atoi(fields[12])
	require.NoError(b, err1)
	require.NoError(b, err2)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
