#!/usr/bin/env bash
# Prepares a running benchmark stack (stack.sh, devstack.sh): registers the load provider of
# `vigil-load provider` (one GET per IP, cached for 1 s: every alert's IPs are fresh anyway) and creates
# the floor tables of floor.sql.   prepare.sh URL KEY DSN PROVIDER_ADDR
set -euo pipefail
URL=$1 KEY=$2 DSN=$3 PROVIDER_ADDR=$4
curl -fsS -X POST "$URL/v1/enrichment-providers" -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' -d @- >/dev/null <<JSON
{"provider_name":"loadprov","display_name":"Load provider","supported_indicator_types":["ip"],"auth_type":"none",
 "default_cache_ttl_seconds":1,
 "http_config":{"steps":[{"name":"lookup","url":"http://$PROVIDER_ADDR/{{indicator.value}}","timeout_seconds":10}]},
 "malice_rules":{"rules":[{"field":"score","operator":">=","value":80,"verdict":"Malicious"}],"default_verdict":"Benign"}}
JSON
psql -q "$DSN" -c "CREATE TABLE floor_alerts (LIKE alerts INCLUDING ALL); CREATE TABLE floor_outbox (LIKE alert_outbox INCLUDING ALL);"
