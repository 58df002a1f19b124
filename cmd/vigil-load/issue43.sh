#!/usr/bin/env bash
# Issue 43's cost terms side by side (docs/PERFORMANCE.md): two builds, each started the way `make dev`
# starts it (devstack.sh), alternating BEFORE, AFTER for ROUNDS rounds: the 202 at 50 req/s for 20 s
# (bench.sh: floor → ingest → floor), then the pipeline's CPU per enriched alert (cpu.sh N) on a real
# ~22 KB payload (the corpus's Elastic Defend sample alert and Kibana's promoted endpoint alert nested
# under a generic alert), without and with the load provider; then, once per build, the same payload
# with its indicators also given explicitly, so both builds link the same ones.
#   BEFORE=/tmp/vigil-577723d AFTER=bin/vigil ROUNDS=2 N=400 cmd/vigil-load/issue43.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BEFORE:?BEFORE=path of the earlier vigil binary}" "${AFTER:?AFTER=path of this vigil binary}"
ROUNDS=${ROUNDS:-2} N=${N:-400}
export CPU_WAIT=${CPU_WAIT:-5m} GOTOOLCHAIN=local
OUT=${OUT:-/tmp/vigil-issue43}; mkdir -p "$OUT"
corpus=kit/sources/testdata/realworld
python3 - "$corpus" "$OUT" <<'PY'
import json, sys
c, out = sys.argv[1], sys.argv[2]
a = json.load(open(c + "/elastic-defend/alerts-sample-event.json"))
b = json.load(open(c + "/kibana-security-alerts/v8-endpoint-security-promoted-malware-alert.json"))
json.dump({"alert": a, "related": b}, open(out + "/payload.json", "w"), separators=(",", ":"))
PY
go run ./cmd/vigil-load realworld -explicit "$OUT/payload.json" >"$OUT/payload-explicit.json"
run() { # label binary extra...
  export BENCH_DIR=$OUT/$1 VIGIL_BIN=$2
  rm -rf "$BENCH_DIR"; cmd/vigil-load/devstack.sh >/dev/null
  source "$BENCH_DIR/env"
  "${@:3}"
  kill $PIDS 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$APID" 2>/dev/null || break; sleep 0.5; done
}
pair() {
  RATES=50 DURATION=20 LOADED_FLOOR=0 cmd/vigil-load/bench.sh >"$BENCH_DIR/bench.jsonl"
  CPU_PAYLOAD=$OUT/payload.json CPU_PROVIDER=0 cmd/vigil-load/cpu.sh "$N" >"$BENCH_DIR/cpu0.json"
  CPU_PAYLOAD=$OUT/payload.json cmd/vigil-load/cpu.sh "$N" >"$BENCH_DIR/cpu1.json"
  python3 - "$BENCH_DIR" <<'PY'
import json, sys
d = sys.argv[1]
b = [json.loads(l) for l in open(d + "/bench.jsonl") if l.strip()][0]
c0, c1 = json.load(open(d + "/cpu0.json")), json.load(open(d + "/cpu1.json"))
print(f"{d.rsplit('/', 1)[1]}: 202 p50/p99/max {b['ingest_p50']}/{b['ingest_p99']}/{b['ingest_max']} ms, errors {b['errors']}, "
      f"floor p99 {b['floor_idle_p99']}/{b['floor_after_p99']} ms, 202→Enriched p99 {b.get('e2e_p99', 0) / 1000:.2f} s | "
      f"CPU/alert no provider {c0['cpu_ms_per_alert']} | with provider {c1['cpu_ms_per_alert']}")
PY
}
same() {
  CPU_PAYLOAD=$OUT/payload-explicit.json CPU_PROVIDER=0 cmd/vigil-load/cpu.sh "$N" >"$BENCH_DIR/cpu-same.json"
  echo "${BENCH_DIR##*/} same indicators: $(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["cpu_ms_per_alert"], "drain", c.get("drain_per_s"))' "$BENCH_DIR/cpu-same.json")"
}
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do run "before-$r" "$BEFORE" pair; run "after-$r" "$AFTER" pair; done
run before-same "$BEFORE" same; run after-same "$AFTER" same
