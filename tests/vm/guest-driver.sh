#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs inside a NUMA guest (started by tests/vm/run-guests). Usage: guest-driver.sh RESDIR
# RESDIR is the writable folder shared with the host (vng --rwdir). It holds:
#   env.sh    (written by the host) exported variables: NK_SRC, NK_BUILD, NK_TOPO, NK_TOPO_FILE
#   plan.tsv  (written by the host) one test a line: name<TAB>timeout<TAB>numa_balancing<TAB>thp<TAB>command
# and receives:
#   started        guest uptime (s) when this script began: the boot time as the guest sees it
#   t/NAME.{rc,out,err,time,settings}   per test: exit status, stdout, stderr, seconds, what was set
#   t/NAME.oops    when the guest kernel oopsed during a test that then failed: the kernel's lines; the
#                  test ran once more and NAME.{rc,out,...} are the second run's, the first's NAME.oops1.*
#   done           written last; its absence means the guest died or timed out mid-run
# Before each test this script sets the kernel knobs that move pages behind a test's back, exports what
# it set (NK_NUMA_BALANCING, NK_THP) and records it in NAME.settings. Exit status: 0 if every test
# passed or skipped (77), 1 otherwise.
set -u
RES=${1:?usage: guest-driver.sh RESDIR}
read -r up _ </proc/uptime
echo "$up" >"$RES/started"
# shellcheck disable=SC1091
source "$RES/env.sh"
export NK_RESULTS=$RES
mkdir -p "$RES/t"
cd "$NK_SRC" || exit 1

set_knobs() { # numa_balancing thp -> prints what is in effect afterwards
    local nb=$1 thp=$2 f
    if [ "$nb" != "-" ] && [ -w /proc/sys/kernel/numa_balancing ]; then
        echo "$nb" >/proc/sys/kernel/numa_balancing
    fi
    f=/sys/kernel/mm/transparent_hugepage/enabled
    if [ "$thp" != "-" ] && [ -w $f ]; then echo "$thp" >$f; fi
    NK_NUMA_BALANCING=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo unknown)
    NK_THP=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $f 2>/dev/null || echo unknown)
    export NK_NUMA_BALANCING NK_THP
    echo "numa_balancing=$NK_NUMA_BALANCING thp=$NK_THP"
}

# Kernel oopses so far (dmesg): the emulated guest's 6.12 kernel has oopsed under TCG on this project's
# host, twice at boot (rb_insert_color) and once inside a test program's mprotect (RIP 0 in vma_modify,
# 4n-slit-ic4, stop 26); the program then hangs in the kernel and its test times out.
oopses() { dmesg 2>/dev/null | grep -cE '(Oops|BUG): ' ; }

# run_test NAME TIMEOUT COMMAND: one run, its files in t/NAME.*; returns its exit status.
run_test() {
    local name=$1 tmo=$2 cmd=$3 s e rc
    s=$(date +%s%N)
    # The command is a path relative to NK_SRC plus optional arguments (word-split on purpose).
    # shellcheck disable=SC2086
    timeout -k 5 "$tmo" $cmd >"$RES/t/$name.out" 2>"$RES/t/$name.err" </dev/null
    rc=$?
    e=$(date +%s%N)
    echo $(( (e - s) / 1000000 )) >"$RES/t/$name.time"
    echo "$rc" >"$RES/t/$name.rc"
    return $rc
}

fail=0
while IFS=$'\t' read -r name tmo nb thp cmd; do
    [ -n "$name" ] || continue
    set_knobs "$nb" "$thp" >"$RES/t/$name.settings"
    echo "guest-driver: $name ($(cat "$RES/t/$name.settings"))"
    before=$(oopses)
    run_test "$name" "$tmo" "$cmd"
    rc=$?
    after=$(oopses)
    # A test that failed while the kernel oopsed runs once more (the kernel's fault, not the test's: it is
    # said in t/NAME.oops and in run-guests' summary); a test that passed is left as it is.
    if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$after" -gt "$before" ]; then
        dmesg | grep -E -A3 '(Oops|BUG): ' | tail -n 40 >"$RES/t/$name.oops"
        for f in rc out err time; do mv "$RES/t/$name.$f" "$RES/t/$name.oops1.$f"; done
        echo "guest-driver: $name -> $rc with a kernel oops: once more"
        run_test "$name" "$tmo" "$cmd"
        rc=$?
    fi
    echo "guest-driver: $name -> $rc"
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then fail=1; fi
done <"$RES/plan.tsv"
sync
echo "$fail" >"$RES/done"
exit $fail
