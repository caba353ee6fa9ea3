/* SPDX-License-Identifier: BSD-3-Clause
 * Which pairs a run measures and with what buffer: the options resolved
 * against the machine.  Pure: reads the machine model only, so the checks
 * behind `numakit bench`'s usage errors are unit-tested without measuring.
 */
#include "bench/bench_impl.h"
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

int nk__bench_index(const int *ids, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	return -1;
}

int nk__bench_note(struct nk_bench_results *r, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL, **grown;
	int len;

	va_start(ap, fmt);
	len = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (len < 0)
		return NK_ENOMEM;
	grown = realloc(r->notes, ((size_t)r->nnotes + 1) * sizeof *grown);
	if (!grown) {
		free(s);
		return NK_ENOMEM;
	}
	r->notes = grown;
	r->notes[r->nnotes++] = s;
	return 0;
}

void nk_bench_options_init(nk_bench_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof *o);
	o->warmups = -1;
	o->seed = 1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The cpus of @p node this process may run on, into @p out (capacity of the machine's cpu count). */
static int usable_cpus(const nk_machine *m, int node, const int *allowed, int nallowed, int *out)
{
	int n = nk_machine_node_cpus(m, node, NULL, 0), k = 0;
	int *cpus;

	if (n <= 0)
		return 0;
	cpus = malloc((size_t)n * sizeof *cpus);
	if (!cpus)
		return NK_ENOMEM;
	nk_machine_node_cpus(m, node, cpus, (size_t)n);
	for (int i = 0; i < n; i++)
		if (nk__bench_index(allowed, nallowed, cpus[i]) >= 0)
			out[k++] = cpus[i];
	free(cpus);
	return k;
}

/* Nearest of @p cand[0..n) to/from @p node (distance from cand to node when @p from_cand), ties by id. */
static int nearest(const nk_machine *m, int node, const int *cand, int n, int from_cand)
{
	int best = -1, bd = 0;

	for (int i = 0; i < n; i++) {
		int d = from_cand ? nk_machine_distance(m, cand[i], node) : nk_machine_distance(m, node, cand[i]);

		if (d < 0)
			continue;
		if (best < 0 || d < bd || (d == bd && cand[i] < best)) {
			best = cand[i];
			bd = d;
		}
	}
	return best;
}

static int add_id(int *ids, int *n, int id)
{
	if (nk__bench_index(ids, *n, id) >= 0)
		return 0;
	ids[(*n)++] = id;
	return 1;
}

static uint64_t largest_cache(const nk_machine *m)
{
	uint64_t best = 0;
	int n = nk_machine_num_caches(m);

	for (int i = 0; i < n; i++) {
		nk_cache_info c;

		if (nk_machine_cache(m, i, &c) == 0 && c.type != NK_CACHE_INSTRUCTION && c.size > best)
			best = c.size;
	}
	return best;
}

int nk__bench_plan(const nk_machine *m, const nk_bench_options *o, struct nk_bench_results *r, nk_error *err)
{
	nk_bench_options def;
	int nn, ncpus_m, nallowed, rc = 0, nsel = 0;
	int *allowed = NULL, *cpubuf = NULL, *sel = NULL, *cpu_cand = NULL;
	int ncand = 0, said = 0;
	char list[256];

	if (!m || !r)
		return nk__error(err, NK_EINVAL, "no machine");
	if (!o) {
		nk_bench_options_init(&def);
		o = &def;
	}
	if (o->repetitions < 0)
		return nk__error(err, NK_EINVAL, "repetitions must be at least 1 (0 = default), not %d", o->repetitions);
	if (o->warmups < -1)
		return nk__error(err, NK_EINVAL, "warm-up runs must be 0 or more, not %d", o->warmups);
	if (o->nnodes && !o->nodes)
		return nk__error(err, NK_EINVAL, "node subset of %zu nodes given without the nodes", o->nnodes);

	r->opts = *o;
	r->page_size = nk_machine_page_size(m);
	if (!r->page_size)
		r->page_size = 4096;
	r->llc = largest_cache(m);
	nn = nk_machine_num_nodes(m);
	ncpus_m = nk_machine_num_cpus(m);

	sel = malloc(((size_t)nn + (o->nnodes ? o->nnodes : 0) + 1) * sizeof *sel);
	r->cpu_nodes = malloc(((size_t)nn + 1) * sizeof(int));
	r->mem_nodes = malloc(((size_t)nn + 1) * sizeof(int));
	cpu_cand = malloc(((size_t)nn + 1) * sizeof(int));
	cpubuf = malloc(((size_t)ncpus_m + 1) * sizeof(int));
	nallowed = nk_machine_allowed_cpus(m, NULL, 0);
	allowed = malloc(((size_t)(nallowed > 0 ? nallowed : 0) + 1) * sizeof(int));
	if (!sel || !r->cpu_nodes || !r->mem_nodes || !cpu_cand || !cpubuf || !allowed) {
		rc = NK_ENOMEM;
		goto out;
	}
	nallowed = nk_machine_allowed_cpus(m, allowed, (size_t)nallowed);
	if (nallowed < 0)
		nallowed = 0;

	/* The subset: every node must exist. */
	if (o->nnodes) {
		for (size_t i = 0; i < o->nnodes; i++) {
			if (nk_machine_node_index(m, o->nodes[i]) < 0) {
				int *ids = malloc((size_t)nn * sizeof *ids);

				if (!ids) {
					rc = NK_ENOMEM;
					goto out;
				}
				for (int k = 0; k < nn; k++)
					ids[k] = nk_machine_node_id(m, k);
				nk_format_list(ids, (size_t)nn, list, sizeof list);
				free(ids);
				rc = nk__error(err, NK_ENODEV, "no node %d on this machine (nodes: %s)", o->nodes[i], list);
				goto out;
			}
			add_id(sel, &nsel, o->nodes[i]);
		}
	} else {
		for (int i = 0; i < nn; i++)
			sel[nsel++] = nk_machine_node_id(m, i);
	}
	qsort(sel, (size_t)nsel, sizeof *sel, cmp_int);

	/* Nodes whose cpus this process may use: candidates to measure from. */
	for (int i = 0; i < nn; i++) {
		int id = nk_machine_node_id(m, i), k = usable_cpus(m, id, allowed, nallowed, cpubuf);

		if (k < 0) {
			rc = k;
			goto out;
		}
		if (k > 0)
			cpu_cand[ncand++] = id;
	}
	if (!ncand) {
		rc = nk__error(err, NK_ENODATA, "no node has a cpu this process may run on");
		goto out;
	}

	for (int i = 0; i < nsel; i++) {
		int id = sel[i], fl = nk_machine_node_flags(m, id);
		int has_cpu = nk__bench_index(cpu_cand, ncand, id) >= 0;

		if (has_cpu) {
			add_id(r->cpu_nodes, &r->ncpu, id);
		} else if (fl & NK_NODE_HAS_CPUS) {
			if ((rc = nk__bench_note(r, "node %d: none of its cpus is allowed to this process", id)))
				goto out;
		}
		if (!(fl & NK_NODE_HAS_MEMORY)) {
			if ((rc = nk__bench_note(r, "node %d has no memory: skipped as a memory target", id)))
				goto out;
			continue;
		}
		if (!(fl & NK_NODE_MEM_ALLOWED)) {
			if ((rc = nk__bench_note(r, "node %d: this process may not allocate there: skipped as a memory target",
						 id)))
				goto out;
			continue;
		}
		add_id(r->mem_nodes, &r->nmem, id);
	}
	/* A memory node without usable cpus is measured from the nearest node with some. */
	for (int i = 0; i < r->nmem; i++) {
		int id = r->mem_nodes[i], c;

		if (nk__bench_index(cpu_cand, ncand, id) >= 0)
			continue;
		c = nearest(m, id, cpu_cand, ncand, 1);
		add_id(r->cpu_nodes, &r->ncpu, c);
		if ((rc = nk__bench_note(r, "node %d has no cpus to run on: measured from node %d, the nearest node with cpus",
					 id, c)))
			goto out;
	}
	/* Cpu nodes without memory in the subset still need a memory target: their nearest. */
	if (r->nmem == 0) {
		int memc = 0, *memcand = malloc((size_t)nn * sizeof *memcand);

		if (!memcand) {
			rc = NK_ENOMEM;
			goto out;
		}
		for (int i = 0; i < nn; i++) {
			int id = nk_machine_node_id(m, i), fl = nk_machine_node_flags(m, id);

			if ((fl & NK_NODE_HAS_MEMORY) && (fl & NK_NODE_MEM_ALLOWED))
				memcand[memc++] = id;
		}
		for (int i = 0; i < r->ncpu && memc; i++) {
			int t = nearest(m, r->cpu_nodes[i], memcand, memc, 0);

			if (add_id(r->mem_nodes, &r->nmem, t))
				if ((rc = nk__bench_note(r, "memory node %d added: the nearest memory of node %d",
							 t, r->cpu_nodes[i]))) {
					free(memcand);
					goto out;
				}
		}
		free(memcand);
	}
	if (!r->nmem || !r->ncpu) {
		rc = nk__error(err, NK_ENODATA, "nothing to measure: %s", !r->nmem ? "no memory node this process may use"
									     : "no cpu node this process may use");
		goto out;
	}
	qsort(r->cpu_nodes, (size_t)r->ncpu, sizeof(int), cmp_int);
	qsort(r->mem_nodes, (size_t)r->nmem, sizeof(int), cmp_int);

	/* Own memory of each cpu node, and the cpu node local to each memory node. */
	r->own_mem = malloc((size_t)r->ncpu * sizeof(int));
	r->own_cpu = malloc((size_t)r->nmem * sizeof(int));
	if (!r->own_mem || !r->own_cpu) {
		rc = NK_ENOMEM;
		goto out;
	}
	for (int i = 0; i < r->ncpu; i++)
		r->own_mem[i] = nk__bench_index(r->mem_nodes, r->nmem,
						nearest(m, r->cpu_nodes[i], r->mem_nodes, r->nmem, 0));
	for (int i = 0; i < r->nmem; i++)
		r->own_cpu[i] = nk__bench_index(r->cpu_nodes, r->ncpu,
						nearest(m, r->mem_nodes[i], r->cpu_nodes, r->ncpu, 1));

	/* Repetitions and buffer size. */
	if (!r->opts.repetitions)
		r->opts.repetitions = o->quick ? 3 : 5;
	if (r->opts.warmups < 0)
		r->opts.warmups = 1;
	if (o->size) {
		if (o->size < r->page_size) {
			rc = nk__error(err, NK_EINVAL, "buffer size %llu B is smaller than a page (%llu B)",
				       (unsigned long long)o->size, (unsigned long long)r->page_size);
			goto out;
		}
		r->opts.size = o->size / r->page_size * r->page_size;
	} else if (o->quick) {
		r->opts.size = 4 * MIB;
	} else {
		uint64_t s = 4 * r->llc;

		r->opts.size = s < 64 * MIB ? 64 * MIB : s > 1024 * MIB ? 1024 * MIB : (s + MIB - 1) / MIB * MIB;
	}
	for (int i = 0; i < r->nmem; i++) {
		uint64_t total = 0, fr = 0;

		nk_machine_node_memory(m, r->mem_nodes[i], &total, &fr);
		if (!fr)
			continue;
		if (o->size && r->opts.size > fr / 2) {
			said = 1;
			rc = nk__error(err, NK_ENOMEM,
				       "node %d has %llu MiB free: a %llu MiB buffer bound there does not fit "
				       "(at most %llu MiB)",
				       r->mem_nodes[i], (unsigned long long)(fr / MIB),
				       (unsigned long long)((r->opts.size + MIB - 1) / MIB), (unsigned long long)(fr / 2 / MIB));
			goto out;
		}
		if (!o->size && r->opts.size > fr / 4) {
			uint64_t s = fr / 4 / r->page_size * r->page_size;

			if (s < r->page_size) {
				said = 1;
				rc = nk__error(err, NK_ENOMEM, "node %d has only %llu KiB free", r->mem_nodes[i],
					       (unsigned long long)(fr / 1024));
				goto out;
			}
			r->opts.size = s;
			if ((rc = nk__bench_note(r, "buffer reduced to %llu MiB: node %d has %llu MiB free",
						 (unsigned long long)(s / MIB), r->mem_nodes[i],
						 (unsigned long long)(fr / MIB))))
				goto out;
		}
	}
	if (r->llc && r->opts.size < 2 * r->llc)
		if ((rc = nk__bench_note(r, "buffer (%llu KiB) is not much larger than the last-level cache (%llu KiB): "
					 "figures are optimistic", (unsigned long long)(r->opts.size / 1024),
					 (unsigned long long)(r->llc / 1024))))
			goto out;

	r->node_sel = sel;
	sel = NULL;
	r->opts.nodes = o->nnodes ? r->node_sel : NULL;
	r->opts.nnodes = o->nnodes ? (size_t)nsel : 0;
out:
	if (rc == NK_ENOMEM && !said)
		nk__error(err, NK_ENOMEM, "out of memory");
	free(sel);
	free(cpu_cand);
	free(cpubuf);
	free(allowed);
	return rc;
}
