#!/usr/bin/env bash
# CPU per enriched alert with case grouping on and off (issue 30 item 2; docs/PERFORMANCE.md
# "Grouping into cases"): two `make dev`-style stacks of one binary side by side (devstack.sh), one with
# CASE_GROUPING_WINDOW_HOURS=24 ("on"), one with 0 ("off"), then ROUNDS rounds, each running cpu.sh on
# "on" and then on "off" (pairs close in time). Before each run the stack gets a fresh case: one alert
# carrying a fresh non-routable IP, that IP made Malicious by an analyst's verdict (PATCH
# /v1/indicators/{uuid}), a case opened with the alert (`vigil-load seed-case`: domain/cases, as POST
# /v1/cases does); every alert of the run's backlog
# carries that IP too (CPU_SHARED_IP) besides its CPU_INDICATORS routable IPs (the load provider's
# calls: CPU_PROVIDER=1, the default), so with grouping on every finish looks the case up and joins it
# (the most grouping can cost an alert), and with it off none does. Prints one JSON line per run, with
# the alerts the run's case holds at its end. Stops both stacks at the end.
#   cmd/vigil-load/grouping.sh 1000          # N alerts per run; GROUPING_ROUNDS=2
#   VIGIL_BIN=/path/to/vigil (default: built from this checkout into /tmp/grp-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000}
ROUNDS=${GROUPING_ROUNDS:-2}
export GOTOOLCHAIN=local
mkdir -p /tmp/grp-bench
if [ -z "${VIGIL_BIN:-}" ]; then
  go build -o /tmp/grp-bench/vigil ./cmd/vigil
  VIGIL_BIN=/tmp/grp-bench/vigil
fi
export VIGIL_BIN
declare -A PORT=([on]=8610 [off]=8620) HOURS=([on]=24 [off]=0)
APIDS=()
stop() { for p in "${APIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT
for mode in on off; do
  # Each stack its own MCP and /metrics ports (vigil dev's defaults would clash): the API port + 1
  # and + 5 (the worker child and the Temporal server take the two /metrics ports after it).
  BENCH_DIR=/tmp/grp-$mode API_PORT=${PORT[$mode]} PROVIDER_ADDR=127.0.0.1:$((PORT[$mode] + 1000)) \
    MCP_ADDR=127.0.0.1:$((PORT[$mode] + 1)) METRICS_ADDR=127.0.0.1:$((PORT[$mode] + 5)) \
    CASE_GROUPING_WINDOW_HOURS=${HOURS[$mode]} cmd/vigil-load/devstack.sh >/dev/null
  # shellcheck disable=SC1090
  (source "/tmp/grp-$mode/env" && echo "$PIDS") >"/tmp/grp-$mode/pids"
  read -r -a pids <"/tmp/grp-$mode/pids"
  APIDS+=("${pids[@]}")
done

# seed_case MODE IP: prints the uuid of a new open case whose one alert carries IP, made Malicious.
seed_case() {
  local mode=$1 ip=$2 alert ind kase
  # shellcheck disable=SC1090
  source "/tmp/grp-$mode/env"
  api() { curl -fsS -X "$1" "$URL$2" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
  alert=$(api POST /v1/ingest/generic "{\"title\":\"grouping seed $ip\",\"severity\":\"High\",\"indicators\":[{\"type\":\"ip\",\"value\":\"$ip\"}]}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["alert_uuid"])')
  for _ in $(seq 600); do
    [ "$(api GET "/v1/alerts/$alert" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["enrichment_status"])')" != Pending ] && break
    sleep 0.1
  done
  ind=$(api GET "/v1/alerts/$alert/indicators" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["uuid"])')
  api PATCH "/v1/indicators/$ind" '{"malice":"Malicious"}' >/dev/null
  kase=$("$LOAD" seed-case -dsn "$DSN" -alert "$alert" | python3 -c 'import json, sys; print(json.load(sys.stdin)["case_uuid"])')
  echo "$kase"
}

for round in $(seq "$ROUNDS"); do
  for mode in on off; do
    ip=198.51.100.$((round * 2 + (${HOURS[$mode]} > 0 ? 0 : 1)))
    kase=$(seed_case "$mode" "$ip")
    out=$(BENCH_DIR=/tmp/grp-$mode CPU_SHARED_IP=$ip cmd/vigil-load/cpu.sh "$N")
    # shellcheck disable=SC1090
    held=$(source "/tmp/grp-$mode/env" && psql -qAt "$DSN" -c "SELECT alert_count FROM cases WHERE uuid = '$kase'")
    python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r.update(grouping=sys.argv[2], round=int(sys.argv[3]), case_alerts=int(sys.argv[4]), load_avg=open("/proc/loadavg").read().split()[0]); print(json.dumps(r))' \
      "$out" "$mode" "$round" "$held"
  done
done
