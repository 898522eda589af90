#!/usr/bin/env bash
# Checks the running provider service against its own spec from outside (docs/provider-service.md):
# schemathesis generates requests from /openapi.json (valid ones and, in its negative phases,
# invalid ones), sends them with the API token to a `herald provider` wired to a real gateway, and
# fails on any 5xx, any status, header, content type or body the spec does not describe, and any
# schema-invalid request the API accepts.
#
#   scripts/schemathesis.sh [HERALD] [MAX_EXAMPLES]
#
# HERALD defaults to the debug build (scripts/test.sh has built it). Installs schemathesis (PyPI)
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
HERALD=${1:-$(swift build --show-bin-path)/herald}
MAX_EXAMPLES=${2:-${HERALD_SCHEMATHESIS_EXAMPLES:-40}}
command -v schemathesis >/dev/null || python3 -m pip install -q --disable-pip-version-check 'schemathesis>=4,<5'
WORK=$(mktemp -d /tmp/herald-schemathesis.XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT

"$HERALD" gateway --data-dir "$WORK/gw" --provider-port 0 --admin-port 0 --device-port 0 --log-level error > "$WORK/gateway.json" &
PIDS+=($!)
wait_for_start "$WORK/gateway.json" "${PIDS[-1]}"
KEY_ID=$("$HERALD" keys create --data-dir "$WORK/gw" --team TEAM000001 --topic com.example.app --out "$WORK/key.p8")
"$HERALD" provider --data-dir "$WORK/provider" --port 0 --gateway "https://127.0.0.1:$(field "$WORK/gateway.json" provider_port)" \
    --ca "$WORK/gw/tls/ca.pem" --key "$WORK/key.p8" --key-id "$KEY_ID" --team TEAM000001 --feedback-interval 0 > "$WORK/provider.json" &
PIDS+=($!)
wait_for_start "$WORK/provider.json" "${PIDS[-1]}"
API="http://127.0.0.1:$(field "$WORK/provider.json" port)"
TOKEN=$(cat "$(field "$WORK/provider.json" api_token_file)")

# Something to find: a registration, a template and a schedule, so that reads can hit real ids.
curl -sf -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -X POST "$API/v1/registrations" \
    -d '{"token":"00aa","topic":"com.example.app","language":"fr","timeZone":"Europe/Paris","userId":"ana"}' >/dev/null
curl -sf -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -X PUT "$API/v1/templates/welcome" \
    -d '{"translations":{"en":{"body":"Hello %@"}}}' >/dev/null

schemathesis run "$API/openapi.json" --url "$API" -H "Authorization: Bearer $TOKEN" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection \
    --max-examples "$MAX_EXAMPLES" --seed 1 --request-timeout 30 --no-color \
    --report junit --report-dir "$WORK/report"
echo "schemathesis: every response conformed to the spec (details in $WORK)"
