/* SPDX-License-Identifier: BSD-3-Clause
 * Plans: the page -> node map of a policy over a region on a machine.
 *
 * A plan keeps only what the formula needs (the node set, a block size, a
 * seed, one run per node or thread), so a terabyte region costs the same as
 * a page, and every page's node is computed in O(1) (O(log) for run lists
 * and weights).  The formulas are written down in docs/policies.md; the unit
 * tests recompute them independently.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine_impl.h"
#include "os/os.h"
#include "policy/policy_impl.h"
#include "util/error.h"

/* ------------------------------------------------------------- helpers */

/*
 * n items cut into t parts as evenly as possible, the first n % t parts one
 * item larger: part k starts at k * q + min(k, r).
 */
static size_t part_start(size_t n, size_t t, size_t k)
{
	size_t q = n / t, r = n % t;
	return k * q + (k < r ? k : r);
}

static size_t part_of(size_t n, size_t t, size_t x)
{
	size_t q = n / t, r = n % t;
	if (x < r * (q + 1))
		return x / (q + 1);
	return r + (x - r * (q + 1)) / q; /* q > 0 here: x < n = r when q == 0 */
}

/* Offset from the region's first byte of page i's first byte (page 0: the region start). */
static size_t page_off(const struct nk_plan *pl, size_t i)
{
	return i ? i * pl->page_size - pl->delta : 0;
}

/* Index of the first page whose first byte is at region offset >= off (off > 0). */
static size_t first_page_at(const struct nk_plan *pl, size_t off)
{
	size_t x = off + pl->delta;
	return x / pl->page_size + (x % pl->page_size != 0);
}

static uint64_t splitmix64(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* k with cum[k] <= r < cum[k + 1], for r < cum[n] */
static size_t cum_index(const uint64_t *cum, size_t n, uint64_t r)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (cum[mid] <= r)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static size_t run_index(const struct nk_plan *pl, size_t page)
{
	size_t lo = 0, hi = pl->nruns - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (pl->runs[mid].first <= page)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * The heart: node of page i (< npages) and the length of the run of pages
 * from i that the policy's structure puts on that node.
 */
static int node_at(const struct nk_plan *pl, size_t i, size_t *len)
{
	size_t m = pl->nnodes, left = pl->npages - i, l = 1, k;
	int node;

	switch (pl->kind) {
	case NK_POLICY_CYCLIC:
	case NK_POLICY_CYCLIC_NEIGHBORS:
		node = pl->nodes[i % m];
		break;
	case NK_POLICY_CYCLIC_BLOCK:
	case NK_POLICY_BLOCK_CYCLIC:
		node = pl->nodes[(i / pl->bpages) % m];
		l = pl->bpages - i % pl->bpages;
		break;
	case NK_POLICY_SKEW_MAPP:
		node = pl->nodes[(i + i / m + 1) % m];
		break;
	case NK_POLICY_PRIME_MAPP: {
		size_t v = i % pl->prime;
		if (v < m)
			node = pl->nodes[v];
		else /* the j-th page that fell on a virtual bank >= M, cyclically */
			node = pl->nodes[((i / pl->prime) * (pl->prime - m) + (v - m)) % m];
		break;
	}
	case NK_POLICY_RANDOM:
		node = pl->nodes[(size_t)(((unsigned __int128)splitmix64(pl->seed, i) * m) >> 64)];
		break;
	case NK_POLICY_WEIGHTED: {
		uint64_t r = i % pl->cum[m];
		k = cum_index(pl->cum, m, r);
		node = pl->nodes[k];
		l = (size_t)(pl->cum[k + 1] - r);
		break;
	}
	case NK_POLICY_BLOCK_EXCLUSIVE:
	case NK_POLICY_BLOCK:
		if (pl->runs) {
			k = run_index(pl, i);
			node = pl->runs[k].node;
			l = pl->runs[k].first + pl->runs[k].npages - i;
		} else { /* columns (block split=cols) or the latin square */
			size_t off = page_off(pl, i), row = off / pl->row_bytes;
			size_t col = off % pl->row_bytes / pl->elem, t = pl->nthreads;
			size_t cb = part_of(pl->cols, t, col), end;
			end = row * pl->row_bytes + part_start(pl->cols, t, cb + 1) * pl->elem;
			l = first_page_at(pl, end) - i;
			if (pl->kind == NK_POLICY_BLOCK)
				node = pl->tnodes[cb];
			else
				node = pl->nodes[(part_of(pl->rows, t, row) + cb) % t];
		}
		break;
	case NK_POLICY_BIND:
		k = run_index(pl, i);
		node = pl->runs[k].node;
		l = pl->runs[k].first + pl->runs[k].npages - i;
		break;
	default: /* next_touch */
		node = NK_ENODATA;
		l = left;
		break;
	}
	if (len)
		*len = l < left ? l : left;
	return node;
}

/* ------------------------------------------------------------- queries */

void nk_plan_free(nk_plan *pl)
{
	if (!pl)
		return;
	free(pl->nodes);
	free(pl->sorted);
	free(pl->cum);
	free(pl->tnodes);
	free(pl->runs);
	free(pl);
}

size_t nk_plan_num_pages(const nk_plan *pl)
{
	return pl ? pl->npages : 0;
}

uint64_t nk_plan_page_size(const nk_plan *pl)
{
	return pl ? pl->page_size : 0;
}

int nk_plan_node(const nk_plan *pl, size_t page)
{
	if (!pl || page >= pl->npages)
		return NK_EINVAL;
	return node_at(pl, page, NULL);
}

int nk_plan_nodes(const nk_plan *pl, size_t first, size_t n, int *nodes)
{
	size_t i, end;

	if (!pl || (n && !nodes) || first > pl->npages || n > pl->npages - first)
		return NK_EINVAL;
	if (pl->kind == NK_POLICY_NEXT_TOUCH)
		return NK_ENODATA;
	end = first + n;
	switch (pl->kind) {
	case NK_POLICY_CYCLIC:
	case NK_POLICY_CYCLIC_NEIGHBORS: {
		size_t k = first % pl->nnodes;
		for (i = 0; i < n; i++) {
			nodes[i] = pl->nodes[k];
			if (++k == pl->nnodes)
				k = 0;
		}
		return 0;
	}
	case NK_POLICY_SKEW_MAPP: {
		size_t m = pl->nnodes, r = first % m, k = (first + first / m + 1) % m;
		for (i = 0; i < n; i++) {
			nodes[i] = pl->nodes[k];
			if (++k == m)
				k = 0;
			if (++r == m) { /* a new round skews by one more */
				r = 0;
				if (++k == m)
					k = 0;
			}
		}
		return 0;
	}
	default:
		for (i = first; i < end;) {
			size_t len;
			int node = node_at(pl, i, &len);
			if (len > end - i)
				len = end - i;
			for (size_t j = 0; j < len; j++)
				nodes[i - first + j] = node;
			i += len;
		}
		return 0;
	}
}

int nk__plan_kind(const struct nk_plan *pl)
{
	return pl ? pl->kind : NK_EINVAL;
}

void *nk__plan_addr(const struct nk_plan *pl)
{
	return pl ? pl->addr : NULL;
}

uintptr_t nk__plan_base(const struct nk_plan *pl)
{
	return pl ? pl->base : 0;
}

int nk__plan_node_set(const struct nk_plan *pl, const int **nodes, size_t *n)
{
	if (!pl || !nodes || !n)
		return NK_EINVAL;
	*nodes = pl->nodes;
	*n = pl->nnodes;
	return 0;
}

int nk__plan_run_at(const struct nk_plan *pl, size_t page, size_t *len)
{
	if (!pl || page >= pl->npages)
		return NK_EINVAL;
	return node_at(pl, page, len);
}

int nk__plan_runs(const struct nk_plan *pl, size_t *count, const struct nk__plan_run **runs)
{
	if (!pl || !count || !runs)
		return NK_EINVAL;
	if (!pl->runs)
		return NK_ENODATA;
	*count = pl->nruns;
	*runs = pl->runs;
	return 0;
}

int nk__plan_kernel_hint(const struct nk_plan *pl, int *mode, const int **nodes, size_t *n)
{
	if (!pl || !mode || !nodes || !n)
		return NK_EINVAL;
	if (pl->hint_mode < 0)
		return NK_ENODATA;
	*mode = pl->hint_mode;
	*nodes = pl->hint_nodes;
	*n = pl->hint_n;
	return 0;
}

/* --------------------------------------------------------------- build */

struct ctx {
	const nk_machine *m;
	const struct nk_policy *p;
	const nk_region *r;
	const char *kname;
	nk_error *err;
};

/* A node the policy names explicitly: it must exist, have memory and be allowed. */
static int check_node(const struct ctx *c, const char *what, int id)
{
	int f = nk_machine_node_flags(c->m, id);
	if (f < 0)
		return nk__error(c->err, NK_ENODEV, "policy %s: %s %d: no such node on this machine", c->kname, what,
				 id);
	if (!(f & NK_NODE_HAS_MEMORY))
		return nk__error(c->err, NK_EINVAL, "policy %s: %s %d has no memory (a memoryless node cannot hold pages)",
				 c->kname, what, id);
	if (!(f & NK_NODE_MEM_ALLOWED))
		return nk__error(c->err, NK_EPERM, "policy %s: %s %d is not allowed to this process (cpuset mems)",
				 c->kname, what, id);
	return 0;
}

static int usable(const nk_machine *m, int idx)
{
	unsigned f = m->nodes[idx].flags;
	return (f & NK_NODE_HAS_MEMORY) && (f & NK_NODE_MEM_ALLOWED);
}

/* The node set: explicit (checked) or default (memory, allowed, id order). */
static int resolve_set(const struct ctx *c, const int *ids, size_t n, struct nk_plan *pl)
{
	const nk_machine *m = c->m;
	int rc;

	if (n) {
		for (size_t i = 0; i < n; i++) {
			rc = check_node(c, "node", ids[i]);
			if (rc)
				return rc;
		}
		pl->nodes = malloc(n * sizeof *pl->nodes);
		if (!pl->nodes)
			return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
		memcpy(pl->nodes, ids, n * sizeof *ids);
		pl->nnodes = n;
		return 0;
	}
	pl->nodes = malloc((size_t)m->nnodes * sizeof *pl->nodes);
	if (!pl->nodes)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	for (int i = 0; i < m->nnodes; i++)
		if (usable(m, i))
			pl->nodes[pl->nnodes++] = m->nodes[i].id;
	if (!pl->nnodes)
		return nk__error(c->err, NK_EINVAL, "policy %s: no node with memory is allowed to this process",
				 c->kname);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Region and geometry checks; fills base, delta, npages, rows/cols/elem. */
static int set_region(const struct ctx *c, struct nk_plan *pl)
{
	const nk_region *r = c->r;
	uintptr_t a = (uintptr_t)r->addr, last;
	uint64_t ps = nk_machine_page_size(c->m);

	if (!r->len)
		return nk__error(c->err, NK_EINVAL, "policy %s: the region is empty (len 0)", c->kname);
	if (a + (r->len - 1) < a)
		return nk__error(c->err, NK_EINVAL, "policy %s: the region wraps around the address space", c->kname);
	if (!ps || (ps & (ps - 1)) || ps > SIZE_MAX / 2)
		return nk__error(c->err, NK_EINVAL, "policy %s: the machine's page size %llu is unusable", c->kname,
				 (unsigned long long)ps);
	last = a + (r->len - 1);
	pl->addr = r->addr;
	pl->page_size = ps;
	pl->base = a & ~(uintptr_t)(ps - 1);
	pl->delta = a - pl->base;
	pl->npages = (size_t)(last / ps - a / ps) + 1;

	if (r->elem_size || r->ndims) {
		size_t prod = r->elem_size;
		if (r->ndims < 1 || r->ndims > 3)
			return nk__error(c->err, NK_EINVAL, "policy %s: region geometry: ndims %d is not 1, 2 or 3",
					 c->kname, r->ndims);
		if (!r->elem_size)
			return nk__error(c->err, NK_EINVAL, "policy %s: region geometry: elem_size is 0", c->kname);
		for (int d = 0; d < r->ndims; d++) {
			if (!r->dims[d])
				return nk__error(c->err, NK_EINVAL, "policy %s: region geometry: dims[%d] is 0", c->kname,
						 d);
			if (prod > SIZE_MAX / r->dims[d])
				return nk__error(c->err, NK_EINVAL, "policy %s: region geometry: dims overflow", c->kname);
			prod *= r->dims[d];
		}
		if (prod != r->len)
			return nk__error(c->err, NK_EINVAL,
					 "policy %s: region geometry: %zu elements of %zu bytes are %zu bytes, not len %zu",
					 c->kname, prod / r->elem_size, r->elem_size, prod, r->len);
		pl->elem = r->elem_size;
		pl->rows = r->dims[0];
		pl->row_bytes = r->len / r->dims[0];
		pl->cols = r->ndims >= 2 ? r->dims[1] : 0;
	}
	return 0;
}

static int need_2d(const struct ctx *c, const char *what)
{
	if (c->r->ndims != 2 || !c->r->elem_size)
		return nk__error(c->err, NK_EINVAL,
				 "policy %s: %s needs a 2D region (elem_size, ndims = 2, dims = rows, cols)", c->kname,
				 what);
	return 0;
}

/* Append a run, merging with the previous one when it continues on the same node. */
static void add_run(struct nk_plan *pl, size_t first, size_t npages, int node)
{
	struct nk__plan_run *last = pl->nruns ? &pl->runs[pl->nruns - 1] : NULL;
	if (!npages)
		return;
	if (last && last->node == node && last->first + last->npages == first) {
		last->npages += npages;
		return;
	}
	pl->runs[pl->nruns].first = first;
	pl->runs[pl->nruns].npages = npages;
	pl->runs[pl->nruns].node = node;
	pl->nruns++;
}

static int build_bind(const struct ctx *c, struct nk_plan *pl)
{
	size_t at = 0;

	pl->runs = malloc(pl->nnodes * sizeof *pl->runs);
	if (!pl->runs)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	/* Minas bind_all: fill node[0] up to its free memory, then node[1], ...;
	 * what exceeds them all goes to the last node (the applier falls back). */
	for (size_t k = 0; k < pl->nnodes && at < pl->npages; k++) {
		uint64_t total = 0, avail = 0, cap;
		nk_machine_node_memory(c->m, pl->nodes[k], &total, &avail);
		if (!avail)
			avail = total;
		cap = avail / pl->page_size;
		if (k + 1 == pl->nnodes || cap > pl->npages - at)
			cap = pl->npages - at;
		add_run(pl, at, (size_t)cap, pl->nodes[k]);
		at += (size_t)cap;
	}
	return 0;
}

/* The node a block goes to for a thread running on node @p id. */
static int thread_target(const struct ctx *c, int id, int *cache)
{
	const nk_machine *m = c->m;
	int idx = nk__node_idx(m, id), n, *near, rc;

	if (idx < 0)
		return nk__error(c->err, NK_ENODEV, "policy %s: thread node %d: no such node on this machine", c->kname,
				 id);
	if (cache[idx] != INT_MIN)
		return cache[idx];
	if (usable(m, idx))
		return cache[idx] = id;
	/* a thread on a memoryless or memory-disallowed node: nearest usable node */
	n = nk_machine_neighbors(m, id, NULL, 0);
	near = malloc(((size_t)n + 1) * sizeof *near);
	if (!near)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	nk_machine_neighbors(m, id, near, (size_t)n);
	rc = INT_MIN;
	for (int i = 0; i < n && rc == INT_MIN; i++)
		if (usable(m, nk__node_idx(m, near[i])))
			rc = cache[idx] = near[i];
	free(near);
	if (rc == INT_MIN)
		rc = nk__error(c->err, NK_EPERM, "policy %s: thread node %d: no node with memory is allowed to this process",
			       c->kname, id);
	return rc;
}

static int build_block(const struct ctx *c, struct nk_plan *pl)
{
	const struct nk_policy *p = c->p;
	int *cache = NULL, rc = 0;

	if (p->nthreads && p->nnodes)
		return nk__error(c->err, NK_EINVAL, "policy %s: give nodes or threads, not both", c->kname);
	pl->split = p->split;
	pl->nthreads = p->nthreads ? p->nthreads : pl->nnodes;
	pl->tnodes = malloc(pl->nthreads * sizeof *pl->tnodes);
	if (!pl->tnodes)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	if (!p->nthreads) {
		memcpy(pl->tnodes, pl->nodes, pl->nnodes * sizeof *pl->nodes);
	} else {
		cache = malloc((size_t)c->m->nnodes * sizeof *cache);
		if (!cache)
			return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
		for (int i = 0; i < c->m->nnodes; i++)
			cache[i] = INT_MIN;
		for (size_t t = 0; t < pl->nthreads; t++) {
			rc = thread_target(c, p->threads[t], cache);
			if (rc < 0)
				goto out_free;
			pl->tnodes[t] = rc;
		}
		rc = 0;
	}

	if (pl->split == NK_SPLIT_COLS) {
		rc = need_2d(c, "split=cols");
		goto out_free; /* no run list: page -> node is computed per column band */
	}
	if (pl->split == NK_SPLIT_ROWS && !c->r->elem_size) {
		rc = nk__error(c->err, NK_EINVAL,
			       "policy %s: split=rows needs the region's geometry (elem_size, ndims, dims)", c->kname);
		goto out_free;
	}
	pl->runs = malloc(pl->nthreads * sizeof *pl->runs);
	if (!pl->runs) {
		rc = nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
		goto out_free;
	}
	for (size_t t = 0, at = 0; t < pl->nthreads && at < pl->npages; t++) {
		size_t next;
		if (pl->split == NK_SPLIT_PAGES)
			next = part_start(pl->npages, pl->nthreads, t + 1);
		else if (t + 1 == pl->nthreads)
			next = pl->npages;
		else /* a page belongs to the band holding its first byte */
			next = first_page_at(pl, part_start(pl->rows, pl->nthreads, t + 1) * pl->row_bytes);
		if (next > pl->npages)
			next = pl->npages;
		if (next > at) {
			add_run(pl, at, next - at, pl->tnodes[t]);
			at = next;
		}
	}
out_free:
	free(cache);
	return rc;
}

struct cand {
	double f;
	int id;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->f != y->f)
		return x->f < y->f ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int build_neighbors(const struct ctx *c, struct nk_plan *pl)
{
	const nk_machine *m = c->m;
	const struct nk_policy *p = c->p;
	struct cand *cd;
	size_t nc = 0, nh = 0, count;
	int home = p->home;

	if (home >= 0) {
		if (nk__node_idx(m, home) < 0)
			return nk__error(c->err, NK_ENODEV, "policy %s: home node %d: no such node on this machine",
					 c->kname, home);
	} else {
		/* No syscalls here: the default home is the first node of the set
		 * with allowed memory and allowed cpus; callers that know where
		 * they run (getcpu) set it with nk_policy_set_home(). */
		const unsigned want = NK_NODE_HAS_CPUS | NK_NODE_CPUS_ALLOWED;
		home = pl->nodes[0];
		for (size_t k = 0; k < pl->nnodes; k++)
			if (((unsigned)nk_machine_node_flags(m, pl->nodes[k]) & want) == want) {
				home = pl->nodes[k];
				break;
			}
	}
	cd = malloc(pl->nnodes * sizeof *cd);
	if (!cd)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	for (size_t k = 0; k < pl->nnodes; k++) {
		if (pl->nodes[k] == home) {
			nh = 1;
			continue;
		}
		cd[nc].id = pl->nodes[k];
		if (nk_machine_numa_factor(m, home, pl->nodes[k], &cd[nc].f) || !isfinite(cd[nc].f))
			cd[nc].f = HUGE_VAL;
		nc++;
	}
	qsort(cd, nc, sizeof *cd, cmp_cand);
	if (p->count) {
		count = (size_t)p->count;
		if (count > nh + nc) {
			free(cd);
			return nk__error(c->err, NK_EINVAL, "policy %s: count %d but only %zu nodes are available",
					 c->kname, p->count, nh + nc);
		}
	} else {
		/* home and every node at the smallest remote factor (ties within 1e-9) */
		count = nh;
		for (size_t k = 0; k < nc; k++)
			if (cd[k].f <= cd[0].f * (1 + 1e-9))
				count++;
	}
	pl->nnodes = 0;
	if (nh)
		pl->nodes[pl->nnodes++] = home;
	for (size_t k = 0; pl->nnodes < count; k++)
		pl->nodes[pl->nnodes++] = cd[k].id;
	free(cd);
	return 0;
}

static int build_weighted(const struct ctx *c, struct nk_plan *pl)
{
	const struct nk_policy *p = c->p;

	pl->cum = malloc((pl->nnodes + 1) * sizeof *pl->cum);
	if (!pl->cum)
		return nk__error(c->err, NK_ENOMEM, "policy %s: out of memory", c->kname);
	for (size_t i = 0; i < p->nweights; i++) {
		size_t k = 0;
		while (k < pl->nnodes && pl->nodes[k] != p->wnodes[i])
			k++;
		if (k == pl->nnodes)
			return nk__error(c->err, NK_EINVAL, "policy %s: weight given for node %d, which is not in the node set",
					 c->kname, p->wnodes[i]);
	}
	pl->cum[0] = 0;
	for (size_t k = 0; k < pl->nnodes; k++) {
		unsigned w = 0;
		for (size_t i = 0; i < p->nweights && !w; i++)
			if (p->wnodes[i] == pl->nodes[k])
				w = p->weights[i];
		if (!w) {
			int mw = nk_machine_wi_weight(c->m, pl->nodes[k]);
			w = mw > 0 ? (unsigned)mw : 1;
		}
		pl->cum[k + 1] = pl->cum[k] + w;
	}
	return 0;
}

/* ---------------------------------------------------------- kernel hint */

/* Does the kernel's interleave over the sorted set equal node[k] = set[(vpn0 + k) mod M]? */
static int interleave_matches(const struct nk_plan *pl)
{
	size_t m = pl->nnodes, v0 = (size_t)((pl->base / pl->page_size) % m);
	for (size_t k = 0; k < m; k++)
		if (pl->nodes[k] != pl->sorted[(v0 + k) % m])
			return 0;
	return 1;
}

/* Weighted: do the machine's weights equal the plan's, and does the kernel's order match? */
static int weighted_matches(const struct nk_plan *pl, const nk_machine *m)
{
	size_t n = pl->nnodes;
	uint64_t w = pl->cum[n], v0 = (uint64_t)(pl->base / pl->page_size) % w;
	uint64_t *kcum;
	int ok = 1;

	for (size_t k = 0; k < n; k++)
		if (nk_machine_wi_weight(m, pl->nodes[k]) != (int)(pl->cum[k + 1] - pl->cum[k]))
			return 0;
	kcum = malloc((n + 1) * sizeof *kcum); /* cumulative weights in increasing id order */
	if (!kcum)
		return 0;
	kcum[0] = 0;
	for (size_t s = 0; s < n; s++) {
		size_t k = 0;
		while (pl->nodes[k] != pl->sorted[s])
			k++;
		kcum[s + 1] = kcum[s] + (pl->cum[k + 1] - pl->cum[k]);
	}
	/* one period of both maps (W <= 255 * M) */
	for (uint64_t i = 0; i < w && ok; i++)
		ok = pl->sorted[cum_index(kcum, n, (v0 + i) % w)] == pl->nodes[cum_index(pl->cum, n, i)];
	free(kcum);
	return ok;
}

static void set_hint(struct nk_plan *pl, const nk_machine *m)
{
	int constant = -1;

	pl->hint_mode = -1;
	if (pl->kind == NK_POLICY_NEXT_TOUCH)
		return;
	if (pl->npages == 1 || (pl->runs && pl->nruns == 1)) {
		constant = node_at(pl, 0, NULL);
	} else if (pl->kind == NK_POLICY_BLOCK) {
		size_t t = 1;
		while (t < pl->nthreads && pl->tnodes[t] == pl->tnodes[0])
			t++;
		if (t == pl->nthreads)
			constant = pl->tnodes[0];
	} else if (pl->nnodes == 1 && pl->kind != NK_POLICY_BIND) {
		constant = pl->nodes[0];
	}
	if (constant >= 0) {
		pl->hint_mode = NK__MPOL_BIND;
		pl->hint_node = constant;
		pl->hint_nodes = &pl->hint_node;
		pl->hint_n = 1;
		return;
	}
	switch (pl->kind) {
	case NK_POLICY_CYCLIC_BLOCK:
	case NK_POLICY_BLOCK_CYCLIC:
		if (pl->bpages != 1)
			return;
		/* fall through */
	case NK_POLICY_CYCLIC:
	case NK_POLICY_CYCLIC_NEIGHBORS:
		break;
	case NK_POLICY_PRIME_MAPP:
		if (pl->prime != pl->nnodes)
			return;
		break;
	case NK_POLICY_WEIGHTED: {
		size_t k = 1;
		while (k < pl->nnodes && pl->cum[k + 1] - pl->cum[k] == 1)
			k++;
		if (k == pl->nnodes && pl->cum[1] == 1 && interleave_matches(pl)) {
			/* all weights 1: plain interleave, the kernel's weights do not matter */
			pl->hint_mode = NK__MPOL_INTERLEAVE;
		} else if (weighted_matches(pl, m)) {
			pl->hint_mode = NK__MPOL_WEIGHTED_INTERLEAVE;
		} else {
			return;
		}
		pl->hint_nodes = pl->sorted;
		pl->hint_n = pl->nnodes;
		return;
	}
	default:
		return;
	}
	if (interleave_matches(pl)) {
		pl->hint_mode = NK__MPOL_INTERLEAVE;
		pl->hint_nodes = pl->sorted;
		pl->hint_n = pl->nnodes;
	}
}

int nk_plan_build(const nk_machine *m, const nk_policy *p, const nk_region *r, nk_plan **out, nk_error *err)
{
	struct nk_plan *pl;
	struct ctx c = { m, p, r, NULL, err };
	const int *set = NULL;
	size_t nset = 0;
	int rc;

	if (!m || !p || !r || !out)
		return nk__error(err, NK_EINVAL, "nk_plan_build: NULL argument");
	c.kname = nk__policy_kind_name(p->kind);
	if (!c.kname)
		return nk__error(err, NK_EINVAL, "nk_plan_build: bad policy kind %d", p->kind);
	pl = calloc(1, sizeof *pl);
	if (!pl)
		return nk__error(err, NK_ENOMEM, "policy %s: out of memory", c.kname);
	pl->kind = p->kind;
	pl->hint_mode = -1;
	rc = set_region(&c, pl);
	if (rc)
		goto out_free;

	if (p->kind == NK_POLICY_NEXT_TOUCH)
		goto out_done;
	set = p->nnodes ? p->nodes : NULL;
	nset = p->nnodes;
	if (p->kind == NK_POLICY_WEIGHTED && !p->nnodes && p->nweights) {
		set = p->wnodes; /* the weights name the set */
		nset = p->nweights;
	}
	rc = resolve_set(&c, set, nset, pl);
	if (rc)
		goto out_free;

	switch (p->kind) {
	case NK_POLICY_BIND:
		rc = build_bind(&c, pl);
		break;
	case NK_POLICY_BLOCK:
		rc = build_block(&c, pl);
		break;
	case NK_POLICY_CYCLIC_BLOCK:
	case NK_POLICY_BLOCK_CYCLIC: {
		uint64_t b = p->block ? p->block
				      : (p->kind == NK_POLICY_CYCLIC_BLOCK ? NK__POLICY_CYCLIC_BLOCK_DEFAULT
									    : NK__POLICY_BLOCK_CYCLIC_DEFAULT);
		b = b / pl->page_size + (b % pl->page_size != 0);
		pl->bpages = b > SIZE_MAX ? SIZE_MAX : (size_t)b;
		break;
	}
	case NK_POLICY_CYCLIC_NEIGHBORS:
		rc = build_neighbors(&c, pl);
		break;
	case NK_POLICY_PRIME_MAPP:
		if (p->prime) {
			if ((size_t)p->prime < pl->nnodes) {
				rc = nk__error(err, NK_EINVAL, "policy %s: prime %d is smaller than the %zu nodes", c.kname,
					       p->prime, pl->nnodes);
				break;
			}
			pl->prime = (size_t)p->prime;
		} else {
			pl->prime = pl->nnodes;
			while (!nk__is_prime((long long)pl->prime))
				pl->prime++;
		}
		break;
	case NK_POLICY_RANDOM:
		pl->seed = p->seed;
		break;
	case NK_POLICY_BLOCK_EXCLUSIVE:
		rc = need_2d(&c, "block_exclusive");
		pl->nthreads = pl->nnodes; /* p x p blocks */
		break;
	case NK_POLICY_WEIGHTED:
		rc = build_weighted(&c, pl);
		break;
	default:
		break;
	}
	if (rc)
		goto out_free;
	pl->sorted = malloc(pl->nnodes * sizeof *pl->sorted);
	if (!pl->sorted) {
		rc = nk__error(err, NK_ENOMEM, "policy %s: out of memory", c.kname);
		goto out_free;
	}
	memcpy(pl->sorted, pl->nodes, pl->nnodes * sizeof *pl->nodes);
	qsort(pl->sorted, pl->nnodes, sizeof *pl->sorted, cmp_int);
	set_hint(pl, m);
out_done:
	*out = pl;
	return 0;

out_free:
	nk_plan_free(pl);
	return rc;
}

int nk__plan_from_runs(const nk_machine *m, void *addr, size_t len, const struct nk__plan_run *runs, size_t nruns,
		       nk_plan **out, nk_error *err)
{
	struct nk_plan *pl;
	struct nk_region r = { 0 };
	struct ctx c = { m, NULL, &r, "runs", err };
	int *cache = NULL, rc;
	size_t at = 0;

	if (!m || !out || (nruns && !runs))
		return nk__error(err, NK_EINVAL, "nk__plan_from_runs: NULL argument");
	r.addr = addr;
	r.len = len;
	pl = calloc(1, sizeof *pl);
	if (!pl)
		return nk__error(err, NK_ENOMEM, "policy runs: out of memory");
	pl->kind = NK_POLICY_BLOCK;
	pl->split = NK_SPLIT_PAGES;
	pl->hint_mode = -1;
	if ((rc = set_region(&c, pl)))
		goto out_free;
	for (size_t k = 0; k < nruns; k++) {
		if (runs[k].first != at || !runs[k].npages || runs[k].npages > pl->npages - at) {
			rc = nk__error(err, NK_EINVAL, "policy runs: run %zu (pages %zu+%zu) does not continue at page %zu "
				       "of %zu", k, runs[k].first, runs[k].npages, at, pl->npages);
			goto out_free;
		}
		at += runs[k].npages;
	}
	if (at != pl->npages) {
		rc = nk__error(err, NK_EINVAL, "policy runs: the runs cover %zu of the region's %zu pages", at,
			       pl->npages);
		goto out_free;
	}
	cache = malloc((size_t)m->nnodes * sizeof *cache);
	pl->runs = malloc(nruns * sizeof *pl->runs);
	pl->nodes = malloc(nruns * sizeof *pl->nodes);
	pl->sorted = malloc(nruns * sizeof *pl->sorted);
	if (!cache || !pl->runs || !pl->nodes || !pl->sorted) {
		rc = nk__error(err, NK_ENOMEM, "policy runs: out of memory");
		goto out_free;
	}
	for (int i = 0; i < m->nnodes; i++)
		cache[i] = INT_MIN;
	for (size_t k = 0; k < nruns; k++) {
		size_t j = 0;
		int node = thread_target(&c, runs[k].node, cache);
		if (node < 0) {
			rc = node;
			goto out_free;
		}
		add_run(pl, runs[k].first, runs[k].npages, node);
		while (j < pl->nnodes && pl->nodes[j] != node) /* the node set: first appearance order */
			j++;
		if (j == pl->nnodes)
			pl->nodes[pl->nnodes++] = node;
	}
	memcpy(pl->sorted, pl->nodes, pl->nnodes * sizeof *pl->nodes);
	qsort(pl->sorted, pl->nnodes, sizeof *pl->sorted, cmp_int);
	if (pl->nnodes == 1) {
		pl->hint_mode = NK__MPOL_BIND;
		pl->hint_node = pl->nodes[0];
		pl->hint_nodes = &pl->hint_node;
		pl->hint_n = 1;
	}
	free(cache);
	*out = pl;
	return 0;

out_free:
	free(cache);
	nk_plan_free(pl);
	return rc;
}
