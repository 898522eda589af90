#!/usr/bin/env bash
# The whole test suite: every Swift test (unit, in-process gateway over real sockets, the CLI as
# child processes), the independent-client compatibility checks (curl, Python httpx), then the
# attack suite (raw HTTP/2 and WebSocket frames, forged tokens, silent peers, hostile payloads),
# schemathesis against the provider's REST API and its spec, the README's walk-through as written,
# three gateway nodes on a PostgreSQL server the script starts (Tests/cluster), the chaos run
# (Tests/faults: PostgreSQL stopped, restarted, partitioned and slowed, a node frozen, killed and
# its clock jumped, devices killed, all while pushes flow), Live Activities and
# broadcast channels end to end (Tests/liveactivity), the dashboards and
# the browser device in headless chromium (Tests/browser), and desktop notifications under a real
# session bus and notification server (Tests/desktop). Screenshots go to .build/test-artifacts/.
# Installs what it needs first (scripts/test-deps.sh: Debian and PyPI packages this machine lacks),
# then, when started as root, runs everything else as the ordinary user herald-test.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/test-deps.sh
# Root only installs: every suite runs as an ordinary user (scripts/as-test-user.sh drops to it
# with setpriv, no capabilities and no_new_privs, and says what it
# grants that user, in one place).
if [ "$(id -u)" -eq 0 ]; then exec scripts/as-test-user.sh scripts/test.sh "$@"; fi

# A PostgreSQL server of its own: the store contract tests run against it too, and so does the
# cluster test (three gateway nodes sharing it).
eval "$(scripts/postgres-for-tests.sh start)"
trap 'scripts/postgres-for-tests.sh stop' EXIT

# Each step's wall time, so that a slow run says where its time went (CI's budget is 50 minutes).
timed() {
    local started=$SECONDS
    "$@"
    echo "test.sh: $* — $(( SECONDS - started )) s" >&2
}

timed swift build --build-tests
timed swift test --skip-build
# The app libraries as an app developer meets them (Tests/apps, docs/device-agent.md): the example
# app, its own package depending on this one by path (SwiftPM builds only the HeraldNotifications
# target it uses, in its own .build), registers, shows a local and a remote notification and
# answers a tap through a real gateway, provider and device; the Python package installed from
# the checkout with pip and type-checked by mypy --strict.
timed swift build --package-path Examples/NotificationsDemo
timed python3 Tests/apps/apps.py "$(swift build --show-bin-path)/herald" \
    "$(swift build --package-path Examples/NotificationsDemo --show-bin-path)/NotificationsDemo"
# Three gateway nodes on PostgreSQL, one killed mid-load (docs/cluster.md).
timed python3 Tests/cluster/cluster.py "$(swift build --show-bin-path)/herald"
# The chaos run: two nodes on a PostgreSQL of its own, real device processes, and every fault a
# cluster meets while pushes flow (docs/cluster.md, "Faults").
timed python3 Tests/faults/faults.py "$(swift build --show-bin-path)/herald"
# The timing-chaos run, short (issue 63; scripts/soak.sh runs it long): the phases where timing
# decided before, under random latency on every PostgreSQL and device connection and a CPU hog
# taking both cores at the suite's priority. The seed is printed first: a failure replays with it.
timed env HERALD_FAULTS_JITTER_MS=300 HERALD_FAULTS_HOG=1 HERALD_FAULTS_PHASES=pg-restart,partition-a,kill-a \
    python3 Tests/faults/faults.py "$(swift build --show-bin-path)/herald"
# PostgreSQL failover under load: a primary killed, its standby promoted; with synchronous
# replication nothing answered 200 is lost (docs/cluster.md, "PostgreSQL failover").
timed python3 Tests/faults/failover.py "$(swift build --show-bin-path)/herald"
# The failover once more beside the CPU hog: both nodes still take pushes within 2 s of the switch.
timed env HERALD_FAULTS_HOG=1 python3 Tests/faults/failover.py "$(swift build --show-bin-path)/herald" sync
timed python3 Tests/compat/compat.py "$(swift build --show-bin-path)/herald"
# Live Activities by push-to-start and broadcast channels, end to end (docs/live-activities.md).
timed python3 Tests/liveactivity/liveactivity.py "$(swift build --show-bin-path)/herald"
# The notification center as Apple ships it: Focus, interruption levels, critical alerts,
# communication notifications, the scheduled summary, pushed with httpx (docs/device-runtime.md).
timed python3 Tests/focus/focus.py "$(swift build --show-bin-path)/herald"
# PushKit's push types (VoIP, Push to Talk, location, complication, File Provider), each to its
# own token, sent with aioapns to a device whose app is herald_notifications (docs/push-types/).
timed python3 Tests/pushkit/pushkit.py "$(swift build --show-bin-path)/herald"
# herald backup under load and herald restore, their refusals, a full disk (docs/operations.md).
timed python3 Tests/operations/backup.py "$(swift build --show-bin-path)/herald"
# A PostgreSQL store: herald doctor on it, pg_dump and pg_restore round trip (docs/operations.md).
timed python3 Tests/operations/postgres.py "$(swift build --show-bin-path)/herald"
# Upgrades keep data: a SQLite store and a PostgreSQL database an earlier Herald wrote
# (Tests/operations/fixtures) open in this one; a newer Herald's store is refused.
timed python3 Tests/operations/upgrade.py "$(swift build --show-bin-path)/herald"
# --config FILE.yaml and HERALD_* variables: precedence, --print-config, hostile files (docs/operations.md).
timed python3 Tests/operations/config.py "$(swift build --show-bin-path)/herald"
# As people run it: IPv6 and dual stack end to end, a YAML alias bomb, settings named by their
# source, every log line JSON in JSON mode, a hanging collector at stop, foreign stores refused.
timed python3 Tests/operations/unprivileged.py "$(swift build --show-bin-path)/herald"
# OpenTelemetry: one push's trace across herald provider and herald gateway, received by an OTLP
# receiver in the test (docs/operations.md, "Tracing").
timed python3 Tests/operations/traces.py "$(swift build --show-bin-path)/herald"
# SIGHUP: certificate rotation with a device connected across it (docs/operations.md).
timed python3 Tests/operations/reload.py "$(swift build --show-bin-path)/herald"
# The Grafana dashboard and the alerting rules (packaging/): promtool's unit tests, and every
# query against what a running gateway and provider serve, in a real Prometheus.
timed python3 Tests/operations/monitoring.py "$(swift build --show-bin-path)/herald"
# Web Push from the application server's side: herald push send --webpush checked by independent
# code (http_ece decrypts, cryptography verifies the VAPID token) (docs/web-push.md).
timed python3 Tests/webpush/sender.py "$(swift build --show-bin-path)/herald"
# The Web Push port: pywebpush pushes, a user agent on Mozilla's push protocol decrypts with
# http_ece, a SIGKILL loses nothing; then a real Firefox subscribes through Herald.
timed python3 Tests/webpush/service.py "$(swift build --show-bin-path)/herald"
timed python3 Tests/webpush/firefox.py "$(swift build --show-bin-path)/herald"
# Herald devices as Web Push user agents: an app on herald device run subscribes, pywebpush
# pushes, the device decrypts, presents declarative messages and hands the rest to the app.
timed python3 Tests/webpush/device.py "$(swift build --show-bin-path)/herald"
# UnifiedPush on Linux: herald device run --unifiedpush as the distributor on a private session
# bus, a connector on jeepney (D-Bus from PyPI) as the app, pywebpush as its server.
timed dbus-run-session -- python3 Tests/webpush/unifiedpush.py "$(swift build --show-bin-path)/herald"
# herald provider with registrations that are Web Push subscriptions: a template localized for a
# subscription, encrypted to it, decrypted and presented by a device; 410 prunes it.
timed python3 Tests/webpush/provider.py "$(swift build --show-bin-path)/herald"
# Web Push across two gateway nodes on PostgreSQL: pushed through one, delivered on the other.
timed python3 Tests/webpush/cluster.py "$(swift build --show-bin-path)/herald"
# The attack suite: hostile peers against a running gateway and device (docs/security.md).
timed python3 Tests/attack/attack.py "$(swift build --show-bin-path)/herald"
# The provider's REST API against its own spec, from outside (docs/provider-service.md).
timed scripts/schemathesis.sh "$(swift build --show-bin-path)/herald"
# The pages in a real browser, and the desktop's notification server (docs/dashboards.md).
timed python3 Tests/browser/browser.py "$(swift build --show-bin-path)/herald" .build/test-artifacts
timed Tests/desktop/run.sh "$(swift build --show-bin-path)/herald" .build/test-artifacts
# The README's "Five minutes with it", run exactly as written (fixed ports 2197, 2198, 9090).
timed scripts/readme-walkthrough.sh "$(swift build --show-bin-path)/herald"
