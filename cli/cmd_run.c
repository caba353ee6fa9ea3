/* SPDX-License-Identifier: BSD-3-Clause
 * numakit run: start an unmodified program under a process-wide memory
 * policy and cpu set.  Both are set on this process (the library checks
 * them against the machine model and makes the system calls), then the
 * command replaces it: set_mempolicy and sched_setaffinity survive exec and
 * are inherited by every thread and child of the program.
 *
 * --pin computes a thread placement (nk_placement_build) and hands it to the
 * program's OpenMP runtime through the standard variables OMP_PLACES (one
 * place per thread, in thread order) and OMP_PROC_BIND=close (thread i on
 * place i), with the process cpu set narrowed to the placement's cpus.  The
 * runtime-specific variables that would override or be overridden by them
 * (KMP_AFFINITY, GOMP_CPU_AFFINITY) are refused rather than silently lost:
 * see docs/threads.md, "numakit run --pin".
 *
 * --plan FILE loads and checks a placement plan (nk_advice_load,
 * nk_advice_check: a bad plan stops here with status 2), takes its thread
 * pinning through the --pin machinery unless --pin or --cpus were given,
 * and preloads the plan runtime libnumakit_plan.so (preload/advice/), which
 * applies the plan's per-variable policies inside the program: see
 * docs/plan-runtime.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "nodespec.h"

const char cli_run_usage[] =
	"usage: numakit run [--membind NODES | --interleave NODES | --weighted NODE=W,...\n"
	"                    | --preferred NODE | --preferred-many NODES]\n"
	"                   [--cpus CPUS | --pin SPEC [--threads N]]\n"
	"                   [--plan FILE [--log FILE]] [--rank-map FILE] [-q]\n"
	"                   [--dry-run [--json] [--fsroot DIR | --xml FILE\n"
	"                              | --synthetic DESC | --machine FILE]]\n"
	"                   [--] COMMAND [ARG...]\n"
	"       numakit run [numactl's options] [--] COMMAND [ARG...]\n"
	"       numakit run -s | -H\n"
	"\n"
	"Run COMMAND with a process-wide memory policy and/or cpu set, inherited by\n"
	"all its threads and children.  Node and cpu lists look like \"0-3,8\".\n"
	"\n"
	"Options:\n"
	"  -m, --membind NODES     allocate only on NODES\n"
	"  -i, --interleave NODES  spread pages round robin over NODES\n"
	"  --weighted NODE=W,...   weighted interleave (Linux >= 6.9) with the system's\n"
	"                          weights, which must equal W (numakit never changes\n"
	"                          them); a plain node list takes the system's weights\n"
	"  -w, --weighted-interleave NODES\n"
	"                          weighted interleave over NODES with the system's\n"
	"                          weights (numactl's meaning; as --weighted NODES)\n"
	"  -p, --preferred NODE    prefer NODE, fall back to others when it is full\n"
	"  -P, --preferred-many NODES\n"
	"                          prefer the set NODES (Linux >= 5.15)\n"
	"  -l, --localalloc        allocate on the node the thread runs on\n"
	"  --cpus CPUS, -C, --physcpubind CPUS\n"
	"                          run only on CPUS\n"
	"  -N, --cpunodebind NODES run only on the allowed cpus of NODES\n"
	"  --pin SPEC              pin the OpenMP threads: SPEC is compact, scatter,\n"
	"                          sharing:FILE, file:FILE or a cpu list in thread order\n"
	"                          (\"3,1,0-2\"); sets OMP_PLACES, OMP_PROC_BIND=close,\n"
	"                          OMP_NUM_THREADS (when unset) and the cpu set\n"
	"  --threads N             team size for --pin (default: OMP_NUM_THREADS when\n"
	"                          set, else one thread per cpu of SPEC)\n"
	"  --plan FILE             apply placement plan FILE (numakit advise) inside the\n"
	"                          program: its variables' policies and its pinning\n"
	"                          (unless --pin or --cpus is given); a summary of what\n"
	"                          was applied goes to stderr at exit\n"
	"  --log FILE              with --plan: write one line per action to FILE\n"
	"  --rank-map FILE         in an MPI job: run this rank on the node the map gives\n"
	"                          it (`numakit advise --ranks`: an Open MPI rankfile or\n"
	"                          its --json), its cpus and memory bound there\n"
	"  -q, --quiet             no informational messages on stderr (what the rank\n"
	"                          map gave, the job's layout notes)\n"
	"  --dry-run               check the options against the machine and print what\n"
	"                          would be done, without running COMMAND (in a job:\n"
	"                          the layout of every local rank of this host)\n"
	"  --json                  with --dry-run: the same as one JSON object\n"
	"  --fsroot DIR, --xml FILE, --synthetic DESC, --machine FILE\n"
	"                          check against that machine (only with --dry-run),\n"
	"                          or show it (-H)\n"
	"  -s, --show              print this process's memory policy and cpus, once the\n"
	"                          options before it are set, as numactl --show\n"
	"  -H, --hardware          print the nodes, their cpus, sizes and distances as\n"
	"                          numactl --hardware (of the machine --fsroot, --xml,\n"
	"                          ... before it chose, if any)\n"
	"                          With -s or -H, as in numactl, the words after it are\n"
	"                          not read and no COMMAND is run\n"
	"  -h, --help              show this help\n"
	"\n"
	"The short options and --physcpubind, --cpunodebind, --localalloc, --show,\n"
	"--hardware and --weighted-interleave are numactl's, with numactl's meaning\n"
	"(numactl(8)); as in numactl, the last cpu option wins.  NODES and CPUS may also\n"
	"be numactl's forms: all (what this process may use), +LIST (positions in that,\n"
	"from 0), !LIST (all but LIST), !+LIST, and for NODES same (the node list given\n"
	"before).  numactl's --all, --balancing, --cpubind and shared-memory options\n"
	"(--shm, --shmid, --file, --offset, --length, --strict, --shmmode, --huge,\n"
	"--touch, --dump, --dump-nodes) are refused with status 2.\n"
	"\n"
	"In an MPI job (mpirun/mpiexec/srun -n N numakit run ... -- ./app) NODES, CPUS\n"
	"and SPEC may be rank-relative: the local ranks of a host share its nodes and\n"
	"cpus out evenly, and each rank places itself inside its share:\n"
	"  rank                    the share's memory nodes (--preferred: the first),\n"
	"                          or its cpus (--cpus), or compact in it (--pin)\n"
	"  rank:LIST               positions in the share: --membind rank:0 is the\n"
	"                          rank's own first node, --cpus rank:0-1 its first two\n"
	"                          cpus, --weighted rank:0=2,1=1, --pin rank:1,0\n"
	"  rank:STRATEGY           --pin rank:compact, rank:scatter, rank:sharing:FILE\n"
	"A rank-relative option also keeps the rank on its share's cpus (unless --cpus\n"
	"or --pin say otherwise); --plan in a job pins inside the share.  The rank comes\n"
	"from the launcher (Open MPI, MPICH/Intel MPI Hydra, PMIx, Slurm); a launcher's\n"
	"binding is kept, never widened.\n"
	"\n"
	"Exit status: COMMAND's status; 1 runtime failure (the kernel refused or lacks\n"
	"the policy), 2 bad usage or bad input (unknown, memoryless or disallowed node\n"
	"or cpu), 126 COMMAND could not be run, 127 COMMAND was not found.\n"
	"See numakit-run(1), also for OpenMP and MPI.\n";

struct run_opts {
	int kind; /* enum nk_process_policy, -1: none */
	const char *kind_opt;
	int *nodes;
	unsigned *weights;
	size_t n;
	int *cpus;
	size_t ncpus;
	const char *pin;
	int threads; /* --threads, 0 = not given */
	int threads_from_plan; /* threads is the plan's pin.threads, not --threads */
	int dry_run;
	struct cli_source src;
	const char *plan;   /* --plan FILE */
	const char *log;    /* --log FILE */
	char *pin_owned;    /* --pin spec taken from the plan */
	char *sharing_tmp;  /* temporary sharing matrix file of the plan's pinning */
	const char *rel_nodes; /* the policy's rank-relative spec ("rank", "rank:LIST"), mapped after detection */
	const char *rel_cpus;  /* --cpus rank[:LIST] */
	char *pin_rank;        /* --pin rank[:...] mapped into the share */
	int json;              /* --json (with --dry-run) */
	/* numactl's options (numactl(8)); their node and cpu forms are cli/nodespec.c's */
	const char *nspec;      /* the policy's nodes in numactl's forms (all, +N, !N): resolved on the machine */
	const char *cpu_opt;    /* the option that chose the cpus (the last one wins, as in numactl) */
	const char *cpuspec;    /* -C/--physcpubind in numactl's forms */
	const char *cpunodes;   /* -N/--cpunodebind: run on the allowed cpus of these nodes */
	const char *last_nodes; /* the last node list given: what numactl's "same" repeats */
	int info;               /* 's' (-s/--show) or 'H' (-H/--hardware): the last option read; 0: none */
	const char *rank_map;   /* --rank-map FILE: this rank's slot of the map (run_rankmap.c) */
	int quiet;              /* -q/--quiet */
	int *plan_share;        /* a share-relative --plan in a job: this rank's share (its cpus' nodes, increasing) */
	size_t n_plan_share;
	int *plan_from;         /* the share the plan refers to (the profiled first rank's) */
	size_t n_plan_from;
	nk_advice *plan_read;   /* the plan as plan_share_of read it, for prepare_plan (read once) */
};

enum { OPT_WEIGHTED = 256, OPT_CPUS,
       OPT_DRY_RUN, OPT_FSROOT, OPT_XML, OPT_SYNTHETIC, OPT_MACHINE, OPT_PIN, OPT_THREADS, OPT_PLAN, OPT_LOG,
       OPT_JSON, OPT_RANK_MAP };

#define PLAN_LIB "libnumakit_plan.so"

static int has_plan_runtime(const char *dir, char *path, size_t cap)
{
	struct stat st;

	if (!dir || !*dir || snprintf(path, cap, "%s/%s", dir, PLAN_LIB) >= (int)cap)
		return 0;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Where libnumakit_plan.so is (as numakit cc finds the profiler runtime):
 * next to the libnumakit this command runs with, the build tree when that
 * libnumakit is the build tree's, the configured libdir, then the build tree
 * this command was built in.  Into @p path; 0 when none has it.
 */
static int plan_runtime(char *path, size_t cap)
{
	char dir[PATH_MAX];
	Dl_info info;

	if (dladdr((void *)nk_version, &info) && info.dli_fname && info.dli_fname[0] == '/') {
		snprintf(dir, sizeof dir, "%s", info.dli_fname);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			if (has_plan_runtime(dir, path, cap))
				return 1;
#if defined(NK_BUILD_LIBDIR) && defined(NK_PLAN_BUILD_DIR)
			if (!strcmp(dir, NK_BUILD_LIBDIR) && has_plan_runtime(NK_PLAN_BUILD_DIR, path, cap))
				return 1;
#endif
		}
	}
#ifdef NK_INSTALL_LIBDIR
	if (has_plan_runtime(NK_INSTALL_LIBDIR, path, cap))
		return 1;
#endif
#ifdef NK_PLAN_BUILD_DIR
	if (has_plan_runtime(NK_PLAN_BUILD_DIR, path, cap))
		return 1;
#endif
	return 0;
}

/*
 * Load --plan and check it against @p m; take its pinning unless --pin or
 * --cpus were given.  Status 2 for a bad plan (message printed).
 */
static int prepare_plan(struct run_opts *o, const nk_machine *m, nk_advice **out)
{
	nk_error err = { 0, "" };
	char *spec = NULL, *sharing = NULL;
	int threads = 0, rc;

	if (o->plan_read) { /* read already (plan_share_of) */
		*out = o->plan_read;
		o->plan_read = NULL;
		rc = 0;
	} else {
		rc = nk_advice_load(o->plan, out, &err);
	}
	if (rc) {
		/* the library's message names the file */
		if (err.message[0])
			cli_error("run", "--plan: %s", err.message);
		else
			cli_error("run", "--plan %s: %s", o->plan, nk_strerror(rc));
		return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	}
	rc = nk_advice_check(*out, m, &err);
	if (rc) {
		cli_error("run", "--plan %s does not fit this machine: %s", o->plan,
			  err.message[0] ? err.message : nk_strerror(rc));
		return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	}
	if (o->n_plan_share) { /* a share-relative plan in a job: carried onto this rank's share */
		rc = nk_advice_resolve_share(*out, m, o->plan_share, o->n_plan_share, &err);
		if (rc) {
			cli_error("run", "--plan %s: %s", o->plan, err.message[0] ? err.message : nk_strerror(rc));
			return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		}
	}
	rc = nk_advice_pin(*out, &spec, &threads, &sharing, &err);
	if (rc) {
		cli_error("run", "--plan %s: pinning: %s", o->plan, err.message[0] ? err.message : nk_strerror(rc));
		return rc == NK_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	}
	if (!spec)
		goto out;
	if (o->pin || o->ncpus) {
		fprintf(stderr, "numakit run: %s given: the plan's pinning (%s) is not used\n",
			o->pin ? "--pin" : o->cpu_opt ? o->cpu_opt : "--cpus", spec);
		goto out;
	}
	/* The user pins the OpenMP threads already: theirs wins, as --pin's would (--pin refuses these). */
	static const char *const omp_vars[] = { "OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY" };
	for (size_t i = 0; i < sizeof omp_vars / sizeof omp_vars[0]; i++) {
		const char *v = getenv(omp_vars[i]);
		if (v && *v) {
			fprintf(stderr, "numakit run: %s=%s is set: the plan's pinning (%s) is not used\n", omp_vars[i], v,
				spec);
			goto out;
		}
	}
	if (sharing) {
		const char *tmp = getenv("TMPDIR");
		char path[PATH_MAX];
		int fd;
		size_t len = strlen(sharing);

		snprintf(path, sizeof path, "%s/numakit-plan-sharing-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		fd = mkstemp(path);
		if (fd < 0 || write(fd, sharing, len) != (ssize_t)len || close(fd)) {
			cli_error("run", "cannot write the plan's sharing matrix to %s: %s", path, strerror(errno));
			if (fd >= 0)
				unlink(path);
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		o->sharing_tmp = strdup(path);
		if (asprintf(&o->pin_owned, "sharing:%s", path) < 0)
			o->pin_owned = NULL;
	} else {
		o->pin_owned = spec;
		spec = NULL;
	}
	if (!o->pin_owned) {
		cli_error("run", "out of memory");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	o->pin = o->pin_owned;
	if (!o->threads && threads > 0 && !getenv("OMP_NUM_THREADS")) {
		o->threads = threads;
		o->threads_from_plan = 1;
	}
out:
	free(spec);
	free(sharing);
	return rc;
}

/* Environment of the plan runtime: NK_PLAN, NK_PLAN_LOG (emptied now), LD_PRELOAD with the runtime last. */
static int export_plan(const struct run_opts *o)
{
	char lib[PATH_MAX], plan[PATH_MAX], log[PATH_MAX];
	const char *old = getenv("LD_PRELOAD");
	char *preload = NULL;

	if (!plan_runtime(lib, sizeof lib)) {
		cli_error("run", "cannot find %s next to libnumakit"
#ifdef NK_INSTALL_LIBDIR
			  ", in " NK_INSTALL_LIBDIR
#endif
#ifdef NK_PLAN_BUILD_DIR
			  " or in the build tree " NK_PLAN_BUILD_DIR
#endif
			  " (is numakit installed completely?)", PLAN_LIB);
		return CLI_EXIT_FAIL;
	}
	if (!realpath(o->plan, plan)) {
		cli_error("run", "--plan %s: %s", o->plan, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if (o->log) {
		int fd = open(o->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			cli_error("run", "--log %s: %s", o->log, strerror(errno));
			return CLI_EXIT_USAGE;
		}
		close(fd);
		if (!realpath(o->log, log)) {
			cli_error("run", "--log %s: %s", o->log, strerror(errno));
			return CLI_EXIT_USAGE;
		}
	}
	/* Appended: a profiler runtime already in LD_PRELOAD (re-profiling a planned run) stays first. */
	if (old && *old ? asprintf(&preload, "%s:%s", old, lib) < 0 : !(preload = strdup(lib))) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	char *share = o->n_plan_share ? cli_job_ids(o->plan_share, o->n_plan_share) : NULL;
	if (o->n_plan_share && !share) {
		cli_error("run", "out of memory");
		free(preload);
		return CLI_EXIT_FAIL;
	}
	int bad = setenv("NK_PLAN", plan, 1) || (o->log ? setenv("NK_PLAN_LOG", log, 1) : unsetenv("NK_PLAN_LOG")) ||
		  (share ? setenv("NK_PLAN_SHARE", share, 1) : unsetenv("NK_PLAN_SHARE")) ||
		  setenv("LD_PRELOAD", preload, 1);
	free(share);
	if (bad) {
		cli_error("run", "cannot set the plan runtime's environment: %s", strerror(errno));
		free(preload);
		return CLI_EXIT_FAIL;
	}
	free(preload);
	return 0;
}

/* A list option into a malloc'ed array; message printed on failure. */
static int parse_ids(const char *opt, const char *text, int **out, size_t *n)
{
	nk_error err = { 0, "" };
	int k = nk_parse_list(text, NULL, 0, &err);
	int *ids;

	if (k < 0)
		return cli_usage_error("run", "%s: %s", opt, err.message);
	if (k == 0)
		return cli_usage_error("run", "%s: empty list", opt);
	ids = malloc((size_t)k * sizeof *ids);
	if (!ids) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	nk_parse_list(text, ids, (size_t)k, NULL);
	*out = ids;
	*n = (size_t)k;
	return 0;
}

static int parse_uint(const char *s, const char *end, long max, long *v)
{
	long x = 0;

	if (s == end)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		x = x * 10 + (*s - '0');
		if (x > max)
			return -1;
	}
	*v = x;
	return 0;
}

/* "0=3,1=1" (or a plain node list: the system's weights). */
static int parse_weighted(const char *text, struct run_opts *o)
{
	size_t cap = 1;
	const char *p;

	if (!strchr(text, '='))
		return parse_ids("--weighted", text, &o->nodes, &o->n);
	for (p = text; *p; p++)
		if (*p == ',')
			cap++;
	o->nodes = calloc(cap, sizeof *o->nodes);
	o->weights = calloc(cap, sizeof *o->weights);
	if (!o->nodes || !o->weights) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (p = text;;) {
		const char *end = strchr(p, ',');
		const char *eq;
		long node, w;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || parse_uint(p, eq, 65535, &node) || parse_uint(eq + 1, end, 1000, &w))
			return cli_usage_error("run", "--weighted: expected NODE=WEIGHT, found '%.*s'",
					       (int)(end - p), p);
		for (size_t i = 0; i < o->n; i++)
			if (o->nodes[i] == (int)node)
				return cli_usage_error("run", "--weighted: node %ld given twice", node);
		o->nodes[o->n] = (int)node;
		o->weights[o->n] = (unsigned)w;
		o->n++;
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

/* numactl's "same": the node list given before (NULL: none, message printed). */
static const char *same_nodes(struct run_opts *o, const char *opt, const char *arg)
{
	const char *text = cli_spec_same(arg, &o->last_nodes);

	if (!text)
		cli_usage_error("run", "%s same: no node list comes before it (numactl's \"same\" repeats the "
				       "previous one)", opt);
	return text;
}

static int set_kind(struct run_opts *o, int kind, const char *opt, const char *arg)
{
	if (o->kind >= 0)
		return cli_usage_error("run", "%s and %s cannot be combined: choose one policy", o->kind_opt, opt);
	o->kind = kind;
	o->kind_opt = opt;
	if (kind == NK_PROCESS_LOCAL)
		return 0;
	if (cli_job_is_relative(arg)) { /* mapped into the rank's share once the machine is known */
		o->rel_nodes = arg;
		return 0;
	}
	if (!(kind == NK_PROCESS_WEIGHTED && strchr(arg, '=')) && !(arg = same_nodes(o, opt, arg)))
		return CLI_EXIT_USAGE;
	if (cli_spec_is_numactl(arg)) { /* all, +N, !N: resolved against the allowed nodes */
		o->nspec = arg;
		return 0;
	}
	if (kind == NK_PROCESS_WEIGHTED)
		return parse_weighted(arg, o);
	return parse_ids(opt, arg, &o->nodes, &o->n);
}

/* One of numactl's forms against @p allowed (k ids, or a negative NK_E*) into a new array. */
static int spec_ids(const char *opt, const char *text, const char *what, int *allowed, int k, int **out,
		    size_t *n)
{
	char why[256];
	int got;

	if (k < 0 || !(*out = malloc((size_t)(k > 0 ? k : 1) * sizeof **out))) {
		free(allowed);
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	got = cli_spec_parse(text, what, allowed, (size_t)k, *out, why, sizeof why);
	free(allowed);
	if (got < 0)
		return cli_usage_error("run", "%s: %s", opt, why);
	if (got == 0)
		return cli_usage_error("run", "%s %s: no %s is left", opt, text, what);
	*n = (size_t)got;
	return 0;
}

/*
 * numactl's node and cpu forms (all, +N, !N) mean something only against the
 * sets this process may use, known once the machine is: the policy's nodes,
 * -C's cpus, and -N's nodes, whose allowed cpus the command then runs on.
 */
static int resolve_numactl(struct run_opts *o, const nk_machine *m)
{
	int *allowed = NULL, *nodes = NULL;
	size_t nn = 0;
	int k, rc = 0;

	if (o->nspec) {
		k = cli_numactl_mem_nodes(m, &allowed);
		if ((rc = spec_ids(o->kind_opt, o->nspec, "node", allowed, k, &o->nodes, &o->n)))
			return rc;
		if (o->kind == NK_PROCESS_PREFERRED && o->n != 1)
			return cli_usage_error("run", "%s %s: %zu nodes; --preferred takes one node (--preferred-many "
						      "takes a set)", o->kind_opt, o->nspec, o->n);
	}
	if (o->cpuspec) {
		k = cli_numactl_cpus(m, &allowed);
		if ((rc = spec_ids(o->cpu_opt, o->cpuspec, "cpu", allowed, k, &o->cpus, &o->ncpus)))
			return rc;
	}
	if (o->cpunodes) {
		if (cli_spec_is_numactl(o->cpunodes)) {
			k = cli_numactl_cpu_nodes(m, &allowed);
			rc = spec_ids(o->cpu_opt, o->cpunodes, "node", allowed, k, &nodes, &nn);
		} else {
			rc = parse_ids(o->cpu_opt, o->cpunodes, &nodes, &nn);
		}
		if (!rc)
			rc = cli_numactl_node_cpus(m, nodes, nn, &o->cpus, &o->ncpus);
		free(nodes);
	}
	return rc;
}

/* A cpu option (--cpus, -C, -N): the last one given wins, as in numactl. */
static void reset_cpus(struct run_opts *o, const char *opt)
{
	free(o->cpus);
	o->cpus = NULL;
	o->ncpus = 0;
	o->rel_cpus = o->cpuspec = o->cpunodes = NULL;
	o->cpu_opt = opt;
}

/* NK_E* of the library -> exit status: the user's input, or the system. */
static int status_of(int code)
{
	return code == NK_EINVAL || code == NK_ENODEV ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

static const char *policy_word(int kind)
{
	switch (kind) {
	case NK_PROCESS_MEMBIND:
		return "membind";
	case NK_PROCESS_INTERLEAVE:
		return "interleave";
	case NK_PROCESS_WEIGHTED:
		return "weighted";
	case NK_PROCESS_PREFERRED:
		return "preferred";
	case NK_PROCESS_PREFERRED_MANY:
		return "preferred-many";
	case NK_PROCESS_LOCAL:
		return "local";
	default:
		return "default";
	}
}

/* Exit status of a --pin failure: the user's input (spec, file, list), or the system. */
static int pin_status(int code)
{
	switch (code) {
	case NK_EPARSE:
	case NK_ENOENT:
	case NK_EIO:
	case NK_EVERSION:
	case NK_EINVAL:
	case NK_ENODEV:
		return CLI_EXIT_USAGE;
	default:
		return CLI_EXIT_FAIL;
	}
}

/* A positive team size from text ("8"; for OMP_NUM_THREADS also "8,4": the outer level). */
static int parse_team(const char *text, int nested, long *out)
{
	const char *end = text + strlen(text);
	const char *comma = nested ? strchr(text, ',') : NULL;

	while (*text == ' ' || *text == '\t')
		text++;
	if (comma)
		end = comma;
	while (end > text && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (parse_uint(text, end, 65536, out) || *out < 1)
		return -1;
	return 0;
}

/*
 * Whether KMP_AFFINITY names a binding type (compact, scatter, explicit, none,
 * ...).  Tested with LLVM's libomp 14: a type makes it ignore OMP_PLACES and
 * OMP_PROC_BIND ("OMP: Warning #182: OMP_PLACES: ignored because
 * KMP_AFFINITY has been defined"); the modifiers alone (verbose, warnings,
 * respect, granularity=...) leave them in force.
 */
static int kmp_affinity_binds(const char *v)
{
	static const char *const modifiers[] = { "verbose", "noverbose", "warnings", "nowarnings",
						 "respect", "norespect" };

	while (*v) {
		size_t n = strcspn(v, ",");
		int known = n > 12 && !strncmp(v, "granularity=", 12);

		for (size_t i = 0; i < sizeof modifiers / sizeof *modifiers && !known; i++)
			known = strlen(modifiers[i]) == n && !strncasecmp(v, modifiers[i], n);
		if (!known && n)
			return 1;
		v += n + (v[n] == ',');
	}
	return 0;
}

/* The pinning environment the program gets. */
struct pin_plan {
	nk_placement *pl;
	char *places;      /* OMP_PLACES value */
	int set_nthreads;  /* OMP_NUM_THREADS was unset: numakit sets it */
	char nthreads[16];
};

static int strcaseeq_trim(const char *a, const char *b)
{
	size_t n = strlen(b);

	while (*a == ' ' || *a == '\t')
		a++;
	if (strncasecmp(a, b, n))
		return 0;
	for (a += n; *a == ' ' || *a == '\t'; a++)
		;
	return !*a;
}

/*
 * OMP_PLACES lists one place per thread, so a large team makes it long: the kernel refuses an
 * environment string above MAX_ARG_STRLEN (32 pages, 128 KiB with 4 KiB pages) and all of argv and
 * the environment above ARG_MAX (sysconf: a quarter of the stack limit), and execve would then fail
 * with E2BIG after everything was set up ("Argument list too long", exit 126).  Refused here instead,
 * naming what chose the team size.  0 or CLI_EXIT_USAGE (message printed).
 */
static int places_fit(const char *places, int threads, const char *why)
{
	long page = sysconf(_SC_PAGESIZE), arg_max = sysconf(_SC_ARG_MAX);
	size_t one = strlen("OMP_PLACES=") + strlen(places) + 1, max_one = (size_t)(page > 0 ? page : 4096) * 32;
	size_t all = one + 2 * sizeof(char *);

	if (one > max_one)
		return cli_usage_error("run", "--pin: %d threads (%s) make OMP_PLACES %zu bytes long, more than the "
				       "%zu the kernel takes for one environment variable: use fewer threads", threads,
				       why, one, max_one);
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "OMP_PLACES=", 11))
			all += strlen(*e) + 1 + sizeof(char *);
	if (arg_max > 0 && all > (size_t)arg_max)
		return cli_usage_error("run", "--pin: %d threads (%s) make the environment %zu bytes long with "
				       "OMP_PLACES, more than the %ld the kernel takes for a program's arguments and "
				       "environment: use fewer threads", threads, why, all, arg_max);
	return 0;
}

/*
 * Compute the placement of --pin on @p m and what the OpenMP runtime must be
 * told; o->cpus becomes the placement's cpus (the process cpu set).
 * Returns 0 or an exit status (message printed).
 */
static int prepare_pin(struct run_opts *o, const nk_machine *m, struct pin_plan *pp)
{
	const char *env_n = getenv("OMP_NUM_THREADS");
	const char *v;
	nk_error err = { 0, "" };
	long n = o->threads, from_env = 0;
	int k, rc, *all;
	size_t u = 0;

	/* Runtime-specific binding variables would fight the standard ones (docs/threads.md). */
	if ((v = getenv("KMP_AFFINITY")) && kmp_affinity_binds(v))
		return cli_usage_error("run", "--pin: KMP_AFFINITY=%s is set; LLVM's libomp would bind by it and "
				       "ignore OMP_PLACES/OMP_PROC_BIND: unset it or drop --pin", v);
	if ((v = getenv("GOMP_CPU_AFFINITY")))
		return cli_usage_error("run", "--pin: GOMP_CPU_AFFINITY=%s is set; LLVM's libomp would bind by it "
				       "and GCC's libgomp ignore it: unset it or drop --pin", v);
	if ((v = getenv("OMP_PROC_BIND")) && !strcaseeq_trim(v, "close"))
		return cli_usage_error("run", "--pin: OMP_PROC_BIND=%s is set; --pin needs OMP_PROC_BIND=close: "
				       "unset it", v);
	if (env_n && parse_team(env_n, 1, &from_env))
		return cli_usage_error("run", "--pin: OMP_NUM_THREADS=%s: expected a positive number of threads",
				       env_n);
	if (n && from_env && n != from_env)
		return cli_usage_error("run", "--threads %ld and OMP_NUM_THREADS=%s disagree: give one", n, env_n);
	if (!n)
		n = from_env;
	rc = nk_placement_build(m, o->pin, (int)n, &pp->pl, &err);
	if (rc) {
		cli_error("run", "--pin %s: %s", o->pin, err.message[0] ? err.message : nk_strerror(rc));
		return pin_status(rc);
	}
	k = nk_placement_num_threads(pp->pl);
	if (!(all = malloc((size_t)k * sizeof *all)) ||
	    !(pp->places = malloc((size_t)nk_placement_omp_places(pp->pl, NULL, 0) + 1))) {
		free(all);
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	nk_placement_omp_places(pp->pl, pp->places, (size_t)nk_placement_omp_places(pp->pl, NULL, 0) + 1);
	if ((v = getenv("OMP_PLACES")) && strcmp(v, pp->places)) {
		free(all);
		return cli_usage_error("run", "--pin: OMP_PLACES=%s is set; --pin sets it: unset it", v);
	}
	if ((rc = places_fit(pp->places, k, o->threads ? (o->threads_from_plan ? "the plan's pinning" : "--threads") :
					    from_env ? "OMP_NUM_THREADS" : "one per cpu"))) {
		free(all);
		return rc;
	}
	/* the process cpu set: the placement's cpus, increasing and distinct */
	nk_placement_cpus(pp->pl, all, (size_t)k);
	for (int i = 0; i < k; i++) {
		size_t j = 0;

		while (j < u && all[j] != all[i])
			j++;
		if (j == u)
			all[u++] = all[i];
	}
	for (size_t i = 1; i < u; i++)
		for (size_t j = i; j > 0 && all[j - 1] > all[j]; j--) {
			int t = all[j];
			all[j] = all[j - 1];
			all[j - 1] = t;
		}
	o->cpus = all;
	o->ncpus = u;
	pp->set_nthreads = env_n == NULL;
	snprintf(pp->nthreads, sizeof pp->nthreads, "%d", k);
	return 0;
}

static int export_pin(const struct pin_plan *pp)
{
	if (setenv("OMP_PLACES", pp->places, 1) || setenv("OMP_PROC_BIND", "close", 1) ||
	    (pp->set_nthreads && setenv("OMP_NUM_THREADS", pp->nthreads, 1))) {
		cli_error("run", "cannot set the OpenMP environment: %s", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static void print_plan(const struct run_opts *o, const struct pin_plan *pp, char **cmd)
{
	char *list;

	if (o->kind >= 0) {
		printf("memory policy: %s", policy_word(o->kind));
		if (!o->n) {
			/* default, local: no nodes */
		} else if (o->weights) {
			for (size_t i = 0; i < o->n; i++)
				printf("%s%d=%u", i ? "," : " ", o->nodes[i], o->weights[i]);
		} else {
			list = cli_list_alloc(o->nodes, o->n);
			printf(" %s", list ? list : "?");
			free(list);
		}
		printf("\n");
	} else {
		printf("memory policy: unchanged\n");
	}
	if (o->ncpus) {
		list = cli_list_alloc(o->cpus, o->ncpus);
		printf("cpus: %s\n", list ? list : "?");
		free(list);
	} else {
		printf("cpus: unchanged\n");
	}
	if (pp->pl) {
		int n = nk_placement_num_threads(pp->pl);
		char *order = malloc((size_t)nk_placement_format(pp->pl, NULL, 0) + 1);

		if (order)
			nk_placement_format(pp->pl, order, (size_t)nk_placement_format(pp->pl, NULL, 0) + 1);
		printf("placement: %s, %d thread%s%s\n", o->sharing_tmp ? "sharing (the plan's matrix)" : o->pin, n,
		       n == 1 ? "" : "s",
		       nk_placement_oversubscribed(pp->pl) ? " (oversubscribed: some cpus run several threads)" : "");
		printf("thread cpus: %s\n", order ? order : "?");
		free(order);
		printf("OMP_PLACES=%s\n", pp->places);
		printf("OMP_PROC_BIND=close\n");
		if (pp->set_nthreads)
			printf("OMP_NUM_THREADS=%s\n", pp->nthreads);
		else
			printf("OMP_NUM_THREADS: unchanged (%s)\n", getenv("OMP_NUM_THREADS"));
	}
	printf("command:");
	for (; *cmd; cmd++)
		printf(" %s", *cmd);
	printf("\n");
}

static void sort_ids(int *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

/*
 * Inside a job: detect the rank and map the rank-relative specs into its
 * share (run_job.c).  Plain runs are not touched: only a rank-relative
 * option, or --plan under a launcher with several local ranks, makes a run
 * job-aware (*in_job).  *pin_machine: the machine --pin and the plan's
 * pinning are built on (the share), or NULL.
 */
/* The share a --plan refers to (nk_advice_share) into o->plan_from; the plan read is kept for
 * prepare_plan (o->plan_read).  A plan that does not load is left to prepare_plan's messages.  0 or
 * CLI_EXIT_FAIL. */
static int plan_share_of(struct run_opts *o)
{
	int n;

	if (!o->plan || o->plan_read || nk_advice_load(o->plan, &o->plan_read, NULL))
		return 0;
	n = nk_advice_share(o->plan_read, NULL, 0);
	if (n > 0 && !(o->plan_from = malloc((size_t)n * sizeof(int)))) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	if (n > 0)
		o->n_plan_from = (size_t)nk_advice_share(o->plan_read, o->plan_from, (size_t)n);
	return 0;
}

/* A share-relative plan in a job: this rank's share is the nodes of its cpus, as `numakit profile`
 * recorded the profiled ranks' (RUN job "cpus").  0 or exit status (message printed). */
static int plan_share_prepare(struct run_opts *o, const nk_machine *m, const struct cli_job *job)
{
	int *v = malloc((job->ncpus ? job->ncpus : 1) * sizeof(int));
	size_t n = 0;

	if (!v) {
		cli_error("run", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (size_t i = 0; i < job->ncpus; i++) {
		nk_cpu_info ci;
		if (nk_machine_cpu_info(m, job->cpus[i], &ci) || ci.node < 0)
			continue;
		v[n++] = ci.node;
	}
	sort_ids(v, n);
	size_t d = 0;
	for (size_t i = 0; i < n; i++)
		if (!d || v[i] != v[d - 1])
			v[d++] = v[i];
	o->plan_share = v;
	o->n_plan_share = d;
	if (d != o->n_plan_from) {
		char *have = cli_job_ids(v, d), *want = cli_job_ids(o->plan_from, o->n_plan_from);
		cli_error("run", "--plan %s was made for the ranks of a job on %zu node%s each (the profiled first rank's: "
				 "%s); this rank's share has %zu (nodes %s): run the job with as many ranks per host as it was "
				 "profiled with", o->plan, o->n_plan_from, o->n_plan_from == 1 ? "" : "s",
			  want ? want : "?", d, have ? have : "?");
		free(have);
		free(want);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

static int job_prepare(struct run_opts *o, const nk_machine *m, struct cli_job *job, int *in_job,
		       const nk_machine **pin_machine)
{
	int relative = o->rel_nodes || o->rel_cpus || cli_job_is_relative(o->pin);
	int rc;

	if ((rc = plan_share_of(o)))
		return rc;
	if (!relative && o->plan) {
		extern char **environ;
		nk_job_info info;
		/* one rank per host still has a share when the plan refers to one (the host's allowed cpus) */
		if (nk_job_detect((const char *const *)environ, &info) || (info.local_size < 2 && !o->n_plan_from))
			return 0;
	} else if (!relative) {
		return 0;
	}
	*in_job = 1;
	if ((rc = cli_job_resolve(job, m, o->quiet)))
		return rc;
	if (o->rel_nodes) {
		if (o->kind == NK_PROCESS_WEIGHTED)
			rc = cli_job_weighted(job, o->rel_nodes, &o->nodes, &o->weights, &o->n);
		else
			rc = cli_job_nodes(job, o->kind_opt, o->rel_nodes, &o->nodes, &o->n);
		if (rc)
			return rc;
		if (o->kind == NK_PROCESS_PREFERRED && o->n != 1) {
			if (strcmp(o->rel_nodes, "rank"))
				return cli_usage_error("run", "--preferred %s: --preferred takes one node (rank:N)", o->rel_nodes);
			o->n = 1; /* "rank": the share's first memory node */
		}
	}
	if (o->rel_cpus && (rc = cli_job_cpus(job, "--cpus", o->rel_cpus, &o->cpus, &o->ncpus)))
		return rc;
	if (o->rel_cpus)
		sort_ids(o->cpus, o->ncpus);
	if (cli_job_is_relative(o->pin)) {
		if ((rc = cli_job_pin(job, m, o->pin, &o->pin_rank, pin_machine)))
			return rc;
		o->pin = o->pin_rank;
	} else if (o->plan && !o->pin && !o->ncpus) {
		if ((rc = cli_job_pin(job, m, NULL, &o->pin_rank, pin_machine)))
			return rc;
		if (job->lead && !o->quiet && !o->n_plan_from)
			fprintf(stderr, "numakit run: --plan in a job: the plan's pinning is confined to each rank's share; "
					"its variables' node lists are applied as written, not mapped into the share\n");
	}
	if (o->plan && o->n_plan_from) {
		if ((rc = plan_share_prepare(o, m, job)))
			return rc;
		if (job->lead && !o->quiet) {
			char *from = cli_job_ids(o->plan_from, o->n_plan_from);
			fprintf(stderr, "numakit run: --plan in a job: the plan's node ids refer to the profiled first rank's "
					"share (nodes %s); each rank applies them to its own share of %zu node%s\n",
				from ? from : "?", o->n_plan_from, o->n_plan_from == 1 ? "" : "s");
			free(from);
		}
	}
	return 0;
}

/* --rank-map against the other options: it chooses the memory nodes and the cpus.  0 or exit status. */
static int rankmap_check(const struct run_opts *o)
{
	if (!*o->rank_map)
		return cli_usage_error("run", "--rank-map: empty file name");
	if (o->kind >= 0)
		return cli_usage_error("run", "--rank-map binds the memory to the rank's node: it cannot go with %s",
				       o->kind_opt);
	if (o->cpu_opt)
		return cli_usage_error("run", "--rank-map chooses the rank's cpus: it cannot go with %s", o->cpu_opt);
	if (o->info)
		return cli_usage_error("run", "--rank-map cannot go with %s", o->info == 's' ? "--show" : "--hardware");
	if (o->pin && !cli_job_is_relative(o->pin) && *o->pin >= '0' && *o->pin <= '9')
		return cli_usage_error("run", "--pin %s with --rank-map: a cpu list would leave the rank's node; give "
					      "positions in it (--pin rank:%s) or a strategy (compact, scatter, ...)",
				       o->pin, o->pin);
	return cli_check_input("run", "--rank-map", o->rank_map, 0);
}

/*
 * --rank-map: this rank's slot of the map (run_rankmap.c) is its share: memory bound to the slot's nodes,
 * the cpus the slot's, or --pin / the plan's pinning inside them (the machine restricted to the slot, as
 * in a job's share).
 */
static int rankmap_prepare(struct run_opts *o, const nk_machine *m, struct cli_job *job,
			   const nk_machine **pin_machine)
{
	int rc = cli_rankmap_resolve(o->rank_map, m, o->src.kind < 0, o->quiet, job);

	if (rc)
		return rc;
	o->kind = NK_PROCESS_MEMBIND;
	o->kind_opt = "--rank-map";
	if (!(o->nodes = malloc(job->nmem * sizeof *o->nodes)))
		goto nomem;
	memcpy(o->nodes, job->mem, job->nmem * sizeof *o->nodes);
	o->n = job->nmem;
	if (o->pin) {
		char *spec = NULL;
		if (!cli_job_is_relative(o->pin) && asprintf(&spec, "rank:%s", o->pin) < 0)
			goto nomem;
		rc = cli_job_pin(job, m, spec ? spec : o->pin, &o->pin_rank, pin_machine);
		free(spec);
		if (rc)
			return rc;
		o->pin = o->pin_rank;
	} else if (o->plan) {
		/* the plan's pinning, inside the slot; without one the slot's cpus (cli_cmd_run) */
		return cli_job_pin(job, m, NULL, &o->pin_rank, pin_machine);
	}
	return 0;
nomem:
	cli_error("run", "out of memory");
	return CLI_EXIT_FAIL;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_ids(const int *v, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? ", " : "", v[i]);
	printf("]");
}

/* --dry-run --json: the job's layout and what this rank would get (docs/run.md). */
static void print_json(const struct run_opts *o, const struct pin_plan *pp, const struct cli_job *job,
		       const struct cli_job *mapped, const nk_advice *plan, char **cmd)
{
	printf("{\"format\": \"numakit-run\", \"version\": 1, \"job\": ");
	if (job)
		cli_job_print(job, 1);
	else
		printf("null");
	printf(", \"rank_map\": ");
	if (o->rank_map) {
		printf("{\"file\": ");
		json_str(o->rank_map);
		printf(", \"rank\": %d, \"cpus\": ", mapped->row);
		json_ids(mapped->cpus, mapped->ncpus);
		printf(", \"memory_nodes\": ");
		json_ids(mapped->mem, mapped->nmem);
		printf("}");
	} else {
		printf("null");
	}
	printf(", \"memory_policy\": ");
	if (o->kind >= 0) {
		printf("{\"kind\": \"%s\", \"nodes\": ", policy_word(o->kind));
		json_ids(o->nodes, o->n);
		if (o->weights) {
			printf(", \"weights\": [");
			for (size_t i = 0; i < o->n; i++)
				printf("%s%u", i ? ", " : "", o->weights[i]);
			printf("]");
		}
		printf("}");
	} else {
		printf("null");
	}
	printf(", \"cpus\": ");
	if (o->ncpus)
		json_ids(o->cpus, o->ncpus);
	else
		printf("null");
	printf(", \"thread_cpus\": ");
	if (pp->pl) {
		int n = nk_placement_num_threads(pp->pl);
		printf("[");
		for (int t = 0; t < n; t++)
			printf("%s%d", t ? ", " : "", nk_placement_cpu(pp->pl, t));
		printf("]");
	} else {
		printf("null");
	}
	printf(", \"plan\": ");
	if (plan)
		json_str(o->plan);
	else
		printf("null");
	printf(", \"plan_share\": ");
	if (plan && o->n_plan_share) {
		printf("{\"from\": ");
		json_ids(o->plan_from, o->n_plan_from);
		printf(", \"to\": ");
		json_ids(o->plan_share, o->n_plan_share);
		printf("}");
	} else {
		printf("null");
	}
	printf(", \"command\": [");
	for (int i = 0; cmd[i]; i++) {
		printf("%s", i ? ", " : "");
		json_str(cmd[i]);
	}
	printf("]}\n");
}

int cli_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "membind", required_argument, NULL, 'm' },
		{ "interleave", required_argument, NULL, 'i' },
		{ "weighted", required_argument, NULL, OPT_WEIGHTED },
		{ "weighted-interleave", required_argument, NULL, 'w' },
		{ "preferred", required_argument, NULL, 'p' },
		{ "preferred-many", required_argument, NULL, 'P' },
		{ "localalloc", no_argument, NULL, 'l' },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "physcpubind", required_argument, NULL, 'C' },
		{ "cpunodebind", required_argument, NULL, 'N' },
		{ "show", no_argument, NULL, 's' },
		{ "hardware", no_argument, NULL, 'H' },
		/* numactl's options numakit refuses (cli_numactl_refuse), so that they are named, not unknown */
		{ "all", no_argument, NULL, 'a' },
		{ "balancing", no_argument, NULL, 'b' },
		{ "cpubind", required_argument, NULL, 'c' },
		{ "shm", required_argument, NULL, 'S' },
		{ "shmid", required_argument, NULL, 'I' },
		{ "file", required_argument, NULL, 'f' },
		{ "offset", required_argument, NULL, 'o' },
		{ "length", required_argument, NULL, 'L' },
		{ "strict", no_argument, NULL, 't' },
		{ "shmmode", required_argument, NULL, 'M' },
		{ "huge", no_argument, NULL, 'u' },
		{ "touch", no_argument, NULL, 'T' },
		{ "dump", no_argument, NULL, 'd' },
		{ "dump-nodes", no_argument, NULL, 'D' },
		{ "pin", required_argument, NULL, OPT_PIN },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "fsroot", required_argument, NULL, OPT_FSROOT },
		{ "xml", required_argument, NULL, OPT_XML },
		{ "synthetic", required_argument, NULL, OPT_SYNTHETIC },
		{ "machine", required_argument, NULL, OPT_MACHINE },
		{ "plan", required_argument, NULL, OPT_PLAN },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "rank-map", required_argument, NULL, OPT_RANK_MAP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/*
	 * '+': the first non-option word is the command; its options are its own.
	 * The short options are numactl's (numactl(8)), with numactl's meaning.
	 */
	static const char shorts[] = "+:hqm:i:w:p:P:lC:N:sHabc:S:I:f:o:L:tM:uTdD";
	struct run_opts o = { .kind = -1, .src = CLI_SOURCE_INIT };
	struct pin_plan pp = { 0 };
	struct cli_job job = { 0 };
	const nk_machine *pin_machine = NULL;
	int in_job = 0;
	nk_advice *plan = NULL;
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	unsigned flags;
	int c, rc = 0;
	char **cmd;

	opterr = 0;
	while (!rc && !o.info && (c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			rc = set_kind(&o, NK_PROCESS_MEMBIND, "--membind", optarg);
			break;
		case 'i':
			rc = set_kind(&o, NK_PROCESS_INTERLEAVE, "--interleave", optarg);
			break;
		case OPT_WEIGHTED:
			rc = set_kind(&o, NK_PROCESS_WEIGHTED, "--weighted", optarg);
			break;
		case 'w':
			/* numactl's meaning: a node set, the system's weights */
			if (strchr(optarg, '='))
				rc = cli_usage_error("run", "--weighted-interleave takes nodes and uses the system's weights "
							    "(as numactl's); --weighted NODE=W,... checks the weights");
			else
				rc = set_kind(&o, NK_PROCESS_WEIGHTED, "--weighted-interleave", optarg);
			break;
		case 'p':
			rc = set_kind(&o, NK_PROCESS_PREFERRED, "--preferred", optarg);
			if (!rc && !o.rel_nodes && !o.nspec && o.n != 1)
				rc = cli_usage_error("run", "--preferred takes one node (--preferred-many takes a set)");
			break;
		case 'P':
			rc = set_kind(&o, NK_PROCESS_PREFERRED_MANY, "--preferred-many", optarg);
			break;
		case 'l':
			rc = set_kind(&o, NK_PROCESS_LOCAL, "--localalloc", NULL);
			break;
		case OPT_CPUS:
		case 'C':
			reset_cpus(&o, c == 'C' ? "--physcpubind" : "--cpus");
			if (cli_job_is_relative(optarg))
				o.rel_cpus = optarg;
			else if (cli_spec_is_numactl(optarg))
				o.cpuspec = optarg; /* all, +N, !N: resolved against the allowed cpus */
			else
				rc = parse_ids(o.cpu_opt, optarg, &o.cpus, &o.ncpus);
			break;
		case 'N': {
			const char *text = same_nodes(&o, "--cpunodebind", optarg);

			reset_cpus(&o, "--cpunodebind");
			if (!text)
				rc = CLI_EXIT_USAGE;
			o.cpunodes = text; /* the nodes' allowed cpus, once the machine is known */
			break;
		}
		case 's':
		case 'H':
			o.info = c; /* numactl prints and exits here: the words after it are not read */
			break;
		case 'a':
		case 'b':
		case 'c':
		case 'S':
		case 'I':
		case 'f':
		case 'o':
		case 'L':
		case 't':
		case 'M':
		case 'u':
		case 'T':
		case 'd':
		case 'D':
			for (const struct option *op = opts; op->name; op++)
				if (op->val == c) {
					char name[32];

					snprintf(name, sizeof name, "--%s", op->name);
					rc = cli_numactl_refuse(name);
					break;
				}
			break;
		case OPT_PIN:
			o.pin = optarg;
			break;
		case OPT_THREADS: {
			long t = 0;

			if (parse_team(optarg, 0, &t))
				rc = cli_usage_error("run", "--threads: expected a number of threads in 1..65536, found '%s'",
						     optarg);
			o.threads = (int)t;
			break;
		}
		case OPT_DRY_RUN:
			o.dry_run = 1;
			break;
		case OPT_JSON:
			o.json = 1;
			break;
		case OPT_PLAN:
			o.plan = optarg;
			break;
		case OPT_LOG:
			o.log = optarg;
			break;
		case OPT_RANK_MAP:
			o.rank_map = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case OPT_FSROOT:
			rc = cli_source_set(&o.src, "run", NK_SOURCE_FSROOT, "--fsroot", optarg);
			break;
		case OPT_XML:
			rc = cli_source_set(&o.src, "run", NK_SOURCE_XML, "--xml", optarg);
			break;
		case OPT_SYNTHETIC:
			rc = cli_source_set(&o.src, "run", NK_SOURCE_SYNTHETIC, "--synthetic", optarg);
			break;
		case OPT_MACHINE:
			rc = cli_source_set(&o.src, "run", NK_SOURCE_FILE, "--machine", optarg);
			break;
		case 'h':
			rc = cli_finish_stdout("run", cli_print_help("run"));
			goto out;
		default:
			rc = cli_bad_option("run", c, argv);
			break;
		}
	}
	if (rc)
		goto out;
	if (o.info == 's' && o.dry_run) {
		rc = cli_usage_error("run", "--show shows this process's policy and cpus: it cannot go with --dry-run");
		goto out;
	}
	if (o.info && (o.pin || o.plan)) {
		rc = cli_usage_error("run", "%s cannot go with %s", o.info == 's' ? "--show" : "--hardware",
				     o.pin ? "--pin" : "--plan");
		goto out;
	}
	if (optind == argc && !o.info) {
		rc = cli_usage_error("run", "no command given");
		goto out;
	}
	cmd = argv + optind;
	if ((o.pin && (o.ncpus || o.rel_cpus || o.cpuspec || o.cpunodes))) {
		rc = cli_usage_error("run", "--pin and %s cannot be combined: --pin chooses the cpus", o.cpu_opt);
		goto out;
	}
	if (o.threads && !o.pin) {
		rc = cli_usage_error("run", "--threads needs --pin");
		goto out;
	}
	if (o.json && !o.dry_run) {
		rc = cli_usage_error("run", "--json goes with --dry-run (it prints the layout as JSON)");
		goto out;
	}
	if (o.rank_map && (rc = rankmap_check(&o)))
		goto out;
	if (o.log && !o.plan) {
		rc = cli_usage_error("run", "--log needs --plan");
		goto out;
	}
	if (o.plan && (rc = cli_check_input("run", "--plan", o.plan, 0)))
		goto out;
	if (o.log) {
		/* --log truncates its file when the program starts: never the plan's or the machine's */
		const char *in[] = { o.plan, o.src.kind == NK_SOURCE_FILE || o.src.kind == NK_SOURCE_XML ? o.src.arg : NULL };
		if ((rc = cli_check_output("run", "--log", o.log)) ||
		    (rc = cli_check_distinct("run", "--log", o.log, in, 2, NULL, NULL)))
			goto out;
	}
	if (o.src.kind >= 0 && !o.dry_run && o.info != 'H') {
		rc = cli_usage_error("run", "%s needs --dry-run: a policy can only be set on this machine", o.src.opt);
		goto out;
	}
	rc = cli_load_machine(&o.src, "run", &m);
	if (rc)
		goto out;
	if ((rc = resolve_numactl(&o, m)))
		goto out;
	if (o.info == 'H') { /* numactl prints and exits: a command is not run */
		rc = cli_numactl_hardware(m);
		goto out;
	}
	flags = o.dry_run ? NK_PROCESS_DRY_RUN : 0;
	if (o.rank_map) {
		rc = rankmap_prepare(&o, m, &job, &pin_machine);
		/* a share-relative plan follows the rank to its slot, as it follows a rank to its share */
		if (!rc && o.plan && !(rc = plan_share_of(&o)) && o.n_plan_from)
			rc = plan_share_prepare(&o, m, &job);
	} else
		rc = job_prepare(&o, m, &job, &in_job, &pin_machine);
	if (rc)
		goto out;
	if (o.plan && (rc = prepare_plan(&o, m, &plan)))
		goto out;
	if ((in_job || o.rank_map) && !o.ncpus && !o.pin) {
		/* a rank-relative run without --cpus/--pin (or a plan without pinning) stays on its share */
		if (!(o.cpus = malloc(job.ncpus * sizeof *o.cpus))) {
			cli_error("run", "out of memory");
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		memcpy(o.cpus, job.cpus, job.ncpus * sizeof *o.cpus);
		o.ncpus = job.ncpus;
		sort_ids(o.cpus, o.ncpus);
	}
	if (o.pin) {
		rc = prepare_pin(&o, pin_machine ? pin_machine : m, &pp);
		if (o.sharing_tmp) /* read by nk_placement_build: not needed any more */
			unlink(o.sharing_tmp);
		if (rc)
			goto out;
	}
	if (o.kind >= 0) {
		rc = nk_process_set_policy(m, o.kind, o.nodes, o.weights, o.n, flags, &err);
		if (rc) {
			cli_error("run", "%s", err.message[0] ? err.message : nk_strerror(rc));
			rc = status_of(rc);
			goto out;
		}
	}
	if (o.ncpus) {
		rc = nk_process_set_cpus(m, o.cpus, o.ncpus, flags, &err);
		if (rc) {
			cli_error("run", "%s", err.message[0] ? err.message : nk_strerror(rc));
			rc = status_of(rc);
			goto out;
		}
	}
	if (o.info == 's') { /* after the options before it, as numactl -m 0 -s shows bind */
		rc = cli_numactl_show();
		goto out;
	}
	if (o.dry_run && o.json) {
		print_json(&o, &pp, in_job ? &job : NULL, o.rank_map ? &job : NULL, plan, cmd);
		rc = cli_finish_stdout("run", CLI_EXIT_OK);
		goto out;
	}
	if (o.dry_run) {
		if (in_job)
			cli_job_print(&job, 0);
		if (o.rank_map)
			printf("rank map: %s, rank %d\n", o.rank_map, job.row);
		print_plan(&o, &pp, cmd);
		if (plan)
			printf("plan: %s, %zu entr%s (applied by %s inside the program)\n", o.plan,
			       nk_advice_num_entries(plan), nk_advice_num_entries(plan) == 1 ? "y" : "ies", PLAN_LIB);
		if (plan && o.n_plan_share) {
			char *from = cli_job_ids(o.plan_from, o.n_plan_from), *to = cli_job_ids(o.plan_share, o.n_plan_share);
			printf("plan share: nodes %s (the profiled first rank's) -> this rank's nodes %s\n", from ? from : "?",
			       to ? to : "?");
			free(from);
			free(to);
		}
		rc = cli_finish_stdout("run", CLI_EXIT_OK);
		goto out;
	}
	if (pp.pl && (rc = export_pin(&pp)))
		goto out;
	if (plan && (rc = export_plan(&o)))
		goto out;
	nk_machine_free(m);
	m = NULL;
	fflush(stdout);
	execvp(cmd[0], cmd);
	rc = errno == ENOENT ? 127 : 126;
	cli_error("run", "cannot run '%s': %s", cmd[0], strerror(errno));
out:
	nk_machine_free(m);
	free(o.nodes);
	free(o.weights);
	free(o.cpus);
	free(pp.places);
	nk_placement_free(pp.pl);
	nk_advice_free(plan);
	free(o.plan_share);
	free(o.plan_from);
	nk_advice_free(o.plan_read);
	free(o.pin_owned);
	free(o.pin_rank);
	free(o.sharing_tmp);
	cli_job_free(&job);
	return rc;
}
