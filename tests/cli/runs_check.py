#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Combined runs (issue 13), checked on numbers rather than golden text.

  runs_check.py pooled NUMAKIT DIR   hotspot.nkp + hotspot-run2.nkp (another pid, other thread ids,
                                     every address moved): one variable per key, samples pooled (the
                                     sum of both runs), accesses the mean per run, threads matched
  runs_check.py profile NUMAKIT TMP  `numakit profile --runs 2` of /bin/true and of a failing program:
                                     one file that report reads as 2 runs; exit status of the runs
"""
import json
import os
import shutil
import subprocess
import sys


def report(numakit, cwd, *paths):
    out = subprocess.run([numakit, "report", "--json", *paths], cwd=cwd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def pooled(numakit, d):
    one = report(numakit, d, "hotspot.nkp")
    two = report(numakit, d, "hotspot-run2.nkp")
    both = report(numakit, d, "hotspot.nkp", "hotspot-run2.nkp")
    assert "runs" not in one, "a one-run report has no runs member"
    assert both["runs"] == 2 and len(both["run_list"]) == 2, both.get("runs")
    assert [r["wall_ns"] for r in both["run_list"]] == [2500000000, 3500000000]
    assert both["wall_ns"] == 3000000000, both["wall_ns"]
    assert both["samples"] == one["samples"] + two["samples"]
    assert both["processes"] == 1 and len(both["threads"]) == len(one["threads"]), "threads matched by index"
    by_key = lambda r: {v["key"]: v for v in r["variables"]}
    k1, k2, kb = by_key(one), by_key(two), by_key(both)
    shared = [k for k in k1 if k in k2]
    assert any(k.startswith("name:") for k in shared), shared
    for k in shared:  # the same variable at other addresses: one variable of both runs
        v1, v2, vb = k1[k], k2[k], kb[k]
        assert vb["samples"] == v1["samples"] + v2["samples"], (k, vb["samples"])
        assert abs(vb["accesses"] - (v1["accesses"] + v2["accesses"]) / 2) <= 1, (k, vb["accesses"])
        assert vb["remote_fraction"] == v1["remote_fraction"], k
        assert vb["diagnosis"] == v1["diagnosis"], k
    # process-local keys (no symbols: heap:pidN:siteM) do not match across runs
    assert all(k in k1 or k in k2 for k in kb)
    r = subprocess.run([numakit, "report", "hotspot.nkp", "other-program.nkp"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 2 and "only runs of one program combine" in r.stderr, r.stderr


def profile(numakit, tmp):
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    out = os.path.join(tmp, "t.nkp")
    r = subprocess.run([numakit, "profile", "--runs", "2", "-o", out, "--", "true"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "run 1 of 2" in r.stderr and "run 2 of 2" in r.stderr, r.stderr
    assert sorted(os.listdir(tmp)) == ["t.nkp"], os.listdir(tmp)
    with open(out, "rb") as f:
        head = f.read(16)
    assert head[:8] == b"NKPROF\r\n" and int.from_bytes(head[8:12], "little") == 2, head
    rep = report(numakit, tmp, out)
    assert rep["runs"] == 2 and all(x["command"] == "true" for x in rep["run_list"]), rep.get("run_list")
    r = subprocess.run([numakit, "profile", "--runs", "2", "-q", "-o", out, "--", "sh", "-c", "exit 3"],
                       capture_output=True, text=True)
    assert r.returncode == 3 and r.stderr == "", (r.returncode, r.stderr)
    r = subprocess.run([numakit, "profile", "--runs", "1", "-q", "-o", out, "--", "true"], capture_output=True)
    with open(out, "rb") as f:
        assert int.from_bytes(f.read(12)[8:12], "little") == 1, "one run stays version 1"
    r = subprocess.run([numakit, "profile", "--runs", "0", "--", "true"], capture_output=True, text=True)
    assert r.returncode == 2 and "--runs" in r.stderr, r.stderr


if __name__ == "__main__":
    mode, numakit, d = sys.argv[1:4]
    {"pooled": pooled, "profile": profile}[mode](numakit, d)
    print("ok")
