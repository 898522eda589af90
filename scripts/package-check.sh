#!/usr/bin/env bash
# Checks the Debian package, installs it, starts the gateway as its unit would, and purges it
# (CI runs it; it needs root, and leaves the machine as it found it).
#
#   scripts/package-check.sh [PACKAGE.deb]     # without one, builds it (scripts/package-deb.sh)
#   HERALD_PACKAGE_MAX_MIB=N                   # the stripped binary's bound (60: a release build;
#                                              # CI packages its debug build and raises it)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-check: needs root (dpkg -i)" >&2; exit 1; }
fail() { echo "package-check: FAIL $*" >&2; exit 1; }
package=${1:-$(scripts/package-deb.sh | tail -1)}
echo "package-check: built $package ($(du -h "$package" | cut -f1))"
dpkg-deb --info "$package" >/dev/null || fail "dpkg-deb cannot read the package"

dpkg -i "$package" >/dev/null || fail "dpkg -i"
trap 'dpkg --purge herald >/dev/null 2>&1 || true' EXIT
getent passwd herald >/dev/null || fail "the herald system user was not created"
bytes=$(stat -c %s /usr/lib/herald/herald)
max_mib=${HERALD_PACKAGE_MAX_MIB:-60}
[[ "$max_mib" =~ ^[1-9][0-9]{0,3}$ ]] || fail "HERALD_PACKAGE_MAX_MIB is a whole number of MiB, not '$max_mib'"
[ "$bytes" -lt $((max_mib * 1024 * 1024)) ] || fail "/usr/lib/herald/herald is $bytes bytes (over $max_mib MiB)"
! readelf -S /usr/lib/herald/herald | grep -q '\.symtab' || fail "/usr/lib/herald/herald is not stripped (it has a .symtab)"
# It runs with the libraries it brought: its run path is its own directory alone (the gateway
# below also runs with the toolchain hidden).
runpath=$(readelf -d /usr/lib/herald/herald | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = '$ORIGIN' ] || fail "/usr/lib/herald/herald's RUNPATH is '$runpath', not \$ORIGIN alone"
env -i PATH=/usr/bin:/bin /usr/bin/herald --version >/dev/null || fail "/usr/bin/herald --version"
grep -q '^Depends: .*libc6 (>= ' <(dpkg-deb --field "$package" Depends | sed 's/^/Depends: /') || fail "Depends names no libc6 version"
[ -s /usr/share/doc/herald/copyright ] || fail "no /usr/share/doc/herald/copyright"
for page in $(sed -n 's|^Documentation=.*file:\(/[^ ]*\).*|\1|p' /lib/systemd/system/herald-*.service /usr/lib/systemd/user/herald-device.service); do
    [ -f "$page" ] || fail "a unit's Documentation= names $page, which is not installed"
done
[ -f /usr/share/man/man1/herald.1.gz ] && [ -f /usr/share/bash-completion/completions/herald ] || fail "man page or completions missing"
[ -f /etc/herald/gateway.yaml ] || fail "/etc/herald/gateway.yaml missing"
[ -f /usr/share/herald/prometheus/herald.rules.yml ] && [ -f /usr/share/herald/grafana/herald.json ] ||
    fail "the alerting rules or the dashboard are missing from /usr/share/herald"
# The installed rules pass their own unit tests where they are (when promtool is there).
if command -v promtool >/dev/null; then
    (cd /usr/share/herald/prometheus && promtool test rules herald.rules.test.yml >/dev/null) || fail "promtool test rules in /usr/share/herald/prometheus"
fi
echo "package-check: installed; herald $(/usr/bin/herald --version), $((bytes / 1048576)) MiB stripped"

# The units, as systemd reads them.
verify=$(systemd-analyze verify /lib/systemd/system/herald-gateway.service /lib/systemd/system/herald-provider.service 2>&1 || true)
if [ -n "$verify" ]; then echo "$verify" >&2; fail "systemd-analyze verify"; fi
echo "package-check: systemd-analyze verify passes on herald-gateway.service and herald-provider.service"

# Start the gateway as the unit would, as far as this machine allows: its StateDirectory, its
# user, no capabilities in any set (CapabilityBoundingSet=), no_new_privs, a read-only file
# system but its state directory (ProtectSystem=strict), a private /tmp, and the Swift toolchain
# hidden (an empty directory over it), so that the binary must find its runtime through its own
# RUNPATH; then its ExecStartPre and ExecStart.
install -d -o herald -g herald -m 0750 /var/lib/herald
unit=/lib/systemd/system/herald-gateway.service
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
start=$(sed -n 's/^ExecStart=//p' "$unit")
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift || echo /opt/swift/usr/bin/swift)")")")")
# shellcheck disable=SC2016
as_unit=(unshare --mount --propagation private sh -c '
    mount --bind /var/lib/herald /var/lib/herald && mount -t tmpfs -o mode=1777 tmpfs /tmp &&
    { [ ! -d "$0" ] || mount -t tmpfs -o ro tmpfs "$0"; } && mount -o remount,bind,ro / &&
    exec setpriv --reuid herald --regid herald --init-groups --no-new-privs --bounding-set=-all --inh-caps=-all "$@"' "$toolchain")
work=$(mktemp -d /tmp/herald-package.XXXXXX)
chmod 0755 "$work"
pid=""; device=""
# The background processes run in sessions of their own (setsid): each is stopped with its
# whole process group (dbus-run-session's bus and device included), by the pid it started with.
stop() { [ -z "$1" ] || kill -TERM -- "-$1" 2>/dev/null || true; }
cleanup() {
    stop "$device"
    stop "$pid"
    wait 2>/dev/null || true
    rm -rf "$work"
    dpkg --purge herald >/dev/null 2>&1 || true
    userdel -r herald-check >/dev/null 2>&1 || true
}
trap cleanup EXIT
# shellcheck disable=SC2086
"${as_unit[@]}" $pre >"$work/doctor.txt" 2>&1 || { cat "$work/doctor.txt" >&2; fail "the unit's ExecStartPre (herald doctor) failed"; }
# shellcheck disable=SC2086
setsid "${as_unit[@]}" $start >"$work/gateway.json" 2>"$work/gateway.err" &
pid=$!
for _ in $(seq 1 100); do grep -q '"provider_port"' "$work/gateway.json" && break; sleep 0.1; done
line=$(grep -m1 '"provider_port"' "$work/gateway.json" || true)
[ -n "$line" ] || { cat "$work/gateway.json" "$work/gateway.err" >&2; fail "the gateway printed no start-up line"; }
echo "$line" | python3 -c 'import json,sys; l=json.load(sys.stdin); assert l["provider_port"]==2197 and l["device_port"]==2198 and l["database"]=="/var/lib/herald/herald.sqlite", l' ||
    fail "the start-up line is not what /etc/herald/gateway.yaml says: $line"
[ "$(stat -c %U /var/lib/herald/herald.sqlite)" = herald ] || fail "the store is not owned by the herald user"
echo "package-check: the gateway started as the unit would (user herald, no capabilities, read-only system, toolchain hidden): $line"

# A device as a person runs it: another ordinary user, the user unit's own ExecStart with its
# ~/.config/herald/device.yaml, on a session bus of its own, connected over TLS with the gateway's CA.
userdel -r herald-check >/dev/null 2>&1 || true
useradd --create-home --shell /bin/bash herald-check
home=$(getent passwd herald-check | cut -d: -f6)
install -d -o herald-check -g herald-check "$home/.config/herald" "$home/.local/state"
install -o herald-check -g herald-check -m 0644 /var/lib/herald/tls/ca.pem "$home/ca.pem"
cat > "$home/.config/herald/device.yaml" <<YAML
gateway: wss://localhost:2198
ca: $home/ca.pem
app: [com.example.packagecheck]
json: true
YAML
chown herald-check:herald-check "$home/.config/herald/device.yaml"
user_unit=/usr/lib/systemd/user/herald-device.service
device_start=$(sed -n 's/^ExecStart=//p' "$user_unit" | sed -e "s|%E|$home/.config|g" -e "s|%S|$home/.local/state|g")
as_user() { setpriv --reuid herald-check --regid herald-check --init-groups --no-new-privs --bounding-set=-all --inh-caps=-all env -i HOME="$home" USER=herald-check PATH=/usr/bin:/bin "$@"; }
# shellcheck disable=SC2086
setsid setpriv --reuid herald-check --regid herald-check --init-groups --no-new-privs --bounding-set=-all --inh-caps=-all \
    env -i HOME="$home" USER=herald-check PATH=/usr/bin:/bin dbus-run-session -- $device_start >"$work/device.json" 2>"$work/device.err" &
device=$!
for _ in $(seq 1 100); do grep -q '"registered"' "$work/device.json" && break; sleep 0.1; done
token=$(sed -n 's/.*"registered","token":"\([0-9a-f]*\)".*/\1/p' "$work/device.json" | head -1)
[ -n "$token" ] || { cat "$work/device.json" "$work/device.err" >&2; fail "the device (user herald-check, its user unit's command) did not register"; }
grep -q '"connected"' "$work/device.json" || { cat "$work/device.json" "$work/device.err" >&2; fail "the device did not connect to the gateway"; }
echo "package-check: a device run by user herald-check (its user unit's ExecStart, a session bus) connected and registered"

# The app asks to show alerts; a provider key; one push over TLS, sent by the ordinary user.
printf '%s\n' '{"id":1,"op":"hello","app":"com.example.packagecheck","state":"background"}' \
    '{"id":2,"op":"requestAuthorization","options":["alert"]}' |
    as_user python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())
for line in s.makefile():
    print(line, end="")
    if "\"id\":2" in line: break' \
    "$home/.local/state/herald-device/agent.sock" > "$work/agent.txt" || fail "the device's agent socket"
grep -q '"granted":true' "$work/agent.txt" || { cat "$work/agent.txt" >&2; fail "authorization was not granted"; }
install -d -o herald -g herald "$work/keys"
key_id=$(setpriv --reuid herald --regid herald --init-groups --no-new-privs /usr/bin/herald keys create --data-dir /var/lib/herald \
    --team TEAM123456 --topic com.example.packagecheck --out "$work/keys/key.p8") || fail "herald keys create"
install -m 0644 "$work/keys/key.p8" "$work/key.p8"
as_user /usr/bin/herald push send --gateway https://localhost:2197 --ca "$home/ca.pem" --key "$work/key.p8" --key-id "$key_id" \
    --team TEAM123456 --topic com.example.packagecheck --token "$token" --alert "Packaged" >"$work/push.txt" 2>&1 ||
    { cat "$work/push.txt" >&2; fail "herald push send (user herald-check) to the packaged gateway"; }
for _ in $(seq 1 100); do grep -q '"delivered"' "$work/device.json" && break; sleep 0.1; done
grep '"delivered"' "$work/device.json" | grep -q '"banner"' ||
    { cat "$work/device.json" "$work/device.err" "$work/gateway.err" >&2; fail "the push was not shown by the device"; }
echo "package-check: one push over TLS from user herald-check, through the packaged gateway, shown by the device"
stop "$device"; wait "$device" 2>/dev/null || true; device=""
stop "$pid"; wait "$pid" 2>/dev/null || true; pid=""
userdel -r herald-check >/dev/null 2>&1 || true

dpkg --purge herald >/dev/null || fail "dpkg --purge"
trap - EXIT
! getent passwd herald >/dev/null || fail "the herald user is still there after purge"
[ ! -e /usr/bin/herald ] && [ ! -e /var/lib/herald ] && [ ! -e /etc/herald ] || fail "files left after purge"
echo "package-check: purged; nothing left"
