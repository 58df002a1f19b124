#!/usr/bin/env bash
# Starts docker-compose.yml's layout on this machine without Docker and leaves it running: one Postgres
# for Vigil's data and Temporal's (the machine's, DATABASE_ROOT; compose runs its own postgres:16), the
# Temporal server of compose's image (temporalio/auto-setup:1.29.1 = server v1.29.1, built from the
# module proxy into bin/temporal-server with its SQL tool) on Postgres with temporal/dynamicconfig.yaml,
# `vigil api` and `vigil worker` apart. Compose gives the server and the worker `cpu_shares: 256`, a
# quarter of the others' CPU weight: here each runs in a session of its own whose autogroup has nice 6
# (weight 272 against 1 024). Plus the local load provider, an admin key and the floor tables, like
# devstack.sh, whose $BENCH_DIR/env it writes (URL, KEY, DSN, LOAD, PIDS, PROVPID, PROVIDER_ADDR, APID,
# WPID, TPID), so bench.sh and issue26.sh run against it unchanged (STACK=compose).
# Stop with: kill $PIDS
#   VIGIL_BIN=/path/to/other/vigil cmd/vigil-load/composestack.sh   # compare another build
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench-compose}
DATABASE_ROOT=${DATABASE_ROOT:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-vigilcompose}
TEMPORAL_PORT=${TEMPORAL_PORT:-7400}
API_PORT=${API_PORT:-8100}
PROVIDER_ADDR=${PROVIDER_ADDR:-127.0.0.1:9900}
SERVER_VERSION=v1.29.1
export GOTOOLCHAIN=local
mkdir -p "$BENCH_DIR"
# ranked CMD...: replaces the calling (&) subshell with CMD in a session of its own at autogroup nice 6.
ranked() { exec setsid sh -c 'echo 6 >/proc/self/autogroup 2>/dev/null; exec "$@"' ranked "$@"; }

[ -x bin/temporal-server ] && [ -x bin/temporal-sql-tool ] || {
  GOBIN=$PWD/bin go install "go.temporal.io/server/cmd/server@$SERVER_VERSION" "go.temporal.io/server/cmd/tools/sql@$SERVER_VERSION"
  mv bin/server bin/temporal-server && mv bin/sql bin/temporal-sql-tool
}
[ -x bin/temporal ] || make temporal-cli
if [ -n "${VIGIL_BIN:-}" ]; then cp "$VIGIL_BIN" "$BENCH_DIR/vigil"; else go build -o "$BENCH_DIR/vigil" ./cmd/vigil; fi
go build -o "$BENCH_DIR/vigil-load" ./cmd/vigil-load

# Temporal's schemas as auto-setup makes them (setup-schema 0.0, then every versioned step).
SCHEMA=$(go env GOMODCACHE)/go.temporal.io/server@$SERVER_VERSION/schema/postgresql/v12
[ -d "$SCHEMA" ] || go mod download "go.temporal.io/server@$SERVER_VERSION"
PGHOSTPORT=${DATABASE_ROOT#*@}
PGUSER_=${DATABASE_ROOT#postgres://}
PGUSER_=${PGUSER_%@*}
psql -q "$DATABASE_ROOT/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" \
  -c "DROP DATABASE IF EXISTS ${DB}_temporal WITH (FORCE)" -c "DROP DATABASE IF EXISTS ${DB}_visibility WITH (FORCE)"
for part in temporal visibility; do
  sql=(bin/temporal-sql-tool --plugin postgres12 --ep "${PGHOSTPORT%:*}" -p "${PGHOSTPORT#*:}" -u "$PGUSER_" --db "${DB}_$part")
  "${sql[@]}" create-database >/dev/null
  "${sql[@]}" setup-schema -v 0.0 >/dev/null
  "${sql[@]}" update-schema -d "$SCHEMA/$part/versioned" >/dev/null
done

# The server's config: development-postgres12.yaml's shape with auto-setup's defaults (4 history
# shards, 20 connections per store).
mkdir -p "$BENCH_DIR/temporal/config/dynamicconfig"
cp temporal/dynamicconfig.yaml "$BENCH_DIR/temporal/config/dynamicconfig/vigil.yaml"
store() {
  cat <<YAML
    $1:
      sql:
        pluginName: postgres12
        databaseName: $2
        connectAddr: "$PGHOSTPORT"
        connectProtocol: tcp
        user: "$PGUSER_"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
YAML
}
service() {
  cat <<YAML
  $1:
    rpc:
      grpcPort: $2
      membershipPort: $3
      bindOnLocalHost: true
YAML
}
cat >"$BENCH_DIR/temporal/config/compose.yaml" <<YAML
log:
  stdout: true
  level: error
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
$(store default "${DB}_temporal")
$(store visibility "${DB}_visibility")
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: 127.0.0.1:$((TEMPORAL_PORT + 50))
services:
$(service frontend "$TEMPORAL_PORT" $((TEMPORAL_PORT + 10)))
$(service history $((TEMPORAL_PORT + 1)) $((TEMPORAL_PORT + 11)))
$(service matching $((TEMPORAL_PORT + 2)) $((TEMPORAL_PORT + 12)))
$(service worker $((TEMPORAL_PORT + 3)) $((TEMPORAL_PORT + 13)))
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:$TEMPORAL_PORT
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: $BENCH_DIR/temporal/config/dynamicconfig/vigil.yaml
  pollInterval: 10s
YAML

export DATABASE_URL="$DATABASE_ROOT/$DB?sslmode=disable"
export TEMPORAL_ADDRESS="127.0.0.1:$TEMPORAL_PORT"
export API_ADDR="127.0.0.1:$API_PORT"
export ENCRYPTION_KEY=${ENCRYPTION_KEY:-$(openssl rand -base64 32)}
export SSRF_ALLOWED_HOSTS="$PROVIDER_ADDR"
export RATE_LIMIT_DEFAULT_PER_MINUTE=10000000
export LOG_LEVEL=warn
export LOG_FORMAT=json
# Compose's api replicas share one request budget per key.
export RATE_LIMIT_STORE=postgres

(ranked bin/temporal-server -r "$BENCH_DIR/temporal" -c config -e compose --allow-no-auth start >"$BENCH_DIR/temporal.log" 2>&1) &
TPID=$!
for _ in $(seq 200); do bin/temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1 && break; sleep 0.3; done
# auto-setup registers the default namespace (retention 24 h).
until bin/temporal operator namespace create -n default --retention 24h --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1 ||
  bin/temporal operator namespace describe -n default --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  kill -0 "$TPID" 2>/dev/null || { tail -n 20 "$BENCH_DIR/temporal.log"; exit 1; }
  sleep 0.5
done

"$BENCH_DIR/vigil" migrate
KEY=$("$BENCH_DIR/vigil" create-api-key --name bench --scopes admin | tail -1)
"$BENCH_DIR/vigil" api >"$BENCH_DIR/api.log" 2>&1 &
APID=$!
(ranked "$BENCH_DIR/vigil" worker >"$BENCH_DIR/worker.log" 2>&1) &
WPID=$!
"$BENCH_DIR/vigil-load" provider -addr "$PROVIDER_ADDR" >"$BENCH_DIR/provider.log" 2>&1 &
PPID_=$!
for _ in $(seq 100); do curl -fsS "http://$API_ADDR/health" >/dev/null 2>&1 && break; sleep 0.3; done
curl -fsS "http://$API_ADDR/health" >/dev/null || { tail -n 5 "$BENCH_DIR"/api.log; exit 1; }

cmd/vigil-load/prepare.sh "http://$API_ADDR" "$KEY" "$DATABASE_URL" "$PROVIDER_ADDR"

rm -f "$BENCH_DIR/env"
(umask 077 && cat >"$BENCH_DIR/env") <<ENV
URL=http://$API_ADDR
KEY=$KEY
DSN=$DATABASE_URL
TEMPORAL=$TEMPORAL_ADDRESS
LOAD=$BENCH_DIR/vigil-load
PIDS="$TPID $APID $WPID"
PROVPID=$PPID_
PROVIDER_ADDR=$PROVIDER_ADDR
APID=$APID
WPID=$WPID
TPID=$TPID
ENV
cat "$BENCH_DIR/env"
