# Shell functions the benchmark scripts share; sourced, not run (`. scripts/bench-common.sh`).

# cpu_ticks PID: the process's user + system CPU so far, in clock ticks (`getconf CLK_TCK` a second).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
