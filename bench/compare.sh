#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Accuracy check of `numakit bench` against independent references measured side by side:
# a STREAM-style triad (ref_triad.c) and a random pointer chase (ref_chase.c), compiled with the
# flags the library's kernels were compiled with (read from BUILD/compile_commands.json).
# Usage: bench/compare.sh [BUILD_DIR] [SIZE_BYTES] [ROUNDS]
# Runs ROUNDS rounds of (reference, numakit) on node 0 / cpu 0.. and prints each figure, the
# median over rounds and the ratio numakit / reference (1.00 = same).  Aim: within +-10%.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build}
SIZE=${2:-$((256 << 20))}
ROUNDS=${3:-3}
REPS=5
STEPS=$((1 << 21))   # numakit's chase steps per repetition (CHASE_STEPS_FULL)
NK=$BUILD/cli/numakit
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# The flags the library's kernels.c was compiled with, minus includes, defines and outputs.
FLAGS=$(python3 - "$BUILD/compile_commands.json" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("src/bench/kernels.c"):
        args = shlex.split(e["command"])[1:]
        keep, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
                skip = True
                continue
            if a.startswith(("-I", "-D", "-M")) or a.endswith(".c") or a == "-fvisibility=hidden":
                continue
            keep.append(a)
        print(" ".join(keep))
        break
PY
)
echo "reference flags: $FLAGS"
cc $FLAGS -pthread -o "$OUT/ref_triad" "$HERE/ref_triad.c"
cc $FLAGS -o "$OUT/ref_chase" "$HERE/ref_chase.c"

NCPU=$("$NK" bench --nodes 0 --size 4096 --repetitions 1 --json --quiet | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["pairs"][0]["threads"])')
BIND=()
if command -v numactl >/dev/null && [ -d /sys/devices/system/node/node1 ]; then
	BIND=(numactl --membind=0 --cpunodebind=0)
fi

for r in $(seq "$ROUNDS"); do
	"${BIND[@]}" "$OUT/ref_triad" "$SIZE" "$REPS" 1 >>"$OUT/t1"
	"${BIND[@]}" "$OUT/ref_triad" "$SIZE" "$REPS" "$NCPU" >>"$OUT/tn"
	"${BIND[@]}" "$OUT/ref_chase" "$SIZE" "$REPS" "$STEPS" | cut -d' ' -f1 >>"$OUT/lat"
	"$NK" bench --nodes 0 --size "$SIZE" --repetitions "$REPS" --json --quiet >"$OUT/nk$r.json"
done

python3 - "$OUT" "$ROUNDS" "$NCPU" "$SIZE" <<'PY'
import json, statistics, sys
out, rounds, ncpu, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ref = {k: [float(x) for x in open("%s/%s" % (out, k)).read().split()] for k in ("t1", "tn", "lat")}
nk = {"t1": [], "tn": [], "lat": []}
for r in range(1, rounds + 1):
    p = json.load(open("%s/nk%d.json" % (out, r)))["pairs"][0]
    nk["t1"].append(p["bandwidth_mbs"]["one"]["triad"]["median"])
    nk["tn"].append(p["bandwidth_mbs"]["all"]["triad"]["median"])
    nk["lat"].append(p["latency_ns"]["median"])
print("buffer %d MiB, %d rounds, %d cpus on node 0" % (size >> 20, rounds, ncpu))
print("%-22s %-28s %-28s %s" % ("figure", "numakit (per round)", "reference (per round)", "ratio of medians"))
for k, name in (("t1", "triad 1 thread MB/s"), ("tn", "triad %d threads MB/s" % ncpu), ("lat", "latency ns")):
    a, b = statistics.median(nk[k]), statistics.median(ref[k])
    print("%-22s %-28s %-28s %.3f" % (name, " ".join("%.0f" % x if k != "lat" else "%.1f" % x for x in nk[k]),
                                       " ".join("%.0f" % x if k != "lat" else "%.1f" % x for x in ref[k]), a / b))
PY
