#!/usr/bin/env bash
# Installs a built herald into a root file system being staged, as both the Debian package and
# the container image carry it (scripts/package-deb.sh, scripts/image.sh):
#
#   scripts/stage-herald.sh HERALD ROOT
#
# ROOT/usr/lib/herald/herald, stripped, with the Swift runtime libraries it links from the
# toolchain beside it, each with the run path $ORIGIN alone (the toolchain's path, which the build
# put first, would make a machine with a toolchain use the toolchain's libraries instead of
# these); ROOT/usr/bin/herald links to it. ROOT/usr/share/herald holds the operator's Prometheus
# alerting rules (with their promtool unit tests) and Grafana dashboard (packaging/).
# Needs strip and readelf (binutils), patchelf, ldd.
set -euo pipefail
herald=$1
root=$2
packaging="$(dirname "$0")/../packaging"
install -d "$root/usr/lib/herald" "$root/usr/bin" "$root/usr/share/herald/prometheus" "$root/usr/share/herald/grafana"
install -m 0644 "$packaging/prometheus/herald.rules.yml" "$packaging/prometheus/herald.rules.test.yml" "$root/usr/share/herald/prometheus/"
install -m 0644 "$packaging/grafana/herald.json" "$root/usr/share/herald/grafana/"
install -m 0755 "$herald" "$root/usr/lib/herald/herald"
strip --strip-unneeded "$root/usr/lib/herald/herald"
ldd "$herald" | awk '$3 ~ /^\// {print $3}' | while read -r library; do
    case "$library" in
        */swift/*) install -m 0644 "$library" "$root/usr/lib/herald/" && strip --strip-unneeded "$root/usr/lib/herald/$(basename "$library")" ;;
    esac
done
for file in "$root"/usr/lib/herald/*; do
    if readelf -d "$file" 2>/dev/null | grep -qE 'RUNPATH|RPATH'; then patchelf --set-rpath '$ORIGIN' "$file"; fi
done
ln -sf ../lib/herald/herald "$root/usr/bin/herald"
