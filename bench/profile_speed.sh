#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The pagefault sampler against the trace ground truth at several program speeds (issue 13): boots the
# 4n-slit guest once per -icount shift and, inside it, profiles known-truth programs of tests/guest with
# both samplers, then prints per variable the remote fraction with its 95 % interval, the share of
# writes, the diagnosis and the plan `numakit advise` writes.  Figures: docs/profile.md, "At what
# program speed the pagefault numbers hold".
# Usage (host):  bench/profile_speed.sh [BUILD_DIR] [SHIFTS]     e.g. bench/profile_speed.sh build "0 2 5"
#   PROGS="hotspot table mismatch" SAMPLERS="pagefault trace" choose what runs; OUT keeps the profiles;
#   REPEAT=N profiles each program N times with the pagefault sampler (the trace truth once); PF_OPTS
#   its options (default "--rate 20000 --max-overhead 100"; "--rate 1000" is numakit's default); PROG_ARGS
#   the programs' arguments (default 8: MiB per array).
# Inside a guest it is run as:  bench/profile_speed.sh --guest BUILD_DIR OUT
set -u
S=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --guest ]; then
    B=$2; O=$3; NK=$B/cli/numakit; G=$B/tests/guest
    echo 0 > /proc/sys/kernel/numa_balancing; echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
    export OMP_NUM_THREADS=$(nproc) OMP_PROC_BIND=spread OMP_PLACES=cores
    for p in ${PROGS:-hotspot table mismatch}; do
        for s in ${SAMPLERS:-pagefault trace}; do
          for k in $(seq 1 "${REPEAT:-1}"); do
            [ "$s" = trace ] && [ "$k" -gt 1 ] && break
            if [ "$s" = trace ]; then
                prog=$O/prof_${p}_trace; opt="--rate 64"
                [ -x "$prog" ] || "$NK" cc clang -fopenmp -g -O1 -D_GNU_SOURCE -I"$S/tests/guest" \
                    "$S/tests/guest/prof_$p.c" -o "$prog" >/dev/null 2>&1 || { echo "$p: numakit cc failed"; continue; }
            else
                prog=$G/prof_$p; opt=${PF_OPTS:-"--rate 20000 --max-overhead 100"}
            fi
            f=$O/$p.$s.$k
            t0=$(date +%s%N)
            "$NK" profile --sampler "$s" $opt -q -o "$f.nkp" -- "$prog" ${PROG_ARGS:-8} || { echo "$p $s: profile failed"; continue; }
            t1=$(date +%s%N)
            "$NK" report --json "$f.nkp" > "$f.json" 2>/dev/null
            "$NK" advise -o "$f.plan.json" "$f.nkp" > /dev/null 2>&1
            python3 - "$f.json" "$p" "$s" "$f.plan.json" "$(( (t1 - t0) / 1000000 ))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = []
for v in r.get("variables", []):
    if v.get("size", 0) >= 1 << 20:
        lo, hi = v.get("remote_ci") or [0, 1]
        out.append("%s: n=%s remote=%.1f%% [%.1f,%.1f] writes=%.1f%% %s%s" % (
            v.get("name"), v.get("samples"), 100 * v["remote_fraction"], 100 * lo, 100 * hi,
            100.0 * v["writes"] / max(1, v["reads"] + v["writes"]), v.get("diagnosis"),
            "" if v.get("decided", True) else " (undecided)"))
try:
    pl = json.load(open(sys.argv[4]))
    plan = "; ".join(sorted("%s=%s" % (e.get("variable", "?"), e.get("policy")) for e in pl.get("entries", [])))
except (OSError, ValueError) as e:
    plan = "(none: %s)" % e
print("%-8s %-9s %6s ms | %s | plan: %s" % (sys.argv[2], sys.argv[3], sys.argv[5], "; ".join(out), plan))
PY
          done
        done
    done
    exit 0
fi
B=$(cd "${1:-build}" && pwd)
for shift in ${2:-0 2 5}; do
    O=${OUT:-$(mktemp -d)}/shift$shift
    mkdir -p "$O"
    echo "== -icount shift=$shift"
    python3 "$S/tests/vm/run-guests" --build "$B" --only 4n-slit --icount "$shift" --rwdir "$O" \
        --exec "env PROGS='${PROGS:-hotspot table mismatch}' SAMPLERS='${SAMPLERS:-pagefault trace}' REPEAT='${REPEAT:-1}' PROG_ARGS='${PROG_ARGS:-8}' PF_OPTS='${PF_OPTS:---rate 20000 --max-overhead 100}' sh $S/bench/profile_speed.sh --guest $B $O" |
        grep -E '^[a-z]+ +(pagefault|trace) |failed'
done
