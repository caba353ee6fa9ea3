#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""First touches made inside a library name the program's own line (issue 16), end to end.

caller_prog first-touches arrays with memset and memcpy (inside libc, from the main thread and from a second
thread) and by its own loop after calloc.  Scenarios:
  part    the runtime alone (LD_PRELOAD): CALLERS entries belong to first-touch samples made outside the
          executable, each return address follows a call, and one of them is the memset's own call site;
  report  `numakit profile` + `numakit report --json` and `--html`: each array's first touch is at the
          program's line that made it, "inside" names the libc function where it was one;
  fortran the same for caller_f.f90 (random_number in libgfortran, an array copy in libc), JSON only.
Usage: caller_check.py SCENARIO --nk NUMAKIT --lib SO --prog PROG --src caller_prog.c
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import partdump  # noqa: E402

SF_FIRST_TOUCH = 1
T, ADDR, IP, TID, FLAGS = 0, 1, 2, 3, 13
CASES = {  # name: (function of the allocation and the touch, what the touch is inside: None = the program)
    "memset": ("main", ["memset (libc)"]),
    "calloc": ("main", None),
    "memcpy": ("main", ["memcpy (libc)", "memmove (libc)"]),
    "thread_memset": ("thread_main", ["memset (libc)"]),
}
FORTRAN_CASES = {  # caller_f.f90: libgfortran's random_number, and an array copy gfortran makes a memcpy
    "random_number": ("MAIN__", ["_gfortran_arandom_r8 (libgfortran)"]),
    "copy": ("MAIN__", ["memcpy (libc)", "memmove (libc)"]),
}


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def lines_of(src, cases):
    """{"alloc:memset": line, "touch:memset": line, ...} from the markers in the source (C or Fortran comments)."""
    out = {}
    with open(src) as f:
        for no, text in enumerate(f, 1):
            for m in re.finditer(r"(?:/\*|!) (alloc|touch):(\w+)", text):
                out["%s:%s" % (m.group(1), m.group(2))] = no
    for c in cases:
        check("alloc:" + c in out and "touch:" + c in out, "markers of %s missing in %s" % (c, args.src))
    return out


def scenario_part(args, d):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NK_PROF_")}
    env.update(LD_PRELOAD=args.lib, NK_PROF_DIR=d, NK_PROF_SAMPLER="pagefault", NK_PROF_RATE="20000",
               NK_PROF_SEED="12345", NK_PROF_MAX_OVERHEAD="100")
    p = subprocess.run([args.prog], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                       universal_newlines=True)
    check(p.returncode == 0, "caller_prog exited %d: %s" % (p.returncode, p.stderr.strip()))
    parts = [f for f in os.listdir(d) if f.endswith(".part")]
    check(len(parts) == 1, "parts: %s" % parts)
    recs = partdump.parse(os.path.join(d, parts[0]))
    samples = {(s[TID], s[T], s[ADDR]): s for n, v in recs if n == "SAMPLES" for s in v}
    callers = [e for n, v in recs if n == "CALLERS" for e in v]
    end = [v for n, v in recs if n == "END"][0]
    check(callers, "no CALLERS entry (END: %s)" % end.get("pagefault"))
    check(end["pagefault"]["callers"] >= len(callers), "END callers %d < %d entries" %
          (end["pagefault"]["callers"], len(callers)))
    # the executable's text, from the part's MAPS: first touches there need no callers
    maps = [v["text"] for n, v in recs if n == "MAPS"][-1]
    exe = os.path.realpath(args.prog)
    text = [tuple(int(x, 16) for x in l.split()[0].split("-")) for l in maps.splitlines()
            if l.split()[-1] == exe and "x" in l.split()[1]]
    check(text, "no executable mapping of %s in MAPS" % exe)
    in_exe = lambda a: any(lo <= a < hi for lo, hi in text)  # noqa: E731
    found_memset_site = 0
    for e in callers:
        check(1 <= e["depth"] <= 6 and e["reserved"] == 0 and all(e["ret"]) and not any(e["rest"]),
              "malformed entry %s" % e)
        s = samples.get((e["tid"], e["time_ns"], e["addr"]))
        if s is None:
            continue  # its sample dropped (budget, ring): allowed
        check(s[FLAGS] & SF_FIRST_TOUCH, "CALLERS entry of a sample that is no first touch: %s" % (s,))
        check(not in_exe(s[IP]), "CALLERS entry of a first touch made in the executable (ip 0x%x)" % s[IP])
        found_memset_site += any(in_exe(r) for r in e["ret"])
    check(found_memset_site, "no CALLERS entry returns into the executable: %s" % callers[:3])
    print("part: %d CALLERS entries, %d of them return into the executable" % (len(callers), found_memset_site))


def scenario_report(args, d, cases=CASES, html_check=True):
    lines = lines_of(args.src, cases)
    nkp = os.path.join(d, "run.nkp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NK_PROF_")}
    env["NK_PROF_MAX_OVERHEAD"] = "100"
    p = subprocess.run([args.nk, "profile", "--sampler", "pagefault", "--rate", "20000", "--max-overhead", "100", "--quiet", "-o", nkp, "--", args.prog], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    check(p.returncode == 0, "numakit profile exited %d: %s" % (p.returncode, p.stderr.strip()))
    p = subprocess.run([args.nk, "report", "--json", nkp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, universal_newlines=True)
    check(p.returncode == 0, "numakit report --json exited %d: %s" % (p.returncode, p.stderr.strip()))
    rep = json.loads(p.stdout)
    byname = {v["name"]: v for v in rep["variables"]}
    base = os.path.basename(args.src)
    for c, (fn, inside) in cases.items():
        name = "%s:%d (%s)" % (base, lines["alloc:" + c], fn)
        check(name in byname, "%s: no variable %s in %s" % (c, name, sorted(byname)))
        ft = byname[name]["first_touch"]
        check(ft, "%s: no first touch sampled" % c)
        want = "%s:%d (%s)" % (base, lines["touch:" + c], fn)
        check(ft["where"] == want, "%s: first touch at %s, expected %s (%s)" % (c, ft["where"], want, ft))
        if inside is None:
            check(ft["inside"] is None and ft["inside_where"] is None, "%s: inside %s" % (c, ft))
        else:
            check(ft["inside"] in inside, "%s: inside %s, expected %s" % (c, ft["inside"], inside[0]))
            check(ft["inside_where"], "%s: no inside_where" % c)
        print("%s: first touch at %s%s" % (c, ft["where"], ", inside " + ft["inside"] if ft["inside"] else ""))
    if not html_check:
        return
    html = os.path.join(d, "run.html")
    p = subprocess.run([args.nk, "report", "--html", html, nkp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, universal_newlines=True)
    check(p.returncode == 0, "numakit report --html exited %d: %s" % (p.returncode, p.stderr.strip()))
    want = "%s:%d (main)</code>, inside <code>memset (libc)</code>" % (base, lines["touch:memset"])
    with open(html) as f:
        check(want in f.read(), "the HTML report lacks %r" % want)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["part", "report", "fortran"])
    ap.add_argument("--nk", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--src", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nk-caller-") as d:
        try:
            if args.scenario == "part":
                scenario_part(args, d)
            elif args.scenario == "report":
                scenario_report(args, d)
            else:
                scenario_report(args, d, FORTRAN_CASES, html_check=False)
        except Fail as e:
            print("FAIL: %s" % e)
            sys.exit(1)
