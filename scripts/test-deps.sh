#!/usr/bin/env bash
# Installs what the test suite needs and this machine lacks (Debian packages and PyPI packages);
# does nothing when everything is there. scripts/test.sh runs it first.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
need_apt_alone=()   # installed without their recommended packages
command -v curl >/dev/null || need_apt+=(curl)
command -v curl >/dev/null && ! curl --version | grep -q nghttp2 && need_apt+=(curl)
[ -f /usr/include/sqlite3.h ] || need_apt+=(libsqlite3-dev)
# Time zones (device scheduling tests resolve wall-clock times in IANA zones).
[ -f /usr/share/zoneinfo/America/New_York ] || need_apt+=(tzdata)
# h2load: the load generator of the benchmarks (CI runs scripts/bench.sh --quick).
command -v h2load >/dev/null || need_apt+=(nghttp2-client)
# socat: the README walk-through talks to the device's agent socket with it.
command -v socat >/dev/null || need_apt+=(socat)
# openssl: herald keys certificate --out-p12 (compat checks).
command -v openssl >/dev/null || need_apt+=(openssl)
# PostgreSQL: the clustered store's tests and the cluster test start a server of their own.
ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 && command -v psql >/dev/null || need_apt+=(postgresql postgresql-client)
# The pages in a real browser (Tests/browser): Debian's chromium and its driver.
command -v chromium >/dev/null && command -v chromedriver >/dev/null || need_apt+=(chromium chromium-driver)
# Desktop notifications (Tests/desktop): a session bus, a notification server, a virtual display.
command -v dbus-run-session >/dev/null && command -v dbus-monitor >/dev/null || need_apt+=(dbus)
command -v dunst >/dev/null || need_apt+=(dunst)
command -v Xvfb >/dev/null || need_apt+=(xvfb)
# Firefox as a Web Push user agent (Tests/webpush/firefox.py): its profile's CA store needs certutil.
command -v firefox-esr >/dev/null || need_apt+=(firefox-esr)
command -v certutil >/dev/null || need_apt+=(libnss3-tools)
# The Debian package's check (scripts/package-check.sh): strip/readelf, systemd-analyze, adduser.
command -v strip >/dev/null && command -v readelf >/dev/null || need_apt+=(binutils)
command -v systemd-analyze >/dev/null || need_apt+=(systemd)
command -v adduser >/dev/null || need_apt+=(adduser)
# patchelf sets the packaged binary's run path; dpkg-shlibdeps (dpkg-dev) its Depends' versions.
command -v patchelf >/dev/null || need_apt+=(patchelf)
command -v dpkg-shlibdeps >/dev/null || need_apt+=(dpkg-dev)
# Prometheus and promtool: the alerting rules' unit tests and the dashboard's queries against a
# real Prometheus (Tests/operations/monitoring.py).
command -v promtool >/dev/null && command -v prometheus >/dev/null || need_apt+=(prometheus)
# The container image (scripts/image.sh, Tests/image, run by .ci/run): buildah builds it, umoci
# unpacks it; docker-compose (v1, Debian's) checks the compose files against its schema.
command -v buildah >/dev/null || need_apt+=(buildah)
command -v umoci >/dev/null || need_apt+=(umoci)
# Without its recommends: they are the Docker engine, which nothing here runs.
command -v docker-compose >/dev/null || need_apt_alone+=(docker-compose)
# Running the suites as an ordinary user (scripts/as-test-user.sh): setfacl, and a Python of the
# system's that a virtual environment can be made from (root's own Python is in root's home).
if [ "$(id -u)" -eq 0 ]; then
  command -v setfacl >/dev/null || need_apt+=(acl)
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3 python3-venv)
fi
if [ $(( ${#need_apt[@]} + ${#need_apt_alone[@]} )) -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  [ ${#need_apt[@]} -eq 0 ] || $sudo apt-get install -y -q "${need_apt[@]}"
  [ ${#need_apt_alone[@]} -eq 0 ] || $sudo apt-get install -y -q --no-install-recommends "${need_apt_alone[@]}"
fi
# As root, the suites' Python packages go into a virtual environment that the unprivileged test
# user runs (/opt/herald-test-venv, read-only for it); otherwise into the Python on PATH.
python3=$(command -v python3)
if [ "$(id -u)" -eq 0 ]; then
  venv=/opt/herald-test-venv
  [ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
  chmod -R a+rX "$venv"
  python3="$venv/bin/python3"
  # generate-openapi.sh (CI's first step, as root) reads the spec with PyYAML from root's Python.
  python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pyyaml
fi
# Every check and install below uses that Python.
python3() { "$python3" "$@"; }

# The independent clients of the compatibility and attack suites.
python3 -c 'import httpx, h2, hyperframe, cryptography, websockets' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check 'httpx[http2]' cryptography websockets
# schemathesis checks the provider's REST API against its spec (scripts/schemathesis.sh);
# PyYAML reads the spec (scripts/generate-openapi.sh).
python3 -c 'import schemathesis, yaml' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check 'schemathesis>=4,<5' pyyaml
# Web Push's independent implementations (Tests/webpush): http_ece decrypts RFC 8291 bodies,
# py_vapid verifies VAPID tokens, pywebpush sends as Django/Mastodon-style servers do.
# jeepney is the UnifiedPush test's connector (an app on the session bus).
python3 -c 'import http_ece, py_vapid, pywebpush, jeepney' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check http-ece py-vapid pywebpush jeepney
# aioapns is a provider library written for Apple's service (Tests/pushkit sends PushKit pushes with it).
python3 -c 'import aioapns' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check aioapns
# opentelemetry-proto decodes what Herald exports over OTLP (Tests/operations/traces.py).
python3 -c 'import opentelemetry.proto' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check opentelemetry-proto
# selenium drives chromium (Tests/browser); Pillow takes the desktop test's screenshot.
python3 -c 'import selenium, PIL' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check selenium pillow
# The Python app library (clients/python, Tests/apps): installed from the checkout with pip
# (wheel builds it without network), checked by mypy --strict.
python3 -c 'import mypy, wheel' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check mypy wheel
# What pip wrote is the test user's to read.
[ "$(id -u)" -ne 0 ] || chmod -R a+rX "$(dirname "$(dirname "$python3")")"
