#!/usr/bin/env bash
# Starts the benchmark stack of docs/PERFORMANCE.md on this machine and leaves it running:
#   a fresh database on the machine's Postgres (DATABASE_ROOT, durable commits as configured there),
#   a Temporal dev server (in memory, headless), `vigil api`, `vigil worker`, the local load provider,
#   an admin key, and the floor tables of floor.sql. BACKGROUND_PRIORITY=low gives the worker and the
#   Temporal server the least CPU weight (each in a session of its own whose autogroup has nice 19, so
#   they get the CPU the API and Postgres leave; with autogroups on, a plain `nice` only ranks a process
#   within its own session and Postgres, in another session, would still get no more than an equal
#   share); =normal does not. WORKER_DB_CONNS sets the worker's pool (DATABASE_MAX_CONNS, default 20).
#   =compose ranks them as docker-compose.yml's `cpu_shares: 256` does (a quarter of the others' CPU
#   weight): each in a session of its own whose autogroup has nice 6 (weight 272 against 1 024).
# TEMPORAL_EXTRA adds flags to the dev server (e.g. --dynamic-config-value system.enableEagerWorkflowStart=false).
# TEMPORAL_SERVER=postgres runs, instead of the dev server, the Temporal server of docker-compose.yml's
#   image on the same Postgres (temporal-postgres.sh, which builds it into bin/ from the module proxy
#   on first use: about 2.5 minutes). With BACKGROUND_PRIORITY=compose and RATE_LIMIT_STORE=postgres this is docker-compose.yml's
#   layout without Docker (issue26.sh STACK=compose).
# VIGIL_BIN=/path/to/other/vigil uses that build instead of this checkout's.
# It writes $BENCH_DIR/env (source it: URL, KEY, DSN, LOAD, PIDS, PROVPID, PROVIDER_ADDR, APID, WPID,
# TPID) and prints it. Stop with: kill $PIDS
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench}
DATABASE_ROOT=${DATABASE_ROOT:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-vigilbench}
# background CMD...: replaces the calling (&) subshell with CMD at the chosen priority.
case ${BACKGROUND_PRIORITY:-normal} in
  low) background() { exec setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' low "$@"; } ;;
  compose) background() { exec setsid sh -c 'echo 6 >/proc/self/autogroup 2>/dev/null; exec "$@"' compose "$@"; } ;;
  normal) background() { exec "$@"; } ;;
  *) echo "BACKGROUND_PRIORITY: low, compose or normal" >&2; exit 2 ;;
esac
case ${TEMPORAL_SERVER:=dev} in dev | postgres) ;; *) echo "TEMPORAL_SERVER: dev or postgres" >&2; exit 2 ;; esac

TEMPORAL_PORT=${TEMPORAL_PORT:-7300}
API_PORT=${API_PORT:-8100}
PROVIDER_ADDR=${PROVIDER_ADDR:-127.0.0.1:9900}
source cmd/vigil-load/lib.sh
refuse_taken "$PROVIDER_ADDR"
mkdir -p "$BENCH_DIR"
export GOTOOLCHAIN=local

if [ -n "${VIGIL_BIN:-}" ]; then cp "$VIGIL_BIN" "$BENCH_DIR/vigil"; else go build -o "$BENCH_DIR/vigil" ./cmd/vigil; fi
go build -o "$BENCH_DIR/vigil-load" ./cmd/vigil-load
[ -x bin/temporal ] || make temporal-cli

# docker-compose.yml runs its Postgres with max_connections 200 (docs/OPERATIONS.md "Postgres sizing"):
# the Temporal server's pools, the api's and the worker's, and the pgbench floor's 16 need more than
# the default 100 at 200 req/s.
if [ "$TEMPORAL_SERVER" = postgres ] && [ "$(psql -qAt "$DATABASE_ROOT/postgres" -c 'SHOW max_connections')" -lt 200 ]; then
  echo "the Postgres at $DATABASE_ROOT allows fewer than the 200 connections docker-compose.yml's does:" >&2
  echo "  psql -c 'ALTER SYSTEM SET max_connections = 200' and restart it" >&2; exit 1
fi
psql -q "$DATABASE_ROOT/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
export DATABASE_URL="$DATABASE_ROOT/$DB?sslmode=disable"
export TEMPORAL_ADDRESS="127.0.0.1:$TEMPORAL_PORT"
export API_ADDR="127.0.0.1:$API_PORT"
export ENCRYPTION_KEY=${ENCRYPTION_KEY:-$(openssl rand -hex 32)}
export SSRF_ALLOWED_HOSTS="$PROVIDER_ADDR"
export RATE_LIMIT_DEFAULT_PER_MINUTE=10000000
export LOG_LEVEL=warn

if [ "$TEMPORAL_SERVER" = dev ]; then
  background bin/temporal server start-dev --headless --port "$TEMPORAL_PORT" \
    --http-port $((TEMPORAL_PORT + 1)) --metrics-port $((TEMPORAL_PORT + 2)) --log-level error \
    --dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false \
    --dynamic-config-value matching.numTaskqueueReadPartitions=1 \
    --dynamic-config-value matching.numTaskqueueWritePartitions=1 \
    --dynamic-config-value system.enableEagerWorkflowStart=true ${TEMPORAL_EXTRA:-} >"$BENCH_DIR/temporal.log" 2>&1 &
  TPID=$!
else
  background cmd/vigil-load/temporal-postgres.sh "$BENCH_DIR/temporal" "$DATABASE_ROOT" "$DB" "$TEMPORAL_PORT" >"$BENCH_DIR/temporal.log" 2>&1 &
  TPID=$!
  # auto-setup registers the default namespace (retention 24 h).
  until bin/temporal operator namespace create -n default --retention 24h --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
    kill -0 "$TPID" 2>/dev/null || { tail -n 20 "$BENCH_DIR/temporal.log"; exit 1; }
    sleep 0.5
  done
fi
until bin/temporal operator namespace describe -n default --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do sleep 0.3; done

"$BENCH_DIR/vigil" migrate
KEY=$("$BENCH_DIR/vigil" create-api-key --name bench --scopes admin | tail -1)
"$BENCH_DIR/vigil" api >"$BENCH_DIR/api.log" 2>&1 &
APID=$!
DATABASE_MAX_CONNS=${WORKER_DB_CONNS:-20} background "$BENCH_DIR/vigil" worker >"$BENCH_DIR/worker.log" 2>&1 &
WPID=$!
"$BENCH_DIR/vigil-load" provider -addr "$PROVIDER_ADDR" >"$BENCH_DIR/provider.log" 2>&1 &
PPID_=$!
for _ in $(seq 100); do curl -fsS "http://$API_ADDR/health" >/dev/null 2>&1 && break; sleep 0.3; done
curl -fsS "http://$API_ADDR/health" >/dev/null || { tail -n 5 "$BENCH_DIR"/api.log; exit 1; }

cmd/vigil-load/prepare.sh "http://$API_ADDR" "$KEY" "$DATABASE_URL" "$PROVIDER_ADDR"

cat >"$BENCH_DIR/env" <<ENV
URL=http://$API_ADDR
KEY=$KEY
DSN=$DATABASE_URL
TEMPORAL=$TEMPORAL_ADDRESS
LOAD=$BENCH_DIR/vigil-load
PIDS="$TPID $APID $WPID $PPID_"
PROVPID=$PPID_
PROVIDER_ADDR=$PROVIDER_ADDR
APID=$APID
WPID=$WPID
TPID=$TPID
ENV
cat "$BENCH_DIR/env"
