#!/usr/bin/env bash
# The issue 30 rows of docs/PERFORMANCE.md: the case list (GET /v1/cases, its filters and sorts) and
# the case page (GET /v1/cases/{uuid}, its alerts, its timeline) at 10 000 cases and 100 000 alerts.
#
#   DSN=postgres://…/db  go run ./cmd/vigil-load seed -dsn "$DSN" -n 100000
#   go run ./cmd/vigil-load seed-cases -dsn "$DSN" -n 10000     # prints largest_case_uuid
#   DATABASE_URL=$DSN RATE_LIMIT_DEFAULT_PER_MINUTE=1000000 API_ADDR=127.0.0.1:18730 vigil api &
#   URL=http://127.0.0.1:18730 KEY=cai_… CASE=<largest_case_uuid> cmd/vigil-load/cases.sh
#
# One JSON object per request shape.
set -euo pipefail
cd "$(dirname "$0")"
LOAD=${LOAD:-go run .}
RATE=${RATE:-10}
DURATION=${DURATION:-15s}
lists=(
  ""
  "status=Open"
  "status=Open,Investigating&severity=High,Critical"
  "assignee=analyst-7"
  "assignee=none&status=Open"
  "q=lockbit"
  "q=CASE-4242"
  "sort_by=severity&sort_order=desc"
  "sort_by=case_number&sort_order=asc&page=100"
)
for q in "${lists[@]}"; do
  $LOAD list -url "$URL" -key "$KEY" -rate "$RATE" -duration "$DURATION" -warmup 2s -path /v1/cases -query "$q" | tr -d '\n '
  echo
done
for p in "/v1/cases/$CASE" "/v1/cases/$CASE/alerts" "/v1/cases/$CASE/timeline" "/v1/alerts"; do
  q=""
  [ "$p" = "/v1/alerts" ] && q="case_uuid=$CASE"
  $LOAD list -url "$URL" -key "$KEY" -rate "$RATE" -duration "$DURATION" -warmup 2s -path "$p" -query "$q" | tr -d '\n '
  echo
done
