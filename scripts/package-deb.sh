#!/usr/bin/env bash
# Builds the Debian package of Herald and prints its path last (docs/operations.md):
#
#   scripts/package-deb.sh            # release-builds herald first (or reuses $HERALD_BIN)
#
# The package holds a stripped herald in /usr/lib/herald with the Swift runtime libraries it
# links (found through its $ORIGIN run path, so the machine needs no Swift toolchain), the
# /usr/bin/herald link, herald-gateway.service and herald-provider.service (a `herald` system user,
# StateDirectory, ConfigurationDirectory and systemd's hardening), the user unit
# herald-device.service, /etc/herald/gateway.yaml and provider.yaml (conffiles), the man page, shell
# completions, the operator docs, and the Prometheus alerting rules and Grafana dashboard in
# /usr/share/herald.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# What packaging needs beside the toolchain, installed first (as scripts/test-deps.sh does), so
# that an operator running this alone does not stop half-way: patchelf sets the libraries' run
# path, dpkg-shlibdeps (dpkg-dev) the Depends' versions, strip and readelf (binutils).
need_apt=()
command -v patchelf >/dev/null || need_apt+=(patchelf)
command -v dpkg-shlibdeps >/dev/null || need_apt+=(dpkg-dev)
command -v strip >/dev/null && command -v readelf >/dev/null || need_apt+=(binutils)
if [ ${#need_apt[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "package-deb: installing ${need_apt[*]} (apt-get)" >&2
    $sudo apt-get update -q >&2
    $sudo apt-get install -y -q "${need_apt[@]}" >&2
fi
. scripts/require.sh
require_herald_build
HERALD=$(scripts/bench-build.sh)
version=$("$HERALD" --version | sed -e 's/-/~/')
arch=$(dpkg --print-architecture)
out=${PACKAGE_OUT:-$root/.build/package}
stage=$(mktemp -d /tmp/herald-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT

install -d "$stage/DEBIAN" "$stage/usr/lib/herald" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/usr/lib/systemd/user" \
    "$stage/etc/herald" "$stage/usr/share/man/man1" "$stage/usr/share/doc/herald" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" "$stage/usr/share/fish/vendor_completions.d"

# The binary, stripped, and the Swift runtime libraries it needs from the toolchain, found
# through its $ORIGIN run path; the alerting rules and the dashboard in /usr/share/herald.
scripts/stage-herald.sh "$HERALD" "$stage"

install -m 0644 packaging/systemd/herald-gateway.service packaging/systemd/herald-provider.service "$stage/lib/systemd/system/"
install -m 0644 packaging/systemd/herald-device.service "$stage/usr/lib/systemd/user/"
install -m 0644 packaging/etc/gateway.yaml packaging/etc/provider.yaml "$stage/etc/herald/"
gzip -9n < docs/man/herald.1 > "$stage/usr/share/man/man1/herald.1.gz"
install -m 0644 docs/completions/herald.bash "$stage/usr/share/bash-completion/completions/herald"
install -m 0644 docs/completions/herald.zsh "$stage/usr/share/zsh/vendor-completions/_herald"
install -m 0644 docs/completions/herald.fish "$stage/usr/share/fish/vendor_completions.d/herald.fish"
# Every page of docs/ (they link to one another), and the copyright file: Herald's, and each
# Swift package compiled into the binary with its licence as its checkout carries it.
install -m 0644 docs/*.md "$stage/usr/share/doc/herald/"
{
    printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: herald\n\n'
    printf 'Files: usr/lib/herald/herald\nCopyright: the Herald authors\nComment: Herald does not yet declare a licence of its own; the Swift packages\n compiled into it and the Swift runtime libraries beside it are listed below.\n\n'
    printf 'Files: usr/lib/herald/*.so*\nCopyright: Apple Inc. and the Swift project authors\nLicense: Apache-2.0 WITH Swift-exception\n\n'
    for checkout in "$root"/.build/checkouts/*/; do
        licence=$(ls "$checkout" | grep -m1 -iE '^(LICENSE|LICENCE|COPYING)' || true)
        [ -n "$licence" ] || continue
        printf 'Files: usr/lib/herald/herald (compiled from %s)\nComment: its %s follows\n' "$(basename "$checkout")" "$licence"
        sed -e 's/^$/./' -e 's/^/ /' "$checkout/$licence"
        printf '\n'
    done
} > "$stage/usr/share/doc/herald/copyright"

# Shared libraries the binary needs from Debian itself, with the versions its symbols need
# (dpkg-shlibdeps: libc6 (>= 2.35) and so on); the bundled Swift libraries are the package's own.
shlibs=$(mktemp -d /tmp/herald-shlibs.XXXXXX)
mkdir -p "$shlibs/debian"
printf 'Source: herald\n\nPackage: herald\nArchitecture: any\n' > "$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O --ignore-missing-info -l"$stage/usr/lib/herald" \
    -e"$stage/usr/lib/herald/herald" $(find "$stage/usr/lib/herald" -name '*.so*' -printf ' -e%p') 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
rm -rf "$shlibs"
[ -n "$depends" ] || { echo "package-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
depends="$depends, adduser"
size=$(du -sk "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: herald
Version: $version
Architecture: $arch
Maintainer: Herald <herald@localhost>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Homepage: https://github.com/herald-push/herald
Description: self-hostable push notification system (APNs protocol, Web Push)
 A push gateway that speaks the APNs provider protocol, a device runtime that does what a
 phone's notification center does, and a provider service that registers, localizes,
 schedules and sends. Units: herald-gateway.service, herald-provider.service, and the user
 unit herald-device.service.
CONTROL
printf '/etc/herald/gateway.yaml\n/etc/herald/provider.yaml\n' > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    getent group herald >/dev/null || addgroup --system --quiet herald
    getent passwd herald >/dev/null || adduser --system --quiet --ingroup herald --no-create-home --home /var/lib/herald --shell /usr/sbin/nologin herald
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
SCRIPT
cat > "$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl stop herald-gateway.service herald-provider.service 2>/dev/null || true
fi
SCRIPT
cat > "$stage/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
    rm -rf /var/lib/herald /var/lib/herald-provider /var/lib/private/herald /var/lib/private/herald-provider
    getent passwd herald >/dev/null && deluser --system --quiet herald 2>/dev/null || true
    getent group herald >/dev/null && delgroup --system --quiet herald 2>/dev/null || true
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
SCRIPT
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

mkdir -p "$out"
package="$out/herald_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$package" >/dev/null
echo "$package"
