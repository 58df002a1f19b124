#!/usr/bin/env bash
# CPU per alert of each part of a stack started by stack.sh or devstack.sh: ingests a backlog of N
# alerts (`vigil-load backlog`), waits for it to be enriched, and prints the alerts Enriched per second
# (from the first ingest, and drain_per_s: once the ingest is over), the CPU time the Temporal server,
# the worker, the API and all Postgres processes used meanwhile, per enriched alert (from
# /proc/<pid>/stat: utime + stime; for Postgres the postmaster's own, its live backends' and, through
# cutime + cstime, the backends that exited meanwhile), and Postgres transactions per alert
# (pg_stat_database), all per alert finished (Enriched or Failed) within CPU_WAIT (15m; "pending"
# counts the rest, and the CPU they had used is then counted too). Worker and API together under "api+worker" when the worker runs inside the
# API's process.
#   cmd/vigil-load/cpu.sh 1000
#   CPU_PROVIDER=0 cmd/vigil-load/cpu.sh 1000     # no provider active: issue 26's no-provider pipeline
#   CPU_INDICATORS=2 (routable IPs per alert, default 2)
#   CPU_AGENT=1 cmd/vigil-load/cpu.sh 1000        # an agent subscribed to alert.enriched (the load provider's
#     /agent/a1): waits until it received every alert's event, counts that CPU too, and prints the
#     deliveries received and delivered_per_s (deliveries received over the seconds from the first
#     ingest to the last receipt); the agent is deleted at the end
#   CPU_SHARED_IP=198.51.100.1 (one more IP on every alert: grouping.sh's case indicator)
#   CPU_PAYLOAD=FILE (every alert is this real payload, posted to generic with the run's title and IPs on
#     top: the pipeline's cost on a real alert's size and strings, issue 43)
set -euo pipefail
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench}
source "$BENCH_DIR/env"
N=${1:-1000}
INDS=${CPU_INDICATORS:-2}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }        # utime + stime, in clock ticks
reaped() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; } # and its waited-for children's
# Postgres: the stack's own cluster (PGPID, devstack.sh) or every postgres process (stack.sh).
pgticks() {
  if [ -n "${PGPID:-}" ]; then
    { reaped "$PGPID"; for p in $(pgrep -P "$PGPID"); do ticks "$p" 2>/dev/null || true; done; } | awk '{s += $1} END {print s}'
  else
    for p in $(pgrep -u postgres); do ticks "$p" 2>/dev/null || true; done | awk '{s += $1} END {print s}'
  fi
}
xacts() { psql -qAt "$DSN" -c "SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database"; }
snapshot() { echo "$(ticks "$TPID") $(ticks "$WPID") $(ticks "$APID") $(pgticks) $(xacts)"; }
provider_active() {
  local id
  id=$(curl -fsS "$URL/v1/enrichment-providers?page_size=100" -H "Authorization: Bearer $KEY" |
    python3 -c 'import json, sys; print(next(p["uuid"] for p in json.load(sys.stdin)["data"] if p["provider_name"] == "loadprov"))')
  curl -fsS -X PATCH "$URL/v1/enrichment-providers/$id" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"is_active\": $1}" >/dev/null
}
cleanup=()
on_exit() { for c in "${cleanup[@]}"; do eval "$c" || true; done; }
trap on_exit EXIT
if [ "${CPU_PROVIDER:-1}" = 0 ]; then
  provider_active false
  cleanup+=("provider_active true")
  sleep 3 # the worker's provider cache (2 s) forgets it
fi
receipts() { curl -fsS "http://$PROVIDER_ADDR/agent-received" | python3 -c 'import json, sys; print(sum(len(v) for v in json.load(sys.stdin).values()))'; }
if [ "${CPU_AGENT:-0}" = 1 ]; then
  agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"name\":\"cpu agent $(date +%s%N)\",\"endpoint_url\":\"http://$PROVIDER_ADDR/agent/a1\",\"events\":[\"alert.enriched\"],\"timeout_seconds\":10}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["uuid"])')
  cleanup+=("curl -fsS -X DELETE '$URL/v1/agents/$agent' -H 'Authorization: Bearer $KEY' >/dev/null")
  before=$(receipts)
fi
start=$(date +%s.%N)
read -r t0 w0 a0 p0 x0 <<<"$(snapshot)"
read -r rate drain finished pending <<<"$("$LOAD" backlog -url "$URL" -key "$KEY" -dsn "$DSN" -n "$N" -indicators "$INDS" -wait "${CPU_WAIT:-15m}" -shared-ip "${CPU_SHARED_IP:-}" -payload "${CPU_PAYLOAD:-}" |
  python3 -c 'import json, sys; e = json.load(sys.stdin)["enrichment"]; print(round(e["enriched_per_second"], 1), round(e["drain_per_second"], 1), e["enriched"] + e["failed"], e["pending"])')"
delivered=0 delivered_s=0
if [ "${CPU_AGENT:-0}" = 1 ]; then
  for _ in $(seq 900); do [ "$(receipts)" -ge $((before + finished)) ] && break; sleep 1; done
  delivered=$(($(receipts) - before))
  delivered_s=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(date +%s.%N)" "$start")
fi
sleep 1 # pg_stat_database counts a backend's transactions within a second or so
read -r t1 w1 a1 p1 x1 <<<"$(snapshot)"
python3 - "$finished" "$rate" "$(getconf CLK_TCK)" "$t0" "$t1" "$w0" "$w1" "$a0" "$a1" "$p0" "$p1" "$WPID" "$APID" "$drain" "$x0" "$x1" "${CPU_PROVIDER:-1}" "$INDS" "$pending" "$delivered" "$delivered_s" <<'PY'
import json, sys
# Per alert finished (Enriched or Failed); a run that left alerts Pending (CPU_WAIT passed) says so.
n, rate, hz = max(1, int(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3])
v = [int(float(x)) for x in sys.argv[4:12]]
ms = lambda a, b: round((b - a) * 1000 / hz / n, 2)
cpu = {"temporal": ms(v[0], v[1]), "worker": ms(v[2], v[3]), "api": ms(v[4], v[5]), "postgres": ms(v[6], v[7])}
if sys.argv[12] == sys.argv[13]:  # one process: the two snapshots counted it twice
    cpu["api+worker"] = cpu.pop("worker"); cpu.pop("api")
cpu["total"] = round(sum(cpu.values()), 2)
xacts = round((int(float(sys.argv[16])) - int(float(sys.argv[15]))) / n, 1)
print(json.dumps({"alerts": n, "pending": int(sys.argv[19]), "provider": sys.argv[17] != "0", "indicators": int(sys.argv[18]), "enriched_per_s": rate,
                  "drain_per_s": float(sys.argv[14]), "cpu_ms_per_alert": cpu, "pg_xacts_per_alert": xacts,
                  "delivered": int(sys.argv[20]), "delivered_per_s": round(int(sys.argv[20]) / float(sys.argv[21]), 1) if float(sys.argv[21]) else 0}))
PY
