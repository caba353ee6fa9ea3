#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Slavin & Freeman's Table 1 on numakit: the Gaussian sparse matrix-vector product
# (examples/spmv_gaussian) in the 4-node guest (tests/vm, topology 4n-slit, one cpu per node),
# equipartition without migration vs FGDLS with migration, and the two modes in between.
# Usage: bench/fgdls.sh [BUILD_DIR] [N] [ITERATIONS] [extra spmv_gaussian options...]
# The remote fractions come from residency (move_pages queries) and the thread -> node map and are
# exact; the timings are not NUMA-realistic (QEMU TCG emulates every node at the same speed), so
# the time ratios in the table say nothing about a real machine.  Boots one guest (~30-60 s; guests
# run one at a time on this host, so this may first wait for another user's guest).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
N=${2:-8192}
ITERS=${3:-20}
shift $(( $# < 3 ? $# : 3 ))
BIN=$BUILD/examples/spmv_gaussian
[ -x "$BIN" ] || { echo "bench/fgdls.sh: $BIN not built (ninja -C $BUILD)" >&2; exit 1; }
# automatic NUMA balancing would move pages behind the program's back: off, as the guest tests have it
run() {
    "$SRC/tests/vm/run-guests" --build "$BUILD" --only 4n-slit --exec \
        "bash -c 'echo 0 > /proc/sys/kernel/numa_balancing; $BIN --size $N --iterations $ITERS $*'"
}
echo "== cost = measured time (the paper's FGDLS)"
run "$@"
echo
echo "== cost = nnz (deterministic work measure)"
run --cost nnz "$@"
