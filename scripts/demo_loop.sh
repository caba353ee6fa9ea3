#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The main job, inside a NUMA guest (scripts/demo.sh boots 4n-slit to run it): profile a program whose
# arrays are first touched by one thread and read by all (tests/guest/prof_hotspot.c), let advise write a
# plan, predict it with whatif, run the program under the plan and profile it again.
# Usage: demo_loop.sh BUILD_DIR
set -eu
B=$1; NK=$B/cli/numakit; P=$B/tests/guest/prof_hotspot
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Under emulation a fault costs milliseconds, so the sampler's 5 % cap would leave too few samples:
# the demo runs it uncapped, as the guest tests do (docs/profile.md, "At what program speed").
OPTS="--sampler pagefault --rate 20000 --max-overhead 100"
echo 0 > /proc/sys/kernel/numa_balancing 2>/dev/null || true
export OMP_NUM_THREADS=4 OMP_PROC_BIND=spread OMP_PLACES=cores
echo "== 1. numakit profile -- prof_hotspot (4 threads on 4 nodes)"
"$NK" profile $OPTS -o "$T/before.nkp" -- "$P" 8
show() { # the arrays of 1 MiB or more, and the remote share of all accesses
    "$NK" report --json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
for v in r["variables"]:
    if v.get("size", 0) >= 1 << 20 and v.get("remote_fraction") is not None:
        lo, hi = v.get("remote_ci") or [0, 1]
        print("  %-28s %6.1f %% remote [%.0f, %.0f]  %s" % (v["name"][:28], 100 * v["remote_fraction"], 100 * lo,
                                                       100 * hi, v.get("diagnosis")))
known = r["local"] + r["remote"]
print("  all accesses: %.1f %% remote" % (100.0 * r["remote"] / known if known else 0))'
}
show "$T/before.nkp"
echo "== 2. numakit advise"
"$NK" advise -o "$T/plan.json" "$T/before.nkp"
echo "== 3. numakit whatif --plan"
"$NK" whatif --plan "$T/plan.json" "$T/before.nkp" | sed -n '/^variable/,/^total/p'
echo "== 4. numakit run --plan, profiled again"
"$NK" profile $OPTS -o "$T/after.nkp" -- "$NK" run --plan "$T/plan.json" -- "$P" 8
show "$T/after.nkp"
