#!/usr/bin/env bash
# Runs both MCP conformance suites against a Quire server that serves the
# conformance fixtures (mcp_endpoint.tests.live_app), then prints a summary.
#
#   scripts/conformance.sh [URL] [OUT_DIR]
#
# URL: the conformance channel of a running live_app server (the test suite
# passes its own). Without URL the script starts one itself on a scratch
# embedded database (quire_conformance) and stops it afterwards.
# Exit status 0 when 0.1.16 fails exactly its baseline and every check of the
# 2026-07-28 scenarios Quire must pass (stateless, header validation, custom
# headers, caching, resource-not-found) passes in 0.2.0-alpha.12.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export DJANGO_SETTINGS_MODULE=project.settings
export PATH="$PWD/.node22/node_modules/.bin:$PATH"
export npm_config_cache="$PWD/.node22/npm-cache" npm_config_prefer_offline=true
export npm_config_update_notifier=false

URL="${1:-}"
OUT="${2:-test-artifacts/conformance}"
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; }
trap cleanup EXIT

if [ -z "$URL" ]; then
  export QUIRE_DATABASE_NAME=quire_conformance
  PORT="${CONFORMANCE_PORT:-8765}"
  $PY manage.py migrate --noinput -v0 || exit 1
  export QUIRE_CONFORMANCE_KEY="qk_conformance_$($PY -c 'import secrets; print(secrets.token_urlsafe(16))')"
  $PY -c "import django; django.setup(); from mcp_endpoint.tests.live import ensure_conformance_channel as e; e('$QUIRE_CONFORMANCE_KEY')" \
    || exit 1
  MCP_RATE_LIMIT_PER_MINUTE=100000 $PY -m uvicorn mcp_endpoint.tests.live_app:application \
    --host 127.0.0.1 --port "$PORT" --workers 2 --log-level warning \
    --http project.http_guard:GuardedHttpToolsProtocol --no-proxy-headers --lifespan off &
  SERVER_PID=$!
  URL="http://127.0.0.1:$PORT/mcp/conformance"
  for _ in $(seq 60); do
    curl -s -o /dev/null "$URL" && break
    sleep 0.5
  done
fi

rm -rf "$OUT" && mkdir -p "$OUT"
echo "== conformance 0.1.16 (baseline: mcp_endpoint/tests/conformance-baseline.yml) against $URL"
npx -y @modelcontextprotocol/conformance@0.1.16 server --url "$URL" \
  --expected-failures mcp_endpoint/tests/conformance-baseline.yml -o "$OUT/0.1.16" \
  > "$OUT/0.1.16.log" 2>&1
echo "exit status $?" >> "$OUT/0.1.16.log"
echo "== conformance 0.2.0-alpha.12 --requirements 2026-07-28 against $URL"
npx -y @modelcontextprotocol/conformance@0.2.0-alpha.12 server --url "$URL" \
  --requirements 2026-07-28 -o "$OUT/0.2.0-alpha.12" > "$OUT/0.2.0-alpha.12.log" 2>&1
echo "exit status $?" >> "$OUT/0.2.0-alpha.12.log"
$PY -m mcp_endpoint.tests.conformance_report "$OUT"
