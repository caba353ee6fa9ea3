/* SPDX-License-Identifier: BSD-3-Clause
 * numakit bench: measure the machine (latency, bandwidth, NUMA factor per
 * cpu node x memory node) and optionally save the matrices into a machine
 * file.  The measuring is the library's (nk_bench_run); this file parses
 * options, draws the progress bar and lays the results out.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char cli_bench_usage[] =
	"usage: numakit bench [--quick] [--nodes LIST] [--size SIZE] [--repetitions N]\n"
	"                     [--json] [--save[=FILE]] [--quiet]\n"
	"       numakit bench --machine FILE [--json]\n"
	"\n"
	"Measure, for every pair of a cpu node and a memory node, the idle latency\n"
	"(dependent loads over a random cycle), read/write/copy/triad bandwidth with one\n"
	"thread and with every cpu of the node (non-temporal stores separately), access\n"
	"patterns, loaded latency and thread spread; derive the NUMA factor matrix.\n"
	"Memory is bound to its node before the first touch and its placement checked,\n"
	"and threads check where they run: a figure is never reported for memory or\n"
	"threads that were elsewhere.\n"
	"\n"
	"Options:\n"
	"  --quick           small buffer and short runs: a fast, rough look\n"
	"  --nodes LIST      measure only these nodes, e.g. 0,2 or 0-3\n"
	"  --size SIZE       buffer per memory node, e.g. 512M (default: 4 x last-level\n"
	"                    cache, 64 MiB to 1 GiB; --quick: 4 MiB, cache-sized:\n"
	"                    a check of the mechanics more than of memory)\n"
	"  --repetitions N   measured runs per figure, after one warm-up (default 5, quick 3)\n"
	"  --json            print the results as JSON (docs/bench.md)\n"
	"  --save[=FILE]     write the machine with the measured matrices to FILE\n"
	"                    (default $XDG_CONFIG_HOME/numakit/machine.json, else\n"
	"                    ~/.config/numakit/machine.json)\n"
	"  --quiet           no progress on stderr\n"
	"  --machine FILE    show the matrices saved in a machine file; measures nothing\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n"
	"See numakit-bench(1).\n";

#define CMD "bench"

struct bench_opts {
	int quick, json, quiet, save;
	const char *save_path;
	const char *machine;
	const char *nodes;
	const char *size;
	const char *reps;
};

/* ---- progress ---- */

struct prog {
	int tty;
};

static void on_progress(void *user, const nk_bench_progress *p)
{
	const struct prog *pg = user;

	if (pg->tty) {
		const int width = 24;
		int fill = p->steps ? p->step * width / p->steps : 0;
		char bar[32];

		memset(bar, '#', (size_t)fill);
		memset(bar + fill, '.', (size_t)(width - fill));
		bar[width] = '\0';
		fprintf(stderr, "\r\033[K[%s] %d/%d %s", bar, p->step + 1, p->steps, p->what);
	} else {
		fprintf(stderr, "numakit bench: [%d/%d] %s\n", p->step + 1, p->steps, p->what);
	}
	fflush(stderr);
}

/* ---- text output ---- */

typedef int (*cell_fn)(const nk_bench_results *r, int c, int m, double *v);

static int cell_latency(const nk_bench_results *r, int c, int m, double *v)
{
	nk_bench_stat s;
	int rc = nk_bench_get(r, NK_BENCH_LATENCY, NK_BENCH_ONE, c, m, &s);

	*v = s.median;
	return rc;
}

static int cell_factor(const nk_bench_results *r, int c, int m, double *v)
{
	return nk_bench_numa_factor(r, c, m, v);
}

static int cell_read_all(const nk_bench_results *r, int c, int m, double *v)
{
	nk_bench_stat s;
	int rc = nk_bench_get(r, NK_BENCH_READ, NK_BENCH_ALL, c, m, &s);

	*v = s.median;
	return rc;
}

static int cell_loaded(const nk_bench_results *r, int c, int m, double *v)
{
	nk_bench_stat s;
	int rc = nk_bench_get(r, NK_BENCH_LOADED_ALL, NK_BENCH_ONE, c, m, &s);

	*v = s.median;
	return rc;
}

static void print_matrix(const char *title, const nk_bench_results *r, const int *cn, int nc, const int *mn, int nm,
			 cell_fn fn, const char *fmt)
{
	printf("\n%s\n  cpu \\ mem", title);
	for (int j = 0; j < nm; j++)
		printf(" %9d", mn[j]);
	printf("\n");
	for (int i = 0; i < nc; i++) {
		printf("  %9d", cn[i]);
		for (int j = 0; j < nm; j++) {
			double v;

			if (fn(r, cn[i], mn[j], &v) == 0)
				printf(fmt, v);
			else
				printf(" %9s", "-");
		}
		printf("\n");
	}
}

static const char *fmt_stat(const nk_bench_stat *s, int prec, char *buf, size_t cap)
{
	snprintf(buf, cap, "%.*f [%.*f-%.*f]", prec, s->median, prec, s->min, prec, s->max);
	return buf;
}

static void print_pair(const nk_bench_results *r, int c, int m)
{
	static const struct { int metric; const char *name; } rows[] = {
		{ NK_BENCH_READ, "read" }, { NK_BENCH_WRITE, "write" }, { NK_BENCH_COPY, "copy" },
		{ NK_BENCH_TRIAD, "triad" }, { NK_BENCH_WRITE_NT, "write (nt)" }, { NK_BENCH_COPY_NT, "copy (nt)" },
		{ NK_BENCH_TRIAD_NT, "triad (nt)" },
	};
	static const struct { int metric; const char *name; } pats[] = {
		{ NK_BENCH_READ, "sequential" }, { NK_BENCH_STRIDE_LINE, "line stride" },
		{ NK_BENCH_STRIDE_PAGE, "page stride" }, { NK_BENCH_RANDOM, "random" },
	};
	nk_bench_pair info;
	nk_bench_stat s, s2;
	char a[64], b[64];

	if (nk_bench_pair_info(r, c, m, &info))
		return;
	printf("\ncpu node %d -> memory node %d: cpu %d, %d thread%s; %zu pages %s, threads %s\n", c, m, info.cpu,
	       info.threads, info.threads == 1 ? "" : "s", info.pages,
	       info.placement_verified ? "verified on node" : "NOT verified",
	       info.cpu_verified ? "verified on node" : "NOT verified");
	if (nk_bench_get(r, NK_BENCH_LATENCY, NK_BENCH_ONE, c, m, &s) == 0)
		printf("  %-12s %s ns\n", "latency", fmt_stat(&s, 1, a, sizeof a));
	if (nk_bench_get(r, NK_BENCH_LOADED_ALL, NK_BENCH_ONE, c, m, &s) == 0)
		printf("  %-12s %s ns (every cpu node on memory node %d)\n", "loaded", fmt_stat(&s, 1, a, sizeof a), m);
	if (nk_bench_get(r, NK_BENCH_LOADED_OWN, NK_BENCH_ONE, c, m, &s) == 0)
		printf("  %-12s %s ns (every cpu node on its own memory)\n", "loaded own", fmt_stat(&s, 1, a, sizeof a));
	printf("  %-12s %-28s %s\n", "MB/s", "1 thread", "all threads");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (nk_bench_get(r, rows[i].metric, NK_BENCH_ONE, c, m, &s))
			continue;
		if (nk_bench_get(r, rows[i].metric, NK_BENCH_ALL, c, m, &s2))
			snprintf(b, sizeof b, "-");
		else
			fmt_stat(&s2, 0, b, sizeof b);
		printf("  %-12s %-28s %s\n", rows[i].name, fmt_stat(&s, 0, a, sizeof a), b);
	}
	printf("  access patterns, 1 thread, MB/s (64 B per load for strided and random):\n");
	for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
		if (nk_bench_get(r, pats[i].metric, NK_BENCH_ONE, c, m, &s) == 0)
			printf("  %-12s %s\n", pats[i].name, fmt_stat(&s, 0, a, sizeof a));
}

static int print_text(const nk_bench_results *r)
{
	const nk_bench_options *o = nk_bench_used_options(r);
	int nc = nk_bench_nodes(r, NK_BENCH_CPU_NODES, NULL, 0), nm = nk_bench_nodes(r, NK_BENCH_MEM_NODES, NULL, 0);
	int *cn = malloc(sizeof(int) * (size_t)(nc + 1)), *mn = malloc(sizeof(int) * (size_t)(nm + 1));
	char sz[32], *cl, *ml;
	nk_bench_spread sp;

	if (!cn || !mn) {
		free(cn);
		free(mn);
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAIL;
	}
	nk_bench_nodes(r, NK_BENCH_CPU_NODES, cn, (size_t)nc);
	nk_bench_nodes(r, NK_BENCH_MEM_NODES, mn, (size_t)nm);
	cl = cli_list_alloc(cn, (size_t)nc);
	ml = cli_list_alloc(mn, (size_t)nm);
	printf("cpu nodes %s, memory nodes %s; %s buffer per memory node%s\n", cl ? cl : "?", ml ? ml : "?",
	       cli_fmt_size(o->size, sz, sizeof sz), o->quick ? " (quick)" : "");
	printf("figures: median of %d runs after %d warm-up%s; [min-max] in the per-pair tables\n", o->repetitions,
	       o->warmups, o->warmups == 1 ? "" : "s");
	free(cl);
	free(ml);
	for (int i = 0; i < nk_bench_num_notes(r); i++)
		printf("note: %s\n", nk_bench_note(r, i));

	print_matrix("Idle latency, ns per access", r, cn, nc, mn, nm, cell_latency, " %9.1f");
	print_matrix("NUMA factor (latency / latency to the cpu node's own memory)", r, cn, nc, mn, nm, cell_factor,
		     " %9.2f");
	print_matrix("Read bandwidth, all cpus of the cpu node, MB/s (off the diagonal: interconnect)", r, cn, nc, mn,
		     nm, cell_read_all, " %9.0f");
	print_matrix("Loaded latency, ns: every cpu node at once on the memory node", r, cn, nc, mn, nm, cell_loaded,
		     " %9.1f");

	printf("\nLocal bandwidth per memory node (read, all cpus), MB/s\n");
	for (int j = 0; j < nm; j++) {
		int from;
		double v;

		if (nk_bench_local_bandwidth(r, mn[j], &from, &v) == 0)
			printf("  node %d: %9.0f%s", mn[j], v, from == mn[j] ? "\n" : "");
		if (nk_bench_local_bandwidth(r, mn[j], &from, &v) == 0 && from != mn[j])
			printf("  (from node %d, the nearest with cpus)\n", from);
	}
	printf("\nThread spread: two writers, each on its own local memory, MB/s together\n");
	for (int k = 0; k < 2; k++) {
		char a[64];

		if (nk_bench_get_spread(r, k, &sp) == 0)
			printf("  %-9s cpus %d,%d on nodes %d,%d: %s\n", k ? "two nodes" : "one node", sp.cpus[0], sp.cpus[1],
			       sp.nodes[0], sp.nodes[1], fmt_stat(&sp.mbs, 0, a, sizeof a));
		else
			printf("  %-9s not measured (see notes)\n", k ? "two nodes" : "one node");
	}
	for (int i = 0; i < nc; i++)
		for (int j = 0; j < nm; j++)
			print_pair(r, cn[i], mn[j]);
	free(cn);
	free(mn);
	return CLI_EXIT_OK;
}

/* ---- a saved machine file ---- */

static int show_saved(const struct bench_opts *bo)
{
	static const struct { int kind; const char *title; const char *fmt; } kinds[] = {
		{ NK_MATRIX_LATENCY_NS, "Idle latency, ns per access", " %9.1f" },
		{ NK_MATRIX_BANDWIDTH_MBS, "Read bandwidth, all cpus of the cpu node, MB/s", " %9.0f" },
		{ NK_MATRIX_NUMA_FACTOR, "NUMA factor", " %9.2f" },
	};
	struct cli_source src = { NK_SOURCE_FILE, bo->machine, "--machine" };
	nk_machine *m = NULL;
	int rc, n, any = 0;

	if ((rc = cli_load_machine(&src, CMD, &m)))
		return rc;
	n = nk_machine_num_nodes(m);
	if (bo->json) {
		char *s = NULL;

		if (nk_machine_to_json(m, 0, &s)) {
			nk_machine_free(m);
			cli_error(CMD, "out of memory");
			return CLI_EXIT_FAIL;
		}
		printf("%s\n", s);
		free(s);
		nk_machine_free(m);
		return CLI_EXIT_OK;
	}
	printf("measurements saved in %s\n", bo->machine);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		int have = 0;
		double v;

		for (int i = 0; i < n && !have; i++)
			for (int j = 0; j < n && !have; j++)
				have = nk_machine_get_matrix(m, kinds[k].kind, nk_machine_node_id(m, i),
							     nk_machine_node_id(m, j), &v) == 0;
		if (!have)
			continue;
		any = 1;
		printf("\n%s\n  cpu \\ mem", kinds[k].title);
		for (int j = 0; j < n; j++)
			printf(" %9d", nk_machine_node_id(m, j));
		printf("\n");
		for (int i = 0; i < n; i++) {
			printf("  %9d", nk_machine_node_id(m, i));
			for (int j = 0; j < n; j++) {
				if (nk_machine_get_matrix(m, kinds[k].kind, nk_machine_node_id(m, i), nk_machine_node_id(m, j),
							  &v) == 0)
					printf(kinds[k].fmt, v);
				else
					printf(" %9s", "-");
			}
			printf("\n");
		}
	}
	if (!any)
		printf("(none: run 'numakit bench --save' to measure this machine)\n");
	nk_machine_free(m);
	return CLI_EXIT_OK;
}

/* ---- saving ---- */

static int save(nk_machine *m, const nk_bench_results *r, const char *given)
{
	char *path = given ? strdup(given) : cli_default_machine_file(1);
	nk_error err = { 0, "" };
	int rc;

	if (!path) {
		cli_error(CMD, "out of memory");
		return CLI_EXIT_FAIL;
	}
	rc = nk_bench_results_to_machine(r, m);
	if (rc >= 0)
		rc = nk_machine_save(m, path, &err);
	if (rc < 0) {
		cli_error(CMD, "%s: %s", path, err.message[0] ? err.message : nk_strerror(rc));
		free(path);
		return CLI_EXIT_FAIL;
	}
	fprintf(stderr, "numakit bench: measured matrices saved in %s\n", path);
	free(path);
	return CLI_EXIT_OK;
}

int cli_cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "repetitions", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "save", optional_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'Q' },
		{ "machine", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_opts bo = { 0 };
	nk_bench_options o;
	nk_machine *m = NULL;
	nk_bench_results *r = NULL;
	nk_error err = { 0, "" };
	struct prog pg;
	int c, rc, *nodes = NULL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'q': bo.quick = 1; break;
		case 'n': bo.nodes = optarg; break;
		case 's': bo.size = optarg; break;
		case 'r': bo.reps = optarg; break;
		case 'j': bo.json = 1; break;
		case 'S': bo.save = 1; bo.save_path = optarg; break;
		case 'Q': bo.quiet = 1; break;
		case 'm': bo.machine = optarg; break;
		case 'h': return cli_finish_stdout(CMD, cli_print_help(CMD));
		default: return cli_bad_option(CMD, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (bo.save && bo.save_path && !*bo.save_path)
		return cli_usage_error(CMD, "--save= needs a file name");
	if (bo.machine) {
		if (bo.quick || bo.nodes || bo.size || bo.reps || bo.save)
			return cli_usage_error(CMD, "--machine shows saved measurements; it takes no measuring options");
		return cli_finish_stdout(CMD, show_saved(&bo));
	}
	if (bo.save) { /* before measuring: a file that cannot be written must not cost the run */
		char *dflt = bo.save_path ? NULL : cli_default_machine_file(1);
		int bad;

		if (!bo.save_path && !dflt) {
			cli_error(CMD, "out of memory");
			return CLI_EXIT_FAIL;
		}
		bad = cli_check_output(CMD, "--save", bo.save_path ? bo.save_path : dflt);
		free(dflt);
		if (bad)
			return bad;
	}

	nk_bench_options_init(&o);
	o.quick = bo.quick;
	if (bo.size && cli_parse_size(bo.size, &o.size))
		return cli_usage_error(CMD, "--size '%s' is not a size (e.g. 512M, 1G)", bo.size);
	if (bo.size && !o.size)
		return cli_usage_error(CMD, "--size must be more than 0");
	if (bo.reps) {
		char *end;
		long v = strtol(bo.reps, &end, 10);

		if (*end || end == bo.reps || v < 1 || v > 1000)
			return cli_usage_error(CMD, "--repetitions '%s' is not a count from 1 to 1000", bo.reps);
		o.repetitions = (int)v;
	}
	if (bo.nodes) {
		int n = nk_parse_list(bo.nodes, NULL, 0, &err);

		if (n < 0)
			return cli_usage_error(CMD, "--nodes: %s", err.message);
		if (n == 0)
			return cli_usage_error(CMD, "--nodes '%s' names no node", bo.nodes);
		nodes = malloc(sizeof(int) * (size_t)n);
		if (!nodes) {
			cli_error(CMD, "out of memory");
			return CLI_EXIT_FAIL;
		}
		nk_parse_list(bo.nodes, nodes, (size_t)n, NULL);
		o.nodes = nodes;
		o.nnodes = (size_t)n;
	}

	if (nk_machine_load_live(&m, &err)) {
		cli_error(CMD, "live machine: %s", err.message[0] ? err.message : "cannot read");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	/* Everything the options check refuses is the user's to fix. */
	rc = nk_bench_options_check(m, &o, &err);
	if (rc) {
		rc = cli_usage_error(CMD, "%s", err.message[0] ? err.message : nk_strerror(rc));
		goto out;
	}
	pg.tty = isatty(STDERR_FILENO);
	rc = nk_bench_run(m, &o, bo.quiet ? NULL : on_progress, &pg, &r, &err);
	if (pg.tty && !bo.quiet)
		fprintf(stderr, "\r\033[K");
	if (rc) {
		cli_error(CMD, "%s", err.message[0] ? err.message : nk_strerror(rc));
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (bo.json) {
		char *s = NULL;

		if (nk_bench_results_to_json(r, 0, &s)) {
			cli_error(CMD, "out of memory");
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		printf("%s\n", s);
		free(s);
		rc = CLI_EXIT_OK;
	} else {
		rc = print_text(r);
	}
	if (!rc && bo.save)
		rc = save(m, r, bo.save_path);
	rc = cli_finish_stdout(CMD, rc);
out:
	nk_bench_results_free(r);
	nk_machine_free(m);
	free(nodes);
	return rc;
}
