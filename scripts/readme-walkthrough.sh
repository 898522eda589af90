#!/usr/bin/env bash
# Runs the README's "Five minutes with it" block exactly as written and checks what it prints.
#
#   scripts/readme-walkthrough.sh [HERALD]
#
# HERALD defaults to the debug build (scripts/test.sh has built it); it is put where the block's
# first line looks for it (.build/release/herald of a scratch directory the block runs in). The
# block uses the fixed ports it shows (2197, 2198, 9090): run this alone, not beside another gateway.
set -euo pipefail
cd "$(dirname "$0")/.."
HERALD=${1:-$(swift build --show-bin-path)/herald}
HERALD=$(cd "$(dirname "$HERALD")" && pwd)/$(basename "$HERALD")
command -v socat >/dev/null || { echo "socat is missing: scripts/test-deps.sh installs it" >&2; exit 1; }
WORK=$(mktemp -d /tmp/herald-readme.XXXXXX)
mkdir -p "$WORK/.build/release"
ln -s "$HERALD" "$WORK/.build/release/herald"
python3 - README.md > "$WORK/walkthrough.sh" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text[text.index("## Five minutes with it"):]
block = section[section.index("```sh\n") + len("```sh\n"):]
print(block[:block.index("```")], end="")
PY
cd "$WORK"
# Its own session and process group (the bash that setsid starts leads it and records its pid,
# which is the group's id), so that everything the block leaves running is stopped at the end by
# that group, never by name.
set +e
setsid -w bash -c 'echo $$ > "$1"; exec timeout 180 bash walkthrough.sh' walkthrough "$WORK/pgid" > transcript.txt 2>&1 &
RUN=$!
wait $RUN
STATUS=$?
set -e
[ -s "$WORK/pgid" ] && kill -TERM -- "-$(cat "$WORK/pgid")" 2>/dev/null || true
[ $STATUS -eq 124 ] && { echo "the walk-through did not finish within 180 s; transcript:" >&2; cat transcript.txt >&2; exit 1; }

fail=0
expect() {  # DESCRIPTION PATTERN: the transcript must match the extended regular expression
  if ! grep -qE -- "$2" transcript.txt; then echo "README walk-through: $1 (no match for: $2)" >&2; fail=1; fi
}
expect "the gateway's start-up line" '"provider_port":2197'
expect "the device registers the app" '"event":"registered","token":"[0-9a-f]{64}"'
expect "the app is granted alerts" '"granted":true'
expect "the local notification is pending" '"id":"standup","nextFire"'
expect "the push is accepted (its apns-id)" '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
expect "the device shows the push" '"event":"delivered".*"presented":\["banner","list"\]'
expect "three tokens from a file" 'sent 3, failed 0'
expect "the metrics" '^herald_notifications_held'
expect "the receipt" 'delivered|acked'
expect "the live view" '"accepted"|accepted'
expect "the app is unregistered" '^unregistered com\.example\.app at [0-9]+'
expect "the push after removal" '^410 Unregistered'
if [ $fail -ne 0 ]; then echo "transcript ($WORK/transcript.txt):" >&2; cat transcript.txt >&2; exit 1; fi
echo "README walk-through: every step printed what the README says ($WORK/transcript.txt)"
