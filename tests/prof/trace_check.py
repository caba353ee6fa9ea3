#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run tests/prof/trace_prog.c (built with `numakit cc`) under the trace sampler and check its part file.

Usage: trace_check.py PROG RUNTIME_SO MODE
  MODE exact   NK_PROF_RATE=1: every tracked access is one sample, exactly as the program made them
  MODE rate7   NK_PROF_RATE=7: about one in 7, weight 7
  MODE roi     NK_PROF_ROI=1 and no nk_profile_start(): no sample at all
  MODE off     NK_PROF_SAMPLER=none: the callbacks stay inactive, no sample
  MODE fork    as exact in the parent; the forked child's part has its NA/2 loads of A, its own counters

The accesses the program makes are known by construction (see trace_prog.c); which of them are in
tracked memory is decided from the part's own ALLOC/FREE records: byte by byte when the runtime has
nkp_tracked_span, else whole pages only (nkp_tracked_contains).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import partdump  # noqa: E402

NA, NB = 1000, 3000
READ, WRITE = 1, 2
SF_FIRST_TOUCH = 1
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def has_symbol(so, name):
    try:
        out = subprocess.run(["nm", so], capture_output=True, text=True, check=False).stdout
    except OSError:
        return False
    return any(line.split()[-1] == name and line.split()[-2] in ("T", "t") for line in out.splitlines() if line.split())


def run(prog, env_extra, args=()):
    with tempfile.TemporaryDirectory(prefix="nk-trace-") as d:
        env = dict(os.environ, NK_PROF_DIR=d, NK_PROF_SAMPLER="trace", NK_PROF_SEED="12345")
        env.update(env_extra)
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([prog, *args], env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            sys.exit("FAIL: the program exited with %d" % p.returncode)
        out = {}
        for line in p.stdout.splitlines():
            k, *v = line.split()
            out[k] = [int(x) for x in v]
        parts = {int(f.split(".")[0]): partdump.parse(os.path.join(d, f)) for f in os.listdir(d)
                 if f.endswith(".part")}
        if len(parts) != (2 if "fork" in args else 1):
            sys.exit("FAIL: expected %d part file(s), found %s" % (2 if "fork" in args else 1, list(parts)))
        return out, parts


def check_child(out, parts, parent_end):
    pid = out["child"][0]
    check(pid in parts, "the child's part is there")
    recs = parts.get(pid, [])
    samples = [s for n, v in recs if n == "SAMPLES" for s in v]
    end = [v for n, v in recs if n == "END"]
    a0, a_bytes = out["A"]
    in_a = [s for s in samples if a0 <= s[1] < a0 + a_bytes]
    check(len(in_a) == NA // 2 and all(s[10] == READ and s[3] == pid for s in in_a),
          "child: %d loads of A by the child (%d samples there)" % (NA // 2, len(in_a)))
    check(len(samples) == len(in_a), "child: no other sample (%d)" % (len(samples) - len(in_a)))
    tr = end[0].get("trace") if end else None
    check(tr is not None, "child: END has the trace counters")
    if tr and parent_end and "trace" in parent_end:
        check(NA // 2 <= tr["loads"] < parent_end["trace"]["loads"],
              "child: its own load count (%d), not the parent's (%d)" % (tr["loads"], parent_end["trace"]["loads"]))
        check([t["tid"] for t in tr["threads"]] == [pid], "child: one thread, itself: %s" % tr["threads"])


def main():
    prog, so, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    env = {"exact": {"NK_PROF_RATE": "1"}, "rate7": {"NK_PROF_RATE": "7"},
           "roi": {"NK_PROF_ROI": "1"}, "off": {"NK_PROF_SAMPLER": "none"}, "fork": {"NK_PROF_RATE": "1"}}[mode]
    out, parts = run(prog, env, ("fork",) if mode == "fork" else ())
    parent = [p for p, r in parts.items() if p != out.get("child", [0])[0]]
    recs = parts[parent[0]]
    samples, allocs, maps, end = [], [], None, None
    for name, v in recs:
        if name == "SAMPLES":
            samples += v
        elif name == "ALLOC":
            allocs.append(v)
        elif name == "MAPS":
            maps = v["text"]
        elif name == "END":
            end = v
    check(end is not None and end.get("complete"), "the part has a complete END")
    if mode in ("roi", "off"):
        check(not samples, "%s: no samples (found %d)" % (mode, len(samples)))
        return finish()

    byte_exact = has_symbol(so, "nkp_tracked_span")
    print("tracked check:", "byte-exact (nkp_tracked_span)" if byte_exact else
          "whole pages only (runtime has no nkp_tracked_span)")
    page = 4096
    a0, a_bytes = out["A"]
    b0, b_bytes = out["B"]
    ranges = [(al["addr"], al["addr"] + al["size"]) for al in allocs]

    def tracked(addr):
        for lo, hi in ranges:
            if byte_exact and lo <= addr < hi:
                return True
            pg = addr - addr % page
            if not byte_exact and lo <= pg and pg + page <= hi:
                return True
        return False

    # What the program does (trace_prog.c): A[i] stored then loaded by main, B[k*6000 + j] by thread k.
    exp_a = sum(1 for i in range(NA) if tracked(a0 + 4 * i))
    seg = [[b0 + 8 * (k * (NB // 2) * 4 + j) for j in range(NB // 2)] for k in range(2)]
    exp_b = [sum(1 for e in s if tracked(e)) for s in seg]
    print("expected: A %d loads + %d stores, B %s stores" % (exp_a, exp_a, exp_b))
    check(exp_a == NA or not byte_exact, "A is tracked whole (%d of %d)" % (exp_a, NA))
    check(min(exp_b) > 0, "some of B is tracked")

    main_tid = recs[[n for n, _ in recs].index("PROCESS")][1]["pid"]
    exe = [ln for ln in maps.splitlines() if ln.split()[-1:] == [os.path.realpath(prog)] and "x" in ln.split()[1]]
    text = [tuple(int(x, 16) for x in ln.split()[0].split("-")) for ln in exe]
    check(text, "the program's text mapping is in MAPS")

    cnt = {}
    ft_b_pages, b_pages = set(), set()
    bad = 0
    for s in samples:
        t, addr, ip, tid, w, lat, cpu, cn, pn, ph, acc, src, smp, fl = s
        if a0 <= addr < a0 + a_bytes:
            key = ("A", acc, "main" if tid == main_tid else "other")
        elif b0 <= addr < b0 + b_bytes:
            k = (addr - b0) // 8 // ((NB // 2) * 4)
            key = ("B%d" % k, acc, tid)
            b_pages.add(addr // page)
            if fl & SF_FIRST_TOUCH:
                ft_b_pages.add(addr // page)
        else:
            key = ("elsewhere", acc, tid)
        cnt[key] = cnt.get(key, 0) + 1
        want_w = 7 if mode == "rate7" else 1
        ok = (w == want_w and smp == 3 and any(lo <= ip < hi for lo, hi in text) and cpu >= 0 and cn >= 0
              and pn >= 0 and lat == 0)
        if not ok:
            bad += 1
            if bad <= 5:
                print("bad sample", s)
    check(bad == 0, "%d samples with a wrong weight, sampler, ip, cpu or node" % bad)
    print("samples:", sorted(cnt.items(), key=str))
    check(not any(k[0] == "elsewhere" for k in cnt), "no sample outside A and B")
    check(not any(k[0] == "A" and k[2] != "main" for k in cnt), "A is accessed by the main thread only")
    b_tids = {}
    for k, n in cnt.items():
        if k[0].startswith("B"):
            check(k[1] == WRITE, "B is only written (%s)" % (k,))
            check(k[2] != main_tid, "B is written by the threads, not main")
            b_tids.setdefault(k[0], set()).add(k[2])
    check(all(len(v) == 1 for v in b_tids.values()) and len({min(v) for v in b_tids.values()}) == len(b_tids),
          "each B segment written by its own thread: %s" % b_tids)
    got_a_r = cnt.get(("A", READ, "main"), 0)
    got_a_w = cnt.get(("A", WRITE, "main"), 0)
    got_b = [sum(n for k, n in cnt.items() if k[0] == "B%d" % i) for i in range(2)]
    if mode in ("exact", "fork"):
        check(got_a_r == exp_a, "A loads: %d samples, %d accesses" % (got_a_r, exp_a))
        check(got_a_w == exp_a, "A stores: %d samples, %d accesses" % (got_a_w, exp_a))
        check(got_b == exp_b, "B stores per thread: %s samples, %s accesses" % (got_b, exp_b))
        # malloc wrote its header just below B: that page was placed before the threads' stores
        fresh = b_pages - {(b0 - 16) // page}
        check(ft_b_pages == fresh, "one first touch flagged on every fresh page of B (%d of %d pages)" %
              (len(ft_b_pages), len(fresh)))
        check(len(ft_b_pages) == sum(1 for s in samples if s[13] & SF_FIRST_TOUCH and b0 <= s[1] < b0 + b_bytes),
              "one first-touch sample per page of B")
    else:
        exp, got = 2 * exp_a + sum(exp_b), got_a_r + got_a_w + sum(got_b)
        check(abs(got * 7 - exp) <= 0.2 * exp, "rate 7: %d samples x 7 for %d accesses (within 20%%)" % (got, exp))
        for name, g, e in (("A loads", got_a_r, exp_a), ("A stores", got_a_w, exp_a),
                           ("B0", got_b[0], exp_b[0]), ("B1", got_b[1], exp_b[1])):
            check(abs(g * 7 - e) <= 0.35 * e + 14, "rate 7: %s %d samples x 7 for %d accesses" % (name, g, e))
    tr = end.get("trace") if end else None
    if tr is None:
        print("note: END has no \"trace\" member (runtime.c does not call nkp_trace_end_json yet)")
    else:
        print("END trace:", {k: v for k, v in tr.items() if k != "threads"})
        check(tr["rate"] == (7 if mode == "rate7" else 1), "END trace rate")
        check(tr["loads"] >= NA and tr["stores"] >= NA + NB, "END counts every load and store")
        check(tr["recorded"] >= len(samples), "END recorded >= samples")
        tids = {t["tid"] for t in tr["threads"]}
        check(main_tid in tids and len(tids) >= 3, "END lists the main thread and both workers")
    if mode == "fork":
        check_child(out, parts, end)
    return finish()


def finish():
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
