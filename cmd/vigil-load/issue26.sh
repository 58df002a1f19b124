#!/usr/bin/env bash
# Every figure of issue 26's "What it must show", in one run on one stack started the way `make dev`
# does (devstack.sh; STACK=compose: docker-compose.yml's layout), each printed beside its bound
# (`make bench-issue26`):
#   A. no provider active, RATE_A (50) req/s for DURATION (120) s: 202 p99 / max / errors against the
#      pgbench floor, 202 → Enriched p50 / p99 / max over every alert of the run (bound 2 s);
#   B. two loopback providers per alert (loadprov, loadprov2: 2 IPs × 2 calls), RATE_B (25) req/s:
#      202 p99, 202 → Enriched p99 (bound 3 s);
#   C. no provider, an agent subscribed to alert.enriched (the load provider's /agent/a1), RATE_A req/s:
#      202 → delivery received p50 / p99 / max (bound 3 s);
#   D. no provider, BURST_RATE (200) req/s for BURST_DURATION (30) s: 202 max (bound 200 ms), alerts
#      Enriched during the burst per second against the same run's drain after it (bound ≥ 70 %);
#   E. RERUNS (1000) re-runs asked for in RERUNS/100 s (POST /v1/alerts/{uuid}/enrich, of phase A's
#      alerts) while 20 req/s are ingested: every re-run finished, the outbox's started count back at 0
#      (seconds after the last finish), the 20 req/s alerts' 202 → Enriched;
#   F. loadprov alone, 20 req/s for OUTAGE_RUN (120) s, the provider stopped for OUTAGE (60) s from
#      second 20: seconds from its return until every alert of the run has loadprov's successful
#      result on each of its IPs (bound 120 s).
# Raw JSON lines stay in $BENCH_DIR/issue26.jsonl, the table in $BENCH_DIR/issue26.md.
#   DURATION=120 cmd/vigil-load/issue26.sh        (DURATION=20 OUTAGE_RUN=60 OUTAGE=20 RERUNS=200 for a smoke run)
#   PHASES=C cmd/vigil-load/issue26.sh            (only the phases named, e.g. "A B C"; E needs A)
#   STACK=compose cmd/vigil-load/issue26.sh       (docker-compose.yml's layout: stack.sh TEMPORAL_SERVER=postgres)
#   SLOW_DIR=/tmp/slow cmd/vigil-load/issue26.sh   (each ingest answer over 50 ms to a file there: vigil-load ingest -slow-log)
# Beside each phase's 202 it prints the longest span in which the disk under $BENCH_DIR (where `make dev`'s
# cluster keeps its WAL) completed no I/O with some in flight (`vigil-load diskstall`): every commit, each 202's among
# them, waits out such a span whoever caused it, and the floor measured before and after cannot see it.
set -euo pipefail
cd "$(dirname "$0")"
export BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench-issue26}
DURATION=${DURATION:-120}
RATE_A=${RATE_A:-50}
RATE_B=${RATE_B:-25}
BURST_RATE=${BURST_RATE:-200}
BURST_DURATION=${BURST_DURATION:-30}
RERUNS=${RERUNS:-1000}
OUTAGE_RUN=${OUTAGE_RUN:-120}
OUTAGE=${OUTAGE:-60}
WAIT=${WAIT:-10m}
PHASES=${PHASES:-A B C D E F}
want() { [[ " $PHASES " == *" $1 "* ]]; }
if want E && ! want A; then echo "phase E re-runs phase A's alerts: PHASES must name A too" >&2; exit 2; fi
case ${STACK:-dev} in
  dev) ./devstack.sh >/dev/null ;;
  compose) TEMPORAL_SERVER=postgres BACKGROUND_PRIORITY=compose RATE_LIMIT_STORE=postgres ./stack.sh >/dev/null ;;
  *) echo "STACK: dev (make dev's, the default) or compose (docker-compose.yml's layout: stack.sh TEMPORAL_SERVER=postgres)" >&2; exit 2 ;;
esac
source "$BENCH_DIR/env"
PROV=$PROVPID
STALLS=$BENCH_DIR/stalls.txt
: >"$STALLS"
DEV=$(basename "$(df --output=source "$BENCH_DIR" | tail -1)")
STALLPID=
if awk -v d="$DEV" '$3 == d {f = 1} END {exit !f}' /proc/diskstats; then
  "$LOAD" diskstall -dev "$DEV" >"$STALLS" &
  STALLPID=$!
fi
stop() {
  kill $PIDS "$PROV" $STALLPID 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$APID" 2>/dev/null || break; sleep 0.5; done
}
trap stop EXIT
OUT=$BENCH_DIR/issue26.jsonl
: >"$OUT"
api() { curl -fsS -X "$1" "$URL$2" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
provider_uuid() { api GET "/v1/enrichment-providers?page_size=100" |
  python3 -c 'import json, sys; print(next(p["uuid"] for p in json.load(sys.stdin)["data"] if p["provider_name"] == sys.argv[1]))' "$1"; }
# active <loadprov on?> <loadprov2 on?>; the worker's provider reads are cached up to 2 s.
active() { api PATCH "/v1/enrichment-providers/$(provider_uuid loadprov)" "{\"is_active\": $1}" >/dev/null
  api PATCH "/v1/enrichment-providers/$(provider_uuid loadprov2)" "{\"is_active\": $2}" >/dev/null; sleep 3; }
run_of() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])["run"])' "$1"; }
row() { python3 -c 'import json, sys; d = json.loads(sys.argv[2]); d["phase"] = sys.argv[1]; print(json.dumps(d))' "$1" "$2" | tee -a "$OUT"; }
receipts() { curl -fsS "http://$PROVIDER_ADDR/agent-received" | python3 -c 'import json, sys; print(sum(len(v) for v in json.load(sys.stdin).values()))'; }

# The second loopback provider: same answers, its own name (so each IP costs two calls).
api POST /v1/enrichment-providers "$(sed 's/"loadprov"/"loadprov2"/; s/"Load provider"/"Load provider 2"/' <<JSON
{"provider_name":"loadprov","display_name":"Load provider","supported_indicator_types":["ip"],"auth_type":"none",
 "default_cache_ttl_seconds":1,
 "http_config":{"steps":[{"name":"lookup","url":"http://$PROVIDER_ADDR/{{indicator.value}}","timeout_seconds":10}]},
 "malice_rules":{"rules":[{"field":"score","operator":">=","value":80,"verdict":"Malicious"}],"default_verdict":"Benign"}}
JSON
)" >/dev/null
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$BENCH_DIR/issue26.md"

# A: no provider.
if want A; then
active false false
a=$(RATES=$RATE_A DURATION=$DURATION LOADED_FLOOR=0 WAIT=$WAIT ./bench.sh | tail -1)
row A "$a" >/dev/null
RUN_A=$(psql -qAt "$DSN" -c "SELECT split_part(title, ' ', 2) FROM alerts WHERE title LIKE 'load %' ORDER BY ingested_at DESC LIMIT 1")
fi

# B: two providers per IP.
if want B; then
active true true
row B "$(RATES=$RATE_B DURATION=$DURATION LOADED_FLOOR=0 WAIT=$WAIT ./bench.sh | tail -1)" >/dev/null
fi

# C: an agent subscribed to alert.enriched, no provider.
if want C; then
active false false
agent=$(api POST /v1/agents "{\"name\":\"issue26 agent $(date +%s)\",\"endpoint_url\":\"http://$PROVIDER_ADDR/agent/a1\",\"events\":[\"alert.enriched\"],\"timeout_seconds\":10}" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["uuid"])')
before=$(receipts)
from_ms=$(date +%s%3N)
c=$("$LOAD" ingest -url "$URL" -key "$KEY" -rate "$RATE_A" -duration "${DURATION}s" ${SLOW_DIR:+-slow-log "$SLOW_DIR/slow-C.log"})
to_ms=$(date +%s%3N)
run=$(run_of "$c")
sent=$(psql -qAt "$DSN" -c "SELECT count(*) FROM alerts WHERE title LIKE 'load $run %'")
for _ in $(seq 600); do [ "$(receipts)" -ge $((before + sent)) ] && break; sleep 1; done
lat=$("$LOAD" agent-latency -dsn "$DSN" -run "$run" -addr "$PROVIDER_ADDR")
row C "$(python3 -c 'import json, sys; c, l = json.loads(sys.argv[1]), json.loads(sys.argv[2]); print(json.dumps({"ack": c["ack"], "sent": int(sys.argv[3]), **l, "ingest_from_ms": int(sys.argv[4]), "ingest_to_ms": int(sys.argv[5])}))' "$c" "$lat" "$sent" "$from_ms" "$to_ms")" >/dev/null
api DELETE "/v1/agents/$agent" >/dev/null
fi

# D: the burst past the drain's capacity.
if want D; then
row D "$(RATES=$BURST_RATE DURATION=$BURST_DURATION LOADED_FLOOR=0 WAIT=$WAIT ./bench.sh | tail -1)" >/dev/null
fi

# E: re-runs during a 20 req/s ingest (no provider): ingest in the background, the re-runs 5 s in.
if want E; then
from_ms=$(date +%s%3N)
"$LOAD" ingest -url "$URL" -key "$KEY" -rate 20 -duration "$((RERUNS / 100 + 25))s" -warmup 0s ${SLOW_DIR:+-slow-log "$SLOW_DIR/slow-E.log"} >"$BENCH_DIR/e-ingest.json" &
ing=$!
sleep 5
rr=$("$LOAD" reruns -url "$URL" -key "$KEY" -dsn "$DSN" -run "$RUN_A" -n "$RERUNS" -rate 100 -wait "$WAIT")
wait "$ing"
to_ms=$(date +%s%3N)
e2e=$("$LOAD" enriched -dsn "$DSN" -run "$(run_of "$(cat "$BENCH_DIR/e-ingest.json")")" -wait "$WAIT")
row E "$(python3 -c 'import json, sys; print(json.dumps({"reruns": json.loads(sys.argv[1]), "ack": json.loads(sys.argv[2])["ack"], **json.loads(sys.argv[3]), "ingest_from_ms": int(sys.argv[4]), "ingest_to_ms": int(sys.argv[5])}))' "$rr" "$(cat "$BENCH_DIR/e-ingest.json")" "$e2e" "$from_ms" "$to_ms")" >/dev/null
fi

# F: loadprov stopped for OUTAGE s during a 20 req/s ingest, then started again.
if want F; then
active true false
"$LOAD" ingest -url "$URL" -key "$KEY" -rate 20 -duration "${OUTAGE_RUN}s" -warmup 0s >"$BENCH_DIR/f-ingest.json" &
ing=$!
sleep 20
kill "$PROV"
sleep "$OUTAGE"
"$LOAD" provider -addr "$PROVIDER_ADDR" >>"$BENCH_DIR/provider.log" 2>&1 &
PROV=$!
back=$(date +%s.%N)
wait "$ing"
frun=$(run_of "$(cat "$BENCH_DIR/f-ingest.json")")
# Every alert of the run: each of its IPs with loadprov's successful result.
missing() { psql -qAt "$DSN" -c "SELECT count(*) FROM alerts a WHERE a.title LIKE 'load $frun %' AND EXISTS (
  SELECT 1 FROM alert_indicators ai JOIN indicators i ON i.uuid = ai.indicator_uuid
  WHERE ai.alert_uuid = a.uuid AND i.type = 'ip' AND coalesce(i.enrichment_results->'loadprov'->>'status', '') <> 'success')"; }
total=$(psql -qAt "$DSN" -c "SELECT count(*) FROM alerts WHERE title LIKE 'load $frun %'")
left=$total
for _ in $(seq 900); do left=$(missing); [ "$left" = 0 ] && break; sleep 1; done
after=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(date +%s.%N)" "$back")
row F "$(python3 -c 'import json, sys; print(json.dumps({"ack": json.loads(sys.argv[1])["ack"], "alerts": int(sys.argv[2]), "without_success": int(sys.argv[3]), "all_success_after_return_s": float(sys.argv[4]), "outage_s": int(sys.argv[5])}))' "$(cat "$BENCH_DIR/f-ingest.json")" "$total" "$left" "$after" "$OUTAGE")" >/dev/null
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$BENCH_DIR/issue26.md"

python3 - "$OUT" "$STALLS" <<'PY' | tee -a "$BENCH_DIR/issue26.md"
import json, sys
r = {d["phase"]: d for d in (json.loads(l) for l in open(sys.argv[1]) if l.strip())}
stalls = [tuple(map(int, l.split())) for l in open(sys.argv[2]) if l.strip()]
ok = lambda b: "yes" if b else "**no**"
def stalled(p):
    d = r[p]
    if "ingest_from_ms" not in d:
        return ""
    s = [n for t, n in stalls if d["ingest_from_ms"] <= t + n and t <= d["ingest_to_ms"]]
    return f"; disk stalled {len(s)}× ≥ 100 ms, longest {max(s, default=0)} ms"
print("| phase | figure | measured | bound | met |")
print("|---|---|---|---|---|")
def bench(p, name, e2e_bound):
    d = r[p]
    floor = max(d["floor_idle_p99"], d["floor_after_p99"])
    print(f'| {p} | {name}: 202 p99 / max (ms), errors | {d["ingest_p99"]} / {d["ingest_max"]}, {d["errors"]} (floor p99 {floor}{stalled(p)}) | ≤ 50 / < 200, 0 | {ok(d["ingest_p99"] <= 50 and d["ingest_max"] < 200 and d["errors"] == 0)} |')
    print(f'| {p} | {name}: 202 → Enriched p50 / p99 / max (s) | {d["e2e_p50"]/1000:.2f} / {d["e2e_p99"]/1000:.2f} / {d["e2e_max"]/1000:.2f} (pending {d["pending"]}) | p99 ≤ {e2e_bound} | {ok(d["e2e_p99"] <= 1000 * e2e_bound and not d["pending"])} |')
if "A" in r:
    bench("A", f'no provider, {r["A"]["rate"]:g} req/s', 2)
if "B" in r:
    bench("B", f'2 providers, {r["B"]["rate"]:g} req/s', 3)
if "C" in r:
    c = r["C"]
    agents = c.get("ingest_to_agent_received", {})
    a1 = agents.get("a1", {})
    print(f'| C | agent on alert.enriched, {c["ack"]["target_rate"]:g} req/s: 202 p99 / max (ms) | {c["ack"]["p99_ms"]} / {c["ack"]["max_ms"]} ({stalled("C")[2:]}) | ≤ 50 / < 200 | {ok(c["ack"]["p99_ms"] <= 50 and c["ack"]["max_ms"] < 200)} |')
    print(f'| C | 202 → delivery received p50 / p99 / max (s), received / sent | {a1.get("p50_ms", 0)/1000:.2f} / {a1.get("p99_ms", 0)/1000:.2f} / {a1.get("max_ms", 0)/1000:.2f}, {a1.get("n", 0)} / {c["sent"]} | p99 ≤ 3 | {ok(a1.get("p99_ms", 1e9) <= 3000 and a1.get("n") == c["sent"])} |')
if "D" in r:
    d = r["D"]
    ratio = d["during_ingest_per_s"] / d["drain_after_per_s"] if d["drain_after_per_s"] else 0
    print(f'| D | burst {d["rate"]:g} req/s: 202 max (ms), errors | {d["ingest_max"]}, {d["errors"]} (p99 {d["ingest_p99"]}{stalled("D")}) | < 200, 0 | {ok(d["ingest_max"] < 200 and d["errors"] == 0)} |')
    print(f'| D | Enriched/s during the burst / drain after it | {d["during_ingest_per_s"]} / {d["drain_after_per_s"]} ({ratio:.2f}) | ≥ 0.70 | {ok(ratio >= 0.7)} |')
if "E" in r:
    e = r["E"]; rr = e["reruns"]
    print(f'| E | re-runs finished / asked (asked in s) | {rr["finished"]} / {rr["asked"]} ({rr["ask_seconds"]:.1f}) | all | {ok(rr["finished"] == rr["asked"] == rr["accepted"])} |')
    print(f'| E | started count 0 after the last re-run finished (s) | {rr["started_zero_after_last_finish_s"]:.1f} | a few s | {ok(0 <= rr["started_zero_after_last_finish_s"] <= 5)} |')
    ee = e["ingest_to_enriched"]
    print(f'| E | 20 req/s beside them: 202 p99 (ms), 202 → Enriched p99 (s) | {e["ack"]["p99_ms"]}, {ee["p99_ms"]/1000:.2f} ({stalled("E")[2:]}) | ≤ 50, ≤ 2 | {ok(e["ack"]["p99_ms"] <= 50 and ee["p99_ms"] <= 2000)} |')
if "F" in r:
    f = r["F"]
    print(f'| F | provider back after {f["outage_s"]} s: every alert with its successful result after (s); alerts without | {f["all_success_after_return_s"]}; {f["without_success"]} of {f["alerts"]} | ≤ 120; 0 | {ok(f["without_success"] == 0 and f["all_success_after_return_s"] <= 120)} |')
PY
