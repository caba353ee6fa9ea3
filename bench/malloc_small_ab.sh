#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 13: what the correction for the profiler's own time costs on the malloc path.  bench/malloc_small.c
# plain and under two builds' runtimes (pagefault sampler, --small-blocks: every block below --min-size
# recorded), alternated R times so that the host's load falls on all three alike; the main thread's CPU time
# per malloc+free pair (the wall time moves far more on a shared host), medians and their ratio to plain.
# The runtime is preloaded as `numakit profile` does (NK_PROF_* of its default options).
# Usage: bench/malloc_small_ab.sh OLD_BUILD NEW_BUILD [R] [N] [SIZE]
OLD=${1:?usage: $0 OLD_BUILD NEW_BUILD [R] [N] [SIZE]}
NEW=${2:?usage: $0 OLD_BUILD NEW_BUILD [R] [N] [SIZE]}
R=${3:-11}
N=${4:-200000}
SIZE=${5:-64}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc -O2 -o "$T/malloc_small" "$(dirname "$0")/malloc_small.c" || exit 1
cpu() { "$@" "$T/malloc_small" "$N" "$SIZE" | sed 's/.*cpu //'; }
prof() {
	rm -rf "$T/d" && mkdir "$T/d" &&
		cpu env NK_PROF_DIR="$T/d" NK_PROF_SAMPLER=pagefault NK_PROF_SMALL_BLOCKS=1 NK_PROF_SEED=1 \
			LD_PRELOAD="$1/preload/prof/libnumakit_prof.so"
}
for i in $(seq "$R"); do
	echo "plain $(cpu env)"
	echo "old $(prof "$OLD")"
	echo "new $(prof "$NEW")"
done | python3 -c '
import statistics, sys
v = {}
for line in sys.stdin:
    k, x = line.split()
    v.setdefault(k, []).append(float(x))
p = statistics.median(v["plain"])
for k in ("plain", "old", "new"):
    print("%-5s %8.1f ns CPU per malloc+free (median of %d; min %.1f), ratio to plain %.2f"
          % (k, statistics.median(v[k]), len(v[k]), min(v[k]), statistics.median(v[k]) / p))
'
