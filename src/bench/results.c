/* SPDX-License-Identifier: BSD-3-Clause
 * Reading benchmark results: accessors, derived figures (NUMA factor, local
 * and interconnect bandwidth) and the JSON form documented in docs/bench.md.
 */
#include "bench/bench_impl.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void nk_bench_results_free(nk_bench_results *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	free(r->node_sel);
	free(r->cpu_nodes);
	free(r->mem_nodes);
	free(r->own_mem);
	free(r->own_cpu);
	free(r->cells);
	free(r);
}

int nk_bench_nodes(const nk_bench_results *r, int role, int *ids, size_t cap)
{
	const int *v;
	int n;

	if (!r || (role != NK_BENCH_CPU_NODES && role != NK_BENCH_MEM_NODES) || (cap && !ids))
		return NK_EINVAL;
	v = role == NK_BENCH_CPU_NODES ? r->cpu_nodes : r->mem_nodes;
	n = role == NK_BENCH_CPU_NODES ? r->ncpu : r->nmem;
	for (int i = 0; i < n && (size_t)i < cap; i++)
		ids[i] = v[i];
	return n;
}

static const struct nk__bench_cell *cell_of(const nk_bench_results *r, int cpu_node, int mem_node)
{
	int ci = nk__bench_index(r->cpu_nodes, r->ncpu, cpu_node);
	int mi = nk__bench_index(r->mem_nodes, r->nmem, mem_node);

	if (ci < 0 || mi < 0 || !r->cells || !nk__bench_cell(r, ci, mi)->measured)
		return NULL;
	return nk__bench_cell(r, ci, mi);
}

int nk_bench_get(const nk_bench_results *r, int metric, int threads, int cpu_node, int mem_node, nk_bench_stat *out)
{
	const struct nk__bench_cell *c;

	if (!r || !out || metric < 0 || metric >= NK_BENCH_METRIC_COUNT ||
	    (threads != NK_BENCH_ONE && threads != NK_BENCH_ALL))
		return NK_EINVAL;
	c = cell_of(r, cpu_node, mem_node);
	if (!c)
		return NK_ENODEV;
	if (c->stat[metric][threads].n < 1)
		return NK_ENODATA;
	*out = c->stat[metric][threads];
	return 0;
}

int nk_bench_pair_info(const nk_bench_results *r, int cpu_node, int mem_node, nk_bench_pair *out)
{
	const struct nk__bench_cell *c;

	if (!r || !out)
		return NK_EINVAL;
	c = cell_of(r, cpu_node, mem_node);
	if (!c)
		return NK_ENODEV;
	*out = c->info;
	return 0;
}

static double latency(const nk_bench_results *r, int ci, int mi)
{
	const struct nk__bench_cell *c = nk__bench_cell(r, ci, mi);

	return c->measured && c->stat[NK_BENCH_LATENCY][NK_BENCH_ONE].n ? c->stat[NK_BENCH_LATENCY][NK_BENCH_ONE].median
									   : NAN;
}

int nk_bench_numa_factor(const nk_bench_results *r, int cpu_node, int mem_node, double *factor)
{
	int ci, mi;
	double lo, x;

	if (!r || !factor)
		return NK_EINVAL;
	ci = nk__bench_index(r->cpu_nodes, r->ncpu, cpu_node);
	mi = nk__bench_index(r->mem_nodes, r->nmem, mem_node);
	if (ci < 0 || mi < 0 || !r->cells)
		return NK_ENODEV;
	lo = latency(r, ci, r->own_mem[ci]);
	x = latency(r, ci, mi);
	if (isnan(lo) || isnan(x) || lo <= 0)
		return NK_ENODATA;
	*factor = x / lo;
	return 0;
}

int nk_bench_local_bandwidth(const nk_bench_results *r, int node, int *from, double *mbs)
{
	int mi, ci;
	const struct nk__bench_cell *c;

	if (!r || !mbs)
		return NK_EINVAL;
	mi = nk__bench_index(r->mem_nodes, r->nmem, node);
	if (mi < 0 || !r->cells)
		return NK_ENODEV;
	ci = r->own_cpu[mi];
	c = nk__bench_cell(r, ci, mi);
	if (!c->measured || c->stat[NK_BENCH_READ][NK_BENCH_ALL].n < 1)
		return NK_ENODATA;
	if (from)
		*from = r->cpu_nodes[ci];
	*mbs = c->stat[NK_BENCH_READ][NK_BENCH_ALL].median;
	return 0;
}

int nk_bench_get_spread(const nk_bench_results *r, int kind, nk_bench_spread *out)
{
	if (!r || !out || kind < 0 || kind > 1)
		return NK_EINVAL;
	if (!r->have_spread[kind])
		return NK_ENODATA;
	*out = r->spread[kind];
	return 0;
}

int nk_bench_num_notes(const nk_bench_results *r)
{
	return r ? r->nnotes : NK_EINVAL;
}

const char *nk_bench_note(const nk_bench_results *r, int i)
{
	return r && i >= 0 && i < r->nnotes ? r->notes[i] : NULL;
}

const nk_bench_options *nk_bench_used_options(const nk_bench_results *r)
{
	return r ? &r->opts : NULL;
}

int nk_bench_results_to_machine(const nk_bench_results *r, nk_machine *m)
{
	int stored = 0;

	if (!r || !m || !r->cells)
		return NK_EINVAL;
	/* Check every node first so that a mismatch stores nothing. */
	for (int i = 0; i < r->ncpu; i++)
		if (nk_machine_node_index(m, r->cpu_nodes[i]) < 0)
			return NK_ENODEV;
	for (int i = 0; i < r->nmem; i++)
		if (nk_machine_node_index(m, r->mem_nodes[i]) < 0)
			return NK_ENODEV;
	for (int ci = 0; ci < r->ncpu; ci++) {
		for (int mi = 0; mi < r->nmem; mi++) {
			const struct nk__bench_cell *c = nk__bench_cell(r, ci, mi);
			int from = r->cpu_nodes[ci], to = r->mem_nodes[mi], rc;
			double f;

			if (!c->measured)
				continue;
			if (c->stat[NK_BENCH_LATENCY][0].n) {
				if ((rc = nk_machine_set_matrix(m, NK_MATRIX_LATENCY_NS, from, to,
								c->stat[NK_BENCH_LATENCY][0].median)))
					return rc;
				stored++;
			}
			if (c->stat[NK_BENCH_READ][NK_BENCH_ALL].n) {
				if ((rc = nk_machine_set_matrix(m, NK_MATRIX_BANDWIDTH_MBS, from, to,
								c->stat[NK_BENCH_READ][NK_BENCH_ALL].median)))
					return rc;
				stored++;
			}
			if (nk_bench_numa_factor(r, from, to, &f) == 0) {
				if ((rc = nk_machine_set_matrix(m, NK_MATRIX_NUMA_FACTOR, from, to, f)))
					return rc;
				stored++;
			}
		}
	}
	return stored;
}

/* ---- JSON ---- */

static const char *const metric_keys[NK_BENCH_METRIC_COUNT] = {
	"latency_ns", "read", "write", "copy", "triad", "write_nt", "copy_nt", "triad_nt",
	"stride_line", "stride_page", "random", "loaded_all_ns", "loaded_own_ns",
};

/* Collects the first allocation failure so that building reads straight. */
struct jb {
	int oom;
};

static json_t *jnew(struct jb *b, json_t *v)
{
	if (!v)
		b->oom = 1;
	return v;
}

static void jset(struct jb *b, json_t *obj, const char *key, json_t *v)
{
	if (!v || !obj || json_object_set_new(obj, key, v))
		b->oom = 1;
}

static void jpush(struct jb *b, json_t *arr, json_t *v)
{
	if (!v || !arr || json_array_append_new(arr, v))
		b->oom = 1;
}

static json_t *jstat(struct jb *b, const nk_bench_stat *s)
{
	json_t *o = jnew(b, json_object());

	jset(b, o, "median", json_real(s->median));
	jset(b, o, "min", json_real(s->min));
	jset(b, o, "max", json_real(s->max));
	jset(b, o, "q1", json_real(s->q1));
	jset(b, o, "q3", json_real(s->q3));
	jset(b, o, "n", json_integer(s->n));
	return o;
}

static json_t *jids(struct jb *b, const int *ids, int n)
{
	json_t *a = jnew(b, json_array());

	for (int i = 0; i < n; i++)
		jpush(b, a, json_integer(ids[i]));
	return a;
}

static json_t *jmetrics(struct jb *b, const struct nk__bench_cell *c, int threads, int first, int last)
{
	json_t *o = jnew(b, json_object());

	for (int k = first; k <= last; k++)
		if (c->stat[k][threads].n)
			jset(b, o, metric_keys[k], jstat(b, &c->stat[k][threads]));
	return o;
}

static json_t *jpair(struct jb *b, const nk_bench_results *r, int ci, int mi)
{
	const struct nk__bench_cell *c = nk__bench_cell(r, ci, mi);
	json_t *o = jnew(b, json_object()), *bw = jnew(b, json_object());

	jset(b, o, "cpu_node", json_integer(r->cpu_nodes[ci]));
	jset(b, o, "mem_node", json_integer(r->mem_nodes[mi]));
	jset(b, o, "cpu", json_integer(c->info.cpu));
	jset(b, o, "threads", json_integer(c->info.threads));
	jset(b, o, "pages", json_integer((json_int_t)c->info.pages));
	jset(b, o, "placement_verified", json_boolean(c->info.placement_verified));
	jset(b, o, "cpu_verified", json_boolean(c->info.cpu_verified));
	if (c->stat[NK_BENCH_LATENCY][0].n)
		jset(b, o, "latency_ns", jstat(b, &c->stat[NK_BENCH_LATENCY][0]));
	jset(b, bw, "one", jmetrics(b, c, NK_BENCH_ONE, NK_BENCH_READ, NK_BENCH_TRIAD_NT));
	jset(b, bw, "all", jmetrics(b, c, NK_BENCH_ALL, NK_BENCH_READ, NK_BENCH_TRIAD_NT));
	jset(b, o, "bandwidth_mbs", bw);
	jset(b, o, "patterns_mbs", jmetrics(b, c, NK_BENCH_ONE, NK_BENCH_STRIDE_LINE, NK_BENCH_RANDOM));
	if (c->stat[NK_BENCH_LOADED_ALL][0].n)
		jset(b, o, "loaded_all_ns", jstat(b, &c->stat[NK_BENCH_LOADED_ALL][0]));
	if (c->stat[NK_BENCH_LOADED_OWN][0].n)
		jset(b, o, "loaded_own_ns", jstat(b, &c->stat[NK_BENCH_LOADED_OWN][0]));
	return o;
}

/* A cpu x memory matrix of one derived or measured value, null where unknown. */
static json_t *jmatrix(struct jb *b, const nk_bench_results *r, int which)
{
	json_t *rows = jnew(b, json_array());

	for (int ci = 0; ci < r->ncpu; ci++) {
		json_t *row = jnew(b, json_array());

		for (int mi = 0; mi < r->nmem; mi++) {
			const struct nk__bench_cell *c = nk__bench_cell(r, ci, mi);
			double v = NAN;

			if (which == 0)
				nk_bench_numa_factor(r, r->cpu_nodes[ci], r->mem_nodes[mi], &v);
			else if (which == 1 && c->measured && c->stat[NK_BENCH_LATENCY][0].n)
				v = c->stat[NK_BENCH_LATENCY][0].median;
			else if (which == 2 && c->measured && c->stat[NK_BENCH_READ][NK_BENCH_ALL].n)
				v = c->stat[NK_BENCH_READ][NK_BENCH_ALL].median;
			else if (which == 3 && c->measured && mi != r->own_mem[ci] &&
				 c->stat[NK_BENCH_READ][NK_BENCH_ALL].n)
				v = c->stat[NK_BENCH_READ][NK_BENCH_ALL].median;
			jpush(b, row, isnan(v) ? json_null() : json_real(v));
		}
		jpush(b, rows, row);
	}
	return rows;
}

static json_t *jspread(struct jb *b, const nk_bench_results *r, int k)
{
	json_t *o;

	if (!r->have_spread[k])
		return json_null();
	o = jnew(b, json_object());
	jset(b, o, "cpus", jids(b, r->spread[k].cpus, 2));
	jset(b, o, "nodes", jids(b, r->spread[k].nodes, 2));
	jset(b, o, "mbs", jstat(b, &r->spread[k].mbs));
	return o;
}

int nk_bench_results_to_json(const nk_bench_results *r, unsigned flags, char **out)
{
	struct jb b = { 0 };
	json_t *root, *o, *a;
	char *s;

	if (!r || !out || (flags & ~NK_JSON_ALLFLAGS) || !r->cells)
		return NK_EINVAL;
	root = jnew(&b, json_object());
	jset(&b, root, "numakit_bench", json_integer(1));
	o = jnew(&b, json_object());
	jset(&b, o, "size", json_integer((json_int_t)r->opts.size));
	jset(&b, o, "repetitions", json_integer(r->opts.repetitions));
	jset(&b, o, "warmups", json_integer(r->opts.warmups));
	jset(&b, o, "quick", json_boolean(r->opts.quick));
	jset(&b, o, "seed", json_integer((json_int_t)r->opts.seed));
	jset(&b, o, "nodes", r->opts.nnodes ? jids(&b, r->opts.nodes, (int)r->opts.nnodes) : json_null());
	jset(&b, root, "options", o);
	jset(&b, root, "page_size", json_integer((json_int_t)r->page_size));
	jset(&b, root, "llc_bytes", json_integer((json_int_t)r->llc));
	jset(&b, root, "nt_stores", json_boolean(r->nt));
	jset(&b, root, "cpu_nodes", jids(&b, r->cpu_nodes, r->ncpu));
	jset(&b, root, "mem_nodes", jids(&b, r->mem_nodes, r->nmem));
	a = jnew(&b, json_array());
	for (int i = 0; i < r->nnotes; i++)
		jpush(&b, a, json_string(r->notes[i]));
	jset(&b, root, "notes", a);
	a = jnew(&b, json_array());
	for (int ci = 0; ci < r->ncpu; ci++)
		for (int mi = 0; mi < r->nmem; mi++)
			if (nk__bench_cell(r, ci, mi)->measured)
				jpush(&b, a, jpair(&b, r, ci, mi));
	jset(&b, root, "pairs", a);
	o = jnew(&b, json_object());
	jset(&b, o, "one_node", jspread(&b, r, NK_BENCH_SPREAD_ONE_NODE));
	jset(&b, o, "two_nodes", jspread(&b, r, NK_BENCH_SPREAD_TWO_NODES));
	jset(&b, root, "thread_spread", o);
	o = jnew(&b, json_object());
	jset(&b, o, "latency_ns", jmatrix(&b, r, 1));
	jset(&b, o, "numa_factor", jmatrix(&b, r, 0));
	jset(&b, o, "read_all_mbs", jmatrix(&b, r, 2));
	jset(&b, o, "interconnect_mbs", jmatrix(&b, r, 3));
	a = jnew(&b, json_array());
	for (int mi = 0; mi < r->nmem; mi++) {
		int from;
		double v;

		if (nk_bench_local_bandwidth(r, r->mem_nodes[mi], &from, &v) == 0) {
			json_t *e = jnew(&b, json_object());

			jset(&b, e, "node", json_integer(r->mem_nodes[mi]));
			jset(&b, e, "from", json_integer(from));
			jset(&b, e, "mbs", json_real(v));
			jpush(&b, a, e);
		}
	}
	jset(&b, o, "local_bandwidth_mbs", a);
	jset(&b, root, "matrices", o);
	if (b.oom) {
		json_decref(root);
		return NK_ENOMEM;
	}
	s = json_dumps(root, (flags & NK_JSON_COMPACT ? JSON_COMPACT : JSON_INDENT(2)) | JSON_PRESERVE_ORDER |
				     JSON_REAL_PRECISION(6));
	json_decref(root);
	if (!s)
		return NK_ENOMEM;
	*out = s;
	return 0;
}
