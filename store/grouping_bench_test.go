package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/store"
)

// BenchmarkFinishEnrichment_Grouping is the grouping's own cost per alert (docs/PERFORMANCE.md
// "Grouping into cases"): b.N alerts per mode, each linked to one Malicious indicator that an open
// case's alert links too, are finished (store.FinishEnrichment) with grouping on (window 24 h: every
// finish looks the case up and joins it, the case growing to b.N+1 alerts) and off (window 0), in
// alternating chunks of 25 so that the machine's drift falls on both modes alike. It reports, per
// finish and per mode, the CPU of the Postgres backend that ran it (the store has one connection:
// /proc/<pg_backend_pid>/stat, utime + stime; Postgres must run on this machine) and of this process
// (getrusage). Setup (ingest, links) is not counted.
//
//	go test ./store -run '^$' -bench FinishEnrichment_Grouping -benchtime 400x
func BenchmarkFinishEnrichment_Grouping(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.DatabaseURL(b), store.Options{MaxOpenConns: 1})
	require.NoError(b, err)
	defer st.Close()
	testenv.Store(b) // the test database, migrated
	var pid int
	require.NoError(b, st.DB().NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid))

	n := uuid.New().ID()
	bad := fmt.Sprintf("185.%d.%d.%d", 150+n%50, n/50%256, 1+n/12800%250)
	level := "Malicious"
	inds, err := st.UpsertIndicators(ctx, st.DB(), []store.IndicatorKey{{Type: "ip", Value: bad}})
	require.NoError(b, err)
	_, err = st.SetIndicatorMalice(ctx, inds[0].UUID, &level, nil, store.ActorAPI, "cai_bench")
	require.NoError(b, err)
	alert := func() uuid.UUID {
		in := ingestAlert("grouping-bench-" + uuid.NewString())
		res, err := st.Ingest(ctx, in, 0)
		require.NoError(b, err)
		_, _, err = st.LinkIndicators(ctx, res.AlertUUID, []store.IndicatorKey{{Type: "ip", Value: bad},
			{Type: "ip", Value: fmt.Sprintf("45.%d.%d.%d", n%200, n/200%256, len(in.Fingerprint)%250)}}, "extraction")
		require.NoError(b, err)
		return res.AlertUUID
	}
	c := &store.Case{Title: "grouping bench " + bad}
	require.NoError(b, st.CreateCase(ctx, store.CaseCreate{Case: c, Alerts: []uuid.UUID{alert()}, Join: cases.DecideJoin(false, store.Actor{Type: store.ActorSystem}), Actor: store.Actor{Type: store.ActorSystem}}))
	modes := []struct {
		name   string
		window time.Duration
		alerts []uuid.UUID
		pg, me time.Duration
	}{{name: "on", window: 24 * time.Hour}, {name: "off"}}
	for i := range modes {
		for range b.N {
			modes[i].alerts = append(modes[i].alerts, alert())
		}
	}
	ev := func(*string, []string) store.ActivityEvent {
		return store.ActivityEvent{EventType: "alert_enriched", ActorType: store.ActorWorkflow}
	}
	b.ResetTimer()
	const chunk = 25
	for from := 0; from < b.N; from += chunk {
		for i := range modes {
			m := &modes[i]
			pg0, me0 := backendCPU(b, pid), selfCPU(b)
			for _, id := range m.alerts[from:min(from+chunk, b.N)] {
				fin, err := cases.Grouping{Window: m.window}.FinishEnrichment(ctx, st, id, store.EnrichmentEnriched, "run-"+uuid.NewString(), nil, ev)
				require.NoError(b, err)
				require.Equal(b, m.window > 0, fin.GroupedInto == c.UUID)
			}
			m.pg += backendCPU(b, pid) - pg0
			m.me += selfCPU(b) - me0
		}
	}
	b.StopTimer()
	for _, m := range modes {
		b.ReportMetric(float64(m.pg.Microseconds())/1000/float64(b.N), "pg-ms/alert-"+m.name)
		b.ReportMetric(float64(m.me.Microseconds())/1000/float64(b.N), "go-ms/alert-"+m.name)
	}
	var held int
	require.NoError(b, st.DB().NewRaw("SELECT alert_count FROM cases WHERE uuid = ?", c.UUID).Scan(ctx, &held))
	require.Equal(b, b.N+1, held)
	require.NoError(b, st.DeleteCase(ctx, c.UUID, store.Actor{Type: store.ActorSystem}))
}

// backendCPU is the CPU time (utime + stime) of process pid so far, from /proc (clock ticks of 10 ms).
func backendCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(b, err)
	stm, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(b, err)
	return time.Duration(ut+stm) * 10 * time.Millisecond
}

// selfCPU is this process's CPU time so far (user + system).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
