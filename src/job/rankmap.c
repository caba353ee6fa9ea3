/* SPDX-License-Identifier: BSD-3-Clause
 * Rank mapping: a local search over swaps of two ranks' slots (rankmap.h).
 *
 * The cost is the quadratic assignment objective sum bytes(a, b) x dist(slot a, slot b).  A swap of ranks i
 * and j changes only the terms of their edges, so with each rank's neighbours at hand its change costs the
 * two ranks' degrees; a pass tries every pair (first improvement) and passes repeat until none improves
 * (at most MAX_PASSES).  Two starts: the mapping as profiled (the launcher's, often a good one for
 * neighbours numbered in order) and a greedy one that lays the ranks in slot order along a traversal which
 * always takes next the rank with the most traffic to those already laid (Prim's order on the traffic), so
 * heavy partners land in neighbouring slots, which the caller numbers by host, then node.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job/rankmap.h"
#include "numakit.h"

#define MAX_PASSES 64
#define RESTARTS 16       /* seeded random starts, */
#define RESTART_MAX_N 256 /* up to this many ranks */

/* Symmetric adjacency in compressed rows: rank i's neighbours nb[off[i] .. off[i + 1]), weights w. */
struct adj {
	size_t *off;
	int *nb;
	double *w;
};

static void adj_free(struct adj *g)
{
	free(g->off);
	free(g->nb);
	free(g->w);
}

static int cmp_edge(const void *x, const void *y)
{
	const struct nk__rm_edge *a = x, *b = y;
	return a->a != b->a ? (a->a > b->a) - (a->a < b->a) : (a->b > b->b) - (a->b < b->b);
}

/* The edges summed per unordered pair, both directions listed. */
static int adj_build(const struct nk__rm_problem *p, struct adj *g)
{
	size_t m = p->n_edges, k = 0;
	struct nk__rm_edge *e = malloc((2 * m + 1) * sizeof *e);
	g->off = calloc((size_t)p->n + 1, sizeof *g->off);
	g->nb = malloc((2 * m + 1) * sizeof *g->nb);
	g->w = malloc((2 * m + 1) * sizeof *g->w);
	if (!e || !g->off || !g->nb || !g->w) {
		free(e);
		adj_free(g);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		const struct nk__rm_edge *x = &p->edges[i];
		if (x->a == x->b || x->bytes <= 0)
			continue;
		e[k++] = (struct nk__rm_edge){ x->a, x->b, x->bytes };
		e[k++] = (struct nk__rm_edge){ x->b, x->a, x->bytes };
	}
	qsort(e, k, sizeof *e, cmp_edge);
	size_t n = 0;
	for (size_t i = 0; i < k; i++) {
		if (n && g->nb[n - 1] == e[i].b && i && e[i - 1].a == e[i].a) {
			g->w[n - 1] += e[i].bytes;
			continue;
		}
		g->nb[n] = e[i].b;
		g->w[n] = e[i].bytes;
		g->off[e[i].a + 1]++;
		n++;
	}
	for (int i = 0; i < p->n; i++)
		g->off[i + 1] += g->off[i];
	free(e);
	return 0;
}

double nk__rm_cost(const struct nk__rm_problem *p, const int *map)
{
	double c = 0;
	for (size_t i = 0; i < p->n_edges; i++) {
		const struct nk__rm_edge *e = &p->edges[i];
		if (e->a != e->b && e->bytes > 0)
			c += e->bytes * p->dist[(size_t)map[e->a] * (size_t)p->n + (size_t)map[e->b]];
	}
	return c;
}

/* The change of cost if ranks i and j swapped slots. */
static double swap_delta(const struct nk__rm_problem *p, const struct adj *g, const int *map, int i, int j)
{
	size_t n = (size_t)p->n;
	const double *di = p->dist + (size_t)map[i] * n, *dj = p->dist + (size_t)map[j] * n;
	double d = 0;
	for (size_t k = g->off[i]; k < g->off[i + 1]; k++)
		if (g->nb[k] != j)
			d += g->w[k] * (dj[map[g->nb[k]]] - di[map[g->nb[k]]]);
	for (size_t k = g->off[j]; k < g->off[j + 1]; k++)
		if (g->nb[k] != i)
			d += g->w[k] * (di[map[g->nb[k]]] - dj[map[g->nb[k]]]);
	return d;
}

/* Swaps until none lowers the cost (by more than a relative 1e-12 of it, against rounding). */
static void improve(const struct nk__rm_problem *p, const struct adj *g, int *map)
{
	double eps = 1e-12 * nk__rm_cost(p, map);
	for (int pass = 0; pass < MAX_PASSES; pass++) {
		int better = 0;
		for (int i = 0; i < p->n; i++) {
			if (g->off[i] == g->off[i + 1])
				continue; /* a rank without traffic gains nothing by moving; others may swap with it */
			for (int j = 0; j < p->n; j++) {
				if (j == i || map[j] == map[i])
					continue;
				if (swap_delta(p, g, map, i, j) < -eps) {
					int t = map[i];
					map[i] = map[j];
					map[j] = t;
					better = 1;
				}
			}
		}
		if (!better)
			break;
	}
}

/* Hops from @p s to every rank in the traffic graph (breadth first), -1 unreachable; @p q: n ints of room. */
static void hops_from(const struct adj *g, size_t n, size_t s, int *hops, int *q)
{
	for (size_t i = 0; i < n; i++)
		hops[i] = -1;
	size_t head = 0, tail = 0;
	hops[s] = 0;
	q[tail++] = (int)s;
	while (head < tail) {
		int v = q[head++];
		for (size_t k = g->off[v]; k < g->off[v + 1]; k++)
			if (hops[g->nb[k]] < 0) {
				hops[g->nb[k]] = hops[v] + 1;
				q[tail++] = g->nb[k];
			}
	}
}

/*
 * The greedy start: slots in order, each domain (p->group) filled by Prim's order on the traffic restricted
 * to the domain.  Its first rank is the one with the most traffic to the ranks laid before (the domains
 * next to it), else with the most traffic; then each time the rank with the most traffic to the domain's,
 * ties to the one fewest hops from the domain's first rank (a ball around it, not a row: in a 2-D halo the
 * ties are everywhere, and ids would lay rows).  So a domain holds a compact region of the communication
 * graph next to the region laid before it.
 */
static int greedy(const struct nk__rm_problem *p, const struct adj *g, int *map)
{
	size_t n = (size_t)p->n;
	double *key = calloc(n, sizeof *key), *all = calloc(n, sizeof *all), *tot = calloc(n, sizeof *tot);
	int *hops = malloc(n * sizeof *hops), *q = malloc(n * sizeof *q);
	char *done = calloc(n, 1);
	int rc = 0;
	if (!key || !all || !tot || !done || !hops || !q) {
		rc = NK_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = g->off[i]; k < g->off[i + 1]; k++)
			tot[i] += g->w[k];
	for (size_t slot = 0; slot < n; slot++) {
		int fresh = slot == 0 || (p->group && p->group[slot] != p->group[slot - 1]);
		if (fresh)
			memset(key, 0, n * sizeof *key);
		size_t best = n;
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			if (best == n) {
				best = i;
				continue;
			}
			double ki = fresh ? all[i] : key[i], kb = fresh ? all[best] : key[best];
			if (ki != kb) {
				if (ki > kb)
					best = i;
				continue;
			}
			if (!fresh && hops[i] != hops[best]) {
				if (hops[i] >= 0 && (hops[best] < 0 || hops[i] < hops[best]))
					best = i;
				continue;
			}
			if (tot[i] > tot[best])
				best = i;
		}
		if (fresh)
			hops_from(g, n, best, hops, q);
		done[best] = 1;
		map[best] = (int)slot;
		for (size_t k = g->off[best]; k < g->off[best + 1]; k++) {
			key[g->nb[k]] += g->w[k];
			all[g->nb[k]] += g->w[k];
		}
	}
out:
	free(key);
	free(all);
	free(tot);
	free(hops);
	free(q);
	free(done);
	return rc;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Local search from @p start into @p cand; keep it in @p best when cheaper than *best_cost. */
static void try_start(const struct nk__rm_problem *p, const struct adj *g, int *cand, int *best, double *best_cost)
{
	improve(p, g, cand);
	double c = nk__rm_cost(p, cand);
	if (c < *best_cost) {
		*best_cost = c;
		memcpy(best, cand, (size_t)p->n * sizeof *best);
	}
}

int nk__rm_solve(const struct nk__rm_problem *p, int *out)
{
	if (!p || !out || p->n < 1 || p->n > NK__RM_MAX_RANKS || !p->dist || !p->initial || (p->n_edges && !p->edges))
		return NK_EINVAL;
	size_t n = (size_t)p->n;
	char *seen = calloc(n, 1);
	if (!seen)
		return NK_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int s = p->initial[i];
		if (s < 0 || (size_t)s >= n || seen[s]) {
			free(seen);
			return NK_EINVAL;
		}
		seen[s] = 1;
	}
	free(seen);
	for (size_t i = 0; i < p->n_edges; i++)
		if (p->edges[i].a < 0 || p->edges[i].a >= p->n || p->edges[i].b < 0 || p->edges[i].b >= p->n ||
		    !(p->edges[i].bytes >= 0))
			return NK_EINVAL;
	struct adj g = { 0 };
	int *best = malloc(n * sizeof *best), *cand = malloc(n * sizeof *cand);
	int rc = !best || !cand ? NK_ENOMEM : adj_build(p, &g);
	if (!rc) {
		memcpy(best, p->initial, n * sizeof *best);
		improve(p, &g, best);
		double cost = nk__rm_cost(p, best);
		if (!(rc = greedy(p, &g, cand)))
			try_start(p, &g, cand, best, &cost);
		uint64_t seed = 0x9e3779b97f4a7c15ull;
		for (int r = 0; !rc && n <= RESTART_MAX_N && r < RESTARTS; r++) {
			for (size_t i = 0; i < n; i++)
				cand[i] = (int)i;
			for (size_t i = n - 1; i > 0; i--) {
				size_t k = (size_t)(xs(&seed) % (i + 1));
				int t = cand[i];
				cand[i] = cand[k];
				cand[k] = t;
			}
			try_start(p, &g, cand, best, &cost);
		}
		if (!rc)
			memcpy(out, nk__rm_cost(p, best) < nk__rm_cost(p, p->initial) ? best : p->initial, n * sizeof *out);
		adj_free(&g);
	}
	free(best);
	free(cand);
	return rc;
}
