#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The user's files (issue 16 section 3), checked where golden text cannot: in a scratch folder.

  files_check.py NUMAKIT REPORT_DATA CLI_DATA

- an output that is an input by another name (a symlink to it, a symlink to its folder, "./x",
  "dir/../x") is refused with exit status 2, the message naming both, and the input is unchanged;
- an output that is a folder, or in a missing folder, is refused before any work: `numakit profile`
  does not run the program and leaves no OUTPUT.parts folder;
- a fifo given as a profile, plan or machine file is refused at once (stat, not read: no hang);
- what is still allowed: a new output beside the input, the same output named twice for one file
  only when it is one output.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile


def run(numakit, cwd, *args, timeout=30, env=None):
    p = subprocess.run([numakit, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def refused(numakit, cwd, args, *words, env=None):
    rc, out, err = run(numakit, cwd, *args, env=env)
    assert rc == 2, "%s: exit %d, expected 2\n%s%s" % (" ".join(args), rc, out, err)
    assert err.count("\n") == 1, "one line: %r" % err
    for w in words:
        assert w in err, "%s: %r does not name %r" % (" ".join(args), err, w)
    return err


def main():
    numakit, report_data, cli_data = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="nkfiles.") as tmp:
        d = os.path.join(tmp, "work")
        os.mkdir(d)
        os.mkdir(os.path.join(d, "sub"))
        for f in ("advise.nkp", "hotspot.nkp"):
            shutil.copy(os.path.join(report_data, f), d)
        shutil.copy(os.path.join(cli_data, "machine-2n.json"), d)
        shutil.copy(os.path.join(cli_data, "run-plan-good.json"), d)
        with open(os.path.join(d, "prog.sh"), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(d, "prog.sh"), 0o755)
        os.symlink(os.path.join(d, "advise.nkp"), os.path.join(d, "link.nkp"))
        os.symlink(d, os.path.join(tmp, "dirlink"))
        before = {f: digest(os.path.join(d, f)) for f in ("advise.nkp", "hotspot.nkp", "machine-2n.json",
                                                           "run-plan-good.json", "prog.sh")}

        # the same file by other names
        refused(numakit, d, ["advise", "advise.nkp", "-o", "link.nkp"], "link.nkp", "advise.nkp")
        refused(numakit, d, ["advise", "link.nkp", "-o", "advise.nkp"], "link.nkp", "advise.nkp")
        refused(numakit, d, ["advise", "advise.nkp", "-o", "sub/../advise.nkp"], "sub/../advise.nkp")
        refused(numakit, d, ["advise", "advise.nkp", "-o", os.path.join(tmp, "dirlink", "advise.nkp")], "dirlink")
        refused(numakit, d, ["advise", "advise.nkp", "--machine", "machine-2n.json", "-o", "./machine-2n.json"],
                "machine-2n.json")
        refused(numakit, d, ["report", "--html", "./hotspot.nkp", "hotspot.nkp"], "--html", "hotspot.nkp")
        refused(numakit, d, ["report", "--sharing", "link.nkp", "hotspot.nkp", "advise.nkp"], "--sharing")
        refused(numakit, d, ["report", "--html", "r.html", "--sharing", "sub/../r.html", "hotspot.nkp"],
                "--html", "--sharing")
        refused(numakit, d, ["topo", "--machine", "machine-2n.json", "--save", "./machine-2n.json"], "--save")
        refused(numakit, d, ["run", "--plan", "run-plan-good.json", "--log", "./run-plan-good.json", "--", "true"],
                "--log")
        refused(numakit, d, ["profile", "-o", "./prog.sh", "--", os.path.join(d, "prog.sh")], "prog.sh")
        # the program found along PATH, as the profiler will run it
        refused(numakit, os.path.join(d, "sub"), ["profile", "-o", "../prog.sh", "--", "prog.sh"], "prog.sh",
                env=dict(os.environ, PATH=d + ":" + os.environ.get("PATH", "/usr/bin:/bin")))
        after = {f: digest(os.path.join(d, f)) for f in before}
        assert before == after, "an input changed: %r" % after
        assert not os.path.exists(os.path.join(d, "r.html")), "report wrote before refusing"

        # outputs checked before the work; profile leaves no parts folder behind
        refused(numakit, d, ["profile", "-o", "sub", "--", "true"], "sub", "folder")
        refused(numakit, d, ["profile", "-o", "nothere/x.nkp", "--", "true"], "nothere")
        refused(numakit, d, ["profile", "--runs", "2", "-o", "sub", "--", "true"], "sub")
        leftovers = [f for f in os.listdir(d) if f.endswith(".parts") or ".run" in f]
        leftovers += [f for f in os.listdir(os.path.join(d, "sub"))]
        assert not leftovers, "stray files: %r" % leftovers

        # a fifo is refused without being opened (opening one for reading would block)
        fifo = os.path.join(d, "pipe")
        os.mkfifo(fifo)
        refused(numakit, d, ["report", "pipe"], "pipe", "fifo")
        refused(numakit, d, ["advise", "pipe"], "pipe", "fifo")
        refused(numakit, d, ["advise", "--check", "pipe"], "pipe", "fifo")
        refused(numakit, d, ["whatif", "hotspot.nkp", "--plan", "pipe"], "pipe", "fifo")
        refused(numakit, d, ["topo", "--machine", "pipe"], "pipe", "fifo")
        refused(numakit, d, ["run", "--plan", "pipe", "--", "true"], "pipe", "fifo")

        # still allowed: a new file beside the input, a job folder as input
        rc, out, err = run(numakit, d, "advise", "advise.nkp", "-o", "plan.json")
        assert rc == 0 and os.path.isfile(os.path.join(d, "plan.json")), (rc, err)
        rc, out, err = run(numakit, d, "report", "--html", "r.html", "--sharing", "s.txt", "hotspot.nkp")
        assert rc == 0 and os.path.isfile(os.path.join(d, "r.html")), (rc, err)
        rc, out, err = run(numakit, report_data, "report", "job.nkp")
        assert rc == 0, (rc, err)
        rc, out, err = run(numakit, d, "report", "--html", "/dev/null", "--sharing", "/dev/null", "hotspot.nkp")
        assert rc == 0, ("two outputs to /dev/null destroy nothing", rc, err)
    print("files_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
