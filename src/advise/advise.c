/* SPDX-License-Identifier: BSD-3-Clause
 * nk_profile_advise: a placement plan from the analysis of a profile
 * (docs/plan.md, "How advise decides").
 *
 * Minas' rule of thumb (partitioned data: a block per thread; shared data:
 * interleave) made concrete with what the profile measured: which node's
 * threads use each page of each variable (the per-sample attribution of the
 * analysis, nk__analysis.attr), so a block layout follows the *observed*
 * owner order, per-page placement is possible where no regular layout fits,
 * interleaving is restricted to the nodes that use a variable, and a
 * variable whose access pattern changes between marked phases gets an entry
 * per phase (with a warning when migrating it costs more than it saves,
 * Majo & Gross' lesson).
 *
 * Every rule and constant is documented in docs/plan.md and tested with
 * profiles of known truth in tests/unit/test_advise.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advice.h"
#include "advise/advise_impl.h"
#include "advise/whatif.h"
#include "profile/analysis.h"
#include "util/list.h"
#include "util/cmp.h"
#include "util/error.h"
#include "util/strbuf.h"

/* Thresholds (docs/plan.md, "How advise decides"). */
#define ADV_OWNER_STABLE 0.80     /* accesses from each page's main node: pages have stable owners */
#define ADV_BLOCK_FIT 0.90        /* a block layout keeps this share of the per-page ideal local accesses */
#define ADV_OWNER_RUNS 2           /* owner runs per owner node, at most, for "contiguous owners" */
#define ADV_MIN_PER_PAGE 2.0      /* samples per sampled page to trust per-page owners (or regularity >= 0.8) */
#define ADV_NODE_SHARE 0.05       /* a node uses a variable when its threads make this share of the accesses */
#define ADV_MAX_RANGES 65536      /* a "pages" entry with more ranges is not written (too fragmented) */
#define ADV_MIGRATE_BPS 2e9       /* bytes per second a migration moves (move_pages, order of magnitude) */
#define ADV_LOCAL_NS 100.0        /* local latency assumed when none was measured */
#define ADV_DEFAULT_FACTOR 2.0    /* NUMA factor assumed for costs when none is known */
#define ADV_DEFAULT_MIN_SIZE (256u << 10) /* min_size when the L2 size is unknown */
#define ADV_SHARING_STRUCT 0.75   /* sharing matrix: share within groups for "clearly structured" */
#define ADV_SHARING_MARGIN 0.25   /* ... and this much above what uniform sharing gives */
#define ADV_WEIGHT_SCALE 16       /* weighted: the node with the most bandwidth gets this weight */
#define ADV_PHASE_GAIN 0.05       /* a phase's own layout must make this much more of its accesses local */

/* ------------------------------------------------------------ small helpers */

/* Canonical form of a policy text (nk_policy_format), malloc'ed; NULL when it does not parse or no memory. */
static char *canon_policy(const char *text)
{
	nk_policy *p = NULL;
	if (nk_policy_parse(text, &p, NULL))
		return NULL;
	int n = nk_policy_format(p, NULL, 0);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s)
		nk_policy_format(p, s, (size_t)n + 1);
	nk_policy_free(p);
	return s;
}

/* ------------------------------------------------------------------ context */

static void pat_free(struct pat *p)
{
	free(p->r);
	free(p->node_w);
	free(p->pg);
	memset(p, 0, sizeof(*p));
}

static int cmp_rec(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	int c = NK__CMP(a->page, b->page);
	return c ? c : NK__CMP(a->node, b->node);
}

/* The pattern of variable @p vi in phase @p phase (-1: all samples). */
static int pat_build(const struct adv *c, size_t vi, int phase, uint64_t size, struct pat *p)
{
	const struct nk__analysis *a = c->a;
	size_t n = c->vstart[vi + 1] - c->vstart[vi];

	memset(p, 0, sizeof(*p));
	p->r = malloc((n ? n : 1) * sizeof(*p->r));
	p->node_w = calloc((size_t)(c->nn ? c->nn : 1), sizeof(double));
	if (!p->r || !p->node_w)
		return NK_ENOMEM;
	p->npages = size ? (size + c->ps - 1) / c->ps : 0;
	/* First touches say where pages were put, not who uses them, and a site's initialisation and teardown
	 * (nk__an_site_space) are not the loops its placement is for: they are left out of the pattern (unless
	 * they are all there is). */
	int uses = 0;
	for (size_t k = c->vstart[vi]; k < c->vstart[vi + 1] && !uses; k++) {
		const struct nk__an_sample *s = &a->attr[c->vidx[k]];
		uses = (phase < 0 || s->phase == phase) && !s->first_touch && !s->init && !s->fini;
	}
	for (size_t k = c->vstart[vi]; k < c->vstart[vi + 1]; k++) {
		const struct nk__an_sample *s = &a->attr[c->vidx[k]];
		if ((phase >= 0 && s->phase != phase) || (uses && (s->first_touch || s->init || s->fini)))
			continue;
		int ni = s->cpu_node >= 0 ? nk__an_node_index(a, s->cpu_node) : -1;
		if (ni < 0)
			continue;
		double w = s->weight ? s->weight : 1;
		p->total += w;
		p->w2 += w * w;
		p->node_w[ni] += w;
		if (s->hi <= s->lo || s->addr < s->lo || s->addr >= s->hi)
			continue;
		uint64_t first = s->lo / c->ps;
		struct rec *r = &p->r[p->nr++];
		r->page = s->addr / c->ps - first;
		r->npages = (s->hi - 1) / c->ps - first + 1;
		r->node = ni;
		r->w = w;
		if (r->npages > p->npages)
			p->npages = r->npages;
	}
	qsort(p->r, p->nr, sizeof(*p->r), cmp_rec);
	/* per page: the owner is the target node with most accesses */
	p->pg = malloc((p->nr ? p->nr : 1) * sizeof(*p->pg));
	double *tw = calloc((size_t)(c->nn ? c->nn : 1), sizeof(double));
	if (!p->pg || !tw) {
		free(tw);
		return NK_ENOMEM;
	}
	double sum_owner = 0, sum_w = 0;
	for (size_t i = 0; i < p->nr;) {
		size_t j = i;
		memset(tw, 0, (size_t)c->nn * sizeof(double));
		double w = 0;
		while (j < p->nr && p->r[j].page == p->r[i].page) {
			/* accumulate by target node: two profile nodes mapped to one target node add up */
			int t = c->map[p->r[j].node];
			for (int q = 0; q < c->nn; q++)
				if (c->map[q] == t) {
					tw[q] += p->r[j].w;
					break;
				}
			w += p->r[j].w;
			j++;
		}
		int best = 0;
		for (int q = 1; q < c->nn; q++)
			if (tw[q] > tw[best])
				best = q;
		p->pg[p->npg++] = (struct pg){ p->r[i].page, c->map[best], tw[best], w };
		sum_owner += tw[best];
		sum_w += w;
		i = j;
	}
	free(tw);
	p->owner_local = sum_w > 0 ? sum_owner / sum_w : 0;
	return 0;
}

/* ------------------------------------------------------------- decisions */

enum { D_NONE = 0, D_BLOCK, D_BIND, D_PAGES, D_CYCLIC, D_NEIGHBORS, D_WEIGHTED };

struct dec {
	int kind;
	char *policy; /* canonical policy text, or "pages" */
	char *reason;
	struct nk__aplan_range *ranges;
	size_t n_ranges;
	double local; /* predicted local share of the accesses under it, -1 unknown */
};

static void dec_free(struct dec *d)
{
	free(d->policy);
	free(d->reason);
	free(d->ranges);
	memset(d, 0, sizeof(*d));
}

/* The candidates of a variable besides the rules' choice (issue 21 §1), each its own layout. */
struct decs {
	struct dec *d;
	size_t n;
};

static void decs_free(struct decs *s)
{
	for (size_t i = 0; i < s->n; i++)
		dec_free(&s->d[i]);
	free(s->d);
	memset(s, 0, sizeof(*s));
}

/* *@p d moved into @p s (emptied), unless a candidate of the same policy is there (then freed). */
static int decs_add(struct decs *s, struct dec *d)
{
	if (!d->policy) {
		dec_free(d);
		return 0;
	}
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->d[i].policy, d->policy)) {
			dec_free(d);
			return 0;
		}
	struct dec *n = realloc(s->d, (s->n + 1) * sizeof(*n));
	if (!n) {
		dec_free(d);
		return NK_ENOMEM;
	}
	s->d = n;
	s->d[s->n++] = *d;
	memset(d, 0, sizeof(*d));
	return 0;
}

/* Page ranges: each sampled page on its owner, unsampled pages on the owner of the nearest sampled page. */
static int pages_ranges(const struct pat *p, struct nk__aplan_range **out, size_t *n_out)
{
	size_t cap = 16, n = 0;
	struct nk__aplan_range *r = malloc(cap * sizeof(*r));
	uint64_t npages = p->npages;

	*out = NULL;
	*n_out = 0;
	if (!r)
		return NK_ENOMEM;
	if (p->npg && p->pg[p->npg - 1].page + 1 > npages)
		npages = p->pg[p->npg - 1].page + 1;
	for (size_t i = 0; i < p->npg; i++) {
		/* this page's run: from the midpoint after the previous sampled page to the one before the next */
		uint64_t from = i ? p->pg[i - 1].page + (p->pg[i].page - p->pg[i - 1].page) / 2 + 1 : 0;
		uint64_t to = i + 1 < p->npg ? p->pg[i].page + (p->pg[i + 1].page - p->pg[i].page) / 2 + 1 : npages;
		int node = p->pg[i].owner;
		if (n && r[n - 1].node == node && r[n - 1].first + r[n - 1].count == from) {
			r[n - 1].count += to - from;
			continue;
		}
		if (n == cap) {
			cap *= 2;
			struct nk__aplan_range *nr = realloc(r, cap * sizeof(*nr));
			if (!nr) {
				free(r);
				return NK_ENOMEM;
			}
			r = nr;
		}
		r[n++] = (struct nk__aplan_range){ from, to - from, node };
	}
	*out = r;
	*n_out = n;
	return 0;
}

/* Target nodes whose threads use the variable (ADV_NODE_SHARE of its accesses), increasing; count. */
static int users(const struct adv *c, const struct pat *p, int *out)
{
	int n = 0;
	for (int q = 0; q < c->nn; q++) {
		double s = 0;
		for (int u = 0; u < c->nn; u++)
			if (c->map[u] == c->map[q])
				s += p->node_w[u];
		if (p->total <= 0 || s < ADV_NODE_SHARE * p->total)
			continue;
		int t = c->map[q], dup = 0;
		for (int k = 0; k < n; k++)
			dup |= out[k] == t;
		if (!dup)
			out[n++] = t;
	}
	/* increasing */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && out[k - 1] > out[k]; k--) {
			int x = out[k];
			out[k] = out[k - 1];
			out[k - 1] = x;
		}
	return n;
}

/* The node set cyclic_neighbors:home=H,count=N uses on the target machine; 0 or NK_E*. */
static int neighbors_set(const struct adv *c, int home, int count, int *out)
{
	char text[64];
	nk_policy *pol = NULL;
	nk_plan *pl = NULL;
	snprintf(text, sizeof text, "cyclic_neighbors:home=%d,count=%d", home, count);
	int rc = nk_policy_parse(text, &pol, NULL);
	if (!rc) {
		nk_region r = { NULL, (size_t)count * (size_t)nk_machine_page_size(c->m), 0, 0, { 0, 0, 0 } };
		rc = nk_plan_build(c->m, pol, &r, &pl, NULL);
	}
	if (!rc)
		rc = nk_plan_nodes(pl, 0, (size_t)count, out);
	nk_plan_free(pl);
	nk_policy_free(pol);
	if (rc)
		return rc;
	for (int i = 1; i < count; i++)
		for (int k = i; k > 0 && out[k - 1] > out[k]; k--) {
			int x = out[k];
			out[k] = out[k - 1];
			out[k - 1] = x;
		}
	return 0;
}

/* "512 KiB", "1.5 GiB" */
static const char *fmt_bytes(double b, char *buf, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, cap, b == floor(b) ? "%.0f %s" : "%.1f %s", b, unit[u]);
	return buf;
}

/* "2.5 s", "260 ms", "28 us" (3 significant digits) */
static const char *fmt_time(double s, char *buf, size_t cap)
{
	if (s >= 1 || s == 0)
		snprintf(buf, cap, "%.3g s", s);
	else if (s >= 1e-3)
		snprintf(buf, cap, "%.3g ms", s * 1e3);
	else
		snprintf(buf, cap, "%.3g us", s * 1e6);
	return buf;
}

static double pct(double x)
{
	return 100.0 * x;
}

/* Shared or irregular: interleave over the nodes that use it (or bind to the only one). */
static int decide_shared(const struct adv *c, const struct nk__an_var *v, const struct pat *p, double block_local,
			 struct dec *d)
{
	int *u = malloc((size_t)(c->nn ? c->nn : 1) * sizeof(int));
	struct nk__strbuf pol = { 0 }, why = { 0 };
	uint64_t typed = v->reads + v->writes;
	double rf = typed ? (double)v->reads / (double)typed : -1;
	char what[160];

	if (!u)
		return NK_ENOMEM;
	int nu = users(c, p, u);
	if (!nu) {
		free(u);
		return 0;
	}
	if (block_local >= 0)
		snprintf(what, sizeof what, "each page is used mostly from one node (%.0f%% of the accesses) but no block "
					    "layout fits (best: %.0f%%) and per-page placement is off",
			 pct(p->owner_local), pct(block_local));
	else if (v->diag == NK__DIAG_SHARING)
		snprintf(what, sizeof what, "%.0f%% of its sampled pages are used by threads of several nodes",
			 pct(v->pages ? (double)v->pages_cross_shared / (double)v->pages : 0));
	else if (p->owner_local < ADV_OWNER_STABLE)
		snprintf(what, sizeof what, "its pages have no stable owner (only %.0f%% of the accesses come from each "
					    "page's main node)", pct(p->owner_local));
	else
		snprintf(what, sizeof what, "its threads' pages interleave (regularity %.2f)",
			 v->regularity < 0 ? 0 : v->regularity);
	if (rf >= NK__AN_READ_MOSTLY)
		snprintf(what + strlen(what), sizeof what - strlen(what), ", read-mostly (%.0f%% reads)", pct(rf));
	char *ul = nk__format_list_alloc(u, (size_t)nu);
	if (!ul) {
		free(u);
		return NK_ENOMEM;
	}
	d->local = 1.0 / nu;
	if (nu == 1) {
		d->kind = D_BIND;
		nk__strbuf_printf(&pol, "bind:nodes=%d", u[0]);
		nk__strbuf_printf(&why, "only threads on node %d use it: bind it there", u[0]);
		d->local = 1.0;
		goto done;
	}
	/* weighted by measured bandwidth when the target has it for every pair */
	int bw_ok = c->m != NULL;
	double bw[64], maxbw = 0;
	if (nu > 64)
		bw_ok = 0;
	for (int k = 0; bw_ok && k < nu; k++) {
		bw[k] = 0;
		for (int s = 0; bw_ok && s < nu; s++) {
			double x;
			if (nk_machine_get_matrix(c->m, NK_MATRIX_BANDWIDTH_MBS, u[s], u[k], &x))
				bw_ok = 0;
			else
				bw[k] += x / nu;
		}
		if (bw[k] > maxbw)
			maxbw = bw[k];
	}
	if (bw_ok && maxbw > 0) {
		unsigned wt[64];
		int differ = 0;
		for (int k = 0; k < nu; k++) {
			double x = round(ADV_WEIGHT_SCALE * bw[k] / maxbw);
			wt[k] = x < 1 ? 1 : x > 255 ? 255 : (unsigned)x;
			differ |= wt[k] != wt[0];
		}
		if (differ) {
			d->kind = D_WEIGHTED;
			nk__strbuf_printf(&pol, "weighted:weights=");
			for (int k = 0; k < nu; k++)
				nk__strbuf_printf(&pol, "%s%d=%u", k ? "/" : "", u[k], wt[k]);
			nk__strbuf_printf(&why, "%s: interleave it over nodes %s (its users), weighted by the bandwidth measured from "
					"them (", what, ul);
			for (int k = 0; k < nu; k++)
				nk__strbuf_printf(&why, "%snode %d %.0f MB/s", k ? ", " : "", u[k], bw[k]);
			nk__strbuf_printf(&why, ")");
			goto done;
		}
	}
	const char *bwnote = bw_ok ? " (bandwidth measured: equal, so no weights)"
				   : c->m ? " (bandwidth not measured: equal weights)" : "";
	if (nu == c->n_mem) {
		d->kind = D_CYCLIC;
		nk__strbuf_printf(&pol, "cyclic");
		nk__strbuf_printf(&why, "%s: interleave it over every node%s", what, bwnote);
		goto done;
	}
	/* a home node and its nearest neighbours? */
	if (c->m) {
		int *set = malloc((size_t)nu * sizeof(int));
		if (!set) {
			free(u);
			free(ul);
			return NK_ENOMEM;
		}
		int home = -1;
		double hw = -1;
		for (int k = 0; k < nu; k++) {
			double s = 0;
			for (int q = 0; q < c->nn; q++)
				if (c->map[q] == u[k])
					s += p->node_w[q];
			if (s > hw) {
				hw = s;
				home = u[k];
			}
		}
		int same = !neighbors_set(c, home, nu, set);
		for (int k = 0; same && k < nu; k++)
			same = set[k] == u[k];
		free(set);
		if (same) {
			d->kind = D_NEIGHBORS;
			nk__strbuf_printf(&pol, "cyclic_neighbors:home=%d,count=%d", home, nu);
			nk__strbuf_printf(&why, "%s: only node %d and its nearest neighbours use it (nodes %s): interleave it over "
					"them%s", what, home, ul, bwnote);
			goto done;
		}
	}
	d->kind = D_CYCLIC;
	nk__strbuf_printf(&pol, "cyclic:nodes=%s", ul);
	nk__strbuf_printf(&why, "%s: interleave it over the nodes whose threads use it (%s)%s", what, ul, bwnote);
done:
	free(u);
	free(ul);
	char *raw = nk__strbuf_take(&pol);
	d->reason = nk__strbuf_take(&why);
	d->policy = raw ? canon_policy(raw) : NULL;
	free(raw);
	if (!d->policy || !d->reason)
		return NK_ENOMEM;
	return 0;
}

/* A block layout of @p t blocks on nodes @p bn as a decision (bind when all on one node); @p simpler: it
 * replaced the best fit of @p best_t blocks in @p best_runs runs, @p best_local local; @p ideal >= 0: the
 * rules' fit test turned it down against that per-page local share. */
static int block_dec_fit(const struct nk__an_var *v, uint64_t t, const int *bn, double local, int simpler,
			 uint64_t best_t, int best_runs, double best_local, double ideal, struct dec *d)
{
	struct nk__strbuf pol = { 0 }, why = { 0 };
	int one = 1;
	for (uint64_t b = 1; b < t; b++)
		one &= bn[b] == bn[0];
	double now = v->local + v->remote ? (double)v->local / (double)(v->local + v->remote) : 0;
	memset(d, 0, sizeof(*d));
	if (one) {
		d->kind = D_BIND;
		nk__strbuf_printf(&pol, "bind:nodes=%d", bn[0]);
		nk__strbuf_printf(&why, "threads on node %d make %.0f%% of its accesses: bind it there (%.0f%% local "
				"as profiled)", bn[0], pct(local), pct(now));
	} else {
		d->kind = D_BLOCK;
		nk__strbuf_printf(&pol, "block:threads=");
		for (uint64_t b = 0; b < t; b++)
			nk__strbuf_printf(&pol, "%s%d", b ? "," : "", bn[b]);
		if (ideal >= 0)
			nk__strbuf_printf(&why, "the closest block layout: %llu blocks on the nodes that use them, in the "
					"observed order, make %.0f%% of its accesses local (%.0f%% as profiled), under %.0f%% "
					"of the %.0f%% each page on its own users' node would",
				  (unsigned long long)t, pct(local), pct(now), pct(ADV_BLOCK_FIT), pct(ideal));
		else
			nk__strbuf_printf(&why, "each thread works on its own contiguous slice (regularity %.2f): %llu blocks "
					"on the nodes that use them, in the observed order, make %.0f%% of its "
					"accesses local (%.0f%% as profiled)",
				  v->regularity < 0 ? 0 : v->regularity, (unsigned long long)t, pct(local), pct(now));
	}
	if (simpler)
		nk__strbuf_printf(&why, "; simplified from %llu blocks in %d runs, a finer layout than the samples "
				"support: %.1f%% -> %.1f%% of the sampled accesses local",
			  (unsigned long long)best_t, best_runs, 100.0 * best_local, 100.0 * local);
	char *raw = nk__strbuf_take(&pol);
	d->reason = nk__strbuf_take(&why);
	d->policy = raw ? canon_policy(raw) : NULL;
	free(raw);
	d->local = local;
	return d->policy && d->reason ? 0 : NK_ENOMEM;
}

static int block_dec(const struct nk__an_var *v, uint64_t t, const int *bn, double local, int simpler, uint64_t best_t,
		     int best_runs, double best_local, struct dec *d)
{
	return block_dec_fit(v, t, bn, local, simpler, best_t, best_runs, best_local, -1, d);
}

/* A policy text and its reason as a decision of @p kind. */
static int text_dec(int kind, const char *policy, const char *reason, struct dec *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->local = -1;
	d->policy = canon_policy(policy);
	d->reason = strdup(reason);
	return d->policy && d->reason ? 0 : NK_ENOMEM;
}

/*
 * The candidates the rules did not choose but the model prices (issue 21 §1): the other layouts the
 * rules considered (pages and interleave over the users when the pattern is partitioned), the dominant
 * user's node, and blocks in the threads' own order (the static schedule's partition).  Layouts fitted
 * page by page (pages, block fits) are offered only where the rules found the owners stable enough to
 * fit them (@p partitioned): priced on the samples they were fitted to, they would look better than they
 * are.
 */
static int alternatives(const struct adv *c, const struct nk__an_var *v, const struct pat *p, const struct dec *rule,
			int partitioned, struct decs *alt)
{
	const struct nk__analysis *a = c->a;
	struct dec x;
	char why[200];
	int rc = 0;

	if (partitioned && rule->kind != D_PAGES && !c->o->no_pages) {
		memset(&x, 0, sizeof(x));
		if ((rc = pages_ranges(p, &x.ranges, &x.n_ranges)))
			return rc;
		if (x.n_ranges <= ADV_MAX_RANGES) {
			x.kind = D_PAGES;
			x.local = p->owner_local;
			snprintf(why, sizeof why, "each page on the node whose threads use it most: %zu page ranges",
				 x.n_ranges);
			x.policy = strdup("pages");
			x.reason = strdup(why);
			if (!x.policy || !x.reason) {
				dec_free(&x);
				return NK_ENOMEM;
			}
		}
		if ((rc = decs_add(alt, &x)))
			return rc;
	}
	if (rule->kind == D_BLOCK || rule->kind == D_PAGES) {
		memset(&x, 0, sizeof(x));
		if ((rc = decide_shared(c, v, p, -1, &x)) || (rc = decs_add(alt, &x)))
			return rc;
	}
	/* the node whose threads make most of its accesses (target ids: profile nodes mapped onto one add up) */
	int best = -1;
	double bw = 0;
	for (int q = 0; q < c->nn; q++) {
		double w = 0;
		for (int u = 0; u < c->nn; u++)
			if (c->map[u] == c->map[q])
				w += p->node_w[u];
		if (w > bw) {
			bw = w;
			best = c->map[q];
		}
	}
	if (best >= 0 && p->total > 0) {
		char pol[32];
		snprintf(pol, sizeof pol, "bind:nodes=%d", best);
		snprintf(why, sizeof why, "threads on node %d make the most of its accesses (%.0f%%): bind it there", best,
			 pct(bw / p->total));
		if ((rc = text_dec(D_BIND, pol, why, &x)) || (rc = decs_add(alt, &x)))
			return rc;
	}
	/* blocks in the threads' order: thread i's band on the node thread i ran on (one process only: thread
	 * indices of several processes are not one team) */
	int mx = -1;
	for (size_t t = 0; t < a->n_threads; t++)
		if (a->threads[t].index > mx)
			mx = a->threads[t].index;
	if (a->n_procs != 1 || mx < 1 || mx >= ADV_MAX_BLOCKS)
		return 0;
	int *tn = malloc((size_t)(mx + 1) * sizeof(int));
	if (!tn)
		return NK_ENOMEM;
	for (int i = 0; i <= mx; i++)
		tn[i] = -1;
	for (size_t t = 0; t < a->n_threads; t++) {
		int ni = a->threads[t].node >= 0 ? nk__an_node_index(a, a->threads[t].node) : -1;
		if (a->threads[t].index >= 0 && ni >= 0)
			tn[a->threads[t].index] = c->map[ni];
	}
	int ok = 1, two = 0;
	for (int i = 0; i <= mx; i++) {
		ok &= tn[i] >= 0;
		two |= tn[i] != tn[0];
	}
	if (ok && two) {
		/* runs of one node all k threads long: k threads' bands are one block (block:threads=0-3, not
		 * block:threads=0*2,1*2,2*2,3*2) */
		int k = mx + 1;
		for (int i = 0, run = 1; i <= mx; i++, run++)
			if (i == mx || tn[i + 1] != tn[i]) {
				for (int g = k; g >= 1; g--)
					if (k % g == 0 && run % g == 0) {
						k = g;
						break;
					}
				run = 0;
			}
		struct nk__strbuf pol = { 0 };
		nk__strbuf_printf(&pol, "block:threads=");
		for (int i = 0; i <= mx; i += k)
			nk__strbuf_printf(&pol, "%s%d", i ? "," : "", tn[i]);
		snprintf(why, sizeof why, "%d blocks in the threads' order, each on the node its thread%s ran on (a "
					  "static schedule's partition)", (mx + 1) / k, k > 1 ? "s" : "");
		char *raw = nk__strbuf_take(&pol);
		rc = raw ? text_dec(D_BLOCK, raw, why, &x) : NK_ENOMEM;
		free(raw);
		if (!rc)
			rc = decs_add(alt, &x);
	}
	free(tn);
	return rc;
}

/*
 * The policy for variable @p vi (analysis @p v: the whole variable, or its view in one phase) from the
 * pattern of its samples in @p phase (-1 all): the rules' choice in @p d, and with @p alt the other
 * candidates for the model to price.  d->kind D_NONE: nothing to decide (no known node).
 */
static int decide(const struct adv *c, size_t vi, const struct nk__an_var *v, int phase, struct dec *d,
		  struct decs *alt)
{
	struct pat p;
	double local = -1; /* of the best block layout, -1 none tried */
	int rc;

	memset(d, 0, sizeof(*d));
	d->local = -1;
	rc = pat_build(c, vi, phase, c->a->vars[vi].size, &p);
	if (rc || p.total <= 0) {
		pat_free(&p);
		return rc;
	}
	double per_page = p.npg ? (double)p.nr / (double)p.npg : 0;
	/* candidate block counts: owner runs, distinct owners, threads */
	uint64_t cands[4] = { 0, 0, v->threads, c->a->n_threads };
	int seen_nodes[64];
	int ns = 0;
	for (size_t i = 0; i < p.npg; i++) {
		if (!i || p.pg[i].owner != p.pg[i - 1].owner)
			cands[0]++;
		int dup = 0;
		for (int k = 0; k < ns; k++)
			dup |= seen_nodes[k] == p.pg[i].owner;
		if (!dup && ns < 64)
			seen_nodes[ns++] = p.pg[i].owner;
	}
	cands[1] = (uint64_t)ns;
	/* Contiguous owners: the sampled pages, in address order, change owner at most about once per owner
	 * node (ADV_OWNER_RUNS runs per node).  The analysis' regularity counts every sample, first touches
	 * included, so a serial initialisation by the master (every page touched by one thread) reads as
	 * irregular although the compute loop's partition is perfectly regular; the owners here leave first
	 * touches out (pat_build). */
	int contiguous = ns > 1 && p.npg >= 4 * (size_t)ns && cands[0] <= ADV_OWNER_RUNS * (uint64_t)ns;
	int partitioned = v->diag != NK__DIAG_SHARING && p.owner_local >= ADV_OWNER_STABLE && p.npg &&
			  (per_page >= ADV_MIN_PER_PAGE || v->regularity >= NK__AN_REGULAR || contiguous);
	if (partitioned) {
		int *bn = NULL;
		uint64_t t = 0;
		if ((rc = nk__adv_block_fit(c, &p, cands, 4, &bn, &t, &local)))
			goto out;
		if (t && local >= ADV_BLOCK_FIT * p.owner_local) {
			uint64_t best_t = t;
			double best_local = local;
			int simpler = 0, best_runs = nk__adv_lay_runs(bn, t);
			int *best_bn = malloc((size_t)t * sizeof(int));
			if (!best_bn) {
				free(bn);
				rc = NK_ENOMEM;
				goto out;
			}
			memcpy(best_bn, bn, (size_t)t * sizeof(int));
			if ((rc = nk__adv_block_simplify(c, &p, cands, 4, &t, &bn, &local, &simpler))) {
				free(bn);
				free(best_bn);
				goto out;
			}
			rc = block_dec(v, t, bn, local, simpler, best_t, best_runs, best_local, d);
			if (!rc && alt && simpler) { /* the best fit, before simplifying, is a candidate too */
				struct dec x;
				rc = block_dec(v, best_t, best_bn, best_local, 0, 0, 0, 0, &x);
				if (!rc)
					rc = decs_add(alt, &x);
				else
					dec_free(&x);
			}
			free(bn);
			free(best_bn);
			goto out;
		}
		if (alt && t) { /* the best fit the test turned down, simplified: the model may still prefer it */
			struct dec x;
			uint64_t best_t = t;
			double best_local = local, sl = local;
			int simpler = 0, best_runs = nk__adv_lay_runs(bn, t);
			rc = nk__adv_block_simplify(c, &p, cands, 4, &t, &bn, &sl, &simpler);
			memset(&x, 0, sizeof(x));
			if (!rc)
				rc = block_dec_fit(v, t, bn, sl, simpler, best_t, best_runs, best_local, p.owner_local, &x);
			if (!rc)
				rc = decs_add(alt, &x);
			else
				dec_free(&x);
			if (rc) {
				free(bn);
				goto out;
			}
		}
		free(bn);
		if (!c->o->no_pages) {
			if ((rc = pages_ranges(&p, &d->ranges, &d->n_ranges)))
				goto out;
			if (d->n_ranges <= ADV_MAX_RANGES) {
				struct nk__strbuf why = { 0 };
				d->kind = D_PAGES;
				d->local = p.owner_local;
				nk__strbuf_printf(&why, "each page is used mostly from one node (%.0f%% of the accesses) but no block "
						"layout fits (best: %.0f%%): %zu page ranges, each on its users' node",
					  pct(p.owner_local), pct(local < 0 ? 0 : local), d->n_ranges);
				d->reason = nk__strbuf_take(&why);
				d->policy = strdup("pages");
				rc = d->policy && d->reason ? 0 : NK_ENOMEM;
				goto out;
			}
			free(d->ranges);
			d->ranges = NULL;
			d->n_ranges = 0;
		}
	}
	rc = decide_shared(c, v, &p, local, d);
out:
	if (!rc && alt && d->kind != D_NONE)
		rc = alternatives(c, v, &p, d, partitioned, alt);
	pat_free(&p);
	return rc;
}

/* Predicted local share of the accesses of @p p under @p d's layout (-1: cannot tell). */
static double predict_local(const struct adv *c, const struct dec *d, const struct pat *p)
{
	if (p->total <= 0 || !p->nr)
		return -1;
	if (d->kind == D_PAGES) {
		double local = 0;
		size_t k = 0;
		for (size_t i = 0; i < p->nr; i++) {
			while (k < d->n_ranges && d->ranges[k].first + d->ranges[k].count <= p->r[i].page)
				k++;
			if (k < d->n_ranges && d->ranges[k].first <= p->r[i].page && c->map[p->r[i].node] == d->ranges[k].node)
				local += p->r[i].w;
		}
		return local / p->total;
	}
	if (!c->m || !p->npages)
		return -1;
	nk_policy *pol = NULL;
	nk_plan *pl = NULL;
	int *nodes = NULL;
	double local = -1;
	/* the instance in the profile's pages; the plan counts the target's (page i of the profile is
	 * in target page i * ps / mps) */
	uint64_t mps = nk_machine_page_size(c->m) ? nk_machine_page_size(c->m) : c->ps;
	nk_region r = { NULL, (size_t)(p->npages * c->ps), 0, 0, { 0, 0, 0 } };
	size_t n = 0;
	if (!nk_policy_parse(d->policy, &pol, NULL) && !nk_plan_build(c->m, pol, &r, &pl, NULL) &&
	    (n = nk_plan_num_pages(pl)) > 0 && (nodes = malloc(n * sizeof(int))) && !nk_plan_nodes(pl, 0, n, nodes)) {
		local = 0;
		for (size_t i = 0; i < p->nr; i++) {
			uint64_t tp = p->r[i].page * c->ps / mps;
			if (tp < n && nodes[tp] == c->map[p->r[i].node])
				local += p->r[i].w;
		}
		local /= p->total;
	}
	free(nodes);
	nk_plan_free(pl);
	nk_policy_free(pol);
	return local;
}

/* ------------------------------------------------- the model's choice */

/* A layout's simplicity, for near-ties: as profiled, one node, interleave, blocks, page ranges. */
static int simplicity(int kind)
{
	switch (kind) {
	case D_NONE: return 0;
	case D_BIND: return 1;
	case D_CYCLIC:
	case D_NEIGHBORS:
	case D_WEIGHTED: return 2;
	case D_BLOCK: return 3;
	default: return 4;
	}
}

/* Variable @p vi under @p d (NULL: as profiled) by whatif's model; *ok 0 when it cannot be priced there. */
static int price(const struct adv *c, size_t vi, const struct nk__an_var *v, const struct dec *d,
		 struct nk__whatif_pred *w, int *ok)
{
	struct nk__aplan_entry e;
	nk_error err = { 0, "" };
	memset(&e, 0, sizeof(e));
	e.key = v->key;
	e.policy = d ? d->policy : (char *)"none";
	e.when = NK__WHEN_ALLOC;
	e.ranges = d ? d->ranges : NULL;
	e.n_ranges = d ? d->n_ranges : 0;
	e.page_size = d && d->kind == D_PAGES ? c->ps : 0;
	/* A site of small blocks is priced on its uses, as the rules decide on them (pat_build): under the
	 * profiler its fill and teardown run as long as its loops (each malloc and free is recorded) and the
	 * sampler weighs them by that time.  Every other variable: every sample, whatif's numbers exactly. */
	int rc = nk__whatif_model_eval(c->wm, vi, &e, v->site_space, w, &err);
	*ok = !rc && w->remote_fraction >= 0;
	return rc == NK_ENOMEM ? rc : 0;
}

/* A stall in ms: 3 significant digits, whole ms from 1000 on ("0.0215", "3.86", "1222") */
static const char *fmt_ms(double ms, char *buf, size_t cap)
{
	snprintf(buf, cap, ms >= 1000 ? "%.0f" : "%.3g", ms);
	return buf;
}

/* "75.0% remote, stall 0.123 ms" */
static const char *fmt_pred(const struct nk__whatif_pred *w, char *buf, size_t cap)
{
	char ms[32];
	snprintf(buf, cap, "%.1f%% remote, stall %s ms", pct(w->remote_fraction), fmt_ms(w->stall_ms, ms, sizeof ms));
	return buf;
}

/*
 * Issue 21 §2: when the chosen placement @p d (priced @p w) relieves a node that whatif's bandwidth model
 * finds saturated as profiled (@p lw), why it pays: "node 0 serves 4 threads at once (load 2.00, saturated
 * under the default bandwidth model): spreading it cuts the bandwidth term from X to Y ms despite +Z points
 * remote"; with bandwidth measured, "(load 2.00 of its measured 16000 MB/s)".  Nothing when no node is
 * saturated.
 */
static void contention_note(struct nk__strbuf *b, const struct dec *d, const struct nk__whatif_pred *lw,
			    const struct nk__whatif_pred *w)
{
	char m1[32], m2[32];
	if (lw->contention_ms <= 0 || lw->sat_node < 0 || w->contention_ms < 0 || w->contention_ms >= lw->contention_ms)
		return;
	int spread = d->kind == D_CYCLIC || d->kind == D_NEIGHBORS || d->kind == D_WEIGHTED;
	double dr = 100 * (w->remote_fraction - lw->remote_fraction);
	nk__strbuf_printf(b, "; node %d serves %d threads at once (load %.2f", lw->sat_node, lw->sat_threads, lw->sat_load);
	if (lw->sat_mbs > 0)
		nk__strbuf_printf(b, " of its measured %.0f MB/s", lw->sat_mbs);
	else if (lw->bw_measured)
		nk__strbuf_printf(b, ", saturated: its bandwidth not measured, its cores'");
	else
		nk__strbuf_printf(b, ", saturated under the default bandwidth model");
	nk__strbuf_printf(b, "): %s cuts the bandwidth term from %s to %s ms", spread ? "spreading it" : "this placement",
		  fmt_ms(lw->contention_ms, m1, sizeof m1), fmt_ms(w->contention_ms, m2, sizeof m2));
	if (dr >= 0.05)
		nk__strbuf_printf(b, " despite +%.1f points remote", dr);
	else if (dr <= -0.05)
		nk__strbuf_printf(b, " and %.1f points less remote", -dr);
}

/*
 * Issue 21 §1: the rules' choice @p rule and the candidates @p alt priced by whatif's model (each as the
 * variable's one alloc entry, threads as profiled), against leaving the variable as profiled.  Never a
 * layout predicted worse than leaving it (a node's saturation is part of the prediction: the default
 * bandwidth model, issue 21 §2); among those not worse, the lowest predicted stall, where a
 * near-tie (within @p noise: the stall that the variable's remote-share interval spans) goes to the rules'
 * choice, else to the simplest layout.  *pick: -1 leave it, 0 the rules' choice, 1 + i alt->d[i]; *why
 * the reason to write (malloc'ed); @p ev gets the candidates and the noise.  Without a model (no machine):
 * *pick 0, *why NULL, nothing priced.
 */
static int choose(const struct adv *c, size_t vi, const struct nk__an_var *v, const struct dec *rule,
		  const struct decs *alt, int *pick, char **why, struct nk__aplan_evidence *ev)
{
	size_t n = 1 + alt->n;
	struct nk__whatif_pred lw, *w = calloc(n, sizeof(*w));
	int *ok = calloc(n, sizeof(int)), *good = calloc(n, sizeof(int)), lok = 0, rc = 0;
	struct nk__strbuf b = { 0 };
	char p0[96], p1[96], m1[32], m2[32];

	*pick = 0;
	*why = NULL;
	if (!w || !ok || !good) {
		rc = NK_ENOMEM;
		goto out;
	}
	if (!c->wm || (rc = price(c, vi, v, NULL, &lw, &lok)) || !lok)
		goto out;
	for (size_t i = 0; i < n && !rc; i++)
		rc = price(c, vi, v, i ? &alt->d[i - 1] : rule, &w[i], &ok[i]);
	if (rc)
		goto out;
	/* the noise: the variable's remote share is known to +- half its 95 % interval; that many of its
	 * accesses turned remote (or local) cost this much stall */
	double half = v->known_samples && v->ci_hi >= v->ci_lo ? (v->ci_hi - v->ci_lo) / 2 : 0;
	double noise = half * (double)(lw.local + lw.remote) * nk__whatif_model_remote_penalty_ns(c->wm) / 1e6;
	double best = lw.stall_ms;
	for (size_t i = 0; i < n; i++) {
		good[i] = ok[i] && w[i].stall_ms <= lw.stall_ms;
		if (good[i] && w[i].stall_ms < best)
			best = w[i].stall_ms;
	}
	if (good[0] && w[0].stall_ms <= best + noise) {
		*pick = 0;
	} else {
		*pick = lw.stall_ms <= best + noise ? -1 : -2;
		int simp = *pick == -1 ? 0 : 99;
		double st = lw.stall_ms;
		for (size_t i = 0; i < n; i++) {
			if (!good[i] || w[i].stall_ms > best + noise)
				continue;
			int k = simplicity(i ? alt->d[i - 1].kind : rule->kind);
			if (k < simp || (k == simp && w[i].stall_ms < st)) {
				simp = k;
				st = w[i].stall_ms;
				*pick = (int)i;
			}
		}
	}
	/* the record: as profiled, the rules' choice, the others, as priced */
	ev->noise_ms = noise;
	if ((rc = nk__aplan_cand_add(ev, "none", lw.remote_fraction, lw.stall_ms)))
		goto out;
	for (size_t i = 0; i < n && !rc; i++)
		if (ok[i])
			rc = nk__aplan_cand_add(ev, i ? alt->d[i - 1].policy : rule->policy, w[i].remote_fraction,
						w[i].stall_ms);
	if (rc)
		goto out;
	fmt_pred(&lw, p0, sizeof p0);
	if (v->site_space) /* priced on its uses (price()) */
		snprintf(p0 + strlen(p0), sizeof p0 - strlen(p0), " on its uses");
	if (*pick == 0 && ok[0]) {
		nk__strbuf_printf(&b, "%s; predicted %s vs %s as profiled", rule->reason, fmt_pred(&w[0], p1, sizeof p1), p0);
		contention_note(&b, rule, &lw, &w[0]);
	} else if (*pick == 0) {
		nk__strbuf_printf(&b, "%s; the model cannot price it", rule->reason);
	} else if (*pick > 0) {
		const struct dec *d = &alt->d[*pick - 1];
		nk__strbuf_printf(&b, "%s; predicted %s vs %s as profiled: chosen by whatif's model over the rules' choice, %s (",
			  d->reason, fmt_pred(&w[*pick], p1, sizeof p1), p0, rule->policy);
		if (ok[0])
			nk__strbuf_printf(&b, "%s%s)", fmt_pred(&w[0], p1, sizeof p1),
				  !good[0] ? ", worse than leaving it" : ", not within the noise of the best");
		else
			nk__strbuf_printf(&b, "which the model cannot price)");
		contention_note(&b, d, &lw, &w[*pick]);
	} else {
		*pick = -1;
		nk__strbuf_printf(&b, "no placement is predicted better than as profiled (%s) by more than the noise "
				"(%s ms): ", p0, fmt_ms(noise, m1, sizeof m1));
		if (ok[0])
			nk__strbuf_printf(&b, "the rules' choice, %s, predicted %.1f%% remote vs %.1f%% as profiled "
					"(stall %s vs %s ms; %s)", rule->policy, pct(w[0].remote_fraction),
				  pct(lw.remote_fraction), fmt_ms(w[0].stall_ms, m1, sizeof m1), fmt_ms(lw.stall_ms, m2, sizeof m2),
				  rule->reason);
		else
			nk__strbuf_printf(&b, "the rules' choice, %s, cannot be priced", rule->policy);
		for (size_t i = 1; i < n; i++)
			if (ok[i])
				nk__strbuf_printf(&b, "; %s %.1f%% (%s ms)", alt->d[i - 1].policy, pct(w[i].remote_fraction),
					  fmt_ms(w[i].stall_ms, m1, sizeof m1));
	}
	if (!(*why = nk__strbuf_take(&b)))
		rc = NK_ENOMEM;
out:
	free(w);
	free(ok);
	free(good);
	return rc;
}

/* -------------------------------------------------------------- the plan */

static int add_entry(const struct adv *c, nk_advice *plan, const struct nk__an_var *whole,
		     const struct nk__an_var *view, const struct dec *d, int when, const char *phase,
		     const struct nk__aplan_evidence *priced)
{
	struct nk__aplan_entry e;
	memset(&e, 0, sizeof(e));
	e.variable = whole->name;
	e.key = whole->key;
	e.policy = d->policy;
	e.when = when;
	e.phase = (char *)phase;
	e.ranges = d->ranges;
	e.n_ranges = d->n_ranges;
	nk__aplan_evidence_of(&e.ev, view);
	e.ev.size = whole->size;
	if (priced) { /* the candidates' predictions: moved in, and out again below */
		e.ev.cands = priced->cands;
		e.ev.n_cands = priced->n_cands;
		e.ev.noise_ms = priced->noise_ms;
	}
	/* the reason says how sure the profile is of the share it started from */
	uint64_t known = view->local + view->remote;
	struct nk__strbuf why = { 0 };
	if (d->reason)
		nk__strbuf_printf(&why, "%s; profiled %.1f%% remote [%.1f, %.1f] (95%% interval, %.1f effective samples)",
			  d->reason, known ? pct((double)view->remote / (double)known) : 0, pct(view->ci_lo),
			  pct(view->ci_hi), view->n_eff);
	e.reason = d->reason ? nk__strbuf_take(&why) : NULL;
	int rc = NK_ENOMEM;
	if (e.ev.diagnosis && (!d->reason || e.reason)) {
		e.page_size = d->kind == D_PAGES ? c->ps : 0;
		e.site_bytes = whole->site_space ? whole->size : 0; /* a site of small blocks: the plan's pages are its array's */
		rc = nk__aplan_add(plan, &e);
	}
	e.ev.cands = NULL; /* the caller's */
	e.ev.n_cands = 0;
	nk__aplan_evidence_clear(&e.ev);
	free(e.reason);
	return rc;
}

static const char *kind_word(int kind)
{
	switch (kind) {
	case NK__VAR_STACK: return "a thread stack";
	case NK__VAR_FILE: return "a file mapping";
	case NK__VAR_MPI: return "MPI's own shared memory";
	default: return "anonymous memory";
	}
}

static int skip(nk_advice *plan, const struct nk__an_var *v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int skip(nk_advice *plan, const struct nk__an_var *v, const char *fmt, ...)
{
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return nk__aplan_skip(plan, v->key ? v->key : "?", v->name, why);
}

/* The phase view of variable @p key in phase @p k, NULL when it has none. */
static const struct nk__an_var *phase_var(const struct nk__analysis *a, size_t k, const char *key)
{
	const struct nk__an_phase *ph = &a->phases[k];
	for (size_t i = 0; i < ph->n_vars; i++)
		if (ph->vars[i].key && !strcmp(ph->vars[i].key, key))
			return &ph->vars[i];
	return NULL;
}

/* The same layout: policy and, for "pages", the ranges. */
static int same_dec(const struct dec *x, const struct dec *y)
{
	if (x->kind != y->kind || strcmp(x->policy, y->policy) || x->n_ranges != y->n_ranges)
		return 0;
	return !x->n_ranges || !memcmp(x->ranges, y->ranges, x->n_ranges * sizeof(*x->ranges));
}

/* Per-phase policies of variable @p vi; 1 in *changed when they differ (entries then added). */
static int advise_phases(struct adv *c, nk_advice *plan, size_t vi, int *changed)
{
	const struct nk__analysis *a = c->a;
	const struct nk__an_var *v = &a->vars[vi];
	struct dec *d = calloc(a->n_phases, sizeof(*d));
	int rc = 0, nd = 0, differ = 0;
	size_t first = SIZE_MAX;

	*changed = 0;
	if (!d)
		return NK_ENOMEM;
	for (size_t k = 0; k < a->n_phases && !rc; k++) {
		const struct nk__an_var *pv = phase_var(a, k, v->key);
		/* a phase in which one thread (a serial initialisation) or too few samples touch it says nothing
		 * about where its pages should be: the alloc policy already places its first touches */
		if (!pv || !nk__an_decided(pv) || pv->threads < 2)
			continue;
		rc = decide(c, vi, pv, (int)k, &d[k], NULL);
		if (rc || d[k].kind == D_NONE)
			continue;
		if (first == SIZE_MAX)
			first = k;
		else if (!same_dec(&d[k], &d[first]))
			differ = 1;
		nd++;
	}
	if (rc || nd < 2 || !differ)
		goto out;
	*changed = 1;
	/* the first phase's layout at allocation, then an entry wherever the layout changes */
	rc = add_entry(c, plan, v, phase_var(a, first, v->key), &d[first], NK__WHEN_ALLOC, NULL, NULL);
	size_t cur = first;
	double bytes = (double)v->size * (double)(v->blocks > 1 ? v->blocks : 1);
	for (size_t k = first + 1; k < a->n_phases && !rc; k++) {
		if (d[k].kind == D_NONE)
			continue;
		if (same_dec(&d[k], &d[cur]))
			continue;
		const struct nk__an_var *pv = phase_var(a, k, v->key);
		struct pat p;
		if ((rc = pat_build(c, vi, (int)k, v->size, &p)))
			break;
		double before = predict_local(c, &d[cur], &p), after = predict_local(c, &d[k], &p);
		if (after < 0)
			after = d[k].local;
		pat_free(&p);
		double acc = (double)a->phases[k].var_acc[vi];
		double gain = before >= 0 && after >= 0 ? after - before
			      : acc > 0 ? (double)a->phases[k].var_remote[vi] / acc : 0;
		if (before >= 0 && after >= 0 && gain < ADV_PHASE_GAIN)
			continue; /* the layout in place serves this phase as well: nothing to migrate */
		double save_s = acc * gain * (c->lat_remote - c->lat_local) * 1e-9;
		double cost_s = bytes / ADV_MIGRATE_BPS;
		struct dec e = d[k];
		struct nk__strbuf why = { 0 };
		char fb[32], fc[32], fs[32];
		fmt_bytes(bytes, fb, sizeof fb);
		fmt_time(cost_s, fc, sizeof fc);
		fmt_time(save_s, fs, sizeof fs);
		nk__strbuf_printf(&why, "in phase %s: %s (migrating %s costs ~%s, saves ~%s)", a->phases[k].name, d[k].reason, fb,
			  fc, fs);
		e.reason = nk__strbuf_take(&why);
		if (!e.reason) {
			rc = NK_ENOMEM;
			break;
		}
		rc = add_entry(c, plan, v, pv, &e, NK__WHEN_PHASE, a->phases[k].name, NULL);
		free(e.reason);
		if (!rc && cost_s > save_s) {
			char w[700];
			snprintf(w, sizeof w,
				 "%s: migrating it when phase %s starts costs more than it saves (~%s to move %s at %.0f "
				 "GB/s vs ~%s of remote latency saved): consider \"policy\": \"none\" there",
				 v->name, a->phases[k].name, fc, fb, ADV_MIGRATE_BPS / 1e9, fs);
			rc = nk__aplan_warn(plan, w);
		}
		cur = k;
	}
out:
	for (size_t k = 0; k < a->n_phases; k++)
		dec_free(&d[k]);
	free(d);
	return rc;
}

/* The thread pinning (docs/plan.md). */
static int advise_pin(struct adv *c, nk_advice *plan, int owner_entries, int shared_entries)
{
	const struct nk__analysis *a = c->a;
	size_t nt = a->n_threads;
	struct nk__aplan_pin *pin = &plan->pin;
	char why[600];

	if (c->o->no_pin || nt < 2 || a->n_procs != 1)
		return 0;
	/* 1. placement by observed owners: the threads must run where they ran in the profile.  Not as a cpu
	 * list: the profile numbers threads in creation order, which is not the OpenMP thread number (in
	 * the 4n-slit guest libgomp's team under OMP_PROC_BIND=spread was seen as "cpus": [0, 1, 3, 2],
	 * and that pinning would have moved two threads away from their blocks).  So no pinning, and a
	 * warning to run with the profiled run's binding. */
	if (owner_entries) {
		return nk__aplan_warn(plan, "blocks and page ranges follow the nodes the threads ran on in the profile: "
					     "run with the same thread binding (OMP_PROC_BIND/OMP_PLACES, or numakit run "
					     "--pin) as the profiled run");
	}
	/* 2. a clearly structured sharing matrix: groups of threads that share go on one node */
	int nodes_cpu = 0;
	if (c->m) {
		for (int i = 0; i < nk_machine_num_nodes(c->m); i++) {
			int f = nk_machine_node_flags(c->m, nk_machine_node_id(c->m, i));
			nodes_cpu += f >= 0 && (f & NK_NODE_HAS_CPUS);
		}
	} else {
		nodes_cpu = c->nn;
	}
	if (a->sharing && nodes_cpu > 1 && nt > (size_t)nodes_cpu) {
		size_t g = (nt + (size_t)nodes_cpu - 1) / (size_t)nodes_cpu; /* threads per node */
		double within = 0, total = 0;
		double *row = malloc(nt * sizeof(double));
		if (!row)
			return NK_ENOMEM;
		for (size_t i = 0; i < nt; i++) {
			for (size_t j = 0; j < nt; j++) {
				row[j] = i == j ? 0 : a->sharing[i * nt + j];
				total += row[j];
			}
			/* the g - 1 partners it shares most with */
			for (size_t k = 0; k + 1 < g; k++) {
				size_t best = 0;
				for (size_t j = 1; j < nt; j++)
					if (row[j] > row[best])
						best = j;
				within += row[best];
				row[best] = -1;
			}
		}
		free(row);
		double s = total > 0 ? within / total : 0, uniform = (double)(g - 1) / (double)(nt - 1);
		if (total > 0 && s >= ADV_SHARING_STRUCT && s >= uniform + ADV_SHARING_MARGIN) {
			pin->strategy = strdup("sharing");
			pin->threads = (int)nt;
			pin->sharing = malloc(nt * nt * sizeof(double));
			if (pin->sharing)
				memcpy(pin->sharing, a->sharing, nt * nt * sizeof(double));
			snprintf(why, sizeof why,
				 "threads share data in groups: %.0f%% of the sharing is between each thread and its %zu "
				 "closest partners (%.0f%% if it were uniform): place each group on one node",
				 pct(s), g - 1, pct(uniform));
			pin->reason = strdup(why);
			return pin->strategy && pin->sharing && pin->reason ? 0 : NK_ENOMEM;
		}
	}
	/* 3. interleaved shared data: spread the threads, so that every node's bandwidth is used */
	if (shared_entries) {
		pin->strategy = strdup("scatter");
		pin->threads = (int)nt;
		snprintf(why, sizeof why,
			 "shared data is interleaved over nodes and no group structure shows in the sharing matrix: "
			 "spread the %zu threads over the nodes to use every node's bandwidth",
			 nt);
		pin->reason = strdup(why);
		return pin->strategy && pin->reason ? 0 : NK_ENOMEM;
	}
	return 0;
}

/* Target machine facts: memory nodes, node map, NUMA factor, L2, latencies. */
static int setup(struct adv *c)
{
	const struct nk__analysis *a = c->a;

	c->nn = a->n_nodes;
	c->ps = a->page_size ? a->page_size : 4096;
	c->map = malloc((size_t)(c->nn ? c->nn : 1) * sizeof(int));
	if (!c->map)
		return NK_ENOMEM;
	if (c->m) {
		int n = nk_machine_num_nodes(c->m);
		c->mem = malloc((size_t)(n ? n : 1) * sizeof(int));
		if (!c->mem)
			return NK_ENOMEM;
		for (int i = 0; i < n; i++) {
			int id = nk_machine_node_id(c->m, i);
			int f = nk_machine_node_flags(c->m, id);
			if (f >= 0 && (f & NK_NODE_HAS_MEMORY))
				c->mem[c->n_mem++] = id;
		}
		for (int i = 0; i < n; i++)
			for (int k = 0; k < n; k++) {
				double f;
				int x = nk_machine_node_id(c->m, i), y = nk_machine_node_id(c->m, k);
				if (x != y && !nk_machine_numa_factor(c->m, x, y, &f) && f > c->factor)
					c->factor = f;
			}
		uint64_t l2 = 0;
		for (int i = 0; i < nk_machine_num_caches(c->m); i++) {
			nk_cache_info ci;
			if (!nk_machine_cache(c->m, i, &ci) && ci.level == 2 && ci.size > l2)
				l2 = ci.size;
		}
		c->min_size = l2;
		/* latencies: measured means, else local ADV_LOCAL_NS and remote = local x NUMA factor */
		double ls = 0, rs = 0;
		int ln = 0, rn = 0;
		for (int i = 0; i < c->n_mem; i++)
			for (int k = 0; k < c->n_mem; k++) {
				double x;
				if (nk_machine_get_matrix(c->m, NK_MATRIX_LATENCY_NS, c->mem[i], c->mem[k], &x))
					continue;
				if (i == k) {
					ls += x;
					ln++;
				} else {
					rs += x;
					rn++;
				}
			}
		if (ln && rn) {
			c->lat_local = ls / ln;
			c->lat_remote = rs / rn;
			c->lat_measured = 1;
		}
	} else {
		c->factor = a->numa_factor;
		c->min_size = a->l2_size;
		c->mem = malloc((size_t)(c->nn ? c->nn : 1) * sizeof(int));
		if (!c->mem)
			return NK_ENOMEM;
		for (int i = 0; i < c->nn; i++)
			c->mem[c->n_mem++] = a->node_ids[i];
	}
	if (!c->lat_measured) {
		c->lat_local = ADV_LOCAL_NS;
		c->lat_remote = ADV_LOCAL_NS * (c->factor > 1 ? c->factor : ADV_DEFAULT_FACTOR);
	}
	if (c->o->min_size)
		c->min_size = c->o->min_size;
	else if (!c->min_size)
		c->min_size = ADV_DEFAULT_MIN_SIZE;
	/* profile node -> target node.  When the target has every node of the profile: the same id, a
	 * node without memory there going to its nearest memory node.  Otherwise (another machine) by
	 * position: the k-th node of the profile -> the k-th memory node of the target, modulo. */
	int all = 1;
	for (int i = 0; c->m && i < c->nn; i++)
		all &= nk_machine_node_flags(c->m, a->node_ids[i]) >= 0;
	for (int i = 0; i < c->nn; i++) {
		int id = a->node_ids[i];
		c->map[i] = id;
		if (!c->m || !c->n_mem)
			continue;
		if (!all) {
			c->map[i] = c->mem[i % c->n_mem];
			continue;
		}
		int near, f = nk_machine_node_flags(c->m, id);
		if (!(f & NK_NODE_HAS_MEMORY) && nk_machine_neighbors(c->m, id, &near, 1) >= 1)
			c->map[i] = near;
	}
	/* samples by variable */
	c->vstart = calloc(a->n_vars + 1, sizeof(size_t));
	c->vidx = malloc((a->n_attr ? a->n_attr : 1) * sizeof(uint32_t));
	if (!c->vstart || !c->vidx)
		return NK_ENOMEM;
	for (size_t i = 0; i < a->n_attr; i++)
		if (a->attr[i].var < a->n_vars)
			c->vstart[a->attr[i].var + 1]++;
	for (size_t v = 0; v < a->n_vars; v++)
		c->vstart[v + 1] += c->vstart[v];
	size_t *fill = malloc((a->n_vars ? a->n_vars : 1) * sizeof(size_t));
	if (!fill)
		return NK_ENOMEM;
	memcpy(fill, c->vstart, a->n_vars * sizeof(size_t));
	for (size_t i = 0; i < a->n_attr; i++)
		if (a->attr[i].var < a->n_vars)
			c->vidx[fill[a->attr[i].var]++] = (uint32_t)i;
	free(fill);
	return 0;
}

/* The alloc entry of variable @p vi, or its left-alone record: the rules' choice and the candidates,
 * priced by whatif's model (choose()). */
static int advise_var(struct adv *c, nk_advice *plan, size_t vi)
{
	const struct nk__an_var *v = &c->a->vars[vi];
	struct nk__aplan_evidence priced;
	struct decs alt = { 0 };
	struct dec d;
	char *why = NULL;
	int pick = 0;

	nk__aplan_evidence_unknown(&priced);
	int rc = decide(c, vi, v, -1, &d, &alt);
	if (!rc && d.kind == D_NONE) {
		rc = skip(plan, v, "no sample with the accessing cpu's node known: cannot decide");
		goto out;
	}
	/* a candidate that is the rules' choice under another name is priced once, as the rules' */
	for (size_t i = 0; !rc && i < alt.n;)
		if (!strcmp(alt.d[i].policy, d.policy) && d.kind != D_PAGES) {
			dec_free(&alt.d[i]);
			memmove(&alt.d[i], &alt.d[i + 1], (alt.n - i - 1) * sizeof(*alt.d));
			alt.n--;
		} else {
			i++;
		}
	if (rc || (rc = choose(c, vi, v, &d, &alt, &pick, &why, &priced)))
		goto out;
	if (pick < 0) {
		rc = nk__aplan_skip_priced(plan, v->key ? v->key : "?", v->name, why, priced.cands, priced.n_cands);
		goto out;
	}
	struct dec *e = pick ? &alt.d[pick - 1] : &d;
	if (why) {
		free(e->reason);
		e->reason = why;
		why = NULL;
	}
	rc = add_entry(c, plan, v, v, e, NK__WHEN_ALLOC, NULL, priced.n_cands ? &priced : NULL);
out:
	free(why);
	nk__aplan_evidence_clear(&priced);
	decs_free(&alt);
	dec_free(&d);
	return rc;
}

static int advise(struct adv *c, nk_advice *plan, nk_error *err)
{
	const struct nk__analysis *a = c->a;
	int rc, judged = 0, owner_entries = 0, shared_entries = 0;
	char sz[2][32];

	for (size_t vi = 0; vi < a->n_vars; vi++) {
		const struct nk__an_var *v = &a->vars[vi];
		uint64_t known = v->local + v->remote;
		double rshare = known ? (double)v->remote / (double)known : 0;
		int enough = known && nk__an_decided(v);
		judged |= enough;
		rc = 0;
		if (v->kind != NK__VAR_STATIC && v->kind != NK__VAR_HEAP && v->kind != NK__VAR_NAMED) {
			if (enough && rshare > NK__AN_FINE_REMOTE)
				rc = skip(plan, v, "%s: a plan cannot place it (%.0f%% of its accesses remote)",
					  kind_word(v->kind), pct(rshare));
		} else if (!enough) {
			rc = known ? skip(plan, v,
					  "too few samples to decide: %.1f%% remote [%.1f, %.1f], wider than +-%.0f "
					  "points (%llu samples in %llu %s, %.1f effective)",
					  pct(rshare), pct(v->ci_lo), pct(v->ci_hi), pct(NK__AN_CI_HALF),
					  (unsigned long long)v->known_samples, (unsigned long long)v->clusters,
					  v->ci_grouped ? "page groups" : "clusters", v->n_eff)
				   : skip(plan, v, "too few samples to decide (%llu, none with both nodes known)",
					  (unsigned long long)v->samples);
		} else if (rshare <= NK__AN_FINE_REMOTE) {
			rc = skip(plan, v, "%.1f%% [%.1f, %.1f] of its accesses are remote: fine as it is", pct(rshare),
				  pct(v->ci_lo), pct(v->ci_hi));
		} else if (c->factor > 0 && c->factor < NK__AN_MIN_NUMA_FACTOR) {
			rc = skip(plan, v, "the machine's NUMA factor %.2f is below %.2f: placement is not worth changing",
				  c->factor, NK__AN_MIN_NUMA_FACTOR);
		} else if (v->size < c->min_size) {
			snprintf(sz[0], sizeof sz[0], "%llu", (unsigned long long)v->size);
			snprintf(sz[1], sizeof sz[1], "%llu", (unsigned long long)c->min_size);
			rc = skip(plan, v, "small (%s bytes, below %s%s): it stays in caches", sz[0], sz[1],
				  c->o->min_size ? " (--min-size)" : " (L2)");
		} else if (v->threads <= 1) {
			rc = skip(plan, v, "used by one thread only: first touch already places it on that thread's node");
		} else if (!nk__aplan_key_valid(v->key) || nk__aplan_key_local(v->key)) {
			rc = skip(plan, v, "process-local key (the program was not symbolised): a later run cannot find "
					   "it%s",
				  v->kind == NK__VAR_HEAP ? "; name it with nk_profile_name, or profile a binary with symbols"
							  : "");
		} else {
			int changed = 0;
			size_t before = plan->n_entries;
			if (!c->o->no_phases && a->n_phases >= 2)
				rc = advise_phases(c, plan, vi, &changed);
			if (!rc && !changed)
				rc = advise_var(c, plan, vi);
			for (size_t k = before; k < plan->n_entries; k++) {
				const char *pol = plan->entries[k].policy;
				if (!strncmp(pol, "block", 5) || !strcmp(pol, "pages"))
					owner_entries = 1;
				else if (!strncmp(pol, "cyclic", 6) || !strncmp(pol, "weighted", 8))
					shared_entries = 1;
			}
		}
		if (rc)
			return nk__error(err, rc, "out of memory");
	}
	if (!judged)
		return nk__error(err, NK_ENODATA,
				 "no variable has enough samples to decide anything (its remote share's 95%% interval "
				 "within +-%.0f points, with the nodes known)",
				 pct(NK__AN_CI_HALF));
	if ((rc = advise_pin(c, plan, owner_entries, shared_entries)))
		return nk__error(err, rc, "out of memory");
	return 0;
}

int nk_profile_advise(const nk_profile *p, const nk_machine *m, const nk_advise_opts *o, nk_advice **out,
		      nk_error *err)
{
	static const nk_advise_opts defaults;
	const struct nk__analysis *a = nk__profile_analysis(p);
	struct adv c;
	nk_machine *own = NULL;
	nk_advice *plan = NULL;
	int rc;

	if (!p || !out)
		return nk__error(err, NK_EINVAL, "nk_profile_advise: NULL argument");
	if (!a)
		return nk__error(err, NK_EINVAL, "nk_profile_advise: a job's profile has one analysis per rank: load its "
				 "ranks pooled (nk_profile_load_pooled) for one plan of every rank");
	if (!o)
		o = &defaults;
	for (size_t i = 0; i < sizeof o->reserved / sizeof *o->reserved; i++)
		if (o->reserved[i])
			return nk__error(err, NK_EINVAL, "nk_profile_advise: reserved option fields must be 0");
	if (!a->covered && !o->force) {
		char *why = NULL;
		if (nk__coverage_text(a, &why))
			return nk__error(err, NK_ENOMEM, "out of memory");
		rc = nk__error(err, NK_ENODATA, "the profile does not cover the whole run (%s): no plan decided from it "
			       "unless forced", why);
		free(why);
		return rc;
	}
	memset(&c, 0, sizeof(c));
	c.a = a;
	c.o = o;
	c.m = m;
	if (!m && a->machine_json) {
		nk_error merr;
		if (!nk_machine_load_buffer(a->machine_json, strlen(a->machine_json), &own, &merr))
			c.m = own;
	}
	rc = setup(&c);
	if (rc) {
		rc = nk__error(err, rc, "out of memory");
		goto out;
	}
	/* whatif's model prices the candidates; without a machine (or on one it cannot use) the rules decide alone */
	if (c.m) {
		nk_error werr = { 0, "" };
		rc = nk__whatif_model_new(a, c.m, c.map, &c.wm, &werr);
		if (rc == NK_ENOMEM) {
			rc = nk__error(err, rc, "out of memory");
			goto out;
		}
		rc = 0;
	}
	if ((rc = nk_advice_create(&plan))) {
		rc = nk__error(err, rc, "out of memory");
		goto out;
	}
	if (a->program && strcmp(a->program, "?") && !(plan->program = strdup(a->program))) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out;
	}
	plan->numa_factor = c.factor;
	plan->runs = a->runs > 1 ? (uint64_t)a->runs : 0; /* the evidence pools the samples of that many runs */
	if (c.m) {
		int n = nk_machine_num_nodes(c.m);
		plan->node_ids = malloc((size_t)(n ? n : 1) * sizeof(int));
		for (int i = 0; plan->node_ids && i < n; i++)
			plan->node_ids[plan->n_nodes++] = nk_machine_node_id(c.m, i);
	} else {
		plan->node_ids = malloc((size_t)(c.nn ? c.nn : 1) * sizeof(int));
		for (int i = 0; plan->node_ids && i < c.nn; i++)
			plan->node_ids[plan->n_nodes++] = a->node_ids[i];
	}
	if (!plan->node_ids) {
		rc = nk__error(err, NK_ENOMEM, "out of memory");
		goto out;
	}
	/* a job's ranks pooled relative to their shares: the plan's node ids refer to the first rank's */
	for (size_t i = 0; i < a->n_share; i++) {
		int known = 0;
		for (int k = 0; k < plan->n_nodes; k++)
			known |= plan->node_ids[k] == a->share[i];
		if (!known)
			break; /* advised for another machine than the profiled one: absolute */
		if (!i && !(plan->share = malloc(a->n_share * sizeof(int)))) {
			rc = nk__error(err, NK_ENOMEM, "out of memory");
			goto out;
		}
		plan->share[plan->n_share++] = a->share[i];
	}
	if (plan->n_share != a->n_share) {
		free(plan->share);
		plan->share = NULL;
		plan->n_share = 0;
	}
	rc = advise(&c, plan, err);
	if (!rc && plan->n_share) {
		struct nk__strbuf b = { 0 };
		nk__strbuf_printf(&b, "a plan for the ranks of a job that ran on shares of %zu node%s: its node ids refer to "
				      "the first rank's share (nodes ", plan->n_share, plan->n_share == 1 ? "" : "s");
		for (size_t i = 0; i < plan->n_share; i++)
			nk__strbuf_printf(&b, "%s%d", i ? "," : "", plan->share[i]);
		nk__strbuf_printf(&b, "); run it as the job ran, with every rank under `numakit run --plan` (mpirun ... "
				      "numakit run --plan PLAN -- PROGRAM), which carries it onto each rank's own share");
		char *msg = nk__strbuf_take(&b);
		rc = msg ? nk__aplan_warn(plan, msg) : NK_ENOMEM;
		free(msg);
		if (rc)
			rc = nk__error(err, rc, "out of memory");
	}
	if (!rc && !a->covered) {
		/* forced: the plan's evidence came from part of the run only, and says so */
		char *why = NULL, *msg = NULL;
		if (nk__coverage_text(a, &why) ||
		    asprintf(&msg, "decided with --force from a profile that does not cover the whole run: %s", why) < 0)
			msg = NULL;
		rc = msg ? nk__aplan_warn(plan, msg) : NK_ENOMEM;
		if (rc)
			rc = nk__error(err, rc, "out of memory");
		free(why);
		free(msg);
	}
out:
	nk__whatif_model_free(c.wm);
	free(c.map);
	free(c.mem);
	free(c.vstart);
	free(c.vidx);
	nk_machine_free(own);
	if (rc) {
		nk_advice_free(plan);
		return rc;
	}
	*out = plan;
	return 0;
}
