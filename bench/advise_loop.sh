#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 21's evidence: is the advised plan what the model predicts, and does the planned run measure it?
# Boots 4n-slit at one -icount shift and, for each known-truth program of tests/guest, built for the trace
# sampler (numakit cc: every access counted, the ground truth): profile, advise, whatif (the plan's
# predicted remote fraction), run --plan under the same sampler, report.  Prints per program and per
# placed variable: the remote fraction as profiled [95 %], the policy advise chose and whether it is the
# lowest predicted stall among the candidates it priced, whatif's prediction, and the planned run's
# measurement [95 %]; then the totals.  Figures: docs/plan.md "The model's choice", issue 21 §4.
# Usage (host):  bench/advise_loop.sh [BUILD_DIR] [SHIFT]       (defaults: build 2)
#   PROGS="hotspot mismatch trio table" chooses the programs; PROG_ARGS their arguments (default 8);
#   OUT keeps the files.
# Inside a guest it is run as:  bench/advise_loop.sh --guest BUILD_DIR OUT
set -u
S=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --guest ]; then
    B=$2; O=$3; NK=$B/cli/numakit
    echo 0 > /proc/sys/kernel/numa_balancing; echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
    export OMP_NUM_THREADS=$(nproc) OMP_PROC_BIND=spread OMP_PLACES=cores
    for p in ${PROGS:-hotspot mismatch trio table}; do
        prog=$O/prof_${p}_trace
        [ -x "$prog" ] || "$NK" cc clang -fopenmp -g -O1 -D_GNU_SOURCE -I"$S/tests/guest" \
            "$S/tests/guest/prof_$p.c" -o "$prog" >/dev/null 2>&1 || { echo "$p: numakit cc failed"; continue; }
        f=$O/$p
        "$NK" profile --sampler trace --rate 64 -q -o "$f.1.nkp" -- "$prog" ${PROG_ARGS:-8} || { echo "$p: profile failed"; continue; }
        "$NK" report --json "$f.1.nkp" > "$f.1.json" 2>/dev/null
        "$NK" advise -o "$f.plan.json" "$f.1.nkp" > "$f.advise.txt" 2>&1 || { echo "$p: advise: $(tail -1 "$f.advise.txt")"; continue; }
        "$NK" whatif --json --plan "$f.plan.json" "$f.1.nkp" > "$f.whatif.json" 2>/dev/null || { echo "$p: whatif failed"; continue; }
        "$NK" run --plan "$f.plan.json" -- "$NK" profile --sampler trace --rate 64 -q -o "$f.2.nkp" -- "$prog" ${PROG_ARGS:-8} \
            > /dev/null 2>&1 || { echo "$p: planned run failed"; continue; }
        "$NK" report --json "$f.2.nkp" > "$f.2.json" 2>/dev/null
        python3 "$S/bench/advise_loop_sum.py" "$O" "$p"
    done
    exit 0
fi
B=$(cd "${1:-build}" && pwd)
shift_=${2:-2}
O=${OUT:-$(mktemp -d)}/shift$shift_
mkdir -p "$O"
echo "== -icount shift=$shift_"
python3 "$S/tests/vm/run-guests" --build "$B" --only 4n-slit --icount "$shift_" --rwdir "$O" \
    --exec "env PROGS='${PROGS:-hotspot mismatch trio table}' PROG_ARGS='${PROG_ARGS:-8}' sh $S/bench/advise_loop.sh --guest $B $O" |
    grep -E '^[a-z]+ +|failed|missing'
