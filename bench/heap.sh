#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The heaps against glibc's malloc, jemalloc used directly and numa_alloc_onnode: bench/heap.c, every row
# measured in one process, ratios to jemalloc's arena with a thread cache.  Run it on an idle machine.
# Usage: bench/heap.sh BUILD [ROUNDS]
B=${1:?usage: $0 BUILD [ROUNDS]}
[ -x "$B/bench/heap_bench" ] || { echo "heap.sh: $B/bench/heap_bench not built (jemalloc or libnuma missing)"; exit 77; }
exec "$B/bench/heap_bench" "${2:-20}"
