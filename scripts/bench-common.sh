# Shell functions the benchmark scripts (and scripts/schemathesis.sh) share; sourced, not run
# (`. scripts/bench-common.sh`).

. scripts/require.sh

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks (`getconf CLK_TCK` a second).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# tree_ticks PID: the CPU of a server and its worker processes (PostgreSQL's postmaster and its
# backends), in clock ticks: its own, its live children's, and what its exited children used (the
# kernel adds a reaped child's time to its parent's).
tree_ticks() {
    python3 - "$1" <<'PY'
import os, sys
def fields(pid):  # the fields after the command name, which may hold spaces
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()
root = fields(sys.argv[1])
total = sum(int(x) for x in root[11:15]) if root else 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    child = fields(pid)
    if child and child[1] == sys.argv[1]:
        total += int(child[11]) + int(child[12])
print(total)
PY
}

# own_postgres PORT NAME start|stop: a throwaway PostgreSQL server of the script's own
# (scripts/postgres-for-tests.sh) on PORT, in `own_postgres_dir NAME`: a directory per user, since
# a run as root (CI) leaves one that only the postgres user may remove.
own_postgres_dir() { echo "/tmp/herald-$1-postgres-$(id -u)"; }
own_postgres() { HERALD_TEST_POSTGRES_PORT=$1 HERALD_TEST_POSTGRES_DIR=$(own_postgres_dir "$2") scripts/postgres-for-tests.sh "$3"; }

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
