/* SPDX-License-Identifier: BSD-3-Clause
 * numakit profile: run a program under the data-centric profiler and write
 * its profile (nk_profile_run; docs/profile.md, numakit-profile(1)).
 *
 * The library never installs signal handlers, so this command does what a
 * shell would expect of a wrapper: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent
 * to numakit itself (kill PID) are forwarded to the program, and numakit
 * stays alive to write the profile of the interrupted run.  A Ctrl-C typed
 * at the terminal already reaches the program (same process group) and is
 * not sent twice.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "strbuf.h"

extern char **environ;

const char cli_profile_usage[] =
	"usage: numakit profile [--sampler auto|hw|timer|pagefault|trace] [--rate R]\n"
	"                       [--min-size SIZE] [--small-blocks] [--max-overhead PCT]\n"
	"                       [--roi] [--no-mpi-traffic]\n"
	"                       [-o FILE] [--runs N] [--no-job] [--quiet]\n"
	"                       [--] COMMAND [ARG...]\n"
	"\n"
	"Run COMMAND (and the processes it forks) under the NUMA profiler and write\n"
	"the profile, also when COMMAND fails or is killed.  Then see which variables\n"
	"cause remote memory accesses with 'numakit report FILE'.\n"
	"\n"
	"Under an MPI or Slurm launcher (mpirun -np 4 numakit profile -o job.nkp --\n"
	"./app), FILE names the job: a folder where each rank writes its own\n"
	"profile, FILE/rank-R.nkp, with its rank, local rank, host and job id;\n"
	"'numakit report FILE' reads them as one job.  Rank 0 says where it is.\n"
	"With the pagefault sampler the ranks' MPI transports are told to copy\n"
	"through shared memory instead of reading each other's memory (single-\n"
	"copy off), unless the job set those variables itself.  When the program\n"
	"links Open MPI or an MPI of MPICH's ABI, what each process sends to each\n"
	"peer is recorded too (PMPI wrappers): the job report's rank x rank matrix.\n"
	"\n"
	"Options:\n"
	"  --sampler S      auto (default): hw when the machine has precise memory\n"
	"                   sampling (Intel PEBS, AMD IBS), else pagefault;\n"
	"                   hw: perf_event_open, fails when unavailable;\n"
	"                   timer: software, the instruction each thread runs every\n"
	"                   period of its CPU time, decoded (x86-64);\n"
	"                   pagefault: software, access revoked on random pages;\n"
	"                   trace: every access of a program built with 'numakit cc'\n"
	"  --rate R         timer: samples per second of each thread's CPU time\n"
	"                   (default 1000);\n"
	"                   pagefault: samples per second per process (default 1000);\n"
	"                   hw: one sample per R events; trace: one access in R\n"
	"  --min-size SIZE  track allocations of SIZE or more one by one (default 64K)\n"
	"  --small-blocks   also record smaller ones by allocation site (a site counts\n"
	"                   once its blocks reach SIZE); each small malloc then costs\n"
	"                   its call stack (2-30x a plain malloc)\n"
	"  --max-overhead PCT  pagefault: cap on the sampler's own cost, percent of\n"
	"                   wall time (default 5; 100 or more: no cap, for limit\n"
	"                   studies and emulated machines where faults are slow)\n"
	"  --roi            sample only between nk_profile_start() and nk_profile_stop()\n"
	"  --no-mpi-traffic do not preload the PMPI wrappers (when another PMPI tool\n"
	"                   is preloaded: wrappers do not chain)\n"
	"  -o, --output F   the profile to write (default ./numakit.nkp)\n"
	"  --runs N         run COMMAND N times, one after the other, and write one\n"
	"                   profile of the N runs (default 1); report, advise and\n"
	"                   whatif combine them (samples pooled per variable)\n"
	"  --no-job         profile one process even under a launcher (-o is the\n"
	"                   profile, as outside one)\n"
	"  -q, --quiet      no progress line and no summary\n"
	"  -h, --help       show this help\n"
	"\n"
	"Exit status: COMMAND's status (128+N when signal N killed it; with --runs,\n"
	"that of the first run that failed); 1 the profile could not be made; 2 bad\n"
	"usage, or an output that is a folder or in a missing folder (checked before\n"
	"the program runs).  See numakit-profile(1).\n";

enum { OPT_SAMPLER = 256, OPT_RATE, OPT_MIN_SIZE, OPT_ROI, OPT_MAX_OVERHEAD, OPT_RUNS, OPT_SMALL, OPT_NO_JOB,
       OPT_NO_MPI_TRAFFIC };

#define MAX_RUNS 1000

static volatile sig_atomic_t child_pid;

/* Forward signals sent to numakit (kill, not the terminal) to the program. */
static void forward(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	if (child_pid > 0 && si && (si->si_code == SI_USER || si->si_code == SI_QUEUE))
		kill((pid_t)child_pid, sig);
}

static void install_forwarding(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
}

struct progress_state {
	int show;  /* stderr is a terminal and not --quiet */
	int shown; /* a progress line is on screen */
};

static const char *sampler_text(int s)
{
	switch (s) {
	case NK_SAMPLER_HW:
		return "hw";
	case NK_SAMPLER_PAGEFAULT:
		return "pagefault";
	case NK_SAMPLER_TRACE:
		return "trace";
	case NK_SAMPLER_TIMER:
		return "timer";
	}
	return "auto";
}

static void on_progress(void *arg, const nk_profile_progress *p)
{
	struct progress_state *ps = arg;

	child_pid = p->child_pid;
	if (!ps->show)
		return;
	fprintf(stderr, "\rprofile: %.1f s, %llu samples (%s), pid %d ", p->elapsed_s, p->samples,
		sampler_text(p->sampler), p->child_pid);
	fflush(stderr);
	ps->shown = 1;
}

/* ---- under a launcher: one profile per rank (docs/profile.md, "Profiling an MPI job") ---- */

/*
 * A job's transports, under the pagefault sampler (docs/profile.md, "Profiling an MPI job").  A single-copy
 * transfer is another process, or the kernel or a NIC on its behalf, reading or writing this rank's pages
 * directly: CMA (process_vm_readv), KNEM, XPMEM, RDMA.  It meets the pages the sampler revoked and fails
 * with EFAULT, since no fault reaches this rank that could give a page back: Open MPI 4.1's vader printed
 * "Read -1, expected 1048576, errno = 14" and retried, UCX aborted the rank (MPICH 4.0, cma_ep.c:
 * process_vm_readv ... Bad address).  Copying through shared memory is done by the ranks' own threads,
 * where the sampler takes its faults.  So under a launcher the program gets these settings, each unless
 * the job set the variable (any of its names) itself; with another sampler, nothing.  The MPI named is
 * the one whose library reads the variable; which MPI the program uses is not known here.
 */
static const struct mpi_setting {
	const char *names[2]; /* the variable, and another name of the same setting */
	const char *value;
} mpi_settings[] = {
	/* Open MPI's shared-memory BTL: vader (1.8-4.1), renamed sm in 5.0 (vader_* still aliases) */
	{ { "OMPI_MCA_btl_vader_single_copy_mechanism", "OMPI_MCA_btl_sm_single_copy_mechanism" }, "none" },
	/* UCX (MPICH ch4:ucx, Open MPI's pml ucx): no rendezvous protocol (the receiver's CMA/KNEM/XPMEM or
	 * RDMA read of the sender's buffer) and no zero-copy send (the NIC reads the buffer) */
	{ { "UCX_RNDV_THRESH", NULL }, "inf" },
	{ { "UCX_ZCOPY_THRESH", NULL }, "inf" },
	/* MPICH ch4's shared-memory IPC: CMA (4.1 and later), XPMEM */
	{ { "MPIR_CVAR_CH4_CMA_ENABLE", NULL }, "0" },
	{ { "MPIR_CVAR_CH4_XPMEM_ENABLE", NULL }, "0" },
	/* libfabric's shm provider (MPICH ch4:ofi, Intel MPI, Open MPI's mtl ofi) */
	{ { "FI_SHM_DISABLE_CMA", NULL }, "1" },
};
#define N_MPI_SETTINGS (sizeof mpi_settings / sizeof mpi_settings[0])

struct job {
	int on;                  /* a launcher was found (and not --no-job) */
	nk_job_info info;
	nk_profile_job pj;
	char id[NK_JOB_ID_MAX + 1];
	char host[256];
	char *path;              /* this rank's profile: OUTPUT/rank-R.nkp */
	char tag[48];            /* "rank R: " for this rank's messages */
	/* the transport settings (pagefault sampler only): NAME=VALUE, NULL-terminated */
	char *pf_env[2 * N_MPI_SETTINGS + 1];
	char *kept;              /* "NAME=VALUE, ..." the job set otherwise than we would; NULL none */
};

/* The transport settings the program gets under the pagefault sampler, and those the job set otherwise. */
static int mpi_env(struct job *j)
{
	size_t n = 0;
	struct sbuf kept = { 0 };
	for (size_t i = 0; i < N_MPI_SETTINGS; i++) {
		const struct mpi_setting *m = &mpi_settings[i];
		const char *set = NULL, *name = NULL;
		for (int k = 0; k < 2 && m->names[k] && !set; k++)
			if ((set = getenv(m->names[k])))
				name = m->names[k];
		if (set) {
			if (strcmp(set, m->value))
				sb_printf(&kept, "%s%s=%s", kept.len ? ", " : "", name, set);
			continue;
		}
		for (int k = 0; k < 2 && m->names[k]; k++)
			if (asprintf(&j->pf_env[n++], "%s=%s", m->names[k], m->value) < 0) {
				j->pf_env[--n] = NULL;
				free(sb_take(&kept));
				return -1;
			}
	}
	char *k = sb_take(&kept);
	if (k && !*k) {
		free(k);
		k = NULL;
	}
	j->kept = k;
	return 0;
}

/* Rank 0's word on the transports, when the pagefault sampler ran. */
static void mpi_env_said(const struct job *j)
{
	if (j->pf_env[0]) {
		fprintf(stderr, "profile: pagefault sampler: single-copy MPI transfers off in every rank, messages "
				"copied through shared memory (");
		for (size_t i = 0; j->pf_env[i]; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", j->pf_env[i]);
		fputs(")\n", stderr);
	}
	if (j->kept)
		cli_error("profile", "warning: kept as the job set them: %s; a single-copy transfer reading a rank's "
				     "memory fails on the pages the pagefault sampler revokes (see numakit-profile(1))",
			  j->kept);
}

static void job_free(struct job *j)
{
	free(j->path);
	for (size_t i = 0; j->pf_env[i]; i++)
		free(j->pf_env[i]);
	free(j->kept);
}

static int digits(long v)
{
	int n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* "rank-<digits>.nkp": the rank and its digits, else -1. */
static long rank_name(const char *name, int *ndigits)
{
	size_t len = strlen(name);
	long v = 0;
	if (strncmp(name, "rank-", 5) || len < 10 || strcmp(name + len - 4, ".nkp") || len - 9 > 9)
		return -1;
	for (const char *p = name + 5; p < name + len - 4; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	*ndigits = (int)(len - 9);
	return v;
}

/*
 * Rank 0 removes the rank files an earlier job left in the folder that no rank of this job will write:
 * ranks beyond the size, or written at another width.  What remains of an earlier job (a rank of this
 * one that failed) is refused by `numakit report` for its other job id.
 */
static void remove_stale(const char *dir, int size, int width, int quiet)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int removed = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		int nd;
		long r = rank_name(e->d_name, &nd);
		if (r < 0 || (r < size && nd == width))
			continue;
		char *p = NULL;
		if (asprintf(&p, "%s/%s", dir, e->d_name) >= 0 && !unlink(p))
			removed++;
		free(p);
	}
	closedir(d);
	if (removed && !quiet)
		fprintf(stderr, "profile: removed %d rank file%s of an earlier job from %s\n", removed,
			removed == 1 ? "" : "s", dir);
}

/*
 * The program as the library will run it (nk__os_find_program: a name with a slash as is, else the
 * first executable regular file along PATH, an empty element the current folder), so that -o naming it
 * is refused however it was spelt.  malloc'ed; NULL when not found or on ENOMEM (the library then says
 * what is wrong).
 */
static char *find_program(const char *name)
{
	const char *path_var = getenv("PATH");
	struct stat st;

	if (strchr(name, '/'))
		return strdup(name);
	if (!path_var || !*path_var)
		path_var = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path_var;;) {
		const char *end = strchr(p, ':');
		int dlen = end ? (int)(end - p) : (int)strlen(p);
		char *cand = NULL;

		if (asprintf(&cand, "%.*s/%s", dlen ? dlen : 1, dlen ? p : ".", name) < 0)
			return NULL;
		if (!stat(cand, &st) && S_ISREG(st.st_mode) && !access(cand, X_OK))
			return cand;
		free(cand);
		if (!end)
			return NULL;
		p = end + 1;
	}
}

/* Find the launcher; under one, make the job's folder and name this rank's profile.  0, or an exit status. */
static int job_setup(struct job *j, const char *output, int quiet)
{
	int rc = nk_job_detect((const char *const *)environ, &j->info);
	struct stat st;

	if (rc == NK_ENODATA)
		return 0;
	if (j->info.rank < 0)
		return cli_usage_error("profile", "a %s launcher was found but it gives this process no rank (%s): use "
				       "--no-job to profile it as one process", nk_launcher_name(j->info.launcher),
				       j->info.problems[0] ? j->info.problems : "no rank variable");
	j->on = 1;
	snprintf(j->tag, sizeof j->tag, "rank %d: ", j->info.rank);
	rc = nk_job_id((const char *const *)environ, j->info.launcher, j->id, sizeof j->id, NULL);
	if (rc == NK_ERANGE && j->info.rank == 0)
		cli_error("profile", "warning: the launcher's job id is longer than %d bytes: the profile carries none",
			  NK_JOB_ID_MAX);
	if (rc < 0) /* none given, or too long: the profile carries none */
		j->id[0] = '\0';
	if (gethostname(j->host, sizeof j->host - 1))
		j->host[0] = '\0';
	j->host[sizeof j->host - 1] = '\0';
	if (j->info.problems[0] && j->info.rank == 0)
		cli_error("profile", "warning: %s: %s", nk_launcher_name(j->info.launcher), j->info.problems);
	if (mkdir(output, 0777) && errno != EEXIST) {
		cli_error("profile", "%scannot create the job's folder %s: %s", j->tag, output, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (stat(output, &st) || !S_ISDIR(st.st_mode)) {
		cli_error("profile", "%s%s exists and is not a folder: under a launcher (%s) -o names the job's folder, "
			  "where each rank writes its profile (give another name, or --no-job)", j->tag, output,
			  nk_launcher_name(j->info.launcher));
		return CLI_EXIT_USAGE;
	}
	int width = digits(j->info.size > 0 ? j->info.size : j->info.rank);
	if (asprintf(&j->path, "%s/rank-%0*d.nkp", output, width, j->info.rank) < 0) {
		j->path = NULL;
		cli_error("profile", "out of memory");
		return CLI_EXIT_FAIL;
	}
	if (j->info.rank == 0 && j->info.size > 0)
		remove_stale(output, j->info.size, width, quiet);
	j->pj.launcher = j->info.launcher;
	j->pj.rank = j->info.rank;
	j->pj.size = j->info.size;
	j->pj.local_rank = j->info.local_rank;
	j->pj.local_size = j->info.local_rank >= 0 ? j->info.local_size : -1;
	if (j->pj.local_size < 0)
		j->pj.local_rank = -1;
	j->pj.host = j->host;
	j->pj.id = j->id;
	if (mpi_env(j)) {
		cli_error("profile", "out of memory");
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* Rank 0's word on where the job's profile is. */
static void job_said(const struct job *j, const char *output)
{
	fprintf(stderr, "profile: the job's profile is %s, one file per rank (%s", output,
		nk_launcher_name(j->info.launcher));
	if (j->id[0])
		fprintf(stderr, " job %s", j->id);
	if (j->info.size > 0)
		fprintf(stderr, ", %d ranks", j->info.size);
	fprintf(stderr, "); see: numakit report %s\n", output);
}

/* Free the run file names, removing the first @p n files when @p unlink_them. */
static void free_runs(char **paths, int n, int unlink_them)
{
	for (int k = 0; k < n; k++) {
		if (unlink_them && paths[k])
			unlink(paths[k]);
		free(paths[k]);
		paths[k] = NULL;
	}
}

static int run_status(const nk_profile_run_result *res)
{
	if (res->term_signal > 0)
		return 128 + res->term_signal;
	if (res->exit_status < 0)
		return CLI_EXIT_FAIL;
	return res->exit_status;
}

/*
 * --runs N: the runs one after the other, each to OUTPUT.runK (beside the output, so that they are on
 * its file system), then one profile of all of them (nk_profile_combine: format version 2) at OUTPUT;
 * the per-run files are removed once it is written, kept (and named) when it could not be.
 */
static int profile_runs(nk_profile_opts *o, char *const argv[], int runs, int quiet, struct progress_state *ps,
			const char *tag, int *sampler)
{
	const char *output = o->output;
	char **paths = calloc((size_t)runs, sizeof(*paths));
	int status = 0, rc = 0, done = 0;
	nk_error err = { 0, "" };
	unsigned long long samples = 0;

	if (!paths) {
		cli_error("profile", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (int k = 0; k < runs; k++) {
		nk_profile_run_result res;
		memset(&res, 0, sizeof res);
		if (asprintf(&paths[k], "%s.run%d", output, k + 1) < 0) {
			paths[k] = NULL;
			cli_error("profile", "out of memory");
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		if (!quiet)
			fprintf(stderr, "profile: run %d of %d\n", k + 1, runs);
		o->output = paths[k];
		int r = nk_profile_run(NULL, o, argv, &res, &err);
		child_pid = 0;
		if (ps->shown)
			fputs("\r\033[K", stderr);
		ps->shown = 0;
		if (r) {
			cli_error("profile", "%srun %d of %d: %s", tag, k + 1, runs, err.message[0] ? err.message : nk_strerror(r));
			rc = r == NK_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
			goto out;
		}
		done = k + 1;
		*sampler = res.sampler;
		if (res.warnings[0])
			cli_error("profile", "%swarning: run %d of %d: %s", tag, k + 1, runs, res.warnings);
		samples += res.samples;
		if (!status)
			status = run_status(&res); /* the first run that failed decides */
	}
	if (nk_profile_combine((const char *const *)paths, (size_t)runs, output, &err)) {
		cli_error("profile", "%s%s; the runs are kept in %s.run1 .. %s.run%d", tag, err.message, output, output,
			  runs);
		free_runs(paths, runs, 0);
		free(paths);
		return CLI_EXIT_FAIL;
	}
	if (!quiet && tag[0])
		fprintf(stderr, "profile: %s%llu samples from %d runs written to %s\n", tag, samples, runs, output);
	else if (!quiet)
		fprintf(stderr, "profile: %llu samples from %d runs written to %s; see: numakit report %s\n", samples,
			runs, output, output);
out:
	free_runs(paths, done, 1);
	if (rc) {
		for (int k = done; k < runs; k++)
			free(paths[k]);
		free(paths);
		return rc;
	}
	free(paths);
	return status;
}

int cli_cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sampler", required_argument, NULL, OPT_SAMPLER },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "min-size", required_argument, NULL, OPT_MIN_SIZE },
		{ "roi", no_argument, NULL, OPT_ROI },
		{ "small-blocks", no_argument, NULL, OPT_SMALL },
		{ "max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD },
		{ "output", required_argument, NULL, 'o' },
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "no-job", no_argument, NULL, OPT_NO_JOB },
		{ "no-mpi-traffic", no_argument, NULL, OPT_NO_MPI_TRAFFIC },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	nk_profile_opts o;
	nk_profile_run_result res;
	nk_error err = { 0, "" };
	struct progress_state ps = { 0, 0 };
	struct job job;
	int quiet = 0, c, rc, runs = 1, no_job = 0;
	const char *output;

	memset(&o, 0, sizeof o);
	memset(&res, 0, sizeof res);
	memset(&job, 0, sizeof job);
	o.sampler = NK_SAMPLER_AUTO;
	o.output = "numakit.nkp";
	opterr = 0;
	/* '+': options end at COMMAND, whose own options are its own. */
	while ((c = getopt_long(argc, argv, "+:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SAMPLER:
			if (!strcmp(optarg, "auto"))
				o.sampler = NK_SAMPLER_AUTO;
			else if (!strcmp(optarg, "hw"))
				o.sampler = NK_SAMPLER_HW;
			else if (!strcmp(optarg, "pagefault"))
				o.sampler = NK_SAMPLER_PAGEFAULT;
			else if (!strcmp(optarg, "trace"))
				o.sampler = NK_SAMPLER_TRACE;
			else if (!strcmp(optarg, "timer"))
				o.sampler = NK_SAMPLER_TIMER;
			else
				return cli_usage_error("profile", "--sampler: expected auto, hw, timer, pagefault or trace, "
						       "found '%s'", optarg);
			break;
		case OPT_RATE: {
			char *end;
			errno = 0;
			o.rate = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o.rate) || o.rate <= 0)
				return cli_usage_error("profile", "--rate: expected a positive number, found '%s'",
						       optarg);
			break;
		}
		case OPT_MAX_OVERHEAD: {
			char *end;
			errno = 0;
			o.max_overhead = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o.max_overhead) || o.max_overhead <= 0)
				return cli_usage_error("profile",
						       "--max-overhead: expected a positive percentage, found '%s'", optarg);
			break;
		}
		case OPT_MIN_SIZE: {
			uint64_t min_size;
			if (cli_parse_size(optarg, &min_size) || min_size > SIZE_MAX)
				return cli_usage_error("profile", "--min-size: expected a size like 4096, 64K or 1M, "
						       "found '%s'", optarg);
			o.min_size = (size_t)min_size;
			break;
		}
		case OPT_ROI:
			o.roi = 1;
			break;
		case OPT_SMALL:
			o.small_blocks = 1;
			break;
		case OPT_NO_MPI_TRAFFIC:
			o.no_mpi_traffic = 1;
			break;
		case OPT_RUNS: {
			char *end;
			errno = 0;
			long n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > MAX_RUNS)
				return cli_usage_error("profile", "--runs: expected a number of runs 1..%d, found '%s'",
						       MAX_RUNS, optarg);
			runs = (int)n;
			break;
		}
		case 'o':
			if (!*optarg)
				return cli_usage_error("profile", "--output: empty file name");
			o.output = optarg;
			break;
		case OPT_NO_JOB:
			no_job = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(cli_profile_usage, stdout);
			return cli_finish_stdout("profile", CLI_EXIT_OK);
		default:
			return cli_bad_option("profile", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("profile", "no command given");

	/* Under a launcher each rank writes its own profile into the job's folder; the ranks other than 0
	 * say only what goes wrong (a job of thousands of ranks prints one summary, not thousands). */
	output = o.output;
	if (!no_job && (rc = job_setup(&job, output, quiet))) {
		job_free(&job);
		return rc;
	}
	if (job.on) {
		o.output = job.path;
		o.job = &job.pj;
		o.pagefault_env = (const char *const *)job.pf_env;
	}
	/* Before the program runs: an output that cannot be written would cost the whole run and leave the
	 * parts folder behind.  Under a launcher o.output is this rank's file in the job's folder. */
	char *prog = find_program(argv[optind]);
	if ((rc = cli_check_output("profile", "--output", o.output)) ||
	    (rc = cli_check_distinct("profile", "--output", o.output, (const char *const *)&prog, 1, NULL, NULL))) {
		free(prog);
		job_free(&job);
		return rc;
	}
	free(prog);
	int speak = !quiet && (!job.on || job.info.rank == 0);
	ps.show = speak && isatty(STDERR_FILENO);
	o.progress = on_progress;
	o.progress_arg = &ps;
	install_forwarding();
	if (runs > 1) {
		int sampler = NK_SAMPLER_AUTO;
		rc = profile_runs(&o, argv + optind, runs, !speak, &ps, job.tag, &sampler);
		if (job.on && speak && sampler == NK_SAMPLER_PAGEFAULT)
			mpi_env_said(&job);
		if (job.on && speak && rc != CLI_EXIT_USAGE)
			job_said(&job, output);
		job_free(&job);
		return rc;
	}
	rc = nk_profile_run(NULL, &o, argv + optind, &res, &err);
	child_pid = 0;
	if (ps.shown)
		fputs("\r\033[K", stderr);
	if (rc) {
		cli_error("profile", "%s%s", job.tag, err.message[0] ? err.message : nk_strerror(rc));
		job_free(&job);
		return rc == NK_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	}
	if (res.warnings[0])
		cli_error("profile", "%swarning: %s", job.tag, res.warnings);
	if (speak) {
		fprintf(stderr, "profile: %s%llu samples from %d process%s (sampler %s%s%s) written to %s", job.tag,
			res.samples, res.processes, res.processes == 1 ? "" : "es", sampler_text(res.sampler),
			res.fallback[0] ? ", fallback: " : "", res.fallback, o.output);
		if (!job.on)
			fprintf(stderr, "; see: numakit report %s", o.output);
		fputc('\n', stderr);
		if (job.on && res.sampler == NK_SAMPLER_PAGEFAULT)
			mpi_env_said(&job);
		if (job.on)
			job_said(&job, output);
	}
	job_free(&job);
	if (res.term_signal > 0)
		return 128 + res.term_signal;
	if (res.exit_status < 0)
		return CLI_EXIT_FAIL;
	return res.exit_status;
}
