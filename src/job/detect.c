/* SPDX-License-Identifier: BSD-3-Clause
 * Which rank of which job this process is, from its launcher's environment
 * (nk_job_detect; the rules are stated in numakit.h).  Pure: the caller
 * hands the environment in, so recorded environments of every launcher test
 * it (tests/data/job/).  No MPI library is linked or asked: a rank must
 * know its place before the program (and MPI_Init) starts.
 *
 * Why this order: launchers nest.  mpirun started inside an sbatch script
 * inherits the batch step's SLURM_PROCID=0 and SLURM_LOCALID=0, which are
 * true for the script, not for the ranks; so the innermost launcher's own
 * variables win and Slurm's count only for a Slurm step itself, or to
 * complete a PMI/PMIx rank that srun started (same rank).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"

#define MAX_RANKS 16777216L /* far above any job; keeps the arithmetic in int */

/* The value of @p name in @p envp, or NULL. */
static const char *env_get(const char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static void problem(nk_job_info *o, const char *fmt, const char *name, const char *value)
{
	size_t len = strlen(o->problems);

	if (len + 3 >= sizeof o->problems)
		return;
	if (len) {
		memcpy(o->problems + len, "; ", 3);
		len += 2;
	}
	snprintf(o->problems + len, sizeof o->problems - len, fmt, name, value);
}

/* A decimal number in 0..MAX_RANKS (blanks around allowed); -1 when not one. */
static long number(const char *s)
{
	long v = 0;
	int digits = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		v = v * 10 + (*s - '0');
		if (v > MAX_RANKS)
			return -1;
	}
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	return digits && !*s ? v : -1;
}

/*
 * Variable @p name as a number: -1 when unset, -2 (and a problem) when it is
 * not a number; @p min is the smallest valid value.
 */
static long get_num(const char *const *envp, const char *name, long min, nk_job_info *o)
{
	const char *v = env_get(envp, name);
	long x;

	if (!v)
		return -1;
	x = number(v);
	if (x < min) {
		problem(o, min ? "%s=%s: not a positive number" : "%s=%s: not a number", name, v);
		return -2;
	}
	return x;
}

/*
 * Slurm's tasks on node @p nodeid from "2(x3),1" (SLURM_STEP_TASKS_PER_NODE):
 * -1 when malformed or the node is beyond it.
 */
static long slurm_tasks_on(const char *text, long nodeid)
{
	const char *p = text;

	while (*p) {
		char *end;
		long tasks = strtol(p, &end, 10), times = 1;

		if (end == p || tasks < 1 || tasks > MAX_RANKS)
			return -1;
		p = end;
		if (*p == '(') {
			if (p[1] != 'x')
				return -1;
			times = strtol(p + 2, &end, 10);
			if (end == p + 2 || *end != ')' || times < 1 || times > MAX_RANKS)
				return -1;
			p = end + 1;
		}
		if (nodeid < times)
			return tasks;
		nodeid -= times;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return -1;
}

/* Slurm's local size for this node; -1 unset, -2 unusable (a problem said). */
static long slurm_local_size(const char *const *envp, nk_job_info *o)
{
	const char *step = env_get(envp, "SLURM_STEP_TASKS_PER_NODE");
	long n;

	if (step) {
		long nodeid = 0;
		const char *nid = env_get(envp, "SLURM_NODEID");

		if (nid && (nodeid = number(nid)) < 0) {
			problem(o, "%s=%s: not a number", "SLURM_NODEID", nid);
			return -2;
		}
		if (!nid && strchr(step, ',')) {
			problem(o, "%s=%s: tasks differ between nodes and SLURM_NODEID is not set", "SLURM_STEP_TASKS_PER_NODE",
				step);
			return -2;
		}
		n = slurm_tasks_on(step, nodeid);
		if (n < 0) {
			problem(o, "%s=%s: not a task count per node (like \"2(x3),1\") covering SLURM_NODEID",
				"SLURM_STEP_TASKS_PER_NODE", step);
			return -2;
		}
		return n;
	}
	return get_num(envp, "SLURM_NTASKS_PER_NODE", 1, o);
}

static void fill(nk_job_info *o, int launcher, long rank, long size, long lrank, long lsize)
{
	o->launcher = launcher;
	o->rank = rank >= 0 ? (int)rank : -1;
	o->size = size >= 0 ? (int)size : -1;
	o->local_rank = lrank >= 0 ? (int)lrank : -1;
	o->local_size = lsize >= 0 ? (int)lsize : -1;
}

/* The checks every launcher shares; the return value of nk_job_detect. */
static int check(nk_job_info *o, const char *lrank_var, const char *lsize_var)
{
	char a[32], b[32];
	int bad = 0;

	if (o->rank >= 0 && o->size >= 0 && o->rank >= o->size) {
		snprintf(a, sizeof a, "%d", o->rank);
		problem(o, "rank %s is not below the job's size %s: the size is ignored", a,
			(snprintf(b, sizeof b, "%d", o->size), b));
		o->size = -1;
	}
	if (o->local_rank < 0) {
		if (!strstr(o->problems, lrank_var))
			problem(o, "%s is not set: the local rank is unknown%s", lrank_var, "");
		bad = 1;
	}
	if (o->local_size < 0) {
		if (!strstr(o->problems, lsize_var))
			problem(o, "%s is not set: the number of ranks on this host is unknown%s", lsize_var, "");
		bad = 1;
	}
	if (!bad && o->local_rank >= o->local_size) {
		snprintf(a, sizeof a, "%d", o->local_rank);
		snprintf(b, sizeof b, "%d", o->local_size);
		problem(o, "local rank %s is not below the local size %s", a, b);
		bad = 1;
	}
	if (!bad && o->size >= 0 && o->local_size > o->size) {
		snprintf(a, sizeof a, "%d", o->local_size);
		snprintf(b, sizeof b, "%d", o->size);
		problem(o, "%s ranks on this host but %s in the job: the job's size is ignored", a, b);
		o->size = -1;
	}
	if (bad) {
		o->local_rank = o->local_size = -1;
		return NK_EPARSE;
	}
	return 0;
}

/* Local rank and size from a Slurm step when it started this very rank (srun --mpi=pmi2/pmix). */
static void from_slurm(const char *const *envp, nk_job_info *o, long rank, long *lrank, long *lsize,
		       const char **lrank_var, const char **lsize_var)
{
	nk_job_info scratch = { 0 };
	long procid = get_num(envp, "SLURM_PROCID", 0, &scratch);

	if (procid < 0 || procid != rank)
		return;
	if (*lrank == -1 && env_get(envp, "SLURM_LOCALID")) {
		*lrank = get_num(envp, "SLURM_LOCALID", 0, o);
		*lrank_var = "SLURM_LOCALID";
	}
	if (*lsize == -1 && (env_get(envp, "SLURM_STEP_TASKS_PER_NODE") || env_get(envp, "SLURM_NTASKS_PER_NODE"))) {
		*lsize = slurm_local_size(envp, o);
		*lsize_var = "SLURM_STEP_TASKS_PER_NODE";
	}
}

int nk_job_detect(const char *const *envp, nk_job_info *o)
{
	long rank, size, lrank, lsize;
	const char *lrank_var, *lsize_var;

	if (!envp || !o)
		return NK_EINVAL;
	memset(o, 0, sizeof *o);
	fill(o, NK_LAUNCHER_NONE, -1, -1, -1, -1);

	if (env_get(envp, "OMPI_COMM_WORLD_RANK") || env_get(envp, "OMPI_COMM_WORLD_LOCAL_RANK") ||
	    env_get(envp, "OMPI_COMM_WORLD_SIZE") || env_get(envp, "OMPI_COMM_WORLD_LOCAL_SIZE")) {
		rank = get_num(envp, "OMPI_COMM_WORLD_RANK", 0, o);
		size = get_num(envp, "OMPI_COMM_WORLD_SIZE", 1, o);
		lrank = get_num(envp, "OMPI_COMM_WORLD_LOCAL_RANK", 0, o);
		lsize = get_num(envp, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, o);
		fill(o, NK_LAUNCHER_OPENMPI, rank, size, lrank, lsize);
		return check(o, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
	}
	if (env_get(envp, "MPI_LOCALRANKID") || env_get(envp, "PMI_RANK")) {
		rank = get_num(envp, "PMI_RANK", 0, o);
		size = get_num(envp, "PMI_SIZE", 1, o);
		lrank = get_num(envp, "MPI_LOCALRANKID", 0, o);
		lsize = get_num(envp, "MPI_LOCALNRANKS", 1, o);
		lrank_var = "MPI_LOCALRANKID";
		lsize_var = "MPI_LOCALNRANKS";
		if (rank >= 0)
			from_slurm(envp, o, rank, &lrank, &lsize, &lrank_var, &lsize_var);
		fill(o, NK_LAUNCHER_PMI, rank, size, lrank, lsize);
		return check(o, lrank_var, lsize_var);
	}
	if (env_get(envp, "PMIX_RANK")) {
		rank = get_num(envp, "PMIX_RANK", 0, o);
		size = get_num(envp, "PMIX_SIZE", 1, o);
		lrank = get_num(envp, "PMIX_LOCAL_RANK", 0, o);
		lsize = get_num(envp, "PMIX_LOCAL_SIZE", 1, o);
		lrank_var = "PMIX_LOCAL_RANK";
		lsize_var = "PMIX_LOCAL_SIZE";
		if (rank >= 0)
			from_slurm(envp, o, rank, &lrank, &lsize, &lrank_var, &lsize_var);
		if (size == -1 && rank >= 0 && env_get(envp, "SLURM_NTASKS") && lrank_var[0] == 'S')
			size = get_num(envp, "SLURM_NTASKS", 1, o);
		fill(o, NK_LAUNCHER_PMIX, rank, size, lrank, lsize);
		return check(o, lrank_var, lsize_var);
	}
	if (env_get(envp, "SLURM_PROCID") || env_get(envp, "SLURM_LOCALID")) {
		rank = get_num(envp, "SLURM_PROCID", 0, o);
		size = get_num(envp, "SLURM_NTASKS", 1, o);
		lrank = get_num(envp, "SLURM_LOCALID", 0, o);
		lsize = slurm_local_size(envp, o);
		fill(o, NK_LAUNCHER_SLURM, rank, size, lrank, lsize);
		return check(o, "SLURM_LOCALID", env_get(envp, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
											: "SLURM_STEP_TASKS_PER_NODE (or SLURM_NTASKS_PER_NODE)");
	}
	o->local_rank = 0;
	o->local_size = 1;
	return NK_ENODATA;
}

const char *nk_launcher_name(int launcher)
{
	switch (launcher) {
	case NK_LAUNCHER_OPENMPI:
		return "Open MPI";
	case NK_LAUNCHER_PMI:
		return "PMI (MPICH Hydra)";
	case NK_LAUNCHER_PMIX:
		return "PMIx";
	case NK_LAUNCHER_SLURM:
		return "Slurm";
	default:
		return "none";
	}
}

/*
 * The job id: a text every rank of one job shares and another job (a later mpirun, another srun step)
 * does not.  Only the launcher's own variables count, for the reason of the order above: a launcher
 * nested in a Slurm allocation inherits the allocation's SLURM_JOB_ID, which is the same for every
 * mpirun of the batch script.  Where the launcher gives no id (MPICH and Intel MPI Hydra keep their
 * PMI key-value space name to the PMI wire protocol), the Slurm step is the next best: Hydra started
 * by srun, or proxies started through Slurm's bootstrap, run in one step per mpiexec.
 */
static const char *const *job_id_vars(int launcher)
{
	static const char *const ompi[] = { "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", NULL };
	static const char *const pmi[] = { "PMI_JOBID", "PMI_KVSNAME", NULL };
	static const char *const pmix[] = { "PMIX_NAMESPACE", NULL };
	static const char *const none[] = { NULL };

	switch (launcher) {
	case NK_LAUNCHER_OPENMPI:
		return ompi;
	case NK_LAUNCHER_PMI:
		return pmi;
	case NK_LAUNCHER_PMIX:
		return pmix;
	default:
		return none;
	}
}

/* A usable id: not empty, printable ASCII without blanks (it is written into JSON and file names). */
static int id_ok(const char *v)
{
	if (!*v)
		return 0;
	for (; *v; v++)
		if ((unsigned char)*v <= ' ' || (unsigned char)*v >= 0x7f)
			return 0;
	return 1;
}

/* "A" or "A.B" into @p buf when it fits (else nothing written): its length, or NK_ERANGE. */
static int put_id(char *buf, size_t cap, const char *a, const char *b)
{
	size_t la = strlen(a), lb = b ? strlen(b) : 0, n = la + (b ? 1 + lb : 0);

	if (n + 1 > cap || n > (size_t)NK_JOB_ID_MAX)
		return NK_ERANGE;
	memcpy(buf, a, la);
	if (b) {
		buf[la] = '.';
		memcpy(buf + la + 1, b, lb);
	}
	buf[n] = '\0';
	return (int)n;
}

int nk_job_id(const char *const *envp, int launcher, char *buf, size_t cap, const char **var)
{
	const char *const *names;
	const char *v, *step;

	if (!envp || !buf || !cap || launcher < NK_LAUNCHER_NONE || launcher > NK_LAUNCHER_SLURM)
		return NK_EINVAL;
	if (launcher == NK_LAUNCHER_NONE)
		return NK_ENODATA;
	names = job_id_vars(launcher);
	for (size_t i = 0; names[i]; i++) {
		v = env_get(envp, names[i]);
		if (v && id_ok(v)) {
			int n = put_id(buf, cap, v, NULL);
			if (n > 0 && var)
				*var = names[i];
			return n;
		}
	}
	if (launcher == NK_LAUNCHER_OPENMPI || launcher == NK_LAUNCHER_PMIX)
		return NK_ENODATA;
	/* PMI and Slurm: the Slurm step (SLURM_JOBID and SLURM_STEPID are the older names) */
	v = env_get(envp, "SLURM_JOB_ID");
	if (!v || !id_ok(v))
		v = env_get(envp, "SLURM_JOBID");
	if (!v || !id_ok(v))
		return NK_ENODATA;
	step = env_get(envp, "SLURM_STEP_ID");
	if (!step || !id_ok(step))
		step = env_get(envp, "SLURM_STEPID");
	if (step && !id_ok(step))
		step = NULL;
	int n = put_id(buf, cap, v, step);
	if (n > 0 && var)
		*var = step ? "SLURM_JOB_ID.SLURM_STEP_ID" : "SLURM_JOB_ID";
	return n;
}
