/*
 * numakit run: start an unmodified program under a process-wide memory
 * policy and cpu set.  Both are set on this process (the library checks
 * them against the machine model and makes the system calls), then the
 * command replaces it: set_mempolicy and sched_setaffinity survive exec and
 * are inherited by every thread and child of the program.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char cli_run_usage[] =
	"usage: numakit run [--membind NODES | --interleave NODES | --weighted NODE=W,...\n"
	"                    | --preferred NODE | --preferred-many NODES] [--cpus CPUS]\n"
	"                   [--dry-run [--fsroot DIR | --xml FILE | --synthetic DESC | --machine FILE]]\n"
	"                   [--] COMMAND [ARG...]\n"
	"\n"
	"Run COMMAND with a process-wide memory policy and/or cpu set, inherited by\n"
	"all its threads and children.  Node and cpu lists look like \"0-3,8\".\n"
	"\n"
	"Options:\n"
	"  --membind NODES         allocate only on NODES\n"
	"  --interleave NODES      spread pages round robin over NODES\n"
	"  --weighted NODE=W,...   weighted interleave (Linux >= 6.9) with the system's\n"
	"                          weights, which must equal W (numakit never changes\n"
	"                          them); a plain node list takes the system's weights\n"
	"  --preferred NODE        prefer NODE, fall back to others when it is full\n"
	"  --preferred-many NODES  prefer the set NODES (Linux >= 5.15)\n"
	"  --cpus CPUS             run only on CPUS\n"
	"  --dry-run               check the options against the machine and print what\n"
	"                          would be done, without running COMMAND\n"
	"  --fsroot DIR, --xml FILE, --synthetic DESC, --machine FILE\n"
	"                          check against that machine (only with --dry-run)\n"
	"  -h, --help              show this help\n"
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
	int dry_run;
	struct cli_source src;
};

enum { OPT_MEMBIND = 256, OPT_INTERLEAVE, OPT_WEIGHTED, OPT_PREFERRED, OPT_PREFERRED_MANY, OPT_CPUS,
       OPT_DRY_RUN, OPT_FSROOT, OPT_XML, OPT_SYNTHETIC, OPT_MACHINE };

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

static int set_kind(struct run_opts *o, int kind, const char *opt, const char *arg)
{
	if (o->kind >= 0)
		return cli_usage_error("run", "%s and %s cannot be combined: choose one policy", o->kind_opt, opt);
	o->kind = kind;
	o->kind_opt = opt;
	if (kind == NK_PROCESS_WEIGHTED)
		return parse_weighted(arg, o);
	return parse_ids(opt, arg, &o->nodes, &o->n);
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
	default:
		return "default";
	}
}

static void print_plan(const struct run_opts *o, char **cmd)
{
	char *list;

	if (o->kind >= 0) {
		printf("memory policy: %s", policy_word(o->kind));
		if (o->weights) {
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
	printf("command:");
	for (; *cmd; cmd++)
		printf(" %s", *cmd);
	printf("\n");
}

int cli_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "membind", required_argument, NULL, OPT_MEMBIND },
		{ "interleave", required_argument, NULL, OPT_INTERLEAVE },
		{ "weighted", required_argument, NULL, OPT_WEIGHTED },
		{ "preferred", required_argument, NULL, OPT_PREFERRED },
		{ "preferred-many", required_argument, NULL, OPT_PREFERRED_MANY },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "fsroot", required_argument, NULL, OPT_FSROOT },
		{ "xml", required_argument, NULL, OPT_XML },
		{ "synthetic", required_argument, NULL, OPT_SYNTHETIC },
		{ "machine", required_argument, NULL, OPT_MACHINE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run_opts o = { .kind = -1, .src = CLI_SOURCE_INIT };
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	unsigned flags;
	int c, rc = 0;
	char **cmd;

	opterr = 0;
	/* '+': the first non-option word is the command; its options are its own. */
	while (!rc && (c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_MEMBIND:
			rc = set_kind(&o, NK_PROCESS_MEMBIND, "--membind", optarg);
			break;
		case OPT_INTERLEAVE:
			rc = set_kind(&o, NK_PROCESS_INTERLEAVE, "--interleave", optarg);
			break;
		case OPT_WEIGHTED:
			rc = set_kind(&o, NK_PROCESS_WEIGHTED, "--weighted", optarg);
			break;
		case OPT_PREFERRED:
			rc = set_kind(&o, NK_PROCESS_PREFERRED, "--preferred", optarg);
			if (!rc && o.n != 1)
				rc = cli_usage_error("run", "--preferred takes one node (--preferred-many takes a set)");
			break;
		case OPT_PREFERRED_MANY:
			rc = set_kind(&o, NK_PROCESS_PREFERRED_MANY, "--preferred-many", optarg);
			break;
		case OPT_CPUS:
			free(o.cpus);
			o.cpus = NULL;
			rc = parse_ids("--cpus", optarg, &o.cpus, &o.ncpus);
			break;
		case OPT_DRY_RUN:
			o.dry_run = 1;
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
	if (optind == argc) {
		rc = cli_usage_error("run", "no command given");
		goto out;
	}
	cmd = argv + optind;
	if (o.src.kind >= 0 && !o.dry_run) {
		rc = cli_usage_error("run", "%s needs --dry-run: a policy can only be set on this machine", o.src.opt);
		goto out;
	}
	rc = cli_load_machine(&o.src, "run", &m);
	if (rc)
		goto out;
	flags = o.dry_run ? NK_PROCESS_DRY_RUN : 0;
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
	if (o.dry_run) {
		print_plan(&o, cmd);
		rc = cli_finish_stdout("run", CLI_EXIT_OK);
		goto out;
	}
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
	return rc;
}
