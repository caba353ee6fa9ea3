#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Profiler overhead on a machine without numakit's command (the `device` of docs/bench.md: a 16-core
# VM without apt, where the CLI, linked with libclang, is too large to carry): the runtime
# libnumakit_prof.so is preloaded directly, plain vs pagefault vs timer, 5 alternating runs of the
# triad and CG kernels of bench/prof_kernels.c; prints the ratio of median walls (<= 1.05 is the
# budget of issue 6/13) and the samples and counters of one profiled run.
# Usage: bench/profile_overhead_preload.sh DIR   (DIR holds prof_kernels, libnumakit_prof.so and the
#        shared libraries they need, e.g. libZydis.so.4.0 and libgomp.so.1; set NT for the threads,
#        SCALE to lengthen the runs).  To prepare DIR here:
#   gcc -O2 -fopenmp bench/prof_kernels.c -o DIR/prof_kernels
#   cp build/preload/prof/libnumakit_prof.so DIR; cp -L /lib/x86_64-linux-gnu/libZydis.so.4.0 \
#      /lib/x86_64-linux-gnu/libgomp.so.1 DIR
D=$(cd "${1:?usage: profile_overhead_preload.sh DIR}" && pwd)
export LD_LIBRARY_PATH=$D
K=$D/prof_kernels
LIB=$D/libnumakit_prof.so
[ -x "$K" ] && [ -f "$LIB" ] || { echo "profile_overhead_preload: $K or $LIB missing" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NT=${NT:-16}
export OMP_NUM_THREADS=$NT OMP_PROC_BIND=close OMP_PLACES=cores
nproc; grep -m1 "model name" /proc/cpuinfo; uname -r; cat /proc/sys/kernel/perf_event_paranoid
now() { date +%s%N; }
run() { # sampler kernel mib iters -> wall ns
  local s=$1; shift
  local t0=$(now)
  if [ "$s" = plain ]; then "$K" "$@" >/dev/null
  else rm -rf "$T/p"; mkdir -p "$T/p"; NK_PROF_DIR=$T/p NK_PROF_SAMPLER=$s LD_PRELOAD=$LIB "$K" "$@" >/dev/null; fi
  echo $(( $(now) - t0 ))
}
med() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
for kern in "triad 256 $((40 * ${SCALE:-1}))" "cg 256 $((80 * ${SCALE:-1}))"; do
  set -- $kern
  run plain $@ >/dev/null
  : > $T/plain; : > $T/pagefault; : > $T/timer
  for r in 1 2 3 4 5; do
    for s in plain pagefault timer; do run $s $@ >> $T/$s; done
  done
  bytes_pf=0
  mp=$(med < $T/plain)
  for s in pagefault timer; do
    ms=$(med < $T/$s)
    rm -rf "$T/p"; mkdir -p "$T/p"; NK_PROF_DIR=$T/p NK_PROF_SAMPLER=$s LD_PRELOAD=$LIB "$K" $@ >/dev/null
    sz=$(du -sk $T/p | cut -f1)
    ends=$(cat $T/p/*.part | tr -c '[:print:]' '\n' | grep -o '"samples": [0-9]*' | head -1)
    tm=$(cat $T/p/*.part | tr -c '[:print:]' '\n' | grep -o '"timer": {[^}]*}' | head -1)
    awk -v k="$1" -v s="$s" -v a="$ms" -v b="$mp" -v sz="$sz" -v e="$ends" -v t="$tm" 'BEGIN {printf "%-6s %-9s threads=%s plain %.3f s profiled %.3f s ratio %.3f part %d kB %s %s\n", k, s, ENVIRON["NT"]?ENVIRON["NT"]:16, b/1e9, a/1e9, a/b, sz, e, t}'
  done
done
