#!/usr/bin/env bash
# Builds Herald's container image with buildah, from scratch, with no registry, and prints the
# path of its archive last (docs/operations.md, "The container image"):
#
#   scripts/image.sh            # release-builds herald first (or takes $HERALD_BIN)
#   docker load -i .build/image/herald-<version>.tar      # or: podman load -i …
#   docker run -d -p 2197:2197 -p 2198:2198 -v herald-data:/var/lib/herald herald:<version>
#
# The image holds herald and the Swift libraries it links (as the Debian package does,
# scripts/stage-herald.sh), the system libraries `ldd` names with their loader, CA certificates,
# tzdata, /etc/passwd with the user herald (10001) it runs as, /var/lib/herald (a volume, the
# gateway's data directory) and /var/lib/herald-provider (the provider service's), /etc/herald/gateway.yaml (packaging/container), the alerting rules and the
# dashboard in /usr/share/herald, and a HEALTHCHECK (`herald gateway health`). It is committed in
# Docker's format (OCI's has no HEALTHCHECK) and written as a docker-archive, which docker and
# podman load alike. Runs as root (buildah's storage; rootless buildah needs /etc/subuid).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The tools first, each with the Debian package that brings it.
. scripts/require.sh
require_tools buildah:buildah patchelf:patchelf strip:binutils readelf:binutils ldd:libc-bin \
    /etc/ssl/certs/ca-certificates.crt:ca-certificates /usr/share/zoneinfo/UTC:tzdata
require_herald_build
[ "$(id -u)" -eq 0 ] || { echo "image: run as root (buildah's image storage), e.g. sudo scripts/image.sh" >&2; exit 1; }

HERALD=$(scripts/bench-build.sh)
version=$("$HERALD" --version)
tag=${IMAGE_TAG:-herald:$version}
out=${IMAGE_OUT:-$root/.build/image}
uid=10001
stage=$(mktemp -d /tmp/herald-image.XXXXXX)
container=""
cleanup() {
    [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
    rm -rf "$stage"
}
trap cleanup EXIT

scripts/stage-herald.sh "$HERALD" "$stage"
# The system libraries the binary and its Swift libraries need, at the paths the loader looks in
# (the file itself under each name ldd gives), and the loader.
for file in "$HERALD" "$stage"/usr/lib/herald/*.so*; do ldd "$file"; done |
    awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | grep -v '/swift/' | sort -u | while read -r library; do
        install -D -m 0755 "$(readlink -f "$library")" "$stage$library"
    done
# glibc (2.34 and later) has the files and dns name services built in: these files are all
# getaddrinfo needs for localhost and names.
install -d "$stage/etc/ssl/certs" "$stage/usr/share" "$stage/etc/herald" "$stage/var/lib/herald" "$stage/var/lib/herald-provider" "$stage/tmp"
cp /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/"
cp -a /usr/share/zoneinfo "$stage/usr/share/"
ln -sf /usr/share/zoneinfo/UTC "$stage/etc/localtime"
printf 'root:x:0:0:root:/root:/sbin/nologin\nherald:x:%d:%d:herald:/var/lib/herald:/sbin/nologin\n' "$uid" "$uid" > "$stage/etc/passwd"
printf 'root:x:0:\nherald:x:%d:\n' "$uid" > "$stage/etc/group"
printf 'hosts: files dns\n' > "$stage/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > "$stage/etc/hosts"
install -m 0644 packaging/container/gateway.yaml "$stage/etc/herald/gateway.yaml"
install -m 0644 packaging/etc/provider.yaml "$stage/etc/herald/provider.yaml"
chown "$uid:$uid" "$stage/var/lib/herald" "$stage/var/lib/herald-provider"
chmod 1777 "$stage/tmp"

# Docker's format from the start: OCI's config has no HEALTHCHECK.
export BUILDAH_FORMAT=docker
container=$(buildah from scratch)
buildah copy --quiet "$container" "$stage" / >/dev/null
buildah config \
    --user "$uid:$uid" \
    --workingdir /var/lib/herald \
    --entrypoint '["/usr/bin/herald"]' \
    --cmd '["gateway", "--config", "/etc/herald/gateway.yaml"]' \
    --env TZ=UTC --env LANG=C.UTF-8 \
    --volume /var/lib/herald --volume /var/lib/herald-provider \
    --port 2197/tcp --port 2198/tcp --port 9090/tcp \
    --stop-signal SIGTERM \
    --healthcheck 'CMD /usr/bin/herald gateway health' \
    --healthcheck-interval 30s --healthcheck-timeout 10s --healthcheck-start-period 20s --healthcheck-retries 3 \
    --label org.opencontainers.image.title=herald \
    --label org.opencontainers.image.description="Self-hostable push notifications: an APNs-compatible gateway, Web Push, a device runtime and a provider service" \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.documentation="https://github.com/herald-push/herald/blob/main/docs/operations.md" \
    "$container"
buildah commit --quiet --format docker --rm "$container" "localhost/$tag" >/dev/null
container=""
mkdir -p "$out"
archive="$out/herald-$version.tar"
rm -f "$archive"
buildah push --quiet "localhost/$tag" "docker-archive:$archive:$tag" >/dev/null
echo "image: localhost/$tag, $(( $(stat -c %s "$archive") / 1048576 )) MiB" >&2
echo "$archive"
