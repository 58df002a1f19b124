#!/usr/bin/env bash
# The issue 29 rows of docs/PERFORMANCE.md: each new GET /v1/alerts filter (alone and combined) and
# POST /v1/alerts/bulk of 500 alerts, at 100 000 alerts and ≥ 1 000 000 indicator links.
#
#   DSN=postgres://…/db  go run ./cmd/vigil-load seed -dsn "$DSN" -n 100000
#   go run ./cmd/vigil-load seed-analyst -dsn "$DSN"            # descriptions, assignees, 1 000 000 links
#   DATABASE_URL=$DSN RATE_LIMIT_DEFAULT_PER_MINUTE=1000000 API_ADDR=127.0.0.1:18729 vigil api &
#   URL=http://127.0.0.1:18729 KEY=cai_… DSN=… MALICIOUS=<hash> SHARED=<domain> IP=<ip> cmd/vigil-load/analyst.sh
#
# (seed-analyst prints the three sample values.) One JSON object per query, then the bulk run.
set -euo pipefail
cd "$(dirname "$0")"
LOAD=${LOAD:-go run .}
RATE=${RATE:-10}
DURATION=${DURATION:-15s}
queries=(
  "assignee=analyst-7"
  "assignee=none"
  "assignee=analyst-1,analyst-2,none&status=Open"
  "indicator=${MALICIOUS}"
  "indicator=${SHARED}"
  "indicator=${IP}&indicator_type=ip"
  "malice=Malicious"
  "malice=Suspicious"
  "malice=Benign"
  "malice=Pending"
  "malice=Malicious,Suspicious&status=Open,Triaging"
  "close_classification=Duplicate"
  "close_classification=False%20Positive%20-%20Incorrect%20Detection%20Logic,False%20Positive%20-%20Inaccurate%20Data"
  "q=lockbit"
  "q=seeded%20alert%2099"
  "assignee=analyst-3&malice=Malicious&q=seeded"
  "indicator=${SHARED}&malice=Suspicious,Malicious&assignee=none"
)
for q in "${queries[@]}"; do
  $LOAD list -url "$URL" -key "$KEY" -rate "$RATE" -duration "$DURATION" -warmup 2s -query "$q" | tr -d '\n '
  echo
done
$LOAD bulk -url "$URL" -key "$KEY" -dsn "$DSN" -rounds "${ROUNDS:-10}" | tr -d '\n '
echo
