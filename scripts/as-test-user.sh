#!/usr/bin/env bash
# Runs a command as the ordinary user the test suites run as (`herald-test`, created here), never
# as root: a defect that only an unprivileged process meets (a socket option that needs a
# capability, a file only root can read) fails the tests instead of hiding. scripts/test.sh calls
# it when started as root; root itself only installs packages (scripts/test-deps.sh) and does
# what this script does, which is every privilege the suites need, in one place:
#   - the user is created (useradd) once;
#   - the checkout is made readable and writable for it with an ACL (the files stay root's, so
#     git and the root steps of CI after the tests see the tree as before), SwiftPM's lock files
#     of its build directory are given to it, and each directory
#     above the checkout that others cannot enter gets an ACL that lets this user enter it
#     (traverse only);
#   - the user's git trusts repositories other users own (safe.directory): SwiftPM clones the
#     packages from root's copies in /opt/swift-packages, and the checkout stays root's;
#   - the command runs with setpriv: the user's ids, no supplementary root groups, no
#     capabilities in any set (an empty bounding set, as the packaged unit's
#     CapabilityBoundingSet=), and no_new_privs.
# What the suites need beyond that they do as the user: their PostgreSQL servers run under the
# user's own id (initdb refuses only root), loopback addresses 127.0.0.2-4 need no privilege.
# Usage: scripts/as-test-user.sh COMMAND [ARGUMENT…]   (from root; HERALD_TEST_USER names the user)
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "as-test-user: run it as root (it creates the user and drops to it)" >&2; exit 2; }
name=${HERALD_TEST_USER:-herald-test}
top=$(cd "$(dirname "$0")/.." && pwd)

id -u "$name" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash --user-group "$name"
home=$(getent passwd "$name" | cut -d: -f6)

git config --file "$home/.gitconfig" safe.directory >/dev/null || git config --file "$home/.gitconfig" --add safe.directory '*'
chown "$name:" "$home/.gitconfig"

setfacl -R -m "u:$name:rwX" -m "d:u:$name:rwX" "$top"
# SwiftPM locks a build directory with a file in /tmp named after its path
# (/tmp/_work_herald_.build.lock for /work/herald/.build); one that a root step made first (CI's
# checks build the OpenAPI generator as root) would refuse the user: "invalid access".
for lock in "/tmp/$(printf '%s' "$top/.build" | tr / _)"*.lock; do
  [ ! -e "$lock" ] || chown "$name:" "$lock"
done
dir=$top
while [ "$dir" != / ]; do
  dir=$(dirname "$dir")
  case "$(stat -c %A "$dir" | cut -c10)" in x|t) ;; *) setfacl -m "u:$name:x" "$dir" ;; esac
done

# The environment of a fresh login, plus what the suites read: CI, HERALD_*, the toolchain's
# directory and the tests' Python (a virtual environment that scripts/test-deps.sh made for
# this user: root's own Python lives in root's home, which nobody else may read).
toolchain=$(dirname "$(readlink -f "$(command -v swift)")")
environment=(HOME="$home" USER="$name" LOGNAME="$name" SHELL=/bin/bash LANG=C.UTF-8 TERM="${TERM:-dumb}"
  PATH="/opt/herald-test-venv/bin:$toolchain:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
[ -z "${CI:-}" ] || environment+=(CI="$CI")
while IFS='=' read -r key value; do
  case "$key" in HERALD_*) environment+=("$key=$value") ;; esac
done < <(env)

cd "$top"
exec setpriv --reuid "$name" --regid "$name" --init-groups --no-new-privs \
  --bounding-set=-all --inh-caps=-all \
  env -i "${environment[@]}" "$@"
