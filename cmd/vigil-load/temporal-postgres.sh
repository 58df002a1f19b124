#!/usr/bin/env bash
# Runs, in place of this shell, the Temporal server of docker-compose.yml's image
# (temporalio/auto-setup:1.29.1 = server v1.29.1, built on first use into bin/temporal-server with its
# SQL tool) on Postgres, as auto-setup sets it up: fresh databases <DB>_temporal and
# <DB>_visibility (setup-schema 0.0, then every versioned step), 4 history shards, the image's
# connections per store (SQL_MAX_CONNS 20, SQL_VIS_MAX_CONNS 10 unless set),
# temporal/dynamicconfig.yaml. The default namespace is left to the caller (stack.sh).
#   temporal-postgres.sh DIR DATABASE_ROOT DB PORT   (DIR: its config; PORT: the frontend, PORT+1..3 the
#   other services, PORT+10..13 membership, PORT+50 metrics)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=$1 DATABASE_ROOT=$2 DB=$3 TEMPORAL_PORT=$4
SERVER_VERSION=v1.29.1

if ! [ -x bin/temporal-server ] || ! [ -x bin/temporal-sql-tool ]; then
  GOBIN=$PWD/bin go install "go.temporal.io/server/cmd/server@$SERVER_VERSION" "go.temporal.io/server/cmd/tools/sql@$SERVER_VERSION"
  mv bin/server bin/temporal-server && mv bin/sql bin/temporal-sql-tool
fi

SCHEMA=$(go env GOMODCACHE)/go.temporal.io/server@$SERVER_VERSION/schema/postgresql/v12
[ -d "$SCHEMA" ] || go mod download "go.temporal.io/server@$SERVER_VERSION"
PGHOSTPORT=${DATABASE_ROOT#*@}
PGUSER_=${DATABASE_ROOT#postgres://}
PGUSER_=${PGUSER_%@*}
psql -q "$DATABASE_ROOT/postgres" -c "DROP DATABASE IF EXISTS ${DB}_temporal WITH (FORCE)" \
  -c "DROP DATABASE IF EXISTS ${DB}_visibility WITH (FORCE)"
for part in temporal visibility; do
  sql=(bin/temporal-sql-tool --plugin postgres12 --ep "${PGHOSTPORT%:*}" -p "${PGHOSTPORT#*:}" -u "$PGUSER_" --db "${DB}_$part")
  "${sql[@]}" create-database >/dev/null
  "${sql[@]}" setup-schema -v 0.0 >/dev/null
  "${sql[@]}" update-schema -d "$SCHEMA/$part/versioned" >/dev/null
done

# The server's config: the shape of the server's config/development-postgres12.yaml.
mkdir -p "$DIR/config/dynamicconfig"
cp temporal/dynamicconfig.yaml "$DIR/config/dynamicconfig/vigil.yaml"
# store NAME DATABASE CONNS: auto-setup's docker/config_template.yaml gives the default store 20
# connections (SQL_MAX_CONNS) and visibility 10 (SQL_VIS_MAX_CONNS), per service.
store() {
  cat <<YAML
    $1:
      sql:
        pluginName: postgres12
        databaseName: $2
        connectAddr: "$PGHOSTPORT"
        connectProtocol: tcp
        user: "$PGUSER_"
        maxConns: $3
        maxIdleConns: $3
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
cat >"$DIR/config/compose.yaml" <<YAML
log:
  stdout: true
  level: error
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
$(store default "${DB}_temporal" "${SQL_MAX_CONNS:-20}")
$(store visibility "${DB}_visibility" "${SQL_VIS_MAX_CONNS:-10}")
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
  filepath: $DIR/config/dynamicconfig/vigil.yaml
  pollInterval: 10s
YAML

exec bin/temporal-server -r "$DIR" -c config -e compose --allow-no-auth start
