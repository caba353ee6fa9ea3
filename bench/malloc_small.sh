#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 19: cost of recording small blocks by site.  bench/malloc_small.c plain and under the profiler
# (pagefault sampler; every block below --min-size recorded), in the same script; prints the ratio.
# Usage: bench/malloc_small.sh BUILD [N] [SIZE]
B=${1:?usage: $0 BUILD [N] [SIZE]}
N=${2:-200000}
SIZE=${3:-2048}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc -O2 -o "$T/malloc_small" "$(dirname "$0")/malloc_small.c" || exit 1
plain=$("$T/malloc_small" "$N" "$SIZE" | cut -d' ' -f1)
prof=$("$B/cli/numakit" profile --sampler pagefault --small-blocks --quiet -o "$T/p.nkp" -- "$T/malloc_small" "$N" "$SIZE" 2>/dev/null |
       cut -d' ' -f1)
echo "plain    $plain ns per malloc+free"
echo "profiled $prof ns per malloc+free"
python3 -c "print('ratio    %.1f' % ($prof / $plain))"
