#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Overhead of the trace sampler: one STREAM-like triad (a[i] = b[i] + 3 c[i], three heap arrays)
# built twice with clang -O2, plain and through `numakit cc`, run in the same script:
#   plain         clang -O2
#   inactive      numakit cc build, no NK_PROF_DIR (callbacks return at once)
#   trace R=100   NK_PROF_SAMPLER=trace NK_PROF_RATE=100 (one access in 100 recorded)
#   trace R=1     every access recorded (the limit study; samples beyond the budget are dropped)
# Prints the kernel time of each (best of RUNS), its ratio to plain, and the runtime's END counters.
# Usage: bench/profile_trace.sh [BUILD_DIR] [ELEMENTS] [REPS] [RUNS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
N=${2:-1000000}
REPS=${3:-5}
RUNS=${4:-3}
NK=$BUILD/cli/numakit
CLANG=${CLANG:-clang}
[ -x "$NK" ] || { echo "bench/profile_trace.sh: $NK not built (ninja -C $BUILD numakit_cli numakit_prof)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/triad.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
__attribute__((noinline)) static void triad(double *a, const double *b, const double *c, long n)
{
	for (long i = 0; i < n; i++)
		a[i] = b[i] + 3.0 * c[i];
}
int main(int argc, char **argv)
{
	long n = atol(argv[1]), reps = atol(argv[2]);
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
	if (!a || !b || !c)
		return 1;
	for (long i = 0; i < n; i++)
		a[i] = 0, b[i] = i, c[i] = 1;
	double t0 = now();
	for (long r = 0; r < reps; r++)
		triad(a, b, c, n);
	printf("%.6f %g\n", now() - t0, a[n / 2]);
	return 0;
}
EOF
"$CLANG" -O2 "$T/triad.c" -o "$T/plain"
"$NK" cc "$CLANG" -O2 "$T/triad.c" -o "$T/traced"

best() { # CMD... : best kernel time of RUNS runs
    local b="" t
    for _ in $(seq "$RUNS"); do
        rm -rf "$T/parts" && mkdir "$T/parts"
        t=$("$@" "$N" "$REPS" | cut -d' ' -f1)
        if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b=$t; fi
    done
    echo "$b"
}
end_counters() {
    NKSRC=$SRC python3 - "$T"/parts/*.part <<'EOF'
import os, sys
sys.path.insert(0, os.environ["NKSRC"] + "/tests/prof")
import partdump
for name, v in partdump.parse(sys.argv[1]):
    if name == "END":
        tr = v.get("trace", {})
        print("    END: samples %s dropped %s; trace: %s" % (v.get("samples"), v.get("dropped"),
              {k: x for k, x in tr.items() if k != "threads"}))
EOF
}

echo "triad: $N doubles x 3 arrays, $REPS reps, best of $RUNS; $(nproc) cpus; clang: $("$CLANG" --version | head -1)"
plain=$(best "$T/plain")
printf '%-12s %9.4f s  x%.2f\n' plain "$plain" 1
inactive=$(best "$T/traced")
printf '%-12s %9.4f s  x%.2f\n' inactive "$inactive" "$(awk -v a="$inactive" -v b="$plain" 'BEGIN { print a / b }')"
for rate in 100 1; do
    t=$(best env NK_PROF_DIR="$T/parts" NK_PROF_SAMPLER=trace NK_PROF_RATE=$rate NK_PROF_BUDGET=1000000 "$T/traced")
    printf '%-12s %9.4f s  x%.2f\n' "trace R=$rate" "$t" "$(awk -v a="$t" -v b="$plain" 'BEGIN { print a / b }')"
    end_counters
done
