# Shell functions the benchmark scripts (and scripts/schemathesis.sh) share; sourced, not run
# (`. scripts/bench-common.sh`).

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks (`getconf CLK_TCK` a second).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# wait_for_start FILE PID: waits until process PID has written its start-up line (its ports, as
# JSON) to FILE. A process that exits first (a taken port, a bad flag) fails the script with its
# name, instead of a wait that never ends.
wait_for_start() {
    until [ -s "$1" ]; do
        kill -0 "$2" 2>/dev/null || { echo "$(basename "$0"): the process writing $1 exited before it was ready" >&2; return 1; }
        sleep 0.1
    done
}

# field FILE KEY: one field (a port) of such a start-up line.
field() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
