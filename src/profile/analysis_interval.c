/*
 * Profile analysis, statistics: the weighted ratio's cluster-robust 95 % interval (nk__an_ratio_ci) and
 * each variable's remote-share interval from its clustered samples (docs/report.md).
 * Pure arithmetic over the records: no verdicts.
 */
#include <math.h>

#include "profile/analysis_impl.h"

/* ---------------------------------------------------------------- intervals */

void nk__an_ratio_ci(const double *W, const double *Y, size_t n, double sum_w2, struct nk__an_ci *out)
{
	const double z = NK__AN_Z95, z2 = z * z;
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
	out->r = r;
	for (size_t c = 0; c < n; c++) {
		double d = Y[c] - r * W[c];
		ss += d * d;
	}
	/* Kish's effective size: what unequal weights leave of the sample count even when samples are
	 * independent; a cluster-robust variance below it (clusters more alike than independent samples
	 * would be) is not trusted beyond it */
	double kish = sum_w2 > 0 ? sw * sw / sum_w2 : (double)n;
	double var = n >= 2 ? ss / (sw * sw) * (double)n / (double)(n - 1) : 0;
	double ne;
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

int nk__an_decided(const struct nk__an_var *v)
{
	return v->known_samples && v->clusters >= NK__AN_MIN_CLUSTERS &&
	       (v->ci_hi - v->ci_lo) / 2 <= NK__AN_CI_HALF + 1e-12;
}

struct clrec {
	uint32_t var, proc;
	uint64_t cl;
	uint8_t grouped, remote;
	uint32_t w;
};

static int cmp_clrec(const void *x, const void *y)
{
	const struct clrec *a = x, *b = y;
	int c;
	if ((c = NK__CMP(a->var, b->var)) || (c = NK__CMP(a->proc, b->proc)) ||
	    (c = NK__CMP(a->grouped, b->grouped)))
		return c;
	return NK__CMP(a->cl, b->cl);
}

/* Each variable's remote-share interval from its samples with both nodes known (local or remote). */
int nk__an_intervals(struct ctx *c)
{
	struct nk__analysis *a = c->a;
	size_t n = 0;
	struct clrec *cr = malloc((c->n_recs ? c->n_recs : 1) * sizeof(*cr));
	double *W = malloc((c->n_recs ? c->n_recs : 1) * sizeof(double));
	double *Y = malloc((c->n_recs ? c->n_recs : 1) * sizeof(double));
	if (!cr || !W || !Y) {
		free(cr);
		free(W);
		free(Y);
		return NK_ENOMEM;
	}
	for (size_t i = 0; i < a->n_vars; i++) {
		a->vars[i].ci_lo = 0;
		a->vars[i].ci_hi = 1;
	}
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct rec *r = &c->recs[i];
		if (r->where < 2)
			cr[n++] = (struct clrec){ r->var, r->proc, r->cl, r->grouped, r->where == 1, r->w };
	}
	qsort(cr, n, sizeof(*cr), cmp_clrec);
	for (size_t i = 0, j; i < n; i = j) {
		struct nk__an_var *v = &a->vars[cr[i].var];
		size_t nc = 0;
		double w2 = 0;
		for (j = i; j < n && cr[j].var == cr[i].var; j++) {
			const struct clrec *q = &cr[j];
			if (j == i || q->proc != cr[j - 1].proc || q->grouped != cr[j - 1].grouped || q->cl != cr[j - 1].cl) {
				W[nc] = Y[nc] = 0;
				nc++;
			}
			W[nc - 1] += q->w;
			Y[nc - 1] += q->remote ? q->w : 0;
			w2 += (double)q->w * q->w;
			v->known_samples++;
			v->ci_grouped |= q->grouped;
		}
		struct nk__an_ci ci;
		nk__an_ratio_ci(W, Y, nc, w2, &ci);
		v->clusters = nc;
		v->ci_lo = ci.lo;
		v->ci_hi = ci.hi;
		v->n_eff = ci.n_eff;
	}
	free(cr);
	free(W);
	free(Y);
	return 0;
}
