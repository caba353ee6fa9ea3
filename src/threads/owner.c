/* SPDX-License-Identifier: BSD-3-Clause
 * The "owner" schedule: each thread gets the rows of an array that live on
 * its node, whatever policy put them there, from the array's residency.
 *
 * Built once (one residency query, O(rows + pages) work), read by every
 * thread: the per-thread range lists are computed at build time so that
 * nk_sched_owner() is a copy, safe to call concurrently.  Nothing per row is
 * stored (a 1D array's rows are its elements): rows are classified twice,
 * once to count and once to fill, from the per-page residency.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/array_impl.h"
#include "numakit.h"
#include "os/os.h"
#include "threads/schedule_impl.h"
#include "util/error.h"

struct nk_owner_sched {
	int nthreads;
	size_t *first;     /* thread t's ranges are ranges[first[t] .. first[t + 1]) */
	nk_range *ranges;
};

/* What the build needs while it walks the rows. */
struct owner_ctx {
	size_t nnodes;      /* N; class N = untouched rows */
	size_t rows, row_bytes, page_size;
	const int *page;    /* node index of each page, -1 untouched */
	const int *redirect; /* node index -> node index with threads (rows go there) */
	size_t *acc;        /* bytes per node index for the row being classified */
	int *touched;       /* node indices with acc != 0 */
	size_t *cnt;        /* rows per class (N + 1) */
	size_t *seen;       /* rows per class seen so far in this pass */
	const size_t *cls_first; /* class c's threads are cls_tids[cls_first[c] .. cls_first[c + 1]) */
	const int *cls_tids;
	int nthreads;
	long *last_end;     /* end of thread t's last range, -1 none */
	size_t *nranges;    /* ranges per thread */
};

/* Class of row r: the node index (with threads) holding most of its resident bytes, else N. */
static size_t row_class(struct owner_ctx *c, size_t r)
{
	size_t b = r * c->row_bytes, e = b + c->row_bytes, pa = b / c->page_size, pz = (e - 1) / c->page_size;
	int best = -1, ntouched = 0;

	if (pa == pz) {
		best = c->page[pa];
	} else {
		size_t most = 0;
		for (size_t pg = pa; pg <= pz; pg++) {
			int k = c->page[pg];
			if (k < 0)
				continue;
			size_t lo = pg * c->page_size, hi = lo + c->page_size;
			lo = lo > b ? lo : b;
			hi = hi < e ? hi : e;
			if (!c->acc[k])
				c->touched[ntouched++] = k;
			c->acc[k] += hi - lo;
		}
		/* ties go to the lowest node index, whatever order the pages came in */
		for (int i = 0; i < ntouched; i++) {
			int k = c->touched[i];
			if (c->acc[k] > most || (c->acc[k] == most && k < best)) {
				most = c->acc[k];
				best = k;
			}
			c->acc[k] = 0;
		}
	}
	return best < 0 ? c->nnodes : (size_t)c->redirect[best];
}

/*
 * One pass over the rows: give each row to a thread (the class's rows in
 * order, cut into as many contiguous shares as the class has threads) and
 * count (@p out NULL) or write its ranges.
 */
static void assign_rows(struct owner_ctx *c, nk_range *out, const size_t *first)
{
	memset(c->seen, 0, (c->nnodes + 1) * sizeof *c->seen);
	for (int t = 0; t < c->nthreads; t++) {
		c->last_end[t] = -1;
		c->nranges[t] = 0;
	}
	for (size_t r = 0; r < c->rows; r++) {
		size_t k = row_class(c, r);
		size_t nt = c->cls_first[k + 1] - c->cls_first[k];
		size_t j = nk__part_of(c->cnt[k], nt, c->seen[k]++);
		int t = c->cls_tids[c->cls_first[k] + j];
		if (c->last_end[t] == (long)r) {
			if (out)
				out[first[t] + c->nranges[t] - 1].end = (long)r + 1;
		} else {
			if (out) {
				out[first[t] + c->nranges[t]].begin = (long)r;
				out[first[t] + c->nranges[t]].end = (long)r + 1;
			}
			c->nranges[t]++;
		}
		c->last_end[t] = (long)r + 1;
	}
}

/* Rows on a node without threads go to the nearest node with threads (SLIT; ties: lowest id). */
static void nearest_with_threads(const nk_machine *m, size_t nnodes, const size_t *cls_first, int *redirect)
{
	for (size_t i = 0; i < nnodes; i++) {
		int best = -1, bestd = INT_MAX;
		if (cls_first[i + 1] > cls_first[i]) {
			redirect[i] = (int)i;
			continue;
		}
		for (size_t j = 0; j < nnodes; j++) {
			if (cls_first[j + 1] == cls_first[j])
				continue;
			int d = nk_machine_distance(m, nk_machine_node_id(m, (int)i), nk_machine_node_id(m, (int)j));
			if (d < 0)
				d = INT_MAX - 1; /* unknown distance: after every known one */
			if (d < bestd) {
				bestd = d;
				best = (int)j;
			}
		}
		redirect[i] = best; /* >= 0: some node has threads */
	}
}

int nk_sched_owner_build(const nk_array *a, const int *thread_nodes, int nthreads, nk_owner_sched **out,
			 nk_error *err)
{
	const nk_machine *m = nk__array_machine(a);
	struct owner_ctx c = { 0 };
	nk_owner_sched *s = NULL;
	int *page = NULL, *redirect = NULL, *tidx = NULL, *cls_tids = NULL;
	size_t *cls_first = NULL, npages;
	nk_region reg;
	int rc;

	if (!a || !m || !thread_nodes || !out || nthreads < 1)
		return nk__error(err, NK_EINVAL, "owner schedule: %s",
				 !a || !m ? "not a numakit array" : nthreads < 1 ? "no threads" : "NULL argument");
	rc = nk_array_region(a, &reg);
	if (rc)
		return nk__error(err, rc, "owner schedule: not a numakit array");

	c.nnodes = (size_t)nk_machine_num_nodes(m);
	c.nthreads = nthreads;
	c.rows = reg.dims[0];
	c.row_bytes = reg.len / reg.dims[0];
	c.page_size = nk__os_page_size();
	npages = (reg.len + c.page_size - 1) / c.page_size;

	tidx = malloc((size_t)nthreads * sizeof *tidx);
	cls_tids = malloc((size_t)nthreads * 2 * sizeof *cls_tids);
	cls_first = calloc(c.nnodes + 2, sizeof *cls_first);
	redirect = malloc(c.nnodes * sizeof *redirect);
	c.acc = calloc(c.nnodes, sizeof *c.acc);
	c.touched = malloc(c.nnodes * sizeof *c.touched);
	c.cnt = calloc(c.nnodes + 1, sizeof *c.cnt);
	c.seen = calloc(c.nnodes + 1, sizeof *c.seen);
	c.last_end = malloc((size_t)nthreads * sizeof *c.last_end);
	c.nranges = malloc((size_t)nthreads * sizeof *c.nranges);
	page = malloc(npages * sizeof *page);
	s = calloc(1, sizeof *s);
	if (!tidx || !cls_tids || !cls_first || !redirect || !c.acc || !c.touched || !c.cnt || !c.seen ||
	    !c.last_end || !c.nranges || !page || !s) {
		rc = nk__error(err, NK_ENOMEM, "owner schedule: out of memory");
		goto out_free;
	}

	/* Threads by node index (counting sort keeps tid order), then every thread for untouched rows. */
	for (int t = 0; t < nthreads; t++) {
		tidx[t] = nk_machine_node_index(m, thread_nodes[t]);
		if (tidx[t] < 0) {
			rc = nk__error(err, NK_ENODEV, "owner schedule: thread %d is on node %d, which the machine lacks", t,
				       thread_nodes[t]);
			goto out_free;
		}
		cls_first[tidx[t] + 1]++;
	}
	for (size_t i = 0; i < c.nnodes; i++)
		cls_first[i + 1] += cls_first[i];
	{
		size_t *fill = c.seen; /* scratch: next slot per class */
		for (size_t i = 0; i < c.nnodes; i++)
			fill[i] = cls_first[i];
		for (int t = 0; t < nthreads; t++)
			cls_tids[fill[tidx[t]]++] = t;
	}
	cls_first[c.nnodes + 1] = cls_first[c.nnodes] + (size_t)nthreads;
	for (int t = 0; t < nthreads; t++)
		cls_tids[nthreads + t] = t;
	nearest_with_threads(m, c.nnodes, cls_first, redirect);

	rc = nk_array_where(a, page, NULL);
	if (rc) {
		rc = nk__error(err, rc, "owner schedule: residency of the array: %s", nk_strerror(rc));
		goto out_free;
	}
	for (size_t i = 0; i < npages; i++) {
		if (page[i] < 0)
			continue;
		int k = nk_machine_node_index(m, page[i]);
		if (k < 0) {
			rc = nk__error(err, NK_ENODEV, "owner schedule: page %zu is on node %d, which the machine lacks", i,
				       page[i]);
			goto out_free;
		}
		page[i] = k;
	}
	c.page = page;
	c.redirect = redirect;
	c.cls_first = cls_first;
	c.cls_tids = cls_tids;

	for (size_t r = 0; r < c.rows; r++)
		c.cnt[row_class(&c, r)]++;
	assign_rows(&c, NULL, NULL);

	s->nthreads = nthreads;
	s->first = malloc(((size_t)nthreads + 1) * sizeof *s->first);
	if (!s->first) {
		rc = nk__error(err, NK_ENOMEM, "owner schedule: out of memory");
		goto out_free;
	}
	s->first[0] = 0;
	for (int t = 0; t < nthreads; t++)
		s->first[t + 1] = s->first[t] + c.nranges[t];
	s->ranges = malloc((s->first[nthreads] ? s->first[nthreads] : 1) * sizeof *s->ranges);
	if (!s->ranges) {
		rc = nk__error(err, NK_ENOMEM, "owner schedule: out of memory");
		goto out_free;
	}
	assign_rows(&c, s->ranges, s->first);
	*out = s;
	s = NULL;
	rc = 0;
out_free:
	nk_sched_owner_free(s);
	free(page);
	free(c.nranges);
	free(c.last_end);
	free(c.seen);
	free(c.cnt);
	free(c.touched);
	free(c.acc);
	free(redirect);
	free(cls_first);
	free(cls_tids);
	free(tidx);
	return rc;
}

int nk_sched_owner(const nk_owner_sched *s, int tid, nk_range *out, size_t cap)
{
	if (!s || tid < 0 || tid >= s->nthreads || (!out && cap))
		return NK_EINVAL;
	size_t n = s->first[tid + 1] - s->first[tid];
	if (n > INT_MAX)
		return NK_ERANGE;
	for (size_t i = 0; i < n && i < cap; i++)
		out[i] = s->ranges[s->first[tid] + i];
	return (int)n;
}

void nk_sched_owner_free(nk_owner_sched *s)
{
	if (!s)
		return;
	free(s->first);
	free(s->ranges);
	free(s);
}
