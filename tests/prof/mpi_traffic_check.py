#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""MPI traffic under `numakit profile` (the PMPI wrappers, preload/mpi/pmpi.c; docs/profile.md "Communication").

Usage: mpi_traffic_check.py --impl openmpi|mpich --nk NUMAKIT --prog MPI_TRAFFIC [--np N] [--workdir DIR]

Runs tests/prof/mpi_traffic.c as an N-rank job under the MPI's own launcher (mpirun, mpiexec.mpich) with
`numakit profile` as each rank, then checks the job report's rank x rank traffic against the matrix this
script computes from the program's list of calls (written apart from the wrappers): every pair, messages
and bytes, point-to-point and collectives.  Then once more with --no-mpi-traffic: nothing recorded.
Exit 77 (skip) when the launcher is not installed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

RING_N, RING_REPS = 1000, 5


def expected(n):
    """(from, to) -> [p2p_messages, p2p_bytes, coll_messages, coll_bytes], as mpi_traffic.c sends."""
    m = {}

    def add(a, b, coll, byts):
        e = m.setdefault((a, b), [0, 0, 0, 0])
        e[2 if coll else 0] += 1
        e[3 if coll else 1] += byts

    for r in range(n):
        right, left = (r + 1) % n, (r - 1) % n
        for _ in range(RING_REPS):
            add(r, right, False, RING_N * 8)           # 1. Sendrecv of doubles to the right
        add(r, left, False, 10 * 4)                     # 2. Isend of 10 ints to the left
        others = [i for i in range(n) if i != r]        # 3. MPI_PROC_NULL: nothing
        if r == 0:
            for i in others:
                add(r, i, True, 100 * 8)                # 4. Bcast from 0
        for i in others:
            add(r, i, True, 8 * 8)                      # 5. Allreduce
        if r != 1:
            add(r, 1, True, 3 * 4)                      # 6. Reduce to 1
        if r == n - 1:
            for i in others:
                add(r, i, True, (i + 1) * 4)            # 7. Scatterv from the last rank
        members = sorted((i for i in range(n) if i % 2 == r % 2), key=lambda i: n - i)
        for i in members:                               # 8. Alltoall on the sub-communicator
            if i != r:
                add(r, i, True, 4 * 4)
        if members[0] != r:
            add(r, members[0], False, 2 * 4)            # and 2 ints to its rank 0
    return m


def launch(impl, nk, prog, np, out, extra):
    if impl == "openmpi":
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
    else:
        env = dict(os.environ)
        cmd = ["mpiexec.mpich", "-np", str(np)]
    cmd += [nk, "profile", "-q", "--rate", "100", "-o", out] + extra + ["--", prog]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                       universal_newlines=True)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit("FAIL: %s exited %d" % (" ".join(cmd), p.returncode))


def report(nk, job):
    p = subprocess.run([nk, "report", "--json", job], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.exit("FAIL: numakit report %s exited %d: %s" % (job, p.returncode, p.stderr))
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True, choices=["openmpi", "mpich"])
    ap.add_argument("--nk", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--np", type=int, default=3)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    launcher = "mpirun" if a.impl == "openmpi" else "mpiexec.mpich"
    if not shutil.which(launcher):
        print("SKIP: %s not installed" % launcher)
        return 77
    work = a.workdir or tempfile.mkdtemp(prefix="nk-mpi-traffic.")
    fails = 0

    job = os.path.join(work, "job.nkp")
    shutil.rmtree(job, ignore_errors=True)
    launch(a.impl, a.nk, a.prog, a.np, job, [])
    r = report(a.nk, job)
    t = r.get("mpi_traffic") or {}
    want = expected(a.np)
    got = {(p["from"], p["to"]): [p["p2p_messages"], p["p2p_bytes"], p["collective_messages"],
                                  p["collective_bytes"]] for p in t.get("pairs", [])}
    if t.get("ranks_recorded") != a.np:
        print("FAIL: %s ranks recorded traffic, expected %d" % (t.get("ranks_recorded"), a.np))
        fails += 1
    for k in sorted(set(want) | set(got)):
        w, g = want.get(k, [0, 0, 0, 0]), got.get(k, [0, 0, 0, 0])
        tag = "ok" if w == g else "FAIL"
        fails += tag == "FAIL"
        print("%s: %d -> %d: p2p %d msgs %d B, collectives %d msgs %d B (expected %s)" % (tag, k[0], k[1], *g, w))
    if t.get("bytes") != sum(v[1] + v[3] for v in want.values()):
        print("FAIL: total bytes %s, expected %d" % (t.get("bytes"), sum(v[1] + v[3] for v in want.values())))
        fails += 1
    text = subprocess.run([a.nk, "report", job], stdout=subprocess.PIPE, universal_newlines=True).stdout
    if "== MPI traffic" not in text or "rank 0 <-> rank 1" not in text:
        print("FAIL: the text report has no traffic section or no rank 0 <-> rank 1 pair:\n" + text)
        fails += 1

    off = os.path.join(work, "off.nkp")
    shutil.rmtree(off, ignore_errors=True)
    launch(a.impl, a.nk, a.prog, a.np, off, ["--no-mpi-traffic"])
    t = report(a.nk, off).get("mpi_traffic") or {}
    if t.get("ranks_recorded") != 0 or t.get("pairs"):
        print("FAIL: --no-mpi-traffic: %s" % t)
        fails += 1
    else:
        print("ok: --no-mpi-traffic records nothing")
    if not a.workdir and not fails:
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED" if fails else "PASSED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
