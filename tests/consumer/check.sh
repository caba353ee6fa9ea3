#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs a numakit build into a temporary prefix and builds tests/consumer/ against it twice:
# with `pkg-config --cflags --libs numakit` and with CMake's find_package(numakit) (shared and
# static). Usage: tests/consumer/check.sh BUILD_DIR
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

# 1. pkg-config, the way a Makefile would use it. The .pc file names the prefix the build was
# configured with; --define-prefix (pkgconf) derives it from the file's location instead, as for any
# relocated install.
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
pkg-config() { command pkg-config --define-prefix "$@"; }
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -DEXPECTED_VERSION="\"$VERSION\"" -o "$TMP/pc_consumer" "$HERE/main.c" \
   $(pkg-config --cflags --libs numakit)
LD_LIBRARY_PATH=$LIBDIR "$TMP/pc_consumer"
echo "consumer: pkg-config build OK"

# 2. CMake find_package(numakit).
cmake -S "$HERE" -B "$TMP/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$TMP/cmake.log" \
  || { cat "$TMP/cmake.log"; exit 1; }
ninja -C "$TMP/cmake" >"$TMP/ninja.log" || { cat "$TMP/ninja.log"; exit 1; }
LD_LIBRARY_PATH=$LIBDIR "$TMP/cmake/consumer_shared"
"$TMP/cmake/consumer_static"
echo "consumer: find_package(numakit) build OK (shared and static)"
