#!/usr/bin/env bash
# Issue 13's benchmark, one stack started the way `make dev` does (devstack.sh):
#   1. alerts Enriched per second under a backlog of N alerts, no agent;
#   2. two loopback agents registered (the load provider's /agent/a1 and /agent/a2, alert.enriched);
#      a 10 alerts/s ingest for DURATION seconds: ingest→Enriched beside ingest→agent-received
#      (vigil-load agent-latency), once every event of it has arrived;
#   3. the same backlog of N alerts with the two agents: Enriched per second, and how long until both
#      agents received every event of it (deliveries per second).
#   N=1000 DURATION=30 cmd/vigil-load/agents.sh
set -euo pipefail
cd "$(dirname "$0")"
export BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench-agents}
N=${N:-1000}
DURATION=${DURATION:-30}
PROVIDER_ADDR=${PROVIDER_ADDR:-127.0.0.1:9900}
./devstack.sh >/dev/null
source "$BENCH_DIR/env"
trap 'kill $PIDS 2>/dev/null || true; for _ in $(seq 60); do kill -0 "$APID" 2>/dev/null || break; sleep 0.5; done' EXIT
rate() { "$LOAD" backlog -url "$URL" -key "$KEY" -dsn "$DSN" -n "$N" |
  python3 -c 'import json, sys; print(round(json.load(sys.stdin)["enrichment"]["enriched_per_second"], 1))'; }
receipts() { curl -fsS "http://$PROVIDER_ADDR/agent-received" | python3 -c 'import json, sys; print(sum(len(v) for v in json.load(sys.stdin).values()))'; }
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
without=$(rate)
for a in a1 a2; do
  curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"name\":\"bench $a\",\"endpoint_url\":\"http://$PROVIDER_ADDR/agent/$a\",\"events\":[\"alert.enriched\"],\"timeout_seconds\":10}" >/dev/null
done
lat=$("$LOAD" ingest -url "$URL" -key "$KEY" -rate 10 -duration "${DURATION}s" -dsn "$DSN")
run=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["run"])' "$lat")
sent=$(psql -qAt "$DSN" -c "SELECT count(*) FROM alerts WHERE title LIKE 'load $run %'")
for _ in $(seq 120); do [ "$(receipts)" -ge $((2 * sent)) ] && break; sleep 1; done
agents=$("$LOAD" agent-latency -dsn "$DSN" -run "$run" -addr "$PROVIDER_ADDR")
before=$(receipts)
start=$(date +%s.%N)
with=$(rate)
for _ in $(seq 600); do [ "$(receipts)" -ge $((before + 2 * N)) ] && break; sleep 1; done
drained=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(date +%s.%N)" "$start")
python3 - "$without" "$with" "$agents" "$N" "$drained" "$(( $(receipts) - before ))" <<'PY'
import json, sys
without, with_agents, a = float(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
n, drained, got = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
print(json.dumps({"backlog_enriched_per_s": {"no_agents": without, "two_agents": with_agents,
  "ratio": round(with_agents / without, 2) if without else None},
  "backlog_deliveries": {"expected": 2 * n, "received": got, "seconds_from_backlog_start": drained,
  "per_s": round(got / drained, 1) if drained else None},
  "at_10_per_s": {"ingest_to_enriched": a["ingest_to_enriched"], "ingest_to_agent_received": a["ingest_to_agent_received"]}}, indent=1))
PY
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
