#!/usr/bin/env bash
# Fuzzes every reader of outside input with libFuzzer + AddressSanitizer (docs/security.md).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET…]
#   HERALD_FUZZ_RUNS=10000000 scripts/fuzz.sh 3600 device-frames   # stop at 10M inputs or an hour
#   HERALD_FUZZ_BUILD=debug scripts/fuzz.sh 10   # CI's smoke run: a debug build (7 minutes from scratch
#                                                # here, against about 10 for release), slower inputs
#   scripts/fuzz.sh --build-only   # builds the harness and stops (CI builds it while the tests run)
#   HERALD_FUZZ_SCRATCH=DIR        # SwiftPM's build directory (default Fuzz/.build)
#
# Builds the Fuzz/ package (release, -sanitize=fuzzer,address), then runs each target for the given
# time from its committed corpus (Fuzz/corpus/<target>; new inputs go to a scratch copy, not the
# repository). A crash writes Fuzz/crashers/<target>/crash-…; commit it: the test suite replays
# every file there. Prints executions per second and inputs run per target; exits 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
BUILD_ONLY=0
[ "${1:-}" = --build-only ] && { BUILD_ONLY=1; shift; }
SECONDS_PER_TARGET=${1:-30}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(provider-token provider-request device-frames remote-content agent-line rest-body plan-file sound-file dbus-stream live-activity broadcast-request announcement-journal query-string webpush-request webpush-body browser-push-frames declarative-push webpush-stored dbus-unifiedpush focus-settings config-file backup-manifest traceparent standard-url metrics-exposition)
BUILD=${HERALD_FUZZ_BUILD:-release}
case "$BUILD" in release|debug) ;; *) echo "HERALD_FUZZ_BUILD is release or debug, not $BUILD" >&2; exit 2 ;; esac
BUILD_FLAGS=(-c "$BUILD" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --scratch-path "${HERALD_FUZZ_SCRATCH:-.build}")
swift build "${BUILD_FLAGS[@]}" >/dev/null
[ "$BUILD_ONLY" = 1 ] && exit 0
BIN="$(swift build "${BUILD_FLAGS[@]}" --show-bin-path)/herald-fuzz"
SCRATCH=$(mktemp -d /tmp/herald-fuzz.XXXXXX)
status=0
passed=0
failed=0
for target in "${TARGETS[@]}"; do
    mkdir -p "$SCRATCH/$target" "crashers/$target"
    cp corpus/"$target"/* "$SCRATCH/$target/"
    log="$SCRATCH/$target.log"
    if ! HERALD_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$BIN" \
        -max_total_time="$SECONDS_PER_TARGET" ${HERALD_FUZZ_RUNS:+-runs="$HERALD_FUZZ_RUNS"} -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
        -artifact_prefix="crashers/$target/" -print_final_stats=1 "$SCRATCH/$target" >"$log" 2>&1; then
        echo "$target: FINDING (see crashers/$target and $log)"; status=1; failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    speed=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
    took=$(grep -E '^Done [0-9]+ runs in' "$log" | awk '{print $5}')
    echo "$target: ${runs:-?} inputs in ${took:-$SECONDS_PER_TARGET}s, ${speed:-?} exec/s"
done
echo "fuzz: $passed passed, $failed failed"
exit $status
