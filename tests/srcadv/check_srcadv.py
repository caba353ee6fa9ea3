#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of `numakit advise --source` on sample programs with known answers.

  check_srcadv.py SAMPLE --numakit NUMAKIT --include DIR --lib LIBNUMAKIT --cc CC

For tests/srcadv/SAMPLE.c: runs `numakit advise --source SAMPLE.c --json` in a
copy of the file's folder, checks the facts and the advice per array against
EXPECT below, checks that the text output and `-o PATCH` give the same diff,
applies the diff with `patch -p1` (and checks it with `git apply --check`),
compiles the original and the patched program with -fopenmp (the patched one
against include/ and the built libnumakit), runs both and compares their
stdout (the same results).  Exit 0 pass, 1 fail, 77 skip (numakit built
without libclang, or no OpenMP compiler).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Per sample, per array: expected fields; "acc" lists (line, mode, index, schedule, sharing) that must be present.
EXPECT = {
    "stencil": {
        "grid": {"kind": "static", "bytes": 8 << 20, "action": "place", "policy": "block", "serial_writes": [22],
                 "acc": [(28, "R", "regular", "static", "shared"), (32, "W", "regular", "static", "shared")],
                 "call": 'nk_src_place(grid, sizeof(grid), "block", "grid");'},
        "next": {"kind": "main heap", "alloc": "malloc", "bytes": 8 << 20, "action": "place", "policy": "block",
                 "serial_writes": [23],
                 "acc": [(28, "W", "regular", "static", "shared"), (32, "R", "regular", "static", "shared")],
                 "call": 'nk_src_place(next, (N * sizeof *next), "block", "next");'},
    },
    "gather": {
        "idx": {"kind": "static", "action": "place", "policy": "cyclic", "serial_writes": [27],
                "acc": [(32, "R", "regular", "dynamic", "shared")], "reason": "schedule(dynamic, 64)"},
        "table": {"kind": "main heap", "alloc": "calloc", "bytes": 300000 * 8, "action": "place",
                  "policy": "cyclic", "serial_writes": [28], "acc": [(32, "R", "irregular", "dynamic", "shared")],
                  "reason": "irregular"},
        "out": {"kind": "main heap", "alloc": "posix_memalign", "action": "place", "policy": "cyclic",
                "serial_writes": [], "acc": [(32, "W", "regular", "dynamic", "shared")]},
    },
    "small": {
        "coef": {"kind": "global", "bytes": 64, "action": "leave", "reason": "small",
                 "acc": [(22, "R", "shared", "none", "shared")]},
        "data": {"kind": "global", "action": "place", "policy": "block", "serial_writes": [],
                 "acc": [(22, "W", "regular", "none", "shared")]},
    },
    "matrix": {
        "m": {"kind": "static", "bytes": 2 << 20, "action": "place", "policy": "block", "serial_writes": [],
              "acc": [(25, "W", "regular", "static", "shared"), (29, "R", "regular", "none", "shared")],
              "call": 'nk_src_place(m, sizeof(m), "block", "m");'},
        "t": {"kind": "static", "action": "place", "policy": "cyclic", "reason": "columns",
              "acc": [(29, "W", "columns", "none", "shared")]},
        "total": {"kind": "static", "action": "leave", "reason": "used by one thread",
                  "acc": [(31, "W", "shared", "", "shared")]},
    },
    "private": {
        "scratch": {"kind": "static", "action": "leave", "reason": "private",
                    "acc": [(20, "W", "shared", "static", "private"), (22, "R", "shared", "static", "private")]},
        "res": {"kind": "local static", "action": "place", "policy": "block",
                "acc": [(22, "W", "regular", "static", "shared")]},
    },
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, cwd=None, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    if check and p.returncode != 0:
        fail("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def check_json(sample, doc):
    if doc.get("format") != "numakit-source-advice" or doc.get("version") != 1:
        fail("format/version: %r %r" % (doc.get("format"), doc.get("version")))
    if doc.get("file") != sample + ".c" or doc.get("main") is not True:
        fail("file/main: %r %r" % (doc.get("file"), doc.get("main")))
    arrays = {a["name"]: a for a in doc["arrays"]}
    want = EXPECT[sample]
    if set(arrays) != set(want):
        fail("arrays found %s, expected %s" % (sorted(arrays), sorted(want)))
    for name, w in want.items():
        a = arrays[name]
        adv = a["advice"]
        for k in ("kind", "bytes", "alloc"):
            if k in w and a.get(k) != w[k]:
                fail("%s.%s = %r, expected %r" % (name, k, a.get(k), w[k]))
        if adv["action"] != w["action"]:
            fail("%s: action %s, expected %s (%s)" % (name, adv["action"], w["action"], adv["reason"]))
        if adv.get("policy") != w.get("policy"):
            fail("%s: policy %r, expected %r" % (name, adv.get("policy"), w.get("policy")))
        if "reason" in w and w["reason"] not in adv["reason"]:
            fail("%s: reason %r lacks %r" % (name, adv["reason"], w["reason"]))
        if "serial_writes" in w and a["serial_writes"] != w["serial_writes"]:
            fail("%s: serial writes %r, expected %r" % (name, a["serial_writes"], w["serial_writes"]))
        got = {(x["line"], x["mode"], x["index"], x["schedule"] or "", x["sharing"]) for x in a["accesses"]}
        for acc in w["acc"]:
            if acc not in got:
                fail("%s: access %r not among %r" % (name, acc, sorted(got)))
        if adv["action"] == "place" and adv["patched"] is not True:
            fail("%s: not patched: %r" % (name, adv.get("not_patched")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sample")
    ap.add_argument("--numakit", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cc", default="cc")
    o = ap.parse_args()
    src = os.path.join(HERE, o.sample + ".c")

    with tempfile.TemporaryDirectory(prefix="nk-srcadv-") as tmp:
        orig = os.path.join(tmp, "orig")
        os.mkdir(orig)
        shutil.copy(src, orig)
        name = o.sample + ".c"
        cmd = [o.numakit, "advise", "--source", name, "--min-size", "256K"]
        p = run(cmd + ["--json"], cwd=orig, check=False)
        if p.returncode == 2 and "without libclang" in p.stderr:
            print("SKIP: " + p.stderr.strip())
            sys.exit(77)
        if p.returncode != 0:
            fail("advise --json exited %d: %s" % (p.returncode, p.stderr))
        doc = json.loads(p.stdout)
        check_json(o.sample, doc)
        patch = doc["patch"]
        if not patch.startswith("--- a/%s\n+++ b/%s\n" % (name, name)):
            fail("the patch does not name a/%s and b/%s:\n%s" % (name, name, patch[:200]))
        # text output: the same diff after the table; -o: the same diff in the file
        text = run(cmd, cwd=orig).stdout
        if not text.endswith(patch) or "advice:" not in text:
            fail("the text output does not end with the JSON's patch")
        pfile = os.path.join(tmp, "fix.patch")
        run(cmd + ["-o", pfile], cwd=orig)
        with open(pfile) as f:
            if f.read() != patch:
                fail("-o wrote another patch than --json")

        # apply: patch -p1 and git apply agree
        fixed = os.path.join(tmp, "fixed")
        shutil.copytree(orig, fixed)
        run(["patch", "-p1", "--quiet", "-i", pfile], cwd=fixed)
        if shutil.which("git"):
            g = os.path.join(tmp, "git")
            shutil.copytree(orig, g)
            run(["git", "apply", "-p1", pfile], cwd=g)
            with open(os.path.join(g, name)) as a, open(os.path.join(fixed, name)) as b:
                if a.read() != b.read():
                    fail("git apply and patch -p1 give different files")
        with open(os.path.join(fixed, name)) as f:
            patched = f.read()
        for arr, w in EXPECT[o.sample].items():
            if "call" in w and w["call"] not in patched:
                fail("the patched file lacks %r" % w["call"])
        if "nk_src_setup();" not in patched or "#include <numakit.h>" not in patched:
            fail("the patched file lacks the setup or the include")

        # build and run both
        libdir = os.path.dirname(os.path.abspath(o.lib))
        a_out, b_out = os.path.join(tmp, "a.out"), os.path.join(tmp, "b.out")
        c = run([o.cc, "-std=c11", "-O1", "-fopenmp", "-o", a_out, os.path.join(orig, name)], check=False)
        if c.returncode:
            print("SKIP: %s -fopenmp cannot build the sample: %s" % (o.cc, c.stderr.strip()[:300]))
            sys.exit(77)
        run([o.cc, "-std=c11", "-O1", "-Wall", "-Werror", "-fopenmp", "-I", o.include, "-o", b_out,
             os.path.join(fixed, name), o.lib, "-Wl,-rpath," + libdir])
        env = dict(os.environ, OMP_NUM_THREADS="2")
        ra = run([a_out], env=env)
        rb = run([b_out], env=env)
        if ra.stdout != rb.stdout or not ra.stdout:
            fail("outputs differ:\noriginal: %r\npatched:  %r\npatched stderr: %s" % (ra.stdout, rb.stdout, rb.stderr))
        print("ok %s: %d arrays, output %s" % (o.sample, len(doc["arrays"]), ra.stdout.strip()))
        if rb.stderr:
            print("patched program's stderr (placement warnings): " + rb.stderr.strip())


if __name__ == "__main__":
    main()
