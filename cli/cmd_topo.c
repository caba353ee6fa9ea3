/* SPDX-License-Identifier: BSD-3-Clause
 * numakit topo: show a machine's memory topology, as a person wants to see it
 * at a glance, or as the machine file (--json) for tools.
 *
 * Everything printed comes from the public accessors of nk_machine; this file
 * only lays it out.  The layout is pinned by the golden tests in tests/cli/:
 * change it on purpose, re-bless, and review the diff.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_topo_usage[] =
	"usage: numakit topo [--json] [--no-caches] [--save FILE]\n"
	"                    [--fsroot DIR | --xml FILE | --synthetic DESC | --machine FILE]\n"
	"\n"
	"Show a machine's NUMA topology: nodes with their cpus and memory, the distance\n"
	"matrix and nearest nodes, caches and the cpus sharing them, what this process\n"
	"may use, and the kernel settings that move memory behind a program's back.\n"
	"Without a source option, the live machine is shown.\n"
	"\n"
	"Options:\n"
	"  --json            print the machine file (JSON) instead of the text report\n"
	"  --no-caches       leave the caches out of the text report\n"
	"  --save FILE       write the machine file to FILE (no text report is printed)\n"
	"  --fsroot DIR      read a captured /sys and /proc tree rooted at DIR\n"
	"  --xml FILE        read an hwloc XML topology (lstopo FILE.xml)\n"
	"  --synthetic DESC  build a machine from a description, e.g.\n"
	"                    \"nodes=4 cores=2 smt=2 mem=4G dist=10:21 l3=16M\"\n"
	"  --machine FILE    read a machine file written by --save\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n"
	"See numakit-topo(1) for the output and the synthetic description grammar.\n";

struct topo_opts {
	int json;
	int no_caches;
	const char *save;
	struct cli_source src;
};

/* ---- small helpers ---- */

static int allowed_cpus_fn(const nk_machine *m, int unused, int *ids, size_t cap)
{
	return nk_machine_allowed_cpus(m, ids, cap);
}

static int allowed_nodes_fn(const nk_machine *m, int unused, int *ids, size_t cap)
{
	return nk_machine_allowed_nodes(m, ids, cap);
}

static int ndigits(long v)
{
	int d = v < 0 ? 2 : 1;

	while (v >= 10 || v <= -10) {
		v /= 10;
		d++;
	}
	return d;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Number of distinct values in v[0..n) (sorts v); values < 0 are not counted. */
static int count_distinct(int *v, int n)
{
	int k = 0;

	qsort(v, (size_t)n, sizeof *v, cmp_int);
	for (int i = 0; i < n; i++)
		if (v[i] >= 0 && (i == 0 || v[i] != v[i - 1]))
			k++;
	return k;
}

/*
 * An hwloc XML file records no free memory, and the API has no "unknown"
 * for it (the library reports 0), so say "unknown" rather than "0 B".
 */
static int free_unknown(const nk_machine *m)
{
	return nk_machine_source(m, NULL) == NK_SOURCE_XML;
}

static const char *fmt_free(const nk_machine *m, uint64_t bytes, char *buf, size_t cap)
{
	if (free_unknown(m) && bytes == 0) {
		snprintf(buf, cap, "unknown");
		return buf;
	}
	return cli_fmt_mem(bytes, buf, cap);
}

/* ---- header ---- */

static void print_source(const nk_machine *m)
{
	const char *detail = "";
	int kind = nk_machine_source(m, &detail);

	switch (kind) {
	case NK_SOURCE_LIVE:
		printf("source:   live machine\n");
		break;
	case NK_SOURCE_FSROOT:
		printf("source:   captured tree (fsroot) %s\n", detail);
		break;
	case NK_SOURCE_XML:
		printf("source:   hwloc XML %s\n", detail);
		break;
	case NK_SOURCE_SYNTHETIC:
		printf("source:   synthetic \"%s\"\n", detail);
		break;
	case NK_SOURCE_FILE:
		printf("source:   machine file %s\n", detail);
		break;
	default:
		printf("source:   unknown (%d) %s\n", kind, detail);
		break;
	}
}

static int print_header(const nk_machine *m)
{
	int nnodes = nk_machine_num_nodes(m), ncpus = nk_machine_num_cpus(m);
	int memless = 0, cpuless = 0, npkg = 0, nhuge, ncores;
	uint64_t tot = 0, fre = 0, *huge = NULL;
	int *pkgs = NULL;
	char a[32], b[32];
	int rc = 0;

	for (int i = 0; i < nnodes; i++) {
		int id = nk_machine_node_id(m, i), fl = nk_machine_node_flags(m, id);
		uint64_t t = 0, f = 0;

		if (fl >= 0 && !(fl & NK_NODE_HAS_MEMORY))
			memless++;
		if (fl >= 0 && !(fl & NK_NODE_HAS_CPUS))
			cpuless++;
		if (nk_machine_node_memory(m, id, &t, &f) == 0) {
			tot += t;
			fre += f;
		}
	}
	pkgs = malloc(((size_t)ncpus + 1) * sizeof *pkgs);
	if (!pkgs) {
		rc = NK_ENOMEM;
		goto out;
	}
	for (int i = 0; i < ncpus; i++) {
		nk_cpu_info ci;

		pkgs[i] = nk_machine_cpu_info(m, nk_machine_cpu_id(m, i), &ci) == 0 ? ci.package : -1;
	}
	npkg = count_distinct(pkgs, ncpus);

	print_source(m);
	printf("nodes:    %d", nnodes);
	if (memless || cpuless) {
		printf(" (");
		if (memless)
			printf("%d without memory%s", memless, cpuless ? ", " : "");
		if (cpuless)
			printf("%d without cpus", cpuless);
		printf(")");
	}
	ncores = nk_machine_num_cores(m);
	printf("\ncpus:     %d online cpu%s (hardware threads) on %d core%s", ncpus, ncpus == 1 ? "" : "s",
	       ncores, ncores == 1 ? "" : "s");
	if (npkg > 0)
		printf(", %d package%s", npkg, npkg == 1 ? "" : "s");
	printf("\nmemory:   %s total, ", cli_fmt_mem(tot, a, sizeof a));
	if (free_unknown(m) && fre == 0)
		printf("free unknown\n");
	else
		printf("%s free\n", cli_fmt_mem(fre, b, sizeof b));

	printf("pages:    %s base", cli_fmt_size(nk_machine_page_size(m), a, sizeof a));
	nhuge = nk_machine_huge_page_sizes(m, NULL, 0);
	if (nhuge > 0) {
		huge = malloc((size_t)nhuge * sizeof *huge);
		if (!huge) {
			rc = NK_ENOMEM;
			goto out;
		}
		nhuge = nk_machine_huge_page_sizes(m, huge, (size_t)nhuge);
		printf("; huge");
		for (int i = 0; i < nhuge; i++)
			printf("%s %s", i ? "," : "", cli_fmt_size(huge[i], a, sizeof a));
	} else {
		printf("; no huge pages");
	}
	printf("\n");
	/* How facts were found where the usual file was missing (an older kernel's tree). */
	for (int i = 0; i < nk_machine_num_notes(m); i++)
		printf("%s%s\n", i ? "          " : "notes:    ", nk_machine_note(m, i));
out:
	free(huge);
	free(pkgs);
	return rc;
}

/* ---- node table ---- */

static const char *node_note(int fl)
{
	if (!(fl & NK_NODE_HAS_CPUS) && !(fl & NK_NODE_HAS_MEMORY))
		return "no cpus, no memory";
	if (!(fl & NK_NODE_HAS_CPUS))
		return "CPU-less (memory only)";
	if (!(fl & NK_NODE_HAS_MEMORY))
		return "memoryless (cpus only)";
	return "";
}

static const char *node_allowed(int fl)
{
	int mem = !!(fl & NK_NODE_MEM_ALLOWED), cpus = !!(fl & NK_NODE_CPUS_ALLOWED);

	return mem && cpus ? "mem,cpus" : mem ? "mem" : cpus ? "cpus" : "no";
}

/* Cpus online on a node that is not (an offline node): the node table cannot show them. */
static int print_nodeless_cpus(const nk_machine *m)
{
	int ncpus = nk_machine_num_cpus(m), k = 0;
	int *ids = malloc(((size_t)ncpus + 1) * sizeof *ids);
	char *s;

	if (!ids)
		return NK_ENOMEM;
	for (int i = 0; i < ncpus; i++) {
		int id = nk_machine_cpu_id(m, i);
		nk_cpu_info ci;

		if (nk_machine_cpu_info(m, id, &ci) == 0 && nk_machine_node_index(m, ci.node) < 0)
			ids[k++] = id;
	}
	if (k) {
		s = cli_list_alloc(ids, (size_t)k);
		if (!s) {
			free(ids);
			return NK_ENOMEM;
		}
		printf("  cpus on no online node: %s (%d cpu%s; their node is offline)\n", s, k,
		       k == 1 ? "" : "s");
		free(s);
	}
	free(ids);
	return 0;
}

static int print_nodes(const nk_machine *m)
{
	int nnodes = nk_machine_num_nodes(m);
	char **lists = calloc((size_t)nnodes, sizeof *lists);
	int idw = 4, listw = 4;
	int rc = 0;

	if (!lists)
		return NK_ENOMEM;
	for (int i = 0; i < nnodes; i++) {
		int id = nk_machine_node_id(m, i), *cpus = NULL;
		int n = cli_get_ids(m, nk_machine_node_cpus, id, &cpus);

		if (n < 0) {
			rc = n;
			goto out;
		}
		lists[i] = cli_list_alloc(cpus, (size_t)n);
		free(cpus);
		if (!lists[i]) {
			rc = NK_ENOMEM;
			goto out;
		}
		if ((int)strlen(lists[i]) > listw)
			listw = (int)strlen(lists[i]);
		if (ndigits(id) > idw)
			idw = ndigits(id);
	}

	printf("\nNUMA nodes\n");
	printf("  %*s  %10s  %10s  %-8s  %-7s  %-8s  %-*s  %s\n", idw, "node", "mem total", "mem free",
	       "has cpus", "has mem", "allowed", listw, "cpus", "note");
	for (int i = 0; i < nnodes; i++) {
		int id = nk_machine_node_id(m, i), fl = nk_machine_node_flags(m, id);
		uint64_t t = 0, f = 0;
		char a[32], b[32];
		const char *note;

		if (fl < 0) {
			rc = fl;
			goto out;
		}
		nk_machine_node_memory(m, id, &t, &f);
		note = node_note(fl);
		printf("  %*d  %10s  %10s  %-8s  %-7s  %-8s  ", idw, id, cli_fmt_mem(t, a, sizeof a),
		       fmt_free(m, f, b, sizeof b), fl & NK_NODE_HAS_CPUS ? "yes" : "no",
		       fl & NK_NODE_HAS_MEMORY ? "yes" : "no", node_allowed(fl));
		if (*note)
			printf("%-*s  %s\n", listw, lists[i], note);
		else
			printf("%s\n", lists[i]);
	}
	rc = print_nodeless_cpus(m);
out:
	for (int i = 0; i < nnodes; i++)
		free(lists[i]);
	free(lists);
	return rc;
}

/* ---- distances, neighbours, NUMA factor ---- */

static int print_distances(const nk_machine *m)
{
	int nnodes = nk_machine_num_nodes(m);
	int w = 2, asym = 0, ai = -1, aj = -1;

	for (int i = 0; i < nnodes; i++) {
		int from = nk_machine_node_id(m, i);

		if (ndigits(from) > w)
			w = ndigits(from);
		for (int j = 0; j < nnodes; j++) {
			int to = nk_machine_node_id(m, j);
			int d = nk_machine_distance(m, from, to);

			if (d >= 0 && ndigits(d) > w)
				w = ndigits(d);
			if (j > i && d != nk_machine_distance(m, to, from)) {
				if (!asym++) {
					ai = from;
					aj = to;
				}
			}
		}
	}

	printf("\nDistances (SLIT, 10 = local; row = from node, column = to node)\n");
	printf("  %*s ", w, "");
	for (int j = 0; j < nnodes; j++)
		printf(" %*d", w, nk_machine_node_id(m, j));
	printf("\n");
	for (int i = 0; i < nnodes; i++) {
		int from = nk_machine_node_id(m, i);

		printf("  %*d:", w, from);
		for (int j = 0; j < nnodes; j++) {
			int d = nk_machine_distance(m, from, nk_machine_node_id(m, j));

			if (d >= 0)
				printf(" %*d", w, d);
			else
				printf(" %*s", w, "?");
		}
		printf("\n");
	}
	if (asym)
		printf("  asymmetric: %d->%d is %d but %d->%d is %d (%d pair%s differ%s)\n", ai, aj,
		       nk_machine_distance(m, ai, aj), aj, ai, nk_machine_distance(m, aj, ai), asym,
		       asym == 1 ? "" : "s", asym == 1 ? "s" : "");
	return 0;
}

/* "0@10  1-3@20": the nodes with memory nearest to @p node, grouped by distance. */
static int print_neighbors(const nk_machine *m)
{
	int nnodes = nk_machine_num_nodes(m), w = 2, rc = 0;

	for (int i = 0; i < nnodes; i++)
		if (ndigits(nk_machine_node_id(m, i)) > w)
			w = ndigits(nk_machine_node_id(m, i));

	printf("\nNearest memory (nodes with memory by distance, as node-list@distance)\n");
	for (int i = 0; i < nnodes; i++) {
		int from = nk_machine_node_id(m, i), *nb = NULL;
		int n = cli_get_ids(m, nk_machine_neighbors, from, &nb);

		if (n < 0) {
			rc = n;
			goto out;
		}
		printf("  %*d:", w, from);
		if (n == 0)
			printf("  -");
		for (int k = 0; k < n;) {
			int d = nk_machine_distance(m, from, nb[k]), e = k;
			int *grp;
			char *s;

			/* Same distance: one group.  Ties are ordered by id, so a group is increasing. */
			while (e < n && nk_machine_distance(m, from, nb[e]) == d && (e == k || nb[e] > nb[e - 1]))
				e++;
			grp = nb + k;
			s = cli_list_alloc(grp, (size_t)(e - k));
			if (!s) {
				free(nb);
				rc = NK_ENOMEM;
				goto out;
			}
			printf("  %s@%d", s, d);
			free(s);
			k = e;
		}
		printf("\n");
		free(nb);
	}
out:
	return rc;
}

static void print_matrix(const nk_machine *m, int kind, const char *title, const char *fmt)
{
	int nnodes = nk_machine_num_nodes(m), w = 8;

	printf("\n%s (row = cpu node, column = memory node; - = not measured)\n", title);
	printf("  %*s ", 4, "");
	for (int j = 0; j < nnodes; j++)
		printf(" %*d", w, nk_machine_node_id(m, j));
	printf("\n");
	for (int i = 0; i < nnodes; i++) {
		int from = nk_machine_node_id(m, i);

		printf("  %4d:", from);
		for (int j = 0; j < nnodes; j++) {
			double v;
			char cell[32];

			if (nk_machine_get_matrix(m, kind, from, nk_machine_node_id(m, j), &v) == 0)
				snprintf(cell, sizeof cell, fmt, v);
			else
				snprintf(cell, sizeof cell, "-");
			printf(" %*s", w, cell);
		}
		printf("\n");
	}
}

static int any_measured(const nk_machine *m, int kind)
{
	int nnodes = nk_machine_num_nodes(m);

	for (int i = 0; i < nnodes; i++)
		for (int j = 0; j < nnodes; j++) {
			double v;

			if (nk_machine_get_matrix(m, kind, nk_machine_node_id(m, i), nk_machine_node_id(m, j),
						  &v) == 0)
				return 1;
		}
	return 0;
}

static void print_numa_factor(const nk_machine *m)
{
	int nnodes = nk_machine_num_nodes(m);
	double lmin = 0, lmax = 0, rmin = 0, rmax = 0;
	int nl = 0, nr = 0;

	if (any_measured(m, NK_MATRIX_LATENCY_NS))
		print_matrix(m, NK_MATRIX_LATENCY_NS, "Measured latency, ns", "%.1f");
	if (any_measured(m, NK_MATRIX_BANDWIDTH_MBS))
		print_matrix(m, NK_MATRIX_BANDWIDTH_MBS, "Measured bandwidth, MB/s", "%.0f");
	if (any_measured(m, NK_MATRIX_NUMA_FACTOR)) {
		print_matrix(m, NK_MATRIX_NUMA_FACTOR, "NUMA factor, measured", "%.2f");
		printf("  (unmeasured pairs fall back to distance/10)\n");
		return;
	}
	for (int i = 0; i < nnodes; i++)
		for (int j = 0; j < nnodes; j++) {
			double f;

			if (nk_machine_numa_factor(m, nk_machine_node_id(m, i), nk_machine_node_id(m, j), &f))
				continue;
			if (i == j) {
				lmin = nl++ ? (f < lmin ? f : lmin) : f;
				lmax = nl > 1 ? (f > lmax ? f : lmax) : f;
			} else {
				rmin = nr++ ? (f < rmin ? f : rmin) : f;
				rmax = nr > 1 ? (f > rmax ? f : rmax) : f;
			}
		}
	printf("\nNUMA factor: not measured, distance/10:");
	if (nl)
		printf(lmin == lmax ? " local %.1f" : " local %.1f to %.1f", lmin, lmax);
	if (nr)
		printf(rmin == rmax ? ", remote %.1f" : ", remote %.1f to %.1f", rmin, rmax);
	printf("\n");
}

/* ---- caches ---- */

static const char *cache_type_name(int type)
{
	switch (type) {
	case NK_CACHE_DATA:
		return "data";
	case NK_CACHE_INSTRUCTION:
		return "instruction";
	default:
		return "unified";
	}
}

static int same_kind(const nk_cache_info *a, const nk_cache_info *b)
{
	return a->level == b->level && a->type == b->type && a->size == b->size &&
	       a->line_size == b->line_size && a->ways == b->ways && a->num_cpus == b->num_cpus;
}

/*
 * What a sharing set is, when it is a whole unit of the machine: "core" when
 * its cpus are exactly one core's, "node" when exactly one node's cpus.
 * Returns NULL otherwise.  @p cpus is increasing; @p core_cpus[c] is the
 * number of cpus of core index c.
 */
static const char *sharing_unit(const nk_machine *m, const int *core_cpus, const int *cpus, int n)
{
	nk_cpu_info first, ci;
	int same_core = 1, same_node = 1, *ncpu = NULL, nn;
	const char *unit = NULL;

	if (n <= 0 || nk_machine_cpu_info(m, cpus[0], &first))
		return NULL;
	for (int i = 1; i < n; i++) {
		if (nk_machine_cpu_info(m, cpus[i], &ci))
			return NULL;
		same_core &= ci.core == first.core;
		same_node &= ci.node == first.node;
	}
	if (same_core && first.core >= 0 && first.core < nk_machine_num_cores(m) && core_cpus[first.core] == n)
		return "core";
	if (same_node) {
		nn = cli_get_ids(m, nk_machine_node_cpus, first.node, &ncpu);
		if (nn == n && memcmp(ncpu, cpus, (size_t)n * sizeof *cpus) == 0)
			unit = "node";
		free(ncpu);
	}
	return unit;
}

/* Sharing sets shown in full up to this many; beyond, the first and last few. */
#define CACHE_SETS_SHOWN 8
#define CACHE_SETS_HEAD 4
#define CACHE_SETS_TAIL 2

static int print_cache_group(const nk_machine *m, const int *core_cpus, const nk_cache_info *ci,
			     const int *members, int nmemb)
{
	int ncpus = nk_machine_num_cpus(m);
	const char *unit = NULL;
	int uniform_unit = 1, rc = 0;
	char sz[32], ln[32];

	printf("  L%d %s %s ×%d", ci->level, cache_type_name(ci->type),
	       ci->size ? cli_fmt_size(ci->size, sz, sizeof sz) : "(size unknown)", nmemb);
	if (ci->ways && ci->line_size)
		printf(" (%d-way, %s lines)", ci->ways, cli_fmt_size((uint64_t)ci->line_size, ln, sizeof ln));
	else if (ci->ways)
		printf(" (%d-way)", ci->ways);
	else if (ci->line_size)
		printf(" (%s lines)", cli_fmt_size((uint64_t)ci->line_size, ln, sizeof ln));

	if (ci->num_cpus == 1) {
		printf(", one per cpu\n");
		return 0;
	}
	if (nmemb == 1 && ci->num_cpus == ncpus) {
		printf(", shared by all %d cpus\n", ncpus);
		return 0;
	}

	/* Name the unit when every instance covers exactly one core / one node. */
	for (int k = 0; k < nmemb && uniform_unit; k++) {
		int *cpus = NULL, n = cli_get_ids(m, nk_machine_cache_cpus, members[k], &cpus);
		const char *u = n > 0 ? sharing_unit(m, core_cpus, cpus, n) : NULL;

		free(cpus);
		if (!u || (unit && strcmp(u, unit) != 0))
			uniform_unit = 0;
		unit = u;
	}
	printf(", %s %d cpus", nmemb == 1 ? "shared by" : "each shared by", ci->num_cpus);
	if (uniform_unit && unit)
		printf(" (one per %s)", unit);
	printf(":");
	for (int k = 0; k < nmemb; k++) {
		int *cpus = NULL, n;
		char *s;

		if (nmemb > CACHE_SETS_SHOWN && k == CACHE_SETS_HEAD) {
			printf(" | …");
			k = nmemb - CACHE_SETS_TAIL - 1;
			continue;
		}
		n = cli_get_ids(m, nk_machine_cache_cpus, members[k], &cpus);
		if (n < 0) {
			rc = n;
			break;
		}
		s = cli_list_alloc(cpus, (size_t)n);
		free(cpus);
		if (!s) {
			rc = NK_ENOMEM;
			break;
		}
		printf("%s %s", k ? " |" : "", s);
		free(s);
	}
	printf("\n");
	return rc;
}

/*
 * Identical instances (same level, type, size, geometry and sharing width)
 * are one line, in the order the library lists caches (by level, then cpu):
 * a 128-cpu machine prints a handful of lines, not 128 L1 lines.
 */
static int print_caches(const nk_machine *m)
{
	int n = nk_machine_num_caches(m), rc = 0;
	int ncores = nk_machine_num_cores(m), ncpus = nk_machine_num_cpus(m);
	nk_cache_info *info = NULL;
	int *done = NULL, *members = NULL, *core_cpus = NULL;

	printf("\nCaches\n");
	if (n <= 0) {
		printf("  none known\n");
		return n < 0 ? n : 0;
	}
	info = calloc((size_t)n, sizeof *info);
	done = calloc((size_t)n, sizeof *done);
	members = calloc((size_t)n, sizeof *members);
	core_cpus = calloc((size_t)ncores + 1, sizeof *core_cpus);
	if (!info || !done || !members || !core_cpus) {
		rc = NK_ENOMEM;
		goto out;
	}
	for (int i = 0; i < ncpus; i++) {
		nk_cpu_info ci;

		if (nk_machine_cpu_info(m, nk_machine_cpu_id(m, i), &ci) == 0 && ci.core >= 0 && ci.core < ncores)
			core_cpus[ci.core]++;
	}
	for (int i = 0; i < n; i++) {
		rc = nk_machine_cache(m, i, &info[i]);
		if (rc < 0)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		int nmemb = 0;

		if (done[i])
			continue;
		for (int j = i; j < n; j++) {
			if (!done[j] && same_kind(&info[i], &info[j])) {
				done[j] = 1;
				members[nmemb++] = j;
			}
		}
		rc = print_cache_group(m, core_cpus, &info[i], members, nmemb);
		if (rc < 0)
			goto out;
	}
out:
	free(core_cpus);
	free(members);
	free(done);
	free(info);
	return rc;
}

/* ---- what this process may use ---- */

static int print_allowed(const nk_machine *m)
{
	int *cpus = NULL, *nodes = NULL, rc = 0;
	int ncpus = nk_machine_num_cpus(m), nnodes = nk_machine_num_nodes(m);
	int na = cli_get_ids(m, allowed_cpus_fn, 0, &cpus);
	int nn = cli_get_ids(m, allowed_nodes_fn, 0, &nodes);
	char *cs = NULL, *ns = NULL;
	const char *detail;

	if (na < 0 || nn < 0) {
		rc = na < 0 ? na : nn;
		goto out;
	}
	cs = cli_list_alloc(cpus, (size_t)na);
	ns = cli_list_alloc(nodes, (size_t)nn);
	if (!cs || !ns) {
		rc = NK_ENOMEM;
		goto out;
	}
	switch (nk_machine_source(m, &detail)) {
	case NK_SOURCE_LIVE:
		printf("\nAllowed to this process\n");
		break;
	case NK_SOURCE_FSROOT:
		printf("\nAllowed to the process that captured the tree\n");
		break;
	case NK_SOURCE_SYNTHETIC:
		printf("\nAllowed (as described)\n");
		break;
	default:
		printf("\nAllowed (as recorded in the file)\n");
		break;
	}
	printf("  cpus:   %s", cs);
	if (na == ncpus)
		printf(" (all %d cpu%s)\n", ncpus, ncpus == 1 ? "" : "s");
	else
		printf(" (restricted: %d of %d cpus)\n", na, ncpus);
	printf("  memory: node%s %s", nn == 1 ? "" : "s", ns);
	if (nn == nnodes) {
		printf(" (all %d node%s)\n", nnodes, nnodes == 1 ? "" : "s");
	} else {
		int *out = malloc((size_t)nnodes * sizeof *out), k = 0;
		char *os;

		if (!out) {
			rc = NK_ENOMEM;
			goto out;
		}
		for (int i = 0; i < nnodes; i++) {
			int id = nk_machine_node_id(m, i), fl = nk_machine_node_flags(m, id);

			if (fl >= 0 && !(fl & NK_NODE_MEM_ALLOWED))
				out[k++] = id;
		}
		os = cli_list_alloc(out, (size_t)k);
		free(out);
		if (!os) {
			rc = NK_ENOMEM;
			goto out;
		}
		printf(" (restricted: %d of %d nodes; not allowed: %s)\n", nn, nnodes, os);
		free(os);
	}
out:
	free(cs);
	free(ns);
	free(cpus);
	free(nodes);
	return rc;
}

/* ---- kernel settings ---- */

static const char *thp_name(int mode)
{
	switch (mode) {
	case NK_THP_NEVER:
		return "never";
	case NK_THP_MADVISE:
		return "madvise";
	case NK_THP_ALWAYS:
		return "always";
	case NK_THP_DEFER:
		return "defer";
	case NK_THP_DEFER_MADVISE:
		return "defer+madvise";
	default:
		return "unknown";
	}
}

static void print_kernel(const nk_machine *m)
{
	nk_kernel_settings ks;
	int nnodes = nk_machine_num_nodes(m);

	printf("\nKernel settings\n");
	if (nk_machine_kernel_settings(m, &ks)) {
		printf("  unknown\n");
		return;
	}
	printf("  automatic NUMA balancing: ");
	switch (ks.numa_balancing) {
	case -1:
		printf("unknown\n");
		break;
	case 0:
		printf("off\n");
		break;
	case 1:
		printf("on\n");
		break;
	case 2:
		printf("memory tiering only (2)\n");
		break;
	case 3:
		printf("on, with memory tiering (3)\n");
		break;
	default:
		printf("on (%d)\n", ks.numa_balancing);
		break;
	}
	if (ks.numa_balancing > 0)
		printf("    warning: the kernel migrates pages to the nodes that use them, behind the\n"
		       "    program's back; placement you set may not stay where you put it\n");
	printf("  transparent huge pages: enabled %s, defrag %s\n", thp_name(ks.thp_enabled),
	       thp_name(ks.thp_defrag));
	if (ks.thp_enabled == NK_THP_ALWAYS)
		printf("    note: first touch places a whole huge page at a time, not a base page\n");
	printf("  weighted interleave: ");
	if (ks.weighted_interleave < 0) {
		printf("unknown\n");
	} else if (ks.weighted_interleave == 0) {
		printf("not available\n");
	} else {
		printf("weights");
		for (int i = 0; i < nnodes; i++) {
			int id = nk_machine_node_id(m, i), wt = nk_machine_wi_weight(m, id);

			if (wt > 0)
				printf(" %d:%d", id, wt);
			else
				printf(" %d:-", id);
		}
		printf(" (node:weight)\n");
	}
}

/* ---- the command ---- */

static int print_text(const nk_machine *m, const struct topo_opts *o)
{
	int rc;

	rc = print_header(m);
	if (!rc)
		rc = print_nodes(m);
	if (!rc)
		rc = print_distances(m);
	if (!rc)
		rc = print_neighbors(m);
	if (!rc)
		print_numa_factor(m);
	if (!rc && !o->no_caches)
		rc = print_caches(m);
	if (!rc)
		rc = print_allowed(m);
	if (!rc)
		print_kernel(m);
	return rc;
}

static int parse_args(int argc, char **argv, struct topo_opts *o)
{
	enum { OPT_JSON = 256, OPT_NO_CACHES, OPT_SAVE, OPT_FSROOT, OPT_XML, OPT_SYNTH, OPT_MACHINE };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "no-caches", no_argument, NULL, OPT_NO_CACHES },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "fsroot", required_argument, NULL, OPT_FSROOT },
		{ "xml", required_argument, NULL, OPT_XML },
		{ "synthetic", required_argument, NULL, OPT_SYNTH },
		{ "machine", required_argument, NULL, OPT_MACHINE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'h':
			fputs(cli_topo_usage, stdout);
			return -1; /* done, success */
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_NO_CACHES:
			o->no_caches = 1;
			break;
		case OPT_SAVE:
			o->save = optarg;
			break;
		case OPT_FSROOT:
			rc = cli_source_set(&o->src, "topo", NK_SOURCE_FSROOT, "--fsroot", optarg);
			break;
		case OPT_XML:
			rc = cli_source_set(&o->src, "topo", NK_SOURCE_XML, "--xml", optarg);
			break;
		case OPT_SYNTH:
			rc = cli_source_set(&o->src, "topo", NK_SOURCE_SYNTHETIC, "--synthetic", optarg);
			break;
		case OPT_MACHINE:
			rc = cli_source_set(&o->src, "topo", NK_SOURCE_FILE, "--machine", optarg);
			break;
		default:
			return cli_bad_option("topo", c, argv);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error("topo", "unexpected argument '%s'", argv[optind]);
	if (o->save && !*o->save)
		return cli_usage_error("topo", "--save needs a file name");
	if (o->save) {
		const char *in = o->src.kind == NK_SOURCE_FILE || o->src.kind == NK_SOURCE_XML ? o->src.arg : NULL;
		if ((rc = cli_check_output("topo", "--save", o->save)) ||
		    (rc = cli_check_distinct("topo", "--save", o->save, &in, 1, NULL, NULL)))
			return rc;
	}
	return 0;
}

int cli_cmd_topo(int argc, char **argv)
{
	struct topo_opts o = { 0, 0, NULL, CLI_SOURCE_INIT };
	nk_machine *m = NULL;
	nk_error err = { 0, "" };
	char *json = NULL;
	int status, rc;

	status = parse_args(argc, argv, &o);
	if (status < 0)
		return cli_finish_stdout("topo", CLI_EXIT_OK);
	if (status)
		return status;

	status = cli_load_machine(&o.src, "topo", &m);
	if (status)
		goto out;

	if (o.save) {
		rc = nk_machine_save(m, o.save, &err);
		if (rc < 0) {
			if (err.message[0])
				cli_error("topo", "%s", err.message);
			else
				cli_error("topo", "%s: %s", o.save, nk_strerror(rc));
			status = CLI_EXIT_FAIL;
			goto out_free_machine;
		}
	}
	if (o.json) {
		rc = nk_machine_to_json(m, 0, &json);
		if (rc < 0) {
			cli_error("topo", "cannot write the machine as JSON: %s", nk_strerror(rc));
			status = CLI_EXIT_FAIL;
			goto out_free_machine;
		}
		fputs(json, stdout);
		if (!*json || json[strlen(json) - 1] != '\n')
			putchar('\n');
	} else if (!o.save) {
		rc = print_text(m, &o);
		if (rc < 0) {
			fflush(stdout);
			cli_error("topo", "%s", nk_strerror(rc));
			status = CLI_EXIT_FAIL;
			goto out_free_machine;
		}
	}
	status = cli_finish_stdout("topo", CLI_EXIT_OK);

out_free_machine:
	free(json);
	nk_machine_free(m);
out:
	return status;
}
