#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Job profiles (issue 14 section 2) through the command, launchers simulated with their variables.

  job_check.py NUMAKIT PROG TMP

Four `numakit profile -o JOB -- PROG` started together (as mpirun would start them), each with the
variables of its rank, for Open MPI (with a job id), Slurm (job and step) and Hydra (no id):

- every rank writes JOB/rank-R.nkp and nothing else is left; rank 0 alone says where the job is, the
  other ranks say nothing; rank files of an earlier job that no rank of this one writes are removed;
- the RUN record of a rank file carries its job: launcher, rank, size, local rank and size, host, id;
- `numakit report JOB` reads the folder as one job (text, JSON, HTML): 4 ranks, a rank x node row
  each, the program's array found in every rank under one key; the rank files given one by one read
  the same; a missing rank is a warning naming it;
- refused with exit 2 and a message naming the file: ranks of two jobs, a rank twice, another program,
  a rank file among other profiles; -o an existing file under a launcher;
- `numakit advise JOB` pools the ranks as runs (one plan, "runs": 4);
- under the pagefault sampler every rank's program gets the MPI transport settings (single-copy off), rank 0
  says so once, a variable the job set is kept (and said once); not a job: nothing added;
- outside a launcher, and with --no-job, the profile is one file whose RUN has no job.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys

LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MPI_LOCAL", "SLURM_", "PRTE_", "HYDRA_")
RANKS = 4
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)
        print("FAIL:", msg)
    return cond


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}


def ompi(r):
    return {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": str(RANKS), "OMPI_COMM_WORLD_LOCAL_RANK": str(r),
            "OMPI_COMM_WORLD_LOCAL_SIZE": str(RANKS), "OMPI_MCA_ess_base_jobid": "ompi-7"}


def slurm(r):
    return {"SLURM_PROCID": str(r), "SLURM_LOCALID": str(r), "SLURM_NTASKS": str(RANKS),
            "SLURM_STEP_TASKS_PER_NODE": str(RANKS), "SLURM_NODEID": "0", "SLURM_JOB_ID": "55", "SLURM_STEP_ID": "0"}


def hydra(r):
    return {"PMI_RANK": str(r), "PMI_SIZE": str(RANKS), "MPI_LOCALRANKID": str(r), "MPI_LOCALNRANKS": str(RANKS)}


def run(nk, args, env=None, cwd=None):
    e = clean_env()
    e.update(env or {})
    return subprocess.run([nk] + args, env=e, cwd=cwd, capture_output=True, text=True, timeout=120)


def start_job(nk, env_of, out, prog, extra=()):
    """The ranks started together; [(rc, stderr)] by rank."""
    procs = []
    for r in range(RANKS):
        e = clean_env()
        e.update(env_of(r))
        # no cost cap: the checks are of the job's structure, and a loaded host must not starve a rank of samples
        procs.append(subprocess.Popen([nk, "profile", "--max-overhead", "100", "-o", out, *extra, "--", prog], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return [(p.wait(timeout=120), p.communicate()[1]) for p in procs]


def run_json(path):
    """The RUN record of a profile file."""
    with open(path, "rb") as f:
        head = f.read(16)
        hsize = struct.unpack("<I", head[12:16])[0]
        f.seek(hsize)
        typ, _flags, length = struct.unpack("<IIQ", f.read(16))
        assert typ == 1, typ
        return json.loads(f.read(length))


def report_json(nk, *paths):
    p = run(nk, ["report", "--json", *paths])
    if not check(p.returncode == 0, "report --json %s: exit %d: %s" % (" ".join(paths), p.returncode, p.stderr)):
        return None
    return json.loads(p.stdout)


def job(nk, prog, tmp, name, env_of, launcher, job_id):
    out = os.path.join(tmp, name + ".nkp")
    os.makedirs(out)
    # an earlier job's rank files: rank 9 (beyond this job) and rank-00 (another width) go, rank-3 is replaced
    for stale in ("rank-9.nkp", "rank-00.nkp", "rank-3.nkp", "notes.txt"):
        with open(os.path.join(out, stale), "w") as f:
            f.write("stale")
    res = start_job(nk, env_of, out, prog)
    for r, (rc, err) in enumerate(res):
        check(rc == 0, "%s: rank %d: exit %d: %s" % (name, r, rc, err))
    said = [r for r, (_, err) in enumerate(res) if "the job's profile is" in err]
    check(said == [0], "%s: the job's place said by ranks %s, expected [0]: %s" % (name, said, [e for _, e in res]))
    check(all(err == "" for _, err in res[1:]), "%s: ranks 1-3 said something: %s" % (name, [e for _, e in res[1:]]))
    check("removed 2 rank files of an earlier job" in res[0][1], "%s: rank 0 did not say it removed stale files: %s"
          % (name, res[0][1]))
    want = sorted(["rank-%d.nkp" % r for r in range(RANKS)] + ["notes.txt"])
    check(sorted(os.listdir(out)) == want, "%s: the folder holds %s, expected %s" % (name, sorted(os.listdir(out)), want))

    host = socket.gethostname()
    for r in range(RANKS):
        j = run_json(os.path.join(out, "rank-%d.nkp" % r)).get("job")
        # "cpus": the cpus the rank was given at its start (its share), here every rank this process's
        expect = {"launcher": launcher, "rank": r, "size": RANKS, "local_rank": r, "local_size": RANKS, "host": host,
                  "id": job_id, "cpus": sorted(os.sched_getaffinity(0))}
        check(j == expect, "%s: rank %d's RUN job is %s, expected %s" % (name, r, j, expect))

    p = run(nk, ["report", out])
    check(p.returncode == 0 and "%d ranks of %d on 1 host" % (RANKS, RANKS) in p.stdout,
          "%s: report: exit %d: %s%s" % (name, p.returncode, p.stdout[:300], p.stderr))
    table = p.stdout.split("== Ranks x page nodes")[1].split("==")[1] if "== Ranks x page nodes" in p.stdout else ""
    rows = [l for l in table.splitlines() if l.strip()[:1].isdigit()]
    check(len(rows) == RANKS, "%s: the rank x node table has %d rows: %s" % (name, len(rows), table))
    rep = report_json(nk, out)
    if rep:
        check(rep["format"] == "numakit-job-report" and rep["version"] == 1, "%s: format %s" % (name, rep["format"]))
        check(rep["job"]["launcher"] == launcher and rep["job"]["id"] == job_id and rep["job"]["size"] == RANKS,
              "%s: job %s" % (name, rep["job"]))
        check([x["rank"] for x in rep["ranks"]] == list(range(RANKS)), "%s: ranks %s" % (name, rep["ranks"]))
        check(all(x["host"] == host and x["local_size"] == RANKS and x["page_nodes"] for x in rep["ranks"]),
              "%s: ranks' hosts or nodes: %s" % (name, [(x["host"], x["page_nodes"]) for x in rep["ranks"]]))
        check(rep["hosts"][0]["ranks"] == list(range(RANKS)), "%s: hosts %s" % (name, rep["hosts"]))
        grid = [v for v in rep["variables"] if "make_grid" in v["name"]]
        check(len(grid) == 1 and grid[0]["ranks"] == RANKS and len(grid[0]["per_rank"]) == RANKS,
              "%s: the grid is not one variable of every rank: %s" % (name, [(v["name"], v["ranks"]) for v in grid]))
        check(rep["samples"] == sum(x["samples"] for x in rep["ranks"]), "%s: job samples are not the ranks' sum" % name)
        files = [os.path.join(out, "rank-%d.nkp" % r) for r in range(RANKS)]
        one_by_one = report_json(nk, *files)
        if one_by_one:
            check(one_by_one["samples"] == rep["samples"] and len(one_by_one["ranks"]) == RANKS,
                  "%s: the rank files one by one read otherwise than the folder" % name)
    html = os.path.join(tmp, name + ".html")
    p = run(nk, ["report", "--html", html, out])
    if check(p.returncode == 0 and os.path.exists(html), "%s: --html: exit %d %s" % (name, p.returncode, p.stderr)):
        text = open(html).read()
        check("<svg" in text and all("rank %d<" % r in text or "rank %d *" % r in text for r in range(RANKS)),
              "%s: the HTML has no rank x node heat map of the 4 ranks" % name)
        check("http" not in text.replace("http-equiv", ""), "%s: the HTML fetches something" % name)
    return out


# The transport settings `numakit profile` gives each rank under the pagefault sampler (cmd_profile.c).
TRANSPORT = {"OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_MCA_btl_sm_single_copy_mechanism": "none",
             "UCX_RNDV_THRESH": "inf", "UCX_ZCOPY_THRESH": "inf", "MPIR_CVAR_CH4_CMA_ENABLE": "0",
             "MPIR_CVAR_CH4_XPMEM_ENABLE": "0", "FI_SHM_DISABLE_CMA": "1"}


def transports(nk, tmp):
    """Under a launcher with the pagefault sampler every rank's program gets the MPI transport settings that
    keep peers from reading its memory, rank 0 says so once, a variable the job set is kept (and said, once,
    when it differs); with --no-job, or outside a launcher, nothing is added."""
    envs = os.path.join(tmp, "envs")
    os.makedirs(envs)
    prog = os.path.join(tmp, "envprog.sh")
    with open(prog, "w") as f:
        f.write("#!/bin/sh\nenv > %s/env-${OMPI_COMM_WORLD_RANK:-none}-$$.txt\n" % envs)
    os.chmod(prog, 0o755)

    def got(pattern):
        out = {}
        for name in sorted(os.listdir(envs)):
            if name.startswith(pattern):
                with open(os.path.join(envs, name)) as f:
                    out[name] = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
                os.remove(os.path.join(envs, name))
        return out

    res = start_job(nk, ompi, os.path.join(tmp, "tr.nkp"), prog, extra=("--sampler", "pagefault"))
    check(all(rc == 0 for rc, _ in res), "transports: %s" % res)
    ranks = got("env-")
    check(len(ranks) == RANKS, "transports: %d rank environments, expected %d" % (len(ranks), RANKS))
    for name, e in ranks.items():
        have = {k: e.get(k) for k in TRANSPORT}
        check(have == TRANSPORT, "transports: %s has %s, expected %s" % (name, have, TRANSPORT))
    said = [r for r, (_, err) in enumerate(res) if "single-copy" in err]
    check(said == [0] and res[0][1].count("single-copy") == 1,
          "transports said by ranks %s, expected rank 0 once: %s" % (said, [e for _, e in res]))

    # the job's own setting is kept; rank 0 says which, once; an alias of a set variable is not added
    mine = lambda r: dict(ompi(r), UCX_RNDV_THRESH="8192", OMPI_MCA_btl_sm_single_copy_mechanism="cma",
                          FI_SHM_DISABLE_CMA="1")
    res = start_job(nk, mine, os.path.join(tmp, "tr2.nkp"), prog, extra=("--sampler", "pagefault"))
    check(all(rc == 0 for rc, _ in res), "transports kept: %s" % res)
    for name, e in got("env-").items():
        check(e.get("UCX_RNDV_THRESH") == "8192" and e.get("OMPI_MCA_btl_sm_single_copy_mechanism") == "cma" and
              "OMPI_MCA_btl_vader_single_copy_mechanism" not in e and e.get("UCX_ZCOPY_THRESH") == "inf",
              "transports kept: %s: %s" % (name, {k: e.get(k) for k in TRANSPORT}))
    warned = [r for r, (_, err) in enumerate(res) if "kept as the job set them" in err]
    check(warned == [0] and "OMPI_MCA_btl_sm_single_copy_mechanism=cma, UCX_RNDV_THRESH=8192;" in res[0][1]
          and "FI_SHM_DISABLE_CMA=1;" not in res[0][1],
          "transports kept: warned by ranks %s: %s" % (warned, res[0][1]))

    # not a job: nothing added
    for args, env in ((["--no-job"], ompi(1)), ([], {})):
        out = os.path.join(tmp, "tr-none%d.nkp" % len(args))
        p = run(nk, ["profile", "-q", "--sampler", "pagefault", *args, "-o", out, "--", prog], env=env)
        check(p.returncode == 0, "transports, not a job %s: exit %d %s" % (args, p.returncode, p.stderr))
        for name, e in got("env-").items():
            check(not any(k in e for k in TRANSPORT), "transports, not a job %s: %s has %s"
                  % (args, name, {k: e[k] for k in TRANSPORT if k in e}))


def main():
    nk, prog, tmp = sys.argv[1:4]
    nk = os.path.abspath(nk)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    o = job(nk, prog, tmp, "ompi", ompi, "openmpi", "ompi-7")
    s = job(nk, prog, tmp, "slurm", slurm, "slurm", "55.0")
    h = job(nk, prog, tmp, "hydra", hydra, "pmi", None)

    # a missing rank: a warning naming it
    os.remove(os.path.join(s, "rank-2.nkp"))
    p = run(nk, ["report", s])
    check(p.returncode == 0 and "(rank 2)" in p.stdout and "missing ranks: 2" in p.stdout,
          "missing rank: exit %d: %s %s" % (p.returncode, p.stdout[-600:], p.stderr))
    rep = report_json(nk, s)
    check(rep and rep["job"]["missing_ranks"] == [2], "missing rank: JSON %s" % (rep and rep["job"]))

    # refused, exit 2, the file named
    dup = os.path.join(tmp, "copy-rank-1.nkp")
    shutil.copy(os.path.join(o, "rank-1.nkp"), dup)
    other = os.path.join(tmp, "other.nkp")
    res = start_job(nk, ompi, other, "/bin/true")
    check(all(rc == 0 for rc, _ in res), "other program: %s" % res)
    plain = os.path.join(tmp, "plain.nkp")
    p = run(nk, ["profile", "-q", "-o", plain, "--", prog])
    check(p.returncode == 0 and os.path.isfile(plain), "outside a launcher: exit %d %s" % (p.returncode, p.stderr))
    for args, what, named in (
            ([os.path.join(o, "rank-0.nkp"), os.path.join(s, "rank-1.nkp")], "different jobs", "rank-1.nkp"),
            ([o, dup], "both rank 1", "copy-rank-1.nkp"),
            ([o, os.path.join(other, "rank-1.nkp")], "is of program", "other.nkp/rank-1.nkp"),
            ([os.path.join(h, "rank-0.nkp"), os.path.join(h, "rank-1.nkp"), plain], "not a rank of a job", "plain.nkp")):
        p = run(nk, ["report", *args])
        check(p.returncode == 2 and what in p.stderr and named in p.stderr and not p.stdout,
              "refusal (%s): exit %d: %s" % (what, p.returncode, p.stderr))

    # -o a file under a launcher
    e = ompi(0)
    p = run(nk, ["profile", "-q", "-o", plain, "--", prog], env=e)
    check(p.returncode == 2 and "is not a folder" in p.stderr, "-o a file in a job: exit %d %s" % (p.returncode, p.stderr))

    # advise pools the ranks: one plan for all of them
    p = run(nk, ["advise", o])
    check(p.returncode == 0 and json.loads(p.stdout or "{}").get("runs") == RANKS,
          "advise of a job: exit %d %s %s" % (p.returncode, p.stdout[:200], p.stderr))

    # outside a launcher, or --no-job: one file, no job in RUN, the report as ever
    check("job" not in run_json(plain), "outside a launcher, RUN has a job: %s" % run_json(plain))
    rep = report_json(nk, plain)
    check(rep and rep["format"] == "numakit-report", "outside a launcher: report format %s" % (rep and rep["format"]))
    nojob = os.path.join(tmp, "nojob.nkp")
    p = run(nk, ["profile", "-q", "--no-job", "-o", nojob, "--", prog], env=ompi(2))
    check(p.returncode == 0 and os.path.isfile(nojob) and "job" not in run_json(nojob),
          "--no-job: exit %d %s" % (p.returncode, p.stderr))

    transports(nk, tmp)

    if errors:
        print("%d failure(s)" % len(errors))
        return 1
    print("ok")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
