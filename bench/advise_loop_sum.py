#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/advise_loop.sh's summary: per placed variable of each program, the remote fraction as profiled [95 %],
the policy advise chose and whether it is the lowest predicted stall among its candidates (else a near-tie,
which goes to the rules and then the simplest policy), whatif's prediction and the planned run's measurement.
Usage: advise_loop_sum.py DIR PROGRAM...  (DIR holds PROGRAM.{1,2}.json, .plan.json, .whatif.json)"""
import json
import os
import sys

d = sys.argv[1]
for p in sys.argv[2:]:
    f = os.path.join(d, p)
    try:
        r1, r2 = json.load(open(f + ".1.json")), json.load(open(f + ".2.json"))
        plan, w = json.load(open(f + ".plan.json")), json.load(open(f + ".whatif.json"))
    except (OSError, ValueError) as e:
        print(p, "missing", e); continue
    v1 = {v["key"]: v for v in r1["variables"]}
    v2 = {v["key"]: v for v in r2["variables"]}
    wv = {v["key"]: v for v in w["variables"]}
    def pct(v):
        lo, hi = v.get("remote_ci") or [float("nan")] * 2
        return "%5.1f%% [%4.1f,%4.1f]" % (100 * v["remote_fraction"], 100 * lo, 100 * hi)
    for e in plan["entries"]:
        k = e["key"]
        c = e.get("evidence", {}).get("candidates", [])
        best = min(c, key=lambda x: x["stall_ms"]) if c else None
        mine = next((x for x in c if x["policy"] == e["policy"]), None)
        lowest = "lowest" if best and mine and mine["stall_ms"] <= best["stall_ms"] + 1e-9 else \
                 ("near-tie (%s %.3g vs %.3g)" % (best["policy"], best["stall_ms"], mine["stall_ms"]) if best and mine else "?")
        pv = wv.get(k)
        pred = 100 * pv["planned"]["remote_fraction"] if pv else float("nan")
        a, b = v1.get(k), v2.get(k)
        print("%-8s %-22s %-22s %-8s %s -> pred %5.1f%%, measured %s" % (p, e.get("variable", k)[:22], e["policy"][:22],
              lowest[:8], pct(a) if a else "?", pred, pct(b) if b else "?"))
    t = w["total"]
    print("%-8s %-22s %-22s %-8s %5.1f%% -> pred %5.1f%%, measured %5.1f%%" % (p, "total (whatif/report)", "", "",
          100 * t["profiled"]["remote_fraction"], 100 * t["planned"]["remote_fraction"], 100 * r2["remote"] / max(1, r2["remote"] + r2["local"])))
