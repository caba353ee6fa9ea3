/*
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

/*
 * The policy for variable @p vi (analysis @p v: the whole variable, or its view in one phase) from the
 * pattern of its samples in @p phase (-1 all).  d->kind D_NONE: nothing to decide (no known node).
 */
static int decide(const struct adv *c, size_t vi, const struct nk__an_var *v, int phase, struct dec *d)
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
			struct nk__strbuf pol = { 0 }, why = { 0 };
			uint64_t best_t = t;
			double best_local = local;
			int simpler = 0, best_runs = nk__adv_lay_runs(bn, t);
			if ((rc = nk__adv_block_simplify(c, &p, cands, 4, &t, &bn, &local, &simpler))) {
				free(bn);
				goto out;
			}
			int one = 1;
			for (uint64_t b = 1; b < t; b++)
				one &= bn[b] == bn[0];
			double now = v->local + v->remote ? (double)v->local / (double)(v->local + v->remote) : 0;
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
				nk__strbuf_printf(&why, "each thread works on its own contiguous slice (regularity %.2f): %llu blocks "
						"on the nodes that use them, in the observed order, make %.0f%% of its "
						"accesses local (%.0f%% as profiled)",
					  v->regularity < 0 ? 0 : v->regularity, (unsigned long long)t, pct(local),
					  pct(now));
			}
			if (simpler)
				nk__strbuf_printf(&why, "; simplified from %llu blocks in %d runs, a finer layout than the samples "
						"support: %.1f%% -> %.1f%% of the sampled accesses local",
					  (unsigned long long)best_t, best_runs, 100.0 * best_local, 100.0 * local);
			free(bn);
			char *raw = nk__strbuf_take(&pol);
			d->reason = nk__strbuf_take(&why);
			d->policy = raw ? canon_policy(raw) : NULL;
			free(raw);
			d->local = local;
			rc = d->policy && d->reason ? 0 : NK_ENOMEM;
			goto out;
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

/* -------------------------------------------------------------- the plan */

static int add_entry(const struct adv *c, nk_advice *plan, const struct nk__an_var *whole,
		     const struct nk__an_var *view, const struct dec *d, int when, const char *phase)
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
	/* the reason says how sure the profile is of the share it started from */
	uint64_t known = view->local + view->remote;
	struct nk__strbuf why = { 0 };
	if (d->reason)
		nk__strbuf_printf(&why, "%s; profiled %.1f%% remote [%.1f, %.1f] (95%% interval, %.1f effective samples)",
			  d->reason, known ? pct((double)view->remote / (double)known) : 0, pct(view->ci_lo),
			  pct(view->ci_hi), view->n_eff);
	e.reason = d->reason ? nk__strbuf_take(&why) : NULL;
	if (!e.ev.diagnosis || (d->reason && !e.reason)) {
		free(e.ev.diagnosis);
		free(e.reason);
		return NK_ENOMEM;
	}
	e.page_size = d->kind == D_PAGES ? c->ps : 0;
	e.site_bytes = whole->site_space ? whole->size : 0; /* a site of small blocks: the plan's pages are its array's */
	int rc = nk__aplan_add(plan, &e);
	free(e.ev.diagnosis);
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
		rc = decide(c, vi, pv, (int)k, &d[k]);
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
	rc = add_entry(c, plan, v, phase_var(a, first, v->key), &d[first], NK__WHEN_ALLOC, NULL);
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
		rc = add_entry(c, plan, v, pv, &e, NK__WHEN_PHASE, a->phases[k].name);
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
			if (!rc && !changed) {
				struct dec d;
				rc = decide(c, vi, v, -1, &d);
				if (!rc && d.kind == D_NONE)
					rc = skip(plan, v, "no sample with the accessing cpu's node known: cannot decide");
				else if (!rc)
					rc = add_entry(c, plan, v, v, &d, NK__WHEN_ALLOC, NULL);
				dec_free(&d);
			}
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
	rc = advise(&c, plan, err);
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
