#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Commands scale with the node count (issue 16 section 2), checked without trusting the host's speed.

  scaling_check.py NUMAKIT [REPORT_DATA]

With REPORT_DATA (the folder of the generated profiles), `numakit whatif` on advise.nkp is timed too.

Each command runs on a synthetic machine of 512 and of 2048 nodes; the verdict is the ratio of the two
CPU times, measured in this one run, so a slow or loaded host moves both alike.  Four times the nodes
is 16 times the work for an n x n matrix (the distance table itself), 64 times for an n^3 algorithm,
which is what `numakit topo` was (2048 nodes: over 30 s).  The bound, 32, sits between the two.  One
warm-up run, then the best of two each, so a run that lost the CPU to another test does not count.
"""
import os
import subprocess
import sys

SMALL, BIG, BOUND = 512, 2048, 32.0
FLOOR = 0.02  # s: below it a time is process start, not work

COMMANDS = [
    ["topo", "--synthetic", "nodes={n}"],
    ["topo", "--json", "--synthetic", "nodes={n}"],
    ["run", "--dry-run", "--synthetic", "nodes={n}", "--pin", "scatter", "--", "./app"],
]


def cpu_seconds(argv):
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"FAIL: {' '.join(argv)}: exit status {os.waitstatus_to_exitcode(status)}: {err.strip()}")
    return usage.ru_utime + usage.ru_stime


def best(numakit, args, n, runs=2):
    argv = [numakit] + [a.format(n=n) for a in args]
    return min(cpu_seconds(argv) for _ in range(runs))


def main():
    numakit = sys.argv[1]
    commands = list(COMMANDS)
    if len(sys.argv) > 2:
        profile = os.path.join(sys.argv[2], "advise.nkp")
        commands.append(["whatif", profile, "--policy", "table=cyclic_neighbors", "--synthetic", "nodes={n}"])
    cpu_seconds([numakit] + [a.format(n=SMALL) for a in COMMANDS[0]])  # warm-up: page cache, lazy binding
    failed = 0
    for args in commands:
        small, big = best(numakit, args, SMALL), best(numakit, args, BIG)
        ratio = big / max(small, FLOOR)
        verdict = "ok" if ratio < BOUND else "FAIL"
        failed += verdict != "ok"
        print(f"{verdict}: numakit {' '.join(args)}: {SMALL} nodes {small:.3f} s, {BIG} nodes {big:.3f} s, "
              f"ratio {ratio:.1f} (bound {BOUND:.0f})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
