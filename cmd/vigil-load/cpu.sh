#!/usr/bin/env bash
# CPU per alert of each part of a stack started by stack.sh: ingests a backlog of N alerts
# (`vigil-load backlog`), waits for it to be enriched, and prints the alerts Enriched per second (from
# the first ingest, and drain_per_s: once the ingest is over) and
# the CPU time the Temporal server, the worker, the API and all Postgres processes used meanwhile
# (worker and API together under "api+worker" when the worker runs inside the API's process).
#   cmd/vigil-load/cpu.sh 1000
set -euo pipefail
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench}
source "$BENCH_DIR/env"
N=${1:-1000}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, in clock ticks
# Postgres: the stack's own cluster (PGPID, devstack.sh) or every postgres process (stack.sh).
pgpids() { if [ -n "${PGPID:-}" ]; then echo "$PGPID"; pgrep -P "$PGPID"; else pgrep -u postgres; fi; }
snapshot() {
  echo "$(ticks "$TPID") $(ticks "$WPID") $(ticks "$APID") $(for p in $(pgpids); do
    ticks "$p" 2>/dev/null || true; done | awk '{s += $1} END {print s}')"
}
read -r t0 w0 a0 p0 <<<"$(snapshot)"
read -r rate drain <<<"$("$LOAD" backlog -url "$URL" -key "$KEY" -dsn "$DSN" -n "$N" |
  python3 -c 'import json, sys; e = json.load(sys.stdin)["enrichment"]; print(round(e["enriched_per_second"], 1), round(e["drain_per_second"], 1))')"
read -r t1 w1 a1 p1 <<<"$(snapshot)"
python3 - "$N" "$rate" "$(getconf CLK_TCK)" "$t0" "$t1" "$w0" "$w1" "$a0" "$a1" "$p0" "$p1" "$WPID" "$APID" "$drain" <<'PY'
import json, sys
n, rate, hz = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
v = [int(float(x)) for x in sys.argv[4:12]]
ms = lambda a, b: round((b - a) * 1000 / hz / n, 1)
cpu = {"temporal": ms(v[0], v[1]), "worker": ms(v[2], v[3]), "api": ms(v[4], v[5]), "postgres": ms(v[6], v[7])}
if sys.argv[12] == sys.argv[13]:  # one process: the two snapshots counted it twice
    cpu["api+worker"] = cpu.pop("worker"); cpu.pop("api")
cpu["total"] = round(sum(cpu.values()), 1)
print(json.dumps({"alerts": n, "enriched_per_s": rate, "drain_per_s": float(sys.argv[14]), "cpu_ms_per_alert": cpu}))
PY
