#!/usr/bin/env bash
# Runs the ingest rows of docs/PERFORMANCE.md against a stack started by stack.sh or devstack.sh. For
# each rate:
#   1. the pgbench floor (floor.sql) at that rate before the ingest;
#   2. LOADED_FLOOR=1 (default): the same floor while the pipeline drains a backlog flat out (the worker
#      is paused while the backlog is ingested when it is a process of its own, then resumed): the
#      machine as busy as during an ingest run that outpaces the pipeline;
#   3. `vigil-load ingest` at that rate, the pipeline running;
#   4. the floor again right after the ingest (the pipeline still draining what it could not keep up
#      with), then the wait for the drain (202 → Enriched p50/p99/max over every alert of the run,
#      alerts Enriched per second).
# One JSON line per rate.   RATES="50 200 400" DURATION=20 cmd/vigil-load/bench.sh
set -euo pipefail
cd "$(dirname "$0")"
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench}
source "$BENCH_DIR/env"
RATES=${RATES:-50 200 400}
DURATION=${DURATION:-20}
WAIT=${WAIT:-10m}
pending() { psql -qAt "$DSN" -c "SELECT count(*) FROM alert_outbox"; }
drain() { until [ "$(pending)" = 0 ]; do sleep 1; done; sleep 2; }
floor() {
  rm -f "$BENCH_DIR"/pgb.*  # pgbench names its logs <prefix>.<pid>[.<thread>]
  pgbench -n -R "$1" -T "$DURATION" -c 16 -j 2 -f floor.sql --log --log-prefix="$BENCH_DIR/pgb" "$DSN" >/dev/null 2>&1
  "$LOAD" pgbench-log -prefix-log "$BENCH_DIR/pgb"
}
LOADED_FLOOR=${LOADED_FLOOR:-1}
for rate in $RATES; do
  drain
  idle=$(floor "$rate")
  loaded='{"floor":{}}'
  if [ "$LOADED_FLOOR" = 1 ]; then
    [ "$WPID" != "$APID" ] && kill -STOP "$WPID"
    # ~50 alerts per second of floor run and then some: more than the pipeline drains meanwhile.
    "$LOAD" ingest -url "$URL" -key "$KEY" -rate 400 -duration "$(( (DURATION + 15) * 50 / 400 + 1 ))s" -warmup 0s >/dev/null
    [ "$WPID" != "$APID" ] && kill -CONT "$WPID"
    sleep 5
    loaded=$(floor "$rate")
    drain
  fi
  from_ms=$(date +%s%3N)
  load=$("$LOAD" ingest -url "$URL" -key "$KEY" -rate "$rate" -duration "${DURATION}s" ${SLOW_DIR:+-slow-log "$SLOW_DIR/slow-$(date +%s).log"})
  to_ms=$(date +%s%3N)
  after=$(floor "$rate")
  run=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["run"])' "$load")
  e2e=$("$LOAD" enriched -dsn "$DSN" -run "$run" -wait "$WAIT")
  python3 - "$rate" "$idle" "$loaded" "$after" "$load" "$e2e" "$from_ms" "$to_ms" <<'PY'
import json, sys
rate = sys.argv[1]
idle, loaded, after = (json.loads(a)["floor"] for a in sys.argv[2:5])
a, e = json.loads(sys.argv[5])["ack"], json.loads(sys.argv[6]).get("ingest_to_enriched", {})
print(json.dumps({"rate": float(rate), "achieved": round(a["achieved_rate"], 1), "errors": a["errors"],
  "floor_idle_p50": idle["p50_ms"], "floor_idle_p99": idle["p99_ms"], "floor_idle_max": idle["max_ms"],
  "floor_loaded_p50": loaded.get("p50_ms"), "floor_loaded_p99": loaded.get("p99_ms"),
  "floor_after_p50": after["p50_ms"], "floor_after_p99": after["p99_ms"], "floor_after_max": after["max_ms"],
  "ingest_p50": a["p50_ms"], "ingest_p99": a["p99_ms"], "ingest_max": a["max_ms"], "over_200ms": a["over_200ms"],
  "over_100ms_by_second": a.get("over_100ms_by_second", {}),
  "e2e_p50": round(e.get("p50_ms", 0), 1), "e2e_p99": round(e.get("p99_ms", 0), 1), "e2e_max": round(e.get("max_ms", 0), 1),
  "enriched_per_s": round(e.get("enriched_per_second", 0), 1), "pending": e.get("pending"),
  "during_ingest_per_s": round(e.get("during_ingest_per_second", 0), 1), "drain_after_per_s": round(e.get("drain_per_second", 0), 1),
  "ingest_from_ms": int(sys.argv[7]), "ingest_to_ms": int(sys.argv[8])}))
PY
done
