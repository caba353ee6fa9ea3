#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Golden test runner for the numakit command (ctest label "cli").

Runs one numakit invocation and checks it:
  --check golden  stdout, stderr and exit status equal expected/NAME.txt
  --check json    exit status as given and stdout parses as JSON (outputs that vary: the live machine)
  --check run     exit status only
  --check roundtrip  ARGS --save FILE, then `topo --machine FILE` must print the same machine
                  (JSON and text) apart from where it came from
  --check devfull  stdout is /dev/full: the command must notice the write error (exit status as given)

The exit status given with --exit is checked in every mode, blessing included, so that a
golden file can never bless a wrong status.  Set NK_BLESS=1 to rewrite the expected file
instead of comparing (then review `git diff tests/cli/expected`).

--env NAME=VALUE sets a variable for the command (and shows it in the golden's first line);
--env NAME= (empty value) removes it.  Variables of MPI launchers (OMPI_*, PMI_*, PMIX_*,
MPI_LOCAL*, SLURM_*) are removed from every command's environment first, so that a test
run inside a job (srun ctest) sees the same environment as one run from a shell.

The argument @EMPTY@ stands for an empty argument, which CMake cannot pass.
Paths given with --subst NAME=PATH replace @NAME@ in the arguments, and PATH is replaced
by @NAME@ in the output, so expected files do not depend on where the tree is built.
"""
import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile


LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MPI_LOCAL", "SLURM_")
ENV = {}


def command_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    for k, v in ENV.items():
        if v == "":
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(cmd, cwd, stdout=subprocess.PIPE):
    p = subprocess.run(cmd, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, timeout=60, env=command_env())
    out = p.stdout.decode("utf-8", "replace") if p.stdout is not None else ""
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


def unsubst(text, substs):
    # Longest paths first, so that a path containing another is replaced whole.
    for name, path in sorted(substs.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(path, "@%s@" % name)
    return text


def render(args, rc, out, err):
    env = "".join("%s=%s " % (k, _quote(v)) for k, v in ENV.items())
    return "$ %snumakit %s\nexit %d\n--- stdout\n%s--- stderr\n%s" % (
        env, " ".join(_quote(a) for a in args), rc, out, err)


def _quote(a):
    if a and all(c.isalnum() or c in "-_./@=,:" for c in a):
        return a
    return "'" + a.replace("'", "'\\''") + "'"


def drop_source(js):
    d = json.loads(js)
    d.pop("source", None)
    return d


def text_without_source(text):
    # The header's source line and the title of the allowed section name the source.
    return [l for l in text.splitlines() if not l.startswith("source:") and not l.startswith("Allowed")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--numakit", required=True)
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--expected", required=True, help="folder of expected files")
    ap.add_argument("--name", required=True)
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--check", default="golden", choices=["golden", "json", "run", "roundtrip", "devfull"])
    ap.add_argument("--subst", action="append", default=[])
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the command")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    o = ap.parse_args()
    args = o.args[1:] if o.args[:1] == ["--"] else o.args
    for e in o.env:
        k, _, v = e.partition("=")
        ENV[k] = v

    substs = {}
    with tempfile.TemporaryDirectory(prefix="nkcli.") as tmp:
        substs["TMP"] = tmp
        for s in o.subst:
            k, _, v = s.partition("=")
            substs[k] = os.path.realpath(v)
        args = [unsubst_arg(a, substs) for a in args]
        return check(o, args, substs, tmp)


def unsubst_arg(a, substs):
    if a == "@EMPTY@":  # CMake cannot pass an empty argument
        return ""
    for k, v in substs.items():
        a = a.replace("@%s@" % k, v)
    return a


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    return 1


def check(o, args, substs, tmp):
    cmd = [o.numakit] + args
    if o.check == "devfull":
        with open("/dev/full", "wb") as full:
            rc, _, err = run(cmd, o.cwd, stdout=full)
        if rc != o.exit:
            return fail("exit %d, expected %d; stderr:\n%s" % (rc, o.exit, err))
        return 0

    rc, out, err = run(cmd, o.cwd)
    if rc != o.exit:
        return fail("%s: exit %d, expected %d\n--- stdout\n%s--- stderr\n%s" % (" ".join(cmd), rc, o.exit, out, err))

    if o.check == "run":
        return 0
    if o.check == "json":
        try:
            json.loads(out)
        except ValueError as e:
            return fail("stdout is not JSON: %s\n%s" % (e, out[:2000]))
        return 0
    if o.check == "roundtrip":
        return roundtrip(o, args, tmp)

    got = unsubst(render(args, rc, out, err), substs)
    path = os.path.join(o.expected, o.name + ".txt")
    if os.environ.get("NK_BLESS") == "1":
        with open(path, "w", encoding="utf-8") as f:
            f.write(got)
        print("blessed %s" % path)
        return 0
    try:
        with open(path, encoding="utf-8") as f:
            want = f.read()
    except FileNotFoundError:
        return fail("%s missing: run with NK_BLESS=1 and review it (see tests/cli/README.md)\n%s" % (path, got))
    if got != want:
        diff = difflib.unified_diff(want.splitlines(True), got.splitlines(True), path, "actual output")
        return fail("output differs from %s (NK_BLESS=1 to accept, after review):\n%s" % (path, "".join(diff)))
    return 0


def roundtrip(o, args, tmp):
    saved = os.path.join(tmp, "machine.json")
    rc, out, err = run([o.numakit] + args + ["--save", saved], o.cwd)
    if rc != 0 or out:
        return fail("--save: exit %d, stdout %r, stderr %r" % (rc, out, err))
    results = []
    for a in (args, ["topo", "--machine", saved]):
        rj, js, ej = run([o.numakit] + a + ["--json"], o.cwd)
        rt, txt, et = run([o.numakit] + a, o.cwd)
        if rj or rt:
            return fail("%s: exit %d/%d: %s%s" % (" ".join(a), rj, rt, ej, et))
        results.append((drop_source(js), text_without_source(txt)))
    if results[0][0] != results[1][0]:
        a = json.dumps(results[0][0], indent=1, sort_keys=True).splitlines(True)
        b = json.dumps(results[1][0], indent=1, sort_keys=True).splitlines(True)
        return fail("machine file round trip changed the JSON:\n" + "".join(difflib.unified_diff(a, b)))
    if results[0][1] != results[1][1]:
        return fail("machine file round trip changed the text:\n" +
                    "\n".join(difflib.unified_diff(results[0][1], results[1][1], lineterm="")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
