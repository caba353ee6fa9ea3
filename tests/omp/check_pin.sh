#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check_pin.sh NUMAKIT PROGRAM... [-- SPEC...]
# Every thread of each OpenMP PROGRAM (tests/omp/omp_where.c, one build per runtime) run under
# `NUMAKIT run --pin SPEC` must report the cpu numakit lists for it (`run --dry-run`, line
# "thread cpus:"), and that cpu's node.  Default SPECs: compact, scatter and cpu lists built from
# the allowed cpus (reversed, and oversubscribed).  The program's in-program pinning (nk_omp_pin,
# argument pin:SPEC) is checked the same way.  Exit 77 (skip) with fewer than two allowed cpus.
# NK_PIN_SKIP_ENV=1 leaves out the checks of the environment numakit refuses or respects.
set -u
nk=$1; shift
progs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do progs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
specs=("$@")
unset KMP_AFFINITY GOMP_CPU_AFFINITY OMP_PLACES OMP_PROC_BIND OMP_NUM_THREADS

allowed=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
IFS=, read -r -a cpus <<<"$allowed"
if [ ${#cpus[@]} -lt 2 ]; then echo "SKIP: one allowed cpu ($allowed)"; exit 77; fi
first=${cpus[0]}; last=${cpus[${#cpus[@]}-1]}
if [ ${#specs[@]} -eq 0 ]; then
    specs=(compact scatter "$last,$first" "$first,$last" "$last,$first,$last")
fi

fail=0
# node of each cpu, from /sys (the kernel's view, not numakit's)
node_of() {
    local d
    for d in /sys/devices/system/node/node*/cpu"$1"; do
        [ -e "$d" ] && { basename "$(dirname "$d")" | sed 's/node//'; return; }
    done
    echo 0 # a kernel without NUMA: one node 0
}

# compare "thread T cpu C node N" lines with the expected cpu list
check() { # what expected-cpus output
    local what=$1 expected=$2 out=$3 t=0 c line n
    IFS=, read -r -a want <<<"$expected"
    local got
    got=$(grep -c '^thread ' <<<"$out")
    if [ "$got" -ne ${#want[@]} ]; then
        echo "FAIL: $what: $got threads reported, expected ${#want[@]}"; echo "$out"; fail=1; return
    fi
    for c in "${want[@]}"; do
        line=$(grep "^thread $t " <<<"$out")
        n=$(node_of "$c")
        if [ "$line" != "thread $t cpu $c node $n" ]; then
            echo "FAIL: $what: '$line', expected 'thread $t cpu $c node $n'"; fail=1
        fi
        t=$((t + 1))
    done
    [ $fail -eq 0 ] && echo "ok: $what: $expected"
}

for spec in "${specs[@]}"; do
    dry=$("$nk" run --dry-run --pin "$spec" -- prog) || { echo "FAIL: dry run of --pin $spec"; fail=1; continue; }
    expected=$(sed -n 's/^thread cpus: //p' <<<"$dry")
    # a plain list is its own placement: numakit's listing must be it, word for word
    if [[ $spec =~ ^[0-9,]+$ ]] && [ "$expected" != "$spec" ]; then
        echo "FAIL: --pin $spec listed as '$expected'"; fail=1
    fi
    n=$(tr ',' '\n' <<<"$expected" | wc -l)
    for p in "${progs[@]}"; do
        out=$("$nk" run --pin "$spec" -- "$p" 2>&1) || { echo "FAIL: $p under --pin $spec: $out"; fail=1; continue; }
        check "$(basename "$p") --pin $spec" "$expected" "$out"
        out=$(OMP_NUM_THREADS=$n "$p" "pin:$spec" 2>&1) || { echo "FAIL: $p pin:$spec: $out"; fail=1; continue; }
        check "$(basename "$p") nk_omp_pin $spec" "$expected" "$out"
    done
done
# The environment numakit refuses or respects (docs/threads.md, numakit run --pin): plain CLI logic,
# the same on any machine, so the guest test (NK_PIN_SKIP_ENV=1: every numakit start costs seconds
# under emulation) leaves it to the host run of this script (ctest omp.*).
if [ "${NK_PIN_SKIP_ENV:-0}" = 1 ]; then exit $fail; fi
expect_rc() { # rc description command...
    local want=$1 what=$2 rc; shift 2
    "$@" >/dev/null 2>&1; rc=$?
    if [ $rc -ne "$want" ]; then echo "FAIL: $what: exit $rc, expected $want"; fail=1; else echo "ok: $what"; fi
}
list="$last,$first"
expect_rc 2 "KMP_AFFINITY=compact refused" env KMP_AFFINITY=compact "$nk" run --pin "$list" -- true
expect_rc 0 "KMP_AFFINITY=verbose accepted" env KMP_AFFINITY=verbose,granularity=fine "$nk" run --pin "$list" -- true
expect_rc 2 "GOMP_CPU_AFFINITY refused" env GOMP_CPU_AFFINITY=0 "$nk" run --pin "$list" -- true
expect_rc 2 "OMP_PROC_BIND=spread refused" env OMP_PROC_BIND=spread "$nk" run --pin "$list" -- true
expect_rc 0 "OMP_PROC_BIND=close accepted" env OMP_PROC_BIND=CLOSE "$nk" run --pin "$list" -- true
expect_rc 2 "OMP_PLACES=cores refused" env OMP_PLACES=cores "$nk" run --pin "$list" -- true
expect_rc 2 "OMP_NUM_THREADS disagreeing with --threads" env OMP_NUM_THREADS=3 "$nk" run --pin "$list" --threads 2 -- true
expect_rc 2 "OMP_NUM_THREADS=x refused" env OMP_NUM_THREADS=x "$nk" run --pin "$list" -- true
out=$(OMP_NUM_THREADS=3,2 "$nk" run --pin "$list" -- sh -c 'echo "$OMP_NUM_THREADS $OMP_PLACES $OMP_PROC_BIND"')
want="3,2 {$last},{$first},{$last} close"
if [ "$out" != "$want" ]; then echo "FAIL: OMP_NUM_THREADS=3,2 gave '$out', expected '$want'"; fail=1; else echo "ok: OMP_NUM_THREADS kept"; fi
out=$("$nk" run --pin "$list" -- sh -c 'echo "$OMP_NUM_THREADS"; grep Cpus_allowed_list /proc/self/status')
want=$(printf '2\nCpus_allowed_list:\t%s' "$( [ "$first" = "$last" ] && echo "$first" || python3 -c "
import sys; a,b=sorted(map(int,sys.argv[1:])); print(f'{a}-{b}' if b==a+1 else f'{a},{b}')" "$first" "$last")")
if [ "$out" != "$want" ]; then echo "FAIL: cpu set / OMP_NUM_THREADS: '$out', expected '$want'"; fail=1; else echo "ok: cpu set"; fi
exit $fail
