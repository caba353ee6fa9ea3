/* SPDX-License-Identifier: BSD-3-Clause
 * Profile analysis, statistics: the weighted ratio's cluster-robust 95 % interval (nk__an_ratio_ci) and
 * each variable's remote-share interval from its clustered samples (docs/report.md).
 * Pure arithmetic over the records: no verdicts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/analysis_impl.h"

/* ---------------------------------------------------------------- intervals */

/* The Wilson interval of ratio @p r with variance @p var (0: no spread seen, then @p n clusters' worth), the
 * effective size capped by Kish's (@p kish). */
static void ci_from_var(double r, double var, size_t n, double kish, struct nk__an_ci *out)
{
	const double z = NK__AN_Z95, z2 = z * z;
	double ne;
	out->r = r;
	if (var > 0 && r > 0 && r < 1)
		ne = r * (1 - r) / var;
	else /* no spread seen: as if each cluster were one sample (all remote in 3 groups is 3 samples' worth) */
		ne = (double)n;
	if (ne > kish)
		ne = kish;
	out->n_eff = ne;
	if (ne <= 0)
		return;
	double den = 1 + z2 / ne, mid = (r + z2 / (2 * ne)) / den;
	double half = z * sqrt(r * (1 - r) / ne + z2 / (4 * ne * ne)) / den;
	out->lo = mid - half < 0 ? 0 : mid - half;
	out->hi = mid + half > 1 ? 1 : mid + half;
	/* r is inside its Wilson interval; rounding must not put it out */
	if (out->lo > r)
		out->lo = r;
	if (out->hi < r)
		out->hi = r;
}

void nk__an_ratio_ci(const double *W, const double *Y, size_t n, double sum_w2, struct nk__an_ci *out)
{
	double sw = 0, sy = 0, ss = 0;
	*out = (struct nk__an_ci){ 0, 0, 1, 0 };
	for (size_t c = 0; c < n; c++) {
		sw += W[c];
		sy += Y[c];
	}
	if (!n || sw <= 0)
		return;
	double r = sy / sw;
	if (r < 0)
		r = 0;
	if (r > 1)
		r = 1;
	for (size_t c = 0; c < n; c++) {
		double d = Y[c] - r * W[c];
		ss += d * d;
	}
	/* Kish's effective size: what unequal weights leave of the sample count even when samples are
	 * independent; a cluster-robust variance below it (clusters more alike than independent samples
	 * would be) is not trusted beyond it */
	double kish = sum_w2 > 0 ? sw * sw / sum_w2 : (double)n;
	double var = n >= 2 ? ss / (sw * sw) * (double)n / (double)(n - 1) : 0;
	ci_from_var(r, var, n, kish, out);
}

int nk__an_decided(const struct nk__an_var *v)
{
	return v->known_samples && v->clusters >= NK__AN_MIN_CLUSTERS &&
	       (v->ci_hi - v->ci_lo) / 2 <= NK__AN_CI_HALF + 1e-12;
}

/*
 * Clusters of the remote-share interval.  Pagefault samples are correlated two ways: by page group (the
 * sampler revokes and samples 16-page groups: cl) and by round (the samples of one 10 ms round follow the
 * threads that ran right after it: under QEMU's -icount one virtual cpu at a time, and the thread sharing
 * the sampler's cpu first on a real machine).  The variance is the two-way cluster-robust one (Cameron,
 * Gelbach and Miller 2011): V(groups) + V(rounds) - V(group x round), and never below V(groups), the
 * one-way variance used before.  hw and trace samples are their own clusters both ways (one-way, as
 * independent samples).
 */
enum { BY_GROUP = 0, BY_ROUND = 1, BY_BOTH = 2 };

/* The cluster key of clustering @p by; @p per_var: a variable's own clusters (the round key holds the
 * variable), else all samples' (a round spans the variables). */
static int cmp_by(const struct nk__cl_rec *a, const struct nk__cl_rec *b, int by, int per_var)
{
	int c;
	if ((per_var || by != BY_ROUND) && (c = NK__CMP(a->var, b->var)))
		return c;
	if ((c = NK__CMP(a->proc, b->proc)) || (c = NK__CMP(a->grouped, b->grouped)))
		return c;
	if (by != BY_ROUND && (c = NK__CMP(a->cl, b->cl)))
		return c;
	if (by != BY_GROUP && (c = NK__CMP(a->round, b->round)))
		return c;
	return 0;
}

/* One comparator per clustering (qsort has no context argument, and the library keeps no global state). */
#define CMP_CL(name, by, per_var)                               \
	static int name(const void *x, const void *y)           \
	{                                                       \
		return cmp_by(x, y, by, per_var);               \
	}
CMP_CL(cmp_group_all, BY_GROUP, 0)
CMP_CL(cmp_round_all, BY_ROUND, 0)
CMP_CL(cmp_both_all, BY_BOTH, 0)
CMP_CL(cmp_group_var, BY_GROUP, 1)
CMP_CL(cmp_round_var, BY_ROUND, 1)
CMP_CL(cmp_both_var, BY_BOTH, 1)
#undef CMP_CL

/* Accumulate the clusters of @p cr (sorted for @p by) into st (per variable: st[var], else st[0]). */
static void cluster_sums(const struct nk__cl_rec *cr, size_t n, int by, int per_var, struct nk__cl_stats *st)
{
	for (size_t i = 0, j; i < n; i = j) {
		double W = 0, Y = 0;
		for (j = i; j < n && !cmp_by(&cr[i], &cr[j], by, per_var); j++) {
			W += cr[j].w;
			Y += cr[j].remote ? cr[j].w : 0;
		}
		struct nk__cl_stats *s = per_var ? &st[cr[i].var] : st;
		double d = Y - s->rc * W;
		s->A[by] += d * d;
		s->B[by] += d * W;
		s->C[by] += W * W;
		s->n[by]++;
	}
}

void nk__cl_sums(struct nk__cl_rec *cr, size_t n, struct nk__cl_stats *total, struct nk__cl_stats *vars, size_t n_vars)
{
	if (total)
		memset(total, 0, sizeof *total);
	for (size_t v = 0; vars && v < n_vars; v++)
		memset(&vars[v], 0, sizeof vars[v]);
	for (size_t i = 0; i < n; i++) {
		double w = cr[i].w, y = cr[i].remote ? w : 0;
		struct nk__cl_stats *to[2] = { total, vars ? &vars[cr[i].var] : NULL };
		for (int k = 0; k < 2; k++) {
			if (!to[k])
				continue;
			to[k]->sw += w;
			to[k]->sy += y;
			to[k]->sw2 += w * w;
			to[k]->known++;
		}
	}
	if (total)
		total->rc = total->sw > 0 ? total->sy / total->sw : 0;
	for (size_t v = 0; vars && v < n_vars; v++)
		vars[v].rc = vars[v].sw > 0 ? vars[v].sy / vars[v].sw : 0;
	static int (*const cmp[2][3])(const void *, const void *) = {
		{ cmp_group_all, cmp_round_all, cmp_both_all },
		{ cmp_group_var, cmp_round_var, cmp_both_var },
	};
	for (int by = 0; by < 3; by++) {
		for (int per_var = 0; per_var < 2; per_var++) {
			struct nk__cl_stats *st = per_var ? vars : total;
			if (!st)
				continue;
			qsort(cr, n, sizeof *cr, cmp[per_var][by]);
			cluster_sums(cr, n, by, per_var, st);
		}
	}
}

void nk__cl_pool(const struct nk__cl_stats *const *st, size_t n, double *share, uint64_t *clusters,
		 struct nk__an_ci *ci)
{
	double sw = 0, sy = 0, sw2 = 0, ss[3] = { 0, 0, 0 };
	uint64_t nc[3] = { 0, 0, 0 }, known = 0;

	*share = 0;
	*clusters = 0;
	*ci = (struct nk__an_ci){ 0, 0, 1, 0 };
	for (size_t i = 0; i < n; i++) {
		sw += st[i]->sw;
		sy += st[i]->sy;
		sw2 += st[i]->sw2;
		known += st[i]->known;
	}
	if (!known || sw <= 0)
		return;
	double r = sy / sw;
	r = r < 0 ? 0 : r > 1 ? 1 : r;
	/* each source's sums moved from its own centre to the pooled share: (Y - r W)^2 = (d - (r - rc) W)^2 */
	for (size_t i = 0; i < n; i++) {
		double d = r - st[i]->rc;
		for (int k = 0; k < 3; k++) {
			ss[k] += st[i]->A[k] - 2 * d * st[i]->B[k] + d * d * st[i]->C[k];
			nc[k] += st[i]->n[k];
		}
	}
	double V[3];
	for (int k = 0; k < 3; k++)
		V[k] = nc[k] >= 2 ? (ss[k] > 0 ? ss[k] : 0) / (sw * sw) * (double)nc[k] / (double)(nc[k] - 1) : 0;
	/* two-way (Cameron, Gelbach and Miller 2011), never below the one-way variance by group */
	double two = V[BY_GROUP] + V[BY_ROUND] - V[BY_BOTH];
	double v = two > V[BY_GROUP] ? two : V[BY_GROUP];
	ci_from_var(r, nc[BY_GROUP] >= 2 ? v : 0, nc[BY_GROUP], sw2 > 0 ? sw * sw / sw2 : (double)nc[BY_GROUP], ci);
	*share = r;
	*clusters = nc[BY_GROUP];
}

/* Each variable's remote-share interval from its samples with both nodes known (local or remote). */
int nk__an_intervals(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	size_t n = 0;
	struct nk__cl_rec *cr = malloc((c->n_recs ? c->n_recs : 1) * sizeof(*cr));
	struct nk__cl_stats *st = calloc(a->n_vars ? a->n_vars : 1, sizeof *st);
	int rc = NK_ENOMEM;
	if (!cr || !st)
		goto out;
	for (size_t i = 0; i < a->n_vars; i++) {
		a->vars[i].ci_lo = 0;
		a->vars[i].ci_hi = 1;
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *q = &c->recs[i];
		if (q->where >= 2)
			continue;
		cr[n++] = (struct nk__cl_rec){ q->var, q->proc, q->cl, q->round, q->w, q->grouped, q->where == 1 };
		a->vars[q->var].known_samples++;
		a->vars[q->var].ci_grouped |= q->grouped;
	}
	nk__cl_sums(cr, n, NULL, st, a->n_vars);
	for (size_t v = 0; v < a->n_vars; v++) {
		struct nk__an_var *var = &a->vars[v];
		if (!var->known_samples || st[v].sw <= 0)
			continue;
		const struct nk__cl_stats *one = &st[v];
		double share;
		uint64_t clusters;
		struct nk__an_ci ci;
		nk__cl_pool(&one, 1, &share, &clusters, &ci);
		var->clusters = clusters;
		var->ci_lo = ci.lo;
		var->ci_hi = ci.hi;
		var->n_eff = ci.n_eff;
	}
	rc = 0;
out:
	free(cr);
	free(st);
	return rc;
}

