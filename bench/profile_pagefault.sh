#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Overhead of the pagefault sampler (libnumakit_prof.so, preload/prof/pagefault.c) on a STREAM-like
# triad (bench/ref_triad.c, its arrays one anonymous mmap that the runtime tracks): ROUNDS rounds of
# (plain, under the runtime with NK_PROF_SAMPLER=pagefault), same binary, same script, alternating so
# drift hits both.  Prints each figure (MB/s, median of REPS repetitions), the medians over rounds, the
# samples the profiled runs recorded, and the ratio profiled / plain (1.00 = no overhead; aim >= 0.95
# at the default rate).
# Usage: bench/profile_pagefault.sh [BUILD_DIR] [SIZE_BYTES] [ROUNDS] [RATE] [THREADS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
SIZE=${2:-$((192 << 20))}
ROUNDS=${3:-5}
RATE=${4:-1000}
THREADS=${5:-$(nproc)}
REPS=20
LIB=$BUILD/preload/prof/libnumakit_prof.so
[ -e "$LIB" ] || { echo "no $LIB: build the numakit_prof target first" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cc -O2 -march=native -pthread -o "$OUT/ref_triad" "$HERE/ref_triad.c"

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
samples=0
for r in $(seq "$ROUNDS"); do
	plain=$("$OUT/ref_triad" "$SIZE" "$REPS" "$THREADS")
	rm -rf "$OUT/parts" && mkdir "$OUT/parts"
	prof=$(env LD_PRELOAD="$LIB" NK_PROF_DIR="$OUT/parts" NK_PROF_SAMPLER=pagefault NK_PROF_RATE="$RATE" \
		"$OUT/ref_triad" "$SIZE" "$REPS" "$THREADS")
	n=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import partdump
print(sum(len(v) for p in sys.argv[2:] for k, v in partdump.parse(p) if k == "SAMPLES"))' \
		"$HERE/../tests/prof" "$OUT"/parts/*.part)
	samples=$((samples + n))
	echo "round $r: plain $plain MB/s, profiled $prof MB/s ($n samples)"
	echo "$plain" >>"$OUT/plain"
	echo "$prof" >>"$OUT/prof"
done
P=$(median <"$OUT/plain")
Q=$(median <"$OUT/prof")
echo "median plain $P MB/s, profiled $Q MB/s, $((samples / ROUNDS)) samples/run at rate $RATE, $THREADS threads"
awk -v p="$P" -v q="$Q" 'BEGIN { printf "ratio profiled/plain %.3f\n", q / p }'
