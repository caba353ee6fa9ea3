#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs a numakit build into a temporary prefix and builds tests/consumer/ against it twice:
# with `pkg-config --cflags --libs numakit` and with CMake's find_package(numakit) (shared and
# static). Each way, the stable-only main.c builds with -Wall -Werror, and experimental.c (calls of
# experimental functions) fails to compile without NUMAKIT_EXPERIMENTAL, because those functions are
# undeclared, and compiles, links and runs with it (include/numakit.h "API TIERS").  When the build has
# the heap library (jemalloc), heap.c builds and runs through `pkg-config numakit-heap` and
# find_package(numakit) (numakit::heap, numakit::heap_static); without it, none of it is installed.
# Usage: tests/consumer/check.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" || { cat "$TMP/install.log"; exit 1; }
LIBDIR=$(dirname "$(find "$PREFIX" -name numakit.pc -print -quit)")/..
LIBDIR=$(cd "$LIBDIR" && pwd)
VERSION=$(PKG_CONFIG_PATH=$LIBDIR/pkgconfig pkg-config --modversion numakit)
echo "consumer: installed numakit $VERSION into $PREFIX"
for h in numakit.h numakit/common.h numakit/job.h numakit/omp.h; do
  [ -f "$PREFIX/include/$h" ] || { echo "consumer: $h not installed" >&2; exit 1; }
done

# A failed compile of experimental.c without the macro, its output in $1: it must fail because the
# experimental functions are undeclared, and for no other reason (every error names one of them).
expect_undeclared() {
  local log=$1 how=$2
  if ! grep -Eq "(implicit declaration of function|undeclared function) .nk_profile_active" "$log"; then
    echo "consumer: $how: experimental.c without NUMAKIT_EXPERIMENTAL failed, but not because" \
         "nk_profile_active is undeclared:" >&2
    cat "$log" >&2
    exit 1
  fi
  if grep -E "error:" "$log" | grep -Evq "(implicit declaration of function|undeclared function) .nk_profile_(active|phase|start)"; then
    echo "consumer: $how: experimental.c without NUMAKIT_EXPERIMENTAL: an error other than an undeclared" \
         "experimental function:" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "consumer: $how: without NUMAKIT_EXPERIMENTAL, experimental.c fails to compile: its experimental" \
       "calls are undeclared (as expected)"
}

# 1. pkg-config, the way a Makefile would use it. The .pc file names the prefix the build was
# configured with; --define-prefix (pkgconf) derives it from the file's location instead, as for any
# relocated install.
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
pkg-config() { command pkg-config --define-prefix "$@"; }
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -DEXPECTED_VERSION="\"$VERSION\"" -o "$TMP/pc_consumer" "$HERE/main.c" \
   $(pkg-config --cflags --libs numakit)
LD_LIBRARY_PATH=$LIBDIR "$TMP/pc_consumer"
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Werror=implicit-function-declaration -o "$TMP/pc_experimental" "$HERE/experimental.c" \
   $(pkg-config --cflags --libs numakit) >"$TMP/pc_experimental.log" 2>&1; then
  echo "consumer: pkg-config: experimental.c compiled without NUMAKIT_EXPERIMENTAL" >&2
  exit 1
fi
expect_undeclared "$TMP/pc_experimental.log" pkg-config
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -DNUMAKIT_EXPERIMENTAL -o "$TMP/pc_experimental" "$HERE/experimental.c" \
   $(pkg-config --cflags --libs numakit)
LD_LIBRARY_PATH=$LIBDIR "$TMP/pc_experimental"
# The OpenMP conveniences: their own installed header, numakit/omp.h.
if echo 'int main(void){return 0;}' | cc -fopenmp -x c -o /dev/null - 2>/dev/null; then
  printf '#include <numakit/omp.h>\nint main(void)\n{\n\tnk_range r = { 0, 0 };\n\tint bad = 0;\n#pragma omp parallel num_threads(2) reduction(+ : bad)\n\tbad += nk_omp_static(0, 10, &r) != 0;\n\treturn bad;\n}\n' >"$TMP/omp.c"
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror -fopenmp -o "$TMP/pc_omp" "$TMP/omp.c" $(pkg-config --cflags --libs numakit)
  LD_LIBRARY_PATH=$LIBDIR "$TMP/pc_omp"
  echo "consumer: pkg-config: numakit/omp.h builds and runs with -fopenmp"
fi
# The heaps: libnumakit_heap and numakit-heap.pc, installed only by a build with jemalloc; then heap.c
# (which includes numakit/heap.h itself) builds and runs against it.  Without it, nothing of it is installed.
HEAP=0
if [ -f "$LIBDIR/pkgconfig/numakit-heap.pc" ]; then
  HEAP=1
  [ -f "$PREFIX/include/numakit/heap.h" ] || { echo "consumer: numakit/heap.h not installed" >&2; exit 1; }
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror -o "$TMP/pc_heap" "$HERE/heap.c" $(pkg-config --cflags --libs numakit-heap)
  LD_LIBRARY_PATH=$LIBDIR "$TMP/pc_heap"
  if readelf -d "$TMP/pc_experimental" | grep -q 'libnumakit_heap'; then
    echo "consumer: pkg-config numakit links libnumakit_heap: it must not" >&2
    exit 1
  fi
  echo "consumer: pkg-config: numakit-heap builds and runs heap.c"
else
  if compgen -G "$LIBDIR/libnumakit_heap*" >/dev/null || [ -e "$PREFIX/include/numakit/heap.h" ]; then
    echo "consumer: libnumakit_heap or numakit/heap.h installed without numakit-heap.pc" >&2
    exit 1
  fi
  echo "consumer: no libnumakit_heap in this install (built without jemalloc): heap.c not built"
fi
echo "consumer: pkg-config build OK"

# 2. CMake find_package(numakit).
cmake -S "$HERE" -B "$TMP/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$TMP/cmake.log" \
  || { cat "$TMP/cmake.log"; exit 1; }
ninja -C "$TMP/cmake" >"$TMP/ninja.log" || { cat "$TMP/ninja.log"; exit 1; }
LD_LIBRARY_PATH=$LIBDIR "$TMP/cmake/consumer_shared"
"$TMP/cmake/consumer_static"
LD_LIBRARY_PATH=$LIBDIR "$TMP/cmake/consumer_experimental"
if [ "$HEAP" = 1 ]; then
  [ -x "$TMP/cmake/consumer_heap" ] || { echo "consumer: find_package(numakit) did not find numakit::heap" >&2; exit 1; }
  LD_LIBRARY_PATH=$LIBDIR "$TMP/cmake/consumer_heap"
  "$TMP/cmake/consumer_heap_static"
  echo "consumer: find_package: numakit::heap and numakit::heap_static build and run heap.c"
elif [ -e "$TMP/cmake/consumer_heap" ]; then
  echo "consumer: find_package found numakit::heap in an install without it" >&2
  exit 1
fi
cmake -S "$HERE" -B "$TMP/cmake-noexp" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DCONSUMER_WITHOUT_EXPERIMENTAL=ON \
  >"$TMP/cmake-noexp.log" || { cat "$TMP/cmake-noexp.log"; exit 1; }
if ninja -C "$TMP/cmake-noexp" consumer_experimental >"$TMP/ninja-noexp.log" 2>&1; then
  echo "consumer: find_package: experimental.c compiled without NUMAKIT_EXPERIMENTAL" >&2
  exit 1
fi
expect_undeclared "$TMP/ninja-noexp.log" find_package
echo "consumer: find_package(numakit) build OK (shared and static, experimental with the macro)"
