#!/usr/bin/env bash
# Checks the Debian package, installs it, starts the gateway as its unit would, and purges it
# (CI runs it; it needs root, and leaves the machine as it found it).
#
#   scripts/package-check.sh [PACKAGE.deb]     # without one, builds it (scripts/package-deb.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-check: needs root (dpkg -i)" >&2; exit 1; }
fail() { echo "package-check: FAIL $*" >&2; exit 1; }
package=${1:-$(scripts/package-deb.sh | tail -1)}
echo "package-check: built $package ($(du -h "$package" | cut -f1))"
dpkg-deb --info "$package" >/dev/null || fail "dpkg-deb cannot read the package"

dpkg -i "$package" >/dev/null || fail "dpkg -i"
cleanup() { dpkg --purge herald >/dev/null 2>&1 || true; }
trap cleanup EXIT
getent passwd herald >/dev/null || fail "the herald system user was not created"
bytes=$(stat -c %s /usr/lib/herald/herald)
[ "$bytes" -lt $((60 * 1024 * 1024)) ] || fail "/usr/lib/herald/herald is $bytes bytes (over 60 MiB)"
! readelf -S /usr/lib/herald/herald | grep -q '\.symtab' || fail "/usr/lib/herald/herald is not stripped (it has a .symtab)"
# It runs with the libraries it brought (no toolchain on the library path).
env -i PATH=/usr/bin:/bin /usr/bin/herald --version >/dev/null || fail "/usr/bin/herald --version"
[ -f /usr/share/man/man1/herald.1.gz ] && [ -f /usr/share/bash-completion/completions/herald ] || fail "man page or completions missing"
[ -f /etc/herald/gateway.yaml ] || fail "/etc/herald/gateway.yaml missing"
echo "package-check: installed; herald $(/usr/bin/herald --version), $((bytes / 1048576)) MiB stripped"

# The units, as systemd reads them.
verify=$(systemd-analyze verify /lib/systemd/system/herald-gateway.service /lib/systemd/system/herald-provider.service 2>&1 || true)
if [ -n "$verify" ]; then echo "$verify" >&2; fail "systemd-analyze verify"; fi
echo "package-check: systemd-analyze verify passes on herald-gateway.service and herald-provider.service"

# Start the gateway as the unit would: its StateDirectory, its user, its ExecStartPre and ExecStart.
install -d -o herald -g herald -m 0750 /var/lib/herald
unit=/lib/systemd/system/herald-gateway.service
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
start=$(sed -n 's/^ExecStart=//p' "$unit")
# shellcheck disable=SC2086
setpriv --reuid herald --regid herald --init-groups --no-new-privs $pre >/tmp/herald-package-doctor.txt 2>&1 ||
    { cat /tmp/herald-package-doctor.txt >&2; fail "the unit's ExecStartPre (herald doctor) failed"; }
log=$(mktemp /tmp/herald-package-gateway.XXXXXX)
# shellcheck disable=SC2086
setpriv --reuid herald --regid herald --init-groups --no-new-privs $start >"$log" 2>"$log.err" &
pid=$!
for _ in $(seq 1 100); do grep -q '"provider_port"' "$log" && break; sleep 0.1; done
line=$(grep -m1 '"provider_port"' "$log" || true)
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[ -n "$line" ] || { cat "$log" "$log.err" >&2; fail "the gateway printed no start-up line"; }
echo "$line" | python3 -c 'import json,sys; l=json.load(sys.stdin); assert l["provider_port"]==2197 and l["device_port"]==2198 and l["database"]=="/var/lib/herald/herald.sqlite", l' ||
    fail "the start-up line is not what /etc/herald/gateway.yaml says: $line"
[ "$(stat -c %U /var/lib/herald/herald.sqlite)" = herald ] || fail "the store is not owned by the herald user"
echo "package-check: the gateway started as the unit would (user herald, /etc/herald/gateway.yaml): $line"

dpkg --purge herald >/dev/null || fail "dpkg --purge"
trap - EXIT
! getent passwd herald >/dev/null || fail "the herald user is still there after purge"
[ ! -e /usr/bin/herald ] && [ ! -e /var/lib/herald ] && [ ! -e /etc/herald ] || fail "files left after purge"
echo "package-check: purged; nothing left"
