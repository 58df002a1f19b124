#!/usr/bin/env bash
# `make bench-ingest`: the side-by-side table of issue 16 in one command. Brings the stack up the way
# `make dev` does (devstack.sh: one `vigil dev`, its own Postgres cluster and Temporal dev server), runs
# bench.sh at each rate (pgbench floor → ingest → floor, then the wait for the drain), then cpu.sh
# (backlog drain rate and CPU per enriched alert, 2 loopback provider calls each), prints the table
# and stops the stack. Raw JSON stays in $BENCH_DIR (bench.jsonl, cpu.json).
#   RATES="50 200" DURATION=20 CPU_ALERTS=1000 LOADED_FLOOR=0 WAIT=10m VIGIL_BIN=… make bench-ingest
# (CPU_ALERTS=0 skips cpu.sh; WAIT bounds each drain wait, the rate is then measured over what drained.)
set -euo pipefail
cd "$(dirname "$0")"
export BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench-dev}
./devstack.sh >/dev/null
source "$BENCH_DIR/env"
stop() {
  kill $PIDS 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$APID" 2>/dev/null || break; sleep 0.5; done
}
trap stop EXIT
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$BENCH_DIR/table.md"
RATES=${RATES:-50 200} DURATION=${DURATION:-20} LOADED_FLOOR=${LOADED_FLOOR:-0} ./bench.sh | tee "$BENCH_DIR/bench.jsonl"
if [ "${CPU_ALERTS:-1000}" -gt 0 ]; then ./cpu.sh "${CPU_ALERTS:-1000}" | tee "$BENCH_DIR/cpu.json"; else echo '{}' >"$BENCH_DIR/cpu.json"; fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$BENCH_DIR/table.md"
python3 - "$BENCH_DIR/bench.jsonl" "$BENCH_DIR/cpu.json" <<'PY' | tee -a "$BENCH_DIR/table.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def during_ratio(r):
    d, a = r.get("during_ingest_per_s", 0), r.get("drain_after_per_s", 0)
    return f"{d / a:.2f} {'yes' if d >= 0.7 * a else 'no'}" if a else "n/a"
cpu = json.load(open(sys.argv[2]))
print("| offered (req/s) | achieved | errors | ingest p50 / p99 / max (ms) | 202 → Enriched p50 / p99 / max (s) | floor before p50 / p99 / max | floor after p50 / p99 / max | p99 limit | > 200 ms | met | Enriched/s | during ingest / after (/s, ratio ≥ 0.70?) | > 100 ms by second |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    floor99 = max(r["floor_idle_p99"], r["floor_after_p99"])
    limit = max(1.25 * floor99, floor99 + 10)
    met = r["errors"] == 0 and r["ingest_p99"] <= limit and r["ingest_max"] < 200
    e2e = " / ".join(f'{r.get(k, 0) / 1000:.2f}' for k in ("e2e_p50", "e2e_p99", "e2e_max"))
    print(f'| {r["rate"]:g} | {r["achieved"]} | {r["errors"]} | {r["ingest_p50"]} / {r["ingest_p99"]} / {r["ingest_max"]} | {e2e} '
          f'| {r["floor_idle_p50"]} / {r["floor_idle_p99"]} / {r.get("floor_idle_max")} '
          f'| {r["floor_after_p50"]} / {r["floor_after_p99"]} / {r.get("floor_after_max")} | {limit:.1f} '
          f'| {r["over_200ms"]} | {"yes" if met else "no"} | {r["enriched_per_s"]} '
          f'| {r.get("during_ingest_per_s", 0)} / {r.get("drain_after_per_s", 0)} ({during_ratio(r)}) '
          f'| {" ".join(f"{k}s:{v}" for k, v in sorted(r.get("over_100ms_by_second", {}).items(), key=lambda kv: int(kv[0])))} |')
print()
if cpu:
    print(f'Backlog of {cpu["alerts"]} alerts: {cpu["enriched_per_s"]} Enriched/s from the first ingest, {cpu.get("drain_per_s")} once ingest is over; CPU per enriched alert (ms): '
          + ", ".join(f"{k} {v}" for k, v in cpu["cpu_ms_per_alert"].items()))
print("p99 limit = max(1.25 × floor p99, floor p99 + 10 ms), with the higher of the two floors; met = limit, max < 200 ms and 0 errors.")
print("202 → Enriched: enriched_at − ingested_at over every alert of the run (the Pending ones left out; see bench.jsonl's pending).")
print("during ingest / after: alerts of the run Enriched by its last ingest per second of ingest, against the same run's drain after it (issue 26: ≥ 70 %).")
print("> 100 ms by second: how many 202s took over 100 ms, per second of the ingest (by scheduled start).")
PY
