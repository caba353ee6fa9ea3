/* SPDX-License-Identifier: BSD-3-Clause
 * The share-out of one host among the local ranks of a job
 * (nk_job_layout_build; the rules are stated in numakit.h and
 * docs/run.md "MPI jobs").  Pure and deterministic: the ranks of a host
 * never talk to each other, so each computes the whole layout from the same
 * machine and the same local size and takes its own row; the same rows let
 * `numakit run --dry-run` show the whole host from any rank.
 */
#include <stdlib.h>
#include <string.h>

#include "machine/machine_impl.h"
#include "util/error.h"
#include "util/list.h"

#define MAX_LOCAL 65536

struct share {
	nk__ilist nodes; /* cpu nodes, increasing */
	nk__ilist mem;   /* memory nodes, own first node first */
	nk__ilist cpus;  /* core order */
	unsigned flags;
};

struct nk_job_layout {
	int n;      /* local ranks */
	int nnodes; /* cpu nodes shared out */
	struct share *r;
};

void nk_job_layout_free(nk_job_layout *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->n; i++) {
		nk__ilist_free(&l->r[i].nodes);
		nk__ilist_free(&l->r[i].mem);
		nk__ilist_free(&l->r[i].cpus);
	}
	free(l->r);
	free(l);
}

/* One cpu node and its cpus of the set, in core order. */
struct group {
	int node;  /* OS id */
	int *cpus; /* into a shared array */
	int n;
};

/* Sort by core, then id (qsort has no context argument for the machine). */
static void core_sort(const struct nk_machine *m, int *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			const struct nk__cpu *x = &m->cpus[nk__cpu_idx(m, v[j - 1])];
			const struct nk__cpu *y = &m->cpus[nk__cpu_idx(m, v[j])];
			if (x->core < y->core || (x->core == y->core && x->id < y->id))
				break;
			int t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

static int mem_ok(const struct nk_machine *m, int idx)
{
	return (m->nodes[idx].flags & NK_NODE_HAS_MEMORY) && (m->nodes[idx].flags & NK_NODE_MEM_ALLOWED);
}

static int push_new(nk__ilist *l, int x)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == x)
			return 0;
	return nk__ilist_push(l, x);
}

/* The memory nodes of share @p s: its cpu nodes with memory, each followed by the memory-only nodes that follow it. */
static int mem_nodes(const struct nk_machine *m, const int *follow, struct share *s)
{
	for (size_t k = 0; k < s->nodes.n; k++) {
		int ni = nk__node_idx(m, s->nodes.v[k]);

		if (mem_ok(m, ni)) {
			if (push_new(&s->mem, m->nodes[ni].id))
				return NK_ENOMEM;
		} else {
			/* memoryless cpu node: its nearest allowed memory node */
			int best = -1;
			for (int j = 0; j < m->nnodes; j++)
				if (mem_ok(m, j) && (best < 0 || m->dist[ni * m->nnodes + j] < m->dist[ni * m->nnodes + best]))
					best = j;
			if (best >= 0 && push_new(&s->mem, m->nodes[best].id))
				return NK_ENOMEM;
		}
		for (int j = 0; j < m->nnodes; j++)
			if (follow[j] == ni && push_new(&s->mem, m->nodes[j].id))
				return NK_ENOMEM;
	}
	return 0;
}

int nk_job_layout_build(const nk_machine *m, const int *cpus, size_t ncpus, int local_size, nk_job_layout **out,
			nk_error *err)
{
	nk__ilist set = { 0 };
	struct group *g = NULL;
	int *order = NULL, *follow = NULL, k = 0, rc;
	nk_job_layout *l = NULL;

	if (!m || !out)
		return nk__error(err, NK_EINVAL, "job layout: NULL argument");
	if (local_size < 1 || local_size > MAX_LOCAL)
		return nk__error(err, NK_EINVAL, "job layout: %d local ranks (expected 1..%d)", local_size, MAX_LOCAL);
	if (cpus ? nk__ilist_copy(&set, cpus, ncpus) : nk__ilist_copy(&set, m->allowed_cpus.v, m->allowed_cpus.n))
		return nk__error(err, NK_ENOMEM, "out of memory");
	nk__ilist_normalize(&set);
	if (!set.n) {
		rc = nk__error(err, NK_EINVAL, "job layout: no cpus to share out");
		goto out;
	}
	for (size_t i = 0; i < set.n; i++)
		if (nk__cpu_idx(m, set.v[i]) < 0) {
			rc = nk__error(err, NK_ENODEV, "job layout: cpu %d does not exist", set.v[i]);
			goto out;
		}
	rc = NK_ENOMEM;
	order = malloc(set.n * sizeof *order);
	g = calloc((size_t)m->nnodes, sizeof *g);
	follow = malloc((size_t)m->nnodes * sizeof *follow);
	l = calloc(1, sizeof *l);
	if (!order || !g || !follow || !l || !(l->r = calloc((size_t)local_size, sizeof *l->r)))
		goto nomem;
	l->n = local_size;
	/* the cpu nodes in node order, each with its cpus of the set in core order */
	{
		size_t pos = 0;
		for (int ni = 0; ni < m->nnodes; ni++) {
			int start = (int)pos;
			for (size_t i = 0; i < set.n; i++)
				if (m->cpus[nk__cpu_idx(m, set.v[i])].node == m->nodes[ni].id)
					order[pos++] = set.v[i];
			if ((int)pos > start) {
				g[k].node = m->nodes[ni].id;
				g[k].cpus = order + start;
				g[k].n = (int)pos - start;
				core_sort(m, g[k].cpus, g[k].n);
				k++;
			}
		}
	}
	l->nnodes = k;
	/* memory-only nodes follow the nearest cpu node shared out */
	for (int j = 0; j < m->nnodes; j++) {
		follow[j] = -1;
		if (m->nodes[j].cpus.n || !mem_ok(m, j))
			continue;
		for (int q = 0; q < k; q++) {
			int ci = nk__node_idx(m, g[q].node);
			if (follow[j] < 0 || m->dist[ci * m->nnodes + j] < m->dist[follow[j] * m->nnodes + j])
				follow[j] = ci;
		}
	}
	if (local_size <= k) {
		int first = 0;
		for (int r = 0; r < local_size; r++) {
			int cnt = k / local_size + (r < k % local_size);
			for (int q = first; q < first + cnt; q++) {
				if (nk__ilist_push(&l->r[r].nodes, g[q].node))
					goto nomem;
				for (int c = 0; c < g[q].n; c++)
					if (nk__ilist_push(&l->r[r].cpus, g[q].cpus[c]))
						goto nomem;
			}
			first += cnt;
		}
	} else {
		int r = 0;
		for (int q = 0; q < k; q++) {
			int nr = local_size / k + (q < local_size % k), c0 = 0;
			for (int i = 0; i < nr; i++, r++) {
				struct share *s = &l->r[r];
				if (nk__ilist_push(&s->nodes, g[q].node))
					goto nomem;
				if (nr > 1)
					s->flags |= NK_JOB_SHARES_NODE;
				if (g[q].n >= nr) {
					int cnt = g[q].n / nr + (i < g[q].n % nr);
					for (int c = c0; c < c0 + cnt; c++)
						if (nk__ilist_push(&s->cpus, g[q].cpus[c]))
							goto nomem;
					c0 += cnt;
				} else {
					if (nk__ilist_push(&s->cpus, g[q].cpus[i % g[q].n]))
						goto nomem;
					s->flags |= NK_JOB_OVERSUBSCRIBED;
				}
			}
		}
	}
	for (int r = 0; r < local_size; r++)
		if (mem_nodes(m, follow, &l->r[r]))
			goto nomem;
	*out = l;
	l = NULL;
	rc = 0;
	goto out;
nomem:
	rc = nk__error(err, NK_ENOMEM, "out of memory");
out:
	nk_job_layout_free(l);
	nk__ilist_free(&set);
	free(order);
	free(g);
	free(follow);
	return rc;
}

static const struct share *row(const nk_job_layout *l, int r)
{
	return l && r >= 0 && r < l->n ? &l->r[r] : NULL;
}

static int copy_out(const nk__ilist *v, int *out, size_t cap)
{
	if (cap && !out)
		return NK_EINVAL;
	for (size_t i = 0; i < v->n && i < cap; i++)
		out[i] = v->v[i];
	return (int)v->n;
}

int nk_job_layout_size(const nk_job_layout *l)
{
	return l ? l->n : NK_EINVAL;
}

int nk_job_layout_num_nodes(const nk_job_layout *l)
{
	return l ? l->nnodes : NK_EINVAL;
}

int nk_job_layout_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap)
{
	const struct share *s = row(l, r);
	return s ? copy_out(&s->nodes, nodes, cap) : NK_EINVAL;
}

int nk_job_layout_mem_nodes(const nk_job_layout *l, int r, int *nodes, size_t cap)
{
	const struct share *s = row(l, r);
	return s ? copy_out(&s->mem, nodes, cap) : NK_EINVAL;
}

int nk_job_layout_cpus(const nk_job_layout *l, int r, int *cpus, size_t cap)
{
	const struct share *s = row(l, r);
	return s ? copy_out(&s->cpus, cpus, cap) : NK_EINVAL;
}

int nk_job_layout_flags(const nk_job_layout *l, int r)
{
	const struct share *s = row(l, r);
	return s ? (int)s->flags : NK_EINVAL;
}
