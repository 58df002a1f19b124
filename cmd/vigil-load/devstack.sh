#!/usr/bin/env bash
# Starts the stack the way `make dev` does — one `vigil dev` with its own Postgres cluster and Temporal
# dev server under $BENCH_DIR/dev/.vigil — plus the local load provider, an admin key and the floor
# tables of floor.sql, and leaves it running. Writes $BENCH_DIR/env like stack.sh (URL, KEY, DSN, LOAD,
# PIDS, APID = vigil dev, WPID = its worker process, or vigil dev itself when the worker runs in it,
# TPID = the Temporal server, PGPID = the cluster's postmaster), so bench.sh and cpu.sh run against it unchanged. Stop with: kill $APID
#   VIGIL_BIN=/path/to/other/vigil cmd/vigil-load/devstack.sh   # compare another build
#   DEVSTACK_WAIT=900 (seconds to wait for "Vigil is running"; default 300)
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-/tmp/vigil-bench-dev}
API_PORT=${API_PORT:-8100}
PROVIDER_ADDR=${PROVIDER_ADDR:-127.0.0.1:9900}
source cmd/vigil-load/lib.sh
refuse_taken "$PROVIDER_ADDR"
export GOTOOLCHAIN=local
mkdir -p "$BENCH_DIR"
if [ -z "${VIGIL_BIN:-}" ]; then
  go build -o "$BENCH_DIR/vigil" ./cmd/vigil
  VIGIL_BIN=$BENCH_DIR/vigil
fi
go build -o "$BENCH_DIR/vigil-load" ./cmd/vigil-load
[ -x bin/temporal ] || make temporal-cli

# A fresh "checkout" for vigil dev: no go.mod, so .vigil/ is made here; bin/temporal is the repo's.
rm -rf "$BENCH_DIR/dev" && mkdir -p "$BENCH_DIR/dev/bin" && chmod 755 "$BENCH_DIR" "$BENCH_DIR/dev"
ln -s "$PWD/bin/temporal" "$BENCH_DIR/dev/bin/temporal"
(
  cd "$BENCH_DIR/dev"
  unset DATABASE_URL TEMPORAL_ADDRESS ENCRYPTION_KEY
  API_ADDR=127.0.0.1:$API_PORT SSRF_ALLOWED_HOSTS=$PROVIDER_ADDR RATE_LIMIT_DEFAULT_PER_MINUTE=10000000 LOG_LEVEL=warn \
    exec "$VIGIL_BIN" dev >"$BENCH_DIR/dev.out" 2>"$BENCH_DIR/dev.log"
) &
APID=$!
for _ in $(seq $((2 * ${DEVSTACK_WAIT:-300}))); do grep -q "Vigil is running" "$BENCH_DIR/dev.out" 2>/dev/null && break; sleep 0.5; done
grep -q "Vigil is running" "$BENCH_DIR/dev.out" || { tail -n 20 "$BENCH_DIR/dev.log" "$BENCH_DIR/dev.out"; kill "$APID"; exit 1; }
KEY=$(grep -o 'cai_[A-Za-z0-9_-]*' "$BENCH_DIR/dev.out" | head -1)
# vigil dev prints the cluster's URL with its password masked; the password is in .vigil/postgres/password
# (a VIGIL_BIN from before passwords makes a trust cluster without one and prints the URL as is).
DSN="$(awk '$1 == "Postgres" {print $2}' "$BENCH_DIR/dev.out")"
if [ -f "$BENCH_DIR/dev/.vigil/postgres/password" ]; then
  PGPW=$(cat "$BENCH_DIR/dev/.vigil/postgres/password")
  DSN=${DSN/:\*\*\*\*@/:$PGPW@}
fi
TPID=$(pgrep -P "$APID" -f 'server start-dev' | head -1)
WPID=$(pgrep -P "$APID" -f ' worker$' | head -1 || true)
WPID=${WPID:-$APID}
PGPID=$(head -1 "$BENCH_DIR/dev/.vigil/postgres/data/postmaster.pid")
"$BENCH_DIR/vigil-load" provider -addr "$PROVIDER_ADDR" >"$BENCH_DIR/provider.log" 2>&1 &
PPID_=$!
URL=http://127.0.0.1:$API_PORT
cmd/vigil-load/prepare.sh "$URL" "$KEY" "$DSN" "$PROVIDER_ADDR"

# env holds the cluster's password (in DSN): readable by its owner only.
rm -f "$BENCH_DIR/env"
(umask 077 && cat >"$BENCH_DIR/env") <<ENV
URL=$URL
KEY=$KEY
DSN=$DSN
LOAD=$BENCH_DIR/vigil-load
PIDS="$APID $PPID_"
PROVPID=$PPID_
PROVIDER_ADDR=$PROVIDER_ADDR
APID=$APID
WPID=$WPID
TPID=$TPID
PGPID=$PGPID
ENV
cat "$BENCH_DIR/env"
