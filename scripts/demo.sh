#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's main job: set up a fresh Debian 12 machine, build numakit, show this machine with
# `numakit topo`, then boot a 4-node NUMA guest (QEMU, tests/vm/topologies.json "4n-slit") and show
# `numakit topo` as the guest sees it, and the main job there: profile -> advise -> whatif -> run the plan
# (scripts/demo_loop.sh). Runs as root; takes a few minutes the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== setup"
bash scripts/setup.sh </dev/null
echo "== build"
cmake -S . -B build -G Ninja >/dev/null
ninja -C build
echo
echo "== numakit topo (this machine)"
build/cli/numakit topo
echo
echo "== numakit topo inside a 4-node guest (4n-slit: 4 nodes in a ring, distances 10/21/31)"
python3 tests/vm/run-guests --build build --only 4n-slit --exec "$PWD/build/cli/numakit topo"
echo
echo "== profile -> advise -> whatif -> run --plan inside the 4-node guest (scripts/demo_loop.sh)"
python3 tests/vm/run-guests --build build --only 4n-slit --exec "sh $PWD/scripts/demo_loop.sh $PWD/build"
