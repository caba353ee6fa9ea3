/*
 * Profile analysis, statistics: the weighted ratio's cluster-robust 95 % interval (nk__an_ratio_ci) and
 * each variable's remote-share interval from its clustered samples (docs/report.md).
 * Pure arithmetic over the records: no verdicts.
 */
#include <math.h>

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
struct clrec {
	uint32_t var, proc;
	uint64_t cl, round;
	uint8_t grouped, remote;
	uint32_t w;
};

enum { BY_GROUP = 0, BY_ROUND = 1, BY_BOTH = 2 };

static int cmp_key(const struct clrec *a, const struct clrec *b, int by)
{
	int c;
	if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->proc, b->proc)) || (c = NK__CMP(a->grouped, b->grouped)))
		return c;
	if (by != BY_ROUND && (c = NK__CMP(a->cl, b->cl)))
		return c;
	if (by != BY_GROUP && (c = NK__CMP(a->round, b->round)))
		return c;
	return 0;
}

static int cmp_group(const void *x, const void *y)
{
	return cmp_key(x, y, BY_GROUP);
}

static int cmp_round(const void *x, const void *y)
{
	return cmp_key(x, y, BY_ROUND);
}

static int cmp_both(const void *x, const void *y)
{
	return cmp_key(x, y, BY_BOTH);
}

/* Per variable, over clusters of @p by (cr sorted for it): the sum of squared residuals (Y - r W) into ss[var]
 * and the number of clusters into nc[var]. */
static void cluster_ss(const struct clrec *cr, size_t n, int by, const double *r, double *ss, size_t *nc)
{
	for (size_t i = 0, j; i < n; i = j) {
		double w = 0, y = 0;
		for (j = i; j < n && !cmp_key(&cr[i], &cr[j], by); j++) {
			w += cr[j].w;
			y += cr[j].remote ? cr[j].w : 0;
		}
		double d = y - r[cr[i].var] * w;
		ss[cr[i].var] += d * d;
		nc[cr[i].var]++;
	}
}

/* Each variable's remote-share interval from its samples with both nodes known (local or remote). */
int nk__an_intervals(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	size_t n = 0, nv = a->n_vars ? a->n_vars : 1;
	struct clrec *cr = malloc((c->n_recs ? c->n_recs : 1) * sizeof(*cr));
	double *sw = calloc(nv, sizeof(double)), *sy = calloc(nv, sizeof(double)), *w2 = calloc(nv, sizeof(double));
	double *r = calloc(nv, sizeof(double)), *ss = calloc(3 * nv, sizeof(double));
	size_t *nc = calloc(3 * nv, sizeof(size_t));
	int rc = NK_ENOMEM;
	if (!cr || !sw || !sy || !w2 || !r || !ss || !nc)
		goto out;
	for (size_t i = 0; i < a->n_vars; i++) {
		a->vars[i].ci_lo = 0;
		a->vars[i].ci_hi = 1;
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *q = &c->recs[i];
		if (q->where >= 2)
			continue;
		cr[n++] = (struct clrec){ q->var, q->proc, q->cl, q->round, q->grouped, q->where == 1, q->w };
		sw[q->var] += q->w;
		sy[q->var] += q->where == 1 ? q->w : 0;
		w2[q->var] += (double)q->w * q->w;
		a->vars[q->var].known_samples++;
		a->vars[q->var].ci_grouped |= q->grouped;
	}
	for (size_t v = 0; v < a->n_vars; v++)
		r[v] = sw[v] > 0 ? sy[v] / sw[v] : 0;
	static int (*const cmp[3])(const void *, const void *) = { cmp_group, cmp_round, cmp_both };
	for (int by = 0; by < 3; by++) {
		qsort(cr, n, sizeof(*cr), cmp[by]);
		cluster_ss(cr, n, by, r, ss + (size_t)by * nv, nc + (size_t)by * nv);
	}
	for (size_t v = 0; v < a->n_vars; v++) {
		struct nk__an_var *var = &a->vars[v];
		if (!var->known_samples || sw[v] <= 0)
			continue;
		double s2 = sw[v] * sw[v], V[3];
		for (int by = 0; by < 3; by++) {
			size_t k = nc[(size_t)by * nv + v];
			V[by] = k >= 2 ? ss[(size_t)by * nv + v] / s2 * (double)k / (double)(k - 1) : 0;
		}
		double two = V[BY_GROUP] + V[BY_ROUND] - V[BY_BOTH];
		double vv = two > V[BY_GROUP] ? two : V[BY_GROUP];
		struct nk__an_ci ci = { 0, 0, 1, 0 };
		ci_from_var(r[v], nc[v] >= 2 ? vv : 0, nc[v], w2[v] > 0 ? s2 / w2[v] : (double)nc[v], &ci);
		var->clusters = nc[v];
		var->ci_lo = ci.lo;
		var->ci_hi = ci.hi;
		var->n_eff = ci.n_eff;
	}
	rc = 0;
out:
	free(cr);
	free(sw);
	free(sy);
	free(w2);
	free(r);
	free(ss);
	free(nc);
	return rc;
}

void nk__an_ci_from_var(double r, double var, size_t n, double kish, struct nk__an_ci *out)
{
	*out = (struct nk__an_ci){ r, 0, 1, 0 };
	ci_from_var(r, var, n, kish, out);
}
