/* SPDX-License-Identifier: BSD-3-Clause
 * Block layouts of a variable's pattern (advise_impl.h): the best fit of T blocks to the pages' owners,
 * and the simplest layout the samples support (issue 21 §3, docs/plan.md "Simplifying a block plan").
 * Pure: no machine access beyond the advise context's node map.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advise_impl.h"
#include "util/error.h"

#define ADV_SIMPLE_Z 1.96 /* block plans as simple as the evidence: z of the two tests (95 %, two-sided) */

/* Band of page @p i among @p n pages cut into @p t bands (docs/policies.md, block). */
static uint64_t band_of(uint64_t i, uint64_t n, uint64_t t)
{
	uint64_t q = n / t, r = n % t;
	if (i >= n)
		return t - 1;
	if (i < r * (q + 1))
		return i / (q + 1);
	return r + (i - r * (q + 1)) / q;
}

/*
 * Best block layout: for T blocks, block b goes to the target node that makes most of the accesses
 * to pages of band b; its local share is the accesses that would then be local.  Returns the best
 * T (0 none) with its node per block in *nodes (malloc'ed) and its local share in *local.
 */
int nk__adv_block_fit(const struct adv *c, const struct pat *p, const uint64_t *cands, size_t ncand, int **nodes,
		      uint64_t *best_t, double *best_local)
{
	*nodes = NULL;
	*best_t = 0;
	*best_local = -1;
	for (size_t k = 0; k < ncand; k++) {
		uint64_t t = cands[k];
		int dup = 0;
		for (size_t q = 0; q < k; q++)
			dup |= cands[q] == t;
		if (dup || t < 1 || t > ADV_MAX_BLOCKS || t > p->npages)
			continue;
		double *w = calloc((size_t)t * (size_t)c->nn, sizeof(double));
		int *bn = malloc((size_t)t * sizeof(int));
		if (!w || !bn) {
			free(w);
			free(bn);
			free(*nodes);
			*nodes = NULL;
			return NK_ENOMEM;
		}
		for (size_t i = 0; i < p->nr; i++) {
			const struct rec *r = &p->r[i];
			uint64_t n = r->npages >= t ? r->npages : t;
			w[band_of(r->page, n, t) * (size_t)c->nn + (size_t)r->node] += r->w;
		}
		double local = 0;
		int last = -1;
		for (uint64_t b = 0; b < t; b++) {
			/* by target node: sum the profile nodes mapped to each */
			int bestn = -1;
			double bw = 0;
			for (int q = 0; q < c->nn; q++) {
				double s = 0;
				for (int u = 0; u < c->nn; u++)
					if (c->map[u] == c->map[q])
						s += w[b * (size_t)c->nn + (size_t)u];
				if (s > bw) {
					bw = s;
					bestn = c->map[q];
				}
			}
			bn[b] = bestn;
			local += bw;
			if (bestn >= 0)
				last = bestn;
		}
		/* a band without samples takes its neighbour's node (the previous one, else the next) */
		for (uint64_t b = 0; b < t; b++)
			if (bn[b] < 0)
				bn[b] = b ? bn[b - 1] : -1;
		for (uint64_t b = t; b-- > 0;)
			if (bn[b] < 0)
				bn[b] = b + 1 < t ? bn[b + 1] : last;
		free(w);
		local = p->total > 0 ? local / p->total : 0;
		if (local > *best_local + 1e-12) {
			free(*nodes);
			*nodes = bn;
			*best_t = t;
			*best_local = local;
		} else {
			free(bn);
		}
	}
	return 0;
}

/*
 * Plans as simple as the evidence (issue 21 §3, docs/plan.md "Simplifying a block plan").
 *
 * The best-fitting layout of block_fit follows every page's sampled owner, sampling noise included:
 * a page sampled twice from the wrong node becomes a block of its own when T is fine enough (ragged
 * plans such as block:threads=0*18,1*17,2*5,0,2*13,3*18 where block:threads=0-3 was right).  Two tests
 * take back what the samples do not support, both at z = ADV_SIMPLE_Z (95 %, two-sided), the samples
 * counted by their effective number n = total^2 / sum of squared weights (n = the sample count when
 * every weight is 1) and taken as independent (samples of one page are not quite, which makes the
 * tests keep more blocks than they should, never fewer):
 *
 *  (b) merge: a run of consecutive blocks on one node whose samples from that node (k) do not beat
 *      those from its stronger neighbour run's node (j) by a sign test, k - j <= z sqrt(k + j), goes to
 *      that neighbour's node; the weakest run first, until every run stands (a run alone against
 *      nothing needs k > z^2, about 4 samples).  Always applied to the best layout.
 *  (a) prefer the simpler: every candidate count T (1, owner runs, distinct owners, threads of the
 *      variable, threads of the program: the schedule's own static partition, one equal band per
 *      thread) is fitted again, as is and merged; one whose local share is at least the lower end
 *      of the Wilson interval of the best layout's local share (its share of n samples) is as good
 *      as the best as far as the samples can tell.  Of the layouts kept, the one with the fewest
 *      runs of blocks on one node wins, then the fewest blocks T, then the higher local share.
 */
static int node_q(const struct adv *c, int node)
{
	for (int q = 0; q < c->nn; q++)
		if (c->map[q] == node)
			return q;
	return -1;
}

/* Accesses per band by target node: tw[b * nn + q] = accesses to band b of @p t from the profile nodes
 * mapped to target node map[q] (malloc'ed, NULL: no memory). */
static double *band_tw(const struct adv *c, const struct pat *p, uint64_t t)
{
	size_t nn = (size_t)c->nn;
	double *w = calloc((size_t)t * nn, sizeof(double)), *tw = calloc((size_t)t * nn, sizeof(double));
	if (!w || !tw) {
		free(w);
		free(tw);
		return NULL;
	}
	for (size_t i = 0; i < p->nr; i++) {
		const struct rec *r = &p->r[i];
		uint64_t n = r->npages >= t ? r->npages : t;
		w[band_of(r->page, n, t) * nn + (size_t)r->node] += r->w;
	}
	for (uint64_t b = 0; b < t; b++)
		for (size_t q = 0; q < nn; q++)
			for (size_t u = 0; u < nn; u++)
				if (c->map[u] == c->map[q])
					tw[b * nn + q] += w[b * nn + u];
	free(w);
	return tw;
}

/* Accesses to bands [b0, b1) from target node @p node. */
static double run_w(const struct adv *c, const double *tw, uint64_t b0, uint64_t b1, int node)
{
	int q = node < 0 ? -1 : node_q(c, node);
	double s = 0;
	if (q < 0)
		return 0;
	for (uint64_t b = b0; b < b1; b++)
		s += tw[b * (size_t)c->nn + (size_t)q];
	return s;
}

static double lay_local(const struct adv *c, const struct pat *p, const double *tw, uint64_t t, const int *bn)
{
	double s = 0;
	for (uint64_t b = 0; b < t; b++)
		s += run_w(c, tw, b, b + 1, bn[b]);
	return p->total > 0 ? s / p->total : 0;
}

int nk__adv_lay_runs(const int *bn, uint64_t t)
{
	int n = 0;
	for (uint64_t b = 0; b < t; b++)
		n += !b || bn[b] != bn[b - 1];
	return n;
}

/* (b): merge the runs whose owner the samples cannot tell from a neighbour's (@p scale: effective samples
 * per unit of weight). */
static void merge_runs(const struct adv *c, const double *tw, uint64_t t, int *bn, double scale)
{
	for (;;) {
		double weakest = 0;
		uint64_t w0 = 0, w1 = 0;
		int to = -1;
		for (uint64_t b0 = 0, b1; b0 < t; b0 = b1) {
			for (b1 = b0 + 1; b1 < t && bn[b1] == bn[b0];)
				b1++;
			int prev = b0 ? bn[b0 - 1] : -1, next = b1 < t ? bn[b1] : -1;
			if (prev < 0 && next < 0)
				continue;
			double k = run_w(c, tw, b0, b1, bn[b0]) * scale;
			double jp = prev >= 0 ? run_w(c, tw, b0, b1, prev) * scale : -1;
			double jn = next >= 0 ? run_w(c, tw, b0, b1, next) * scale : -1;
			double j = jp >= jn ? jp : jn;
			double z = k + j > 0 ? (k - j) / sqrt(k + j) : 0;
			if (z <= ADV_SIMPLE_Z && (to < 0 || z < weakest)) {
				weakest = z;
				w0 = b0;
				w1 = b1;
				to = jp >= jn ? prev : next;
			}
		}
		if (to < 0)
			return;
		for (uint64_t b = w0; b < w1; b++)
			bn[b] = to;
	}
}

/* Lower end of the Wilson score interval of a proportion @p ph of @p n trials at @p z. */
static double wilson_lo(double ph, double n, double z)
{
	if (n <= 0)
		return 0;
	double z2 = z * z;
	double half = z * sqrt(ph * (1 - ph) / n + z2 / (4 * n * n));
	return (ph + z2 / (2 * n) - half) / (1 + z2 / n);
}

/*
 * Simplify the best layout (*t blocks *bn with local share *local, from block_fit over @p cands):
 * replaces them with the simplest layout the samples support, *changed when it is not the best one.
 */
int nk__adv_block_simplify(const struct adv *c, const struct pat *p, const uint64_t *cands, size_t ncand,
			   uint64_t *t, int **bn, double *local, int *changed)
{
	double n_eff = p->w2 > 0 ? p->total * p->total / p->w2 : 0;
	double scale = p->total > 0 ? n_eff / p->total : 0;
	double lo = wilson_lo(*local, n_eff, ADV_SIMPLE_Z);
	uint64_t best_t = *t;
	uint64_t ts[9] = { best_t, 1 };
	size_t nts = 2;
	for (size_t k = 0; k < ncand && nts < sizeof ts / sizeof ts[0]; k++)
		ts[nts++] = cands[k];
	uint64_t ch_t = best_t;
	int *ch = *bn, ch_runs = nk__adv_lay_runs(*bn, best_t);
	double ch_local = *local;
	*changed = 0;
	for (size_t i = 0; i < nts; i++) {
		uint64_t tt = ts[i];
		int dup = 0;
		for (size_t q = 0; q < i; q++)
			dup |= ts[q] == tt;
		if (dup || tt < 1 || tt > ADV_MAX_BLOCKS || tt > p->npages)
			continue;
		int *nb = NULL;
		if (i == 0) {
			if ((nb = malloc((size_t)tt * sizeof(int))))
				memcpy(nb, *bn, (size_t)tt * sizeof(int));
		} else {
			uint64_t x;
			double l;
			if (nk__adv_block_fit(c, p, &tt, 1, &nb, &x, &l)) {
				if (ch != *bn)
					free(ch);
				return NK_ENOMEM;
			}
		}
		double *tw = nb ? band_tw(c, p, tt) : NULL;
		if (!tw) {
			free(nb);
			if (ch != *bn)
				free(ch);
			return NK_ENOMEM;
		}
		for (int merged = 0; merged < 2; merged++) {
			if (merged)
				merge_runs(c, tw, tt, nb, scale);
			double l = lay_local(c, p, tw, tt, nb);
			int runs = nk__adv_lay_runs(nb, tt);
			int ok = i == 0 || l >= lo - 1e-12; /* the best, merged or not, needs no interval */
			int better = runs < ch_runs || (runs == ch_runs && (tt < ch_t || (tt == ch_t && l > ch_local + 1e-12)));
			if (!ok || !better)
				continue;
			int *cp = malloc((size_t)tt * sizeof(int));
			if (!cp) {
				free(tw);
				free(nb);
				if (ch != *bn)
					free(ch);
				return NK_ENOMEM;
			}
			memcpy(cp, nb, (size_t)tt * sizeof(int));
			if (ch != *bn)
				free(ch);
			ch = cp;
			ch_t = tt;
			ch_runs = runs;
			ch_local = l;
			*changed = 1;
		}
		free(tw);
		free(nb);
	}
	if (ch != *bn) {
		free(*bn);
		*bn = ch;
		*t = ch_t;
		*local = ch_local;
	}
	return 0;
}
