# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the profiler's guest tests (tests/vm/tests/profile_*): where things are, the OpenMP
# team spread one thread per cpu over the nodes, and helpers.  POSIX sh.
B=${NK_BUILD:?NK_BUILD is not set}
S=${NK_SRC:-$(pwd)}
NK=$B/cli/numakit
G=$B/tests/guest
CHECK="python3 $S/tests/vm/tests/profile_check.py"
[ -x "$NK" ] || { echo "SKIP: $NK not built"; exit 77; }
NCPU=$(nproc)
NNODES=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
echo "topology ${NK_TOPO:-?}: $NCPU cpus, $NNODES nodes; numa_balancing=${NK_NUMA_BALANCING:-?} thp=${NK_THP:-?}"
if [ "$NNODES" -lt 2 ]; then echo "SKIP: one node: nothing is remote"; exit 77; fi
if [ "$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)" != 0 ]; then
    echo "FAIL: numa_balancing is on: it would move pages behind the profile (topologies.json settings)"
    exit 1
fi
# One thread per cpu, spread over the nodes; the master (thread 0) on the first cpu.
OMP_NUM_THREADS=$NCPU OMP_PROC_BIND=spread OMP_PLACES=cores
export OMP_NUM_THREADS OMP_PROC_BIND OMP_PLACES
T=$(mktemp -d /tmp/nkprof.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0

need() { # program...
    for p in "$@"; do
        [ -x "$G/$p" ] || { echo "SKIP: $G/$p not built (no OpenMP?)"; exit 77; }
    done
}

# profile NAME SAMPLER PROGRAM ARGS...: $T/NAME.nkp and the report $T/NAME.json; returns the program's status.
profile() {
    name=$1 sampler=$2
    shift 2
    s=$(date +%s)
    # shellcheck disable=SC2086 # PROFILE_OPTS: extra options, word-split on purpose
    "$NK" profile --sampler "$sampler" ${PROFILE_OPTS:-} -o "$T/$name.nkp" -- "$@" 2>"$T/$name.err"
    rc=$?
    cat "$T/$name.err"
    echo "profile $name: exit $rc in $(( $(date +%s) - s )) s"
    if [ ! -s "$T/$name.nkp" ]; then echo "FAIL: no profile $T/$name.nkp"; fail=1; return $rc; fi
    grep -q "see: numakit report" "$T/$name.err" || { echo "FAIL: no summary line"; fail=1; }
    if ! "$NK" report --json "$T/$name.nkp" >"$T/$name.json" 2>"$T/$name.report.err"; then
        echo "FAIL: numakit report --json $name: $(cat "$T/$name.report.err")"; fail=1
    fi
    "$NK" report "$T/$name.nkp" 2>&1 | head -40
    return $rc
}

# profile_decided NAME SAMPLER PROGRAM ARGS...: profile as `profile` does; while an array of 1 MiB or more is
# left undecided (its remote share's 95 % interval wider than +-10 points: too few independent rounds, as
# at -icount shift 0 where a program runs in a second), profile again with more runs combined (--runs 4,
# then 8), the user's remedy (issue 13).  Returns the program's status.
undecided() { # REPORT.json: 0 when a variable of 1 MiB or more is undecided
    python3 - "$1" <<'PY'
import json, sys
try:
    vs = json.load(open(sys.argv[1])).get("variables", [])
except (OSError, ValueError):
    sys.exit(1)
# the program's arrays: heap sites and named statics (not a segment's remainder, not anonymous memory)
def named(v):
    k = v.get("key", "")
    return k.startswith("heap:") or (k.startswith("static:") and k.count(":") >= 2)
sys.exit(0 if any(named(v) and v.get("size", 0) >= 1 << 20 and not v.get("decided", True) for v in vs) else 1)
PY
}
profile_decided() {
    profile "$@" || return $?
    _opts=${PROFILE_OPTS:-}
    for _runs in 4 8; do
        undecided "$T/$1.json" || break
        echo "note: $1: a variable is undecided: profiling $_runs runs combined"
        PROFILE_OPTS="$_opts --runs $_runs"
        profile "$@" || { _rc=$?; PROFILE_OPTS=$_opts; return $_rc; }
    done
    PROFILE_OPTS=$_opts
    return 0
}

# check ARGS...: run profile_check.py, remember a failure.
check() {
    $CHECK "$@" || fail=1
}

finish() {
    [ "$fail" = 0 ] && echo "PASS" || echo "FAILED"
    exit "$fail"
}
