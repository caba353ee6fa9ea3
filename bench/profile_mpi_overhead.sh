#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Overhead of `numakit profile` inside an MPI job (issue 14): `mpirun -np RANKS mpi_halo` plain (and plain
# with the profiled job's transport, "copied") against
# `mpirun -np RANKS numakit profile -o JOB -- mpi_halo` at the profiler's defaults (pagefault, --rate
# 1000, the 5 % cap), alternately, REPS times, in this one script; prints the median wall times of the
# job and their ratio.  The program is tests/guest/mpi_halo.c as the build made it (mpi_halo_openmpi or
# mpi_halo_mpich): each rank initialises its array, moves a share of it, and sweeps it with its OpenMP
# threads, exchanging halos with its ring neighbours.  The profiled job copies its messages through
# shared memory (numakit profile turns single-copy transfers off under the pagefault sampler), which is
# part of what is measured.
# Usage: bench/profile_mpi_overhead.sh [BUILD_DIR] [REPS] [RANKS] [MIB] [SWEEPS]   (defaults: build 5 4 16 40)
# Environment: MPI (openmpi, the default, or mpich), OMP_NUM_THREADS (threads per rank, default 1),
#              NK_PROF_OPTS (more `numakit profile` options, e.g. "--max-overhead 100").
# Exit status 0 when it ran, 2 when something is missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
REPS=${2:-5}
RANKS=${3:-4}
MIB=${4:-16}
SWEEPS=${5:-40}
MPI=${MPI:-openmpi}
NK=$BUILD/cli/numakit
PROG=$BUILD/tests/guest/mpi_halo_$MPI
[ -x "$NK" ] || { echo "profile_mpi_overhead: $NK not built" >&2; exit 2; }
[ -x "$PROG" ] || { echo "profile_mpi_overhead: $PROG not built (NK_MPI_TESTS, $MPI's headers)" >&2; exit 2; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
case $MPI in
openmpi)
    # by its real path: through a /bin -> usr/bin link Open MPI takes "/" for its prefix and refuses to start
    RUN=$(command -v mpirun.openmpi || command -v mpirun || true)
    [ -z "$RUN" ] || RUN=$(readlink -f "$RUN")
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    LAUNCH=("$RUN" --oversubscribe --bind-to none -np "$RANKS" -x OMP_NUM_THREADS) ;;
mpich)
    RUN=$(command -v mpiexec.mpich || command -v mpiexec.hydra || true)
    LAUNCH=("$RUN" -np "$RANKS" -bind-to none) ;;
*) echo "profile_mpi_overhead: MPI=$MPI: expected openmpi or mpich" >&2; exit 2 ;;
esac
[ -n "$RUN" ] || { echo "profile_mpi_overhead: no $MPI launcher" >&2; exit 2; }
TMP=$(mktemp -d /tmp/nkmpi-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s%N; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "profile_mpi_overhead: $MPI, $RANKS ranks x $OMP_NUM_THREADS threads, $MIB MiB and $SWEEPS sweeps per rank, $REPS repetitions (host $(getconf _NPROCESSORS_ONLN) cpus)"
# The profiled job copies messages through shared memory (single-copy off, as numakit profile sets under
# the pagefault sampler); "copied" is the plain job with the same transport, so that the ratio against it
# is the profiler's own cost, and "plain" the job as users launch it.
COPIED=(env OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_sm_single_copy_mechanism=none
        UCX_RNDV_THRESH=inf UCX_ZCOPY_THRESH=inf MPIR_CVAR_CH4_CMA_ENABLE=0 MPIR_CVAR_CH4_XPMEM_ENABLE=0 FI_SHM_DISABLE_CMA=1)
for i in $(seq "$REPS"); do
    t0=$(now)
    "${LAUNCH[@]}" "$PROG" "$MIB" "$SWEEPS" 1024 > "$TMP/plain.out" 2>&1 || { cat "$TMP/plain.out"; exit 1; }
    t1=$(now)
    echo $((t1 - t0)) >> "$TMP/plain.t"
    t0=$(now)
    "${COPIED[@]}" "${LAUNCH[@]}" "$PROG" "$MIB" "$SWEEPS" 1024 > "$TMP/copied.out" 2>&1 || { cat "$TMP/copied.out"; exit 1; }
    t1=$(now)
    echo $((t1 - t0)) >> "$TMP/copied.t"
    rm -rf "$TMP/job.nkp"
    t0=$(now)
    # shellcheck disable=SC2086
    "${LAUNCH[@]}" "$NK" profile ${NK_PROF_OPTS:-} -o "$TMP/job.nkp" -- "$PROG" "$MIB" "$SWEEPS" 1024 \
        > "$TMP/prof.out" 2>&1 || { cat "$TMP/prof.out"; exit 1; }
    t1=$(now)
    echo $((t1 - t0)) >> "$TMP/prof.t"
    printf '  run %d: plain %.2f s, copied %.2f s, profiled %.2f s\n' "$i" "$(tail -1 "$TMP/plain.t" | awk '{print $1/1e9}')" \
        "$(tail -1 "$TMP/copied.t" | awk '{print $1/1e9}')" "$(tail -1 "$TMP/prof.t" | awk '{print $1/1e9}')"
done
P=$(median < "$TMP/plain.t")
C=$(median < "$TMP/copied.t")
Q=$(median < "$TMP/prof.t")
S=$("$NK" report --json "$TMP/job.nkp" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])' || echo "?")
awk -v p="$P" -v c="$C" -v q="$Q" -v s="$S" 'BEGIN { printf "median job wall: plain %.2f s, copied %.2f s, profiled %.2f s: profiled/copied %.3f (the profiler), profiled/plain %.3f (%s samples in the last job profile)\n", p/1e9, c/1e9, q/1e9, q/c, q/p, s }'
