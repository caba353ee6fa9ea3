/* SPDX-License-Identifier: BSD-3-Clause
 * Thread placement strategies (pure): compact, scatter, an explicit list and
 * sharing-based grouping, computed from the machine model.  Nothing here
 * touches the system except reading a list or matrix file through os.h;
 * pinning is pin.c.  The rules are stated in numakit.h and docs/threads.md;
 * unit tests check them cpu by cpu, so a change of rule is a change of both.
 *
 * Every strategy works on the same view of the machine: the allowed cpus
 * sorted in "hierarchical order" H, the lexicographic order of
 *   (node index, cache key of the highest level, ..., of level 1, core key, cpu id)
 * where a cache key is the smallest cpu id of the cache instance holding the
 * cpu (its core key when it has none at that level) and the core key the
 * smallest cpu id of its core.  Groups that share a node, a cache or a core
 * are then contiguous runs of H, whatever the OS numbering of the cpus
 * (Intel numbers SMT siblings n apart; sparse ids are common).
 */
#include "threads/placement_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine_impl.h"
#include "os/os.h"
#include "util/list.h"
#include "util/error.h"

#define MAX_LEVELS 9 /* cache levels the machine file allows */
#define MAX_KEYS (MAX_LEVELS + 3)
#define MAX_CPU_ID 4194304

/* One allowed cpu and its place in the hierarchy. */
struct slot {
	int cpu;  /* OS id */
	int rank; /* SMT rank: position among the allowed cpus of its core, by id */
	int nkeys;
	int key[MAX_KEYS];
};

/* The allowed cpus in H order, and which key is which level. */
struct view {
	struct slot *s;
	int n;
	int nkeys;   /* key[0] node index, key[1..L] caches, key[L+1] core, key[L+2] cpu id */
	int k_llc;   /* 1: the highest cache level (the core key when there are no caches) */
	int k_core;
	int k_cpu;
};

static int cmp_h(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	for (int k = 0; k < x->nkeys; k++)
		if (x->key[k] != y->key[k])
			return x->key[k] < y->key[k] ? -1 : 1;
	return 0;
}

/* Compact order: SMT rank first (all cores before their second threads), then H. */
static int cmp_compact(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return cmp_h(a, b);
}

static void view_free(struct view *v)
{
	free(v->s);
	v->s = NULL;
}

static int view_build(const struct nk_machine *m, struct view *v, nk_error *err)
{
	int levels = 0, rc = NK_ENOMEM;
	int *core_min = NULL, *core_cnt = NULL, *keys = NULL;

	memset(v, 0, sizeof *v);
	for (int i = 0; i < m->ncaches; i++)
		if (m->caches[i].type != NK_CACHE_INSTRUCTION && m->caches[i].level > levels)
			levels = m->caches[i].level;
	if (levels > MAX_LEVELS)
		levels = MAX_LEVELS;
	v->nkeys = levels + 3;
	v->k_llc = 1;
	v->k_core = levels + 1;
	v->k_cpu = levels + 2;

	core_min = malloc(((size_t)m->ncores + 1) * sizeof *core_min);
	core_cnt = calloc((size_t)m->ncores + 1, sizeof *core_cnt);
	/* cache keys of every cpu, levels x ncpus, -1 = no cache at that level */
	keys = malloc(((size_t)levels * (size_t)m->ncpus + 1) * sizeof *keys);
	v->s = malloc(((size_t)m->ncpus + 1) * sizeof *v->s);
	if (!core_min || !core_cnt || !keys || !v->s)
		goto out;
	for (int c = 0; c < m->ncores; c++)
		core_min[c] = -1;
	for (int i = 0; i < m->ncpus; i++) /* cpus are sorted by id: the first seen is the smallest */
		if (m->cpus[i].core >= 0 && m->cpus[i].core < m->ncores && core_min[m->cpus[i].core] < 0)
			core_min[m->cpus[i].core] = m->cpus[i].id;
	for (size_t i = 0; i < (size_t)levels * (size_t)m->ncpus; i++)
		keys[i] = -1;
	for (int i = 0; i < m->ncaches; i++) {
		const struct nk__cache *c = &m->caches[i];
		int kmin = -1;

		if (c->type == NK_CACHE_INSTRUCTION || c->level < 1 || c->level > levels || !c->cpus.n)
			continue;
		for (size_t j = 0; j < c->cpus.n; j++)
			if (kmin < 0 || c->cpus.v[j] < kmin)
				kmin = c->cpus.v[j];
		for (size_t j = 0; j < c->cpus.n; j++) {
			int ci = nk__cpu_idx(m, c->cpus.v[j]);
			int *k;

			if (ci < 0)
				continue;
			k = &keys[(size_t)(c->level - 1) * (size_t)m->ncpus + (size_t)ci];
			if (*k < 0) /* a cpu in two instances of a level (odd data): the first wins */
				*k = kmin;
		}
	}
	for (int i = 0; i < m->ncpus; i++) {
		const struct nk__cpu *cpu = &m->cpus[i];
		struct slot *s = &v->s[v->n];
		int core_key, ni;

		if (!cpu->allowed)
			continue;
		core_key = cpu->core >= 0 && cpu->core < m->ncores ? core_min[cpu->core] : cpu->id;
		ni = cpu->node >= 0 ? nk__node_idx(m, cpu->node) : -1;
		s->cpu = cpu->id;
		s->rank = cpu->core >= 0 && cpu->core < m->ncores ? core_cnt[cpu->core]++ : 0;
		s->nkeys = v->nkeys;
		s->key[0] = ni >= 0 ? ni : m->nnodes; /* cpus of an offline node come last */
		for (int l = levels; l >= 1; l--) {
			int k = keys[(size_t)(l - 1) * (size_t)m->ncpus + (size_t)i];
			s->key[1 + levels - l] = k >= 0 ? k : core_key;
		}
		s->key[v->k_core] = core_key;
		s->key[v->k_cpu] = cpu->id;
		v->n++;
	}
	if (!v->n) {
		rc = nk__error(err, NK_EPERM, "placement: this process may not use any cpu of the machine");
		goto out;
	}
	qsort(v->s, (size_t)v->n, sizeof *v->s, cmp_h);
	rc = 0;
out:
	free(core_min);
	free(core_cnt);
	free(keys);
	if (rc) {
		view_free(v);
		if (rc == NK_ENOMEM)
			nk__error(err, rc, "placement: out of memory");
	}
	return rc;
}

/* [lo, hi) of s split into runs of equal key[k]; starts written to run[] (r + 1 entries, run[r] = hi). */
static int runs_of(const struct slot *s, int lo, int hi, int k, int *run)
{
	int r = 0;

	for (int i = lo; i < hi; i++)
		if (i == lo || s[i].key[k] != s[i - 1].key[k])
			run[r++] = i;
	run[r] = hi;
	return r;
}

/*
 * k items over r bins of capacity cap[] (sum >= k), as evenly as possible,
 * the first bins one larger; a bin whose capacity is below its even share
 * is filled and the rest shared among the others again ("water-filling").
 */
static void waterfill(int k, const int *cap, int r, int *share)
{
	int left = k, open = r;

	for (int i = 0; i < r; i++)
		share[i] = -1;
	while (open > 0) {
		int base = left / open, extra = left % open, rank = 0, capped = 0;

		for (int i = 0; i < r; i++) {
			if (share[i] >= 0)
				continue;
			if (cap[i] < base + (rank++ < extra)) {
				share[i] = cap[i];
				left -= cap[i];
				capped++;
			}
		}
		open -= capped;
		if (capped)
			continue;
		rank = 0;
		for (int i = 0; i < r; i++)
			if (share[i] < 0)
				share[i] = base + (rank++ < extra);
		break;
	}
}

/* ---------------------------------------------------------------- scatter */

/*
 * Place k threads (k <= hi - lo) on the slots [lo, hi) spreading over the
 * runs of key lv[0], then of lv[1], ...: k <= runs puts thread j on run
 * floor(j * runs / k); more threads cut k into contiguous parts by
 * waterfill, like OpenMP's spread.  Cpus go to out[*pos...] in thread order.
 */
static int spread(const struct view *v, int lo, int hi, int k, const int *lv, int nlv, int *out, int *pos)
{
	int *run = NULL, *cap = NULL, *share = NULL, r, rc = 0;

	if (k <= 0)
		return 0;
	if (!nlv || hi - lo == 1) {
		for (int j = 0; j < k; j++)
			out[(*pos)++] = v->s[lo].cpu;
		return 0;
	}
	run = malloc((size_t)(hi - lo + 1) * sizeof *run);
	cap = calloc((size_t)(hi - lo + 1), sizeof *cap);
	share = malloc((size_t)(hi - lo + 1) * sizeof *share);
	if (!run || !cap || !share) {
		rc = NK_ENOMEM;
		goto out;
	}
	r = runs_of(v->s, lo, hi, lv[0], run);
	if (k <= r) {
		for (int j = 0; j < k && !rc; j++) {
			int g = (int)((long long)j * r / k);
			rc = spread(v, run[g], run[g + 1], 1, lv + 1, nlv - 1, out, pos);
		}
		goto out;
	}
	for (int g = 0; g < r; g++)
		cap[g] = run[g + 1] - run[g];
	waterfill(k, cap, r, share);
	for (int g = 0; g < r && !rc; g++)
		rc = spread(v, run[g], run[g + 1], share[g], lv + 1, nlv - 1, out, pos);
out:
	free(run);
	free(cap);
	free(share);
	return rc;
}

/* ---------------------------------------------------------------- sharing */

struct share_ctx {
	const double *a; /* n x n */
	int n;
	const struct slot *s;
	int nkeys;
	int *out; /* cpu of each thread */
	double *aff; /* scratch, n */
};

static double w_of(const struct share_ctx *c, int i, int j)
{
	return c->a[(size_t)i * (size_t)c->n + (size_t)j] + c->a[(size_t)j * (size_t)c->n + (size_t)i];
}

/*
 * Choose g of the ns threads of S (increasing ids) that share the most:
 * g == 1 takes the thread sharing least with the others of S (it loses the
 * least by being alone); otherwise the pair with the largest w starts the
 * group and the thread with the largest sum of w to the group joins until
 * it has g.  Ties go to the lower id.  The group goes to grp, the others to
 * rest, both increasing.
 */
static void pick_group(struct share_ctx *c, const int *S, int ns, int g, int *grp, int *rest)
{
	int best_i = 0, best_j = 1, ng = 0, nr = 0;
	double best;

	if (g >= ns) {
		memcpy(grp, S, (size_t)ns * sizeof *S);
		return;
	}
	for (int x = 0; x < ns; x++)
		c->aff[S[x]] = 0;
	if (g == 1) {
		for (int x = 0; x < ns; x++)
			for (int y = 0; y < ns; y++)
				if (x != y)
					c->aff[S[x]] += w_of(c, S[x], S[y]);
		best_i = 0;
		for (int x = 1; x < ns; x++)
			if (c->aff[S[x]] < c->aff[S[best_i]])
				best_i = x;
		grp[0] = S[best_i];
		for (int x = 0; x < ns; x++)
			if (x != best_i)
				rest[nr++] = S[x];
		return;
	}
	best = -1;
	for (int x = 0; x < ns; x++)
		for (int y = x + 1; y < ns; y++) {
			double w = w_of(c, S[x], S[y]);
			if (w > best) {
				best = w;
				best_i = x;
				best_j = y;
			}
		}
	/* aff[t] < 0 marks a member: weights are >= 0, so members are never chosen again */
	for (int x = 0; x < ns; x++)
		c->aff[S[x]] = w_of(c, S[x], S[best_i]) + w_of(c, S[x], S[best_j]);
	c->aff[S[best_i]] = -1;
	c->aff[S[best_j]] = -1;
	ng = 2;
	while (ng < g) {
		int bx = -1;

		for (int x = 0; x < ns; x++)
			if (c->aff[S[x]] >= 0 && (bx < 0 || c->aff[S[x]] > c->aff[S[bx]]))
				bx = x;
		for (int x = 0; x < ns; x++)
			if (c->aff[S[x]] >= 0 && x != bx)
				c->aff[S[x]] += w_of(c, S[x], S[bx]);
		c->aff[S[bx]] = -1;
		ng++;
	}
	ng = 0;
	for (int x = 0; x < ns; x++) {
		if (c->aff[S[x]] < 0)
			grp[ng++] = S[x];
		else
			rest[nr++] = S[x];
	}
}

/* Threads S (ns, increasing) onto the ns slots [lo, hi) sorted by H, splitting by key k and deeper. */
static int assign(struct share_ctx *c, int *S, int ns, int lo, int hi, int k)
{
	int *run = NULL, *grp = NULL, *rest = NULL, r, rc = 0;

	if (k >= c->nkeys) { /* every slot is the same cpu */
		for (int x = 0; x < ns; x++)
			c->out[S[x]] = c->s[lo].cpu;
		return 0;
	}
	run = malloc((size_t)(hi - lo + 1) * sizeof *run);
	grp = malloc((size_t)ns * sizeof *grp);
	rest = malloc((size_t)ns * sizeof *rest);
	if (!run || !grp || !rest) {
		rc = NK_ENOMEM;
		goto out;
	}
	r = runs_of(c->s, lo, hi, k, run);
	for (int g = 0; g < r && !rc; g++) {
		int len = run[g + 1] - run[g];

		if (g == r - 1) {
			rc = assign(c, S, ns, run[g], run[g + 1], k + 1);
			break;
		}
		pick_group(c, S, ns, len, grp, rest);
		rc = assign(c, grp, len, run[g], run[g + 1], k + 1);
		memcpy(S, rest, (size_t)(ns - len) * sizeof *S);
		ns -= len;
	}
out:
	free(run);
	free(grp);
	free(rest);
	return rc;
}

/* ------------------------------------------------------------ the value */

static int make_placement(const struct nk_machine *m, const int *cpus, int n, nk_placement **out, nk_error *err)
{
	nk_placement *p = calloc(1, sizeof *p);
	int *sorted = NULL;

	if (!p || !(p->cpu = malloc((size_t)n * sizeof *p->cpu)) || !(p->node = malloc((size_t)n * sizeof *p->node)) ||
	    !(sorted = malloc((size_t)n * sizeof *sorted))) {
		nk_placement_free(p);
		return nk__error(err, NK_ENOMEM, "placement: out of memory");
	}
	p->n = n;
	for (int t = 0; t < n; t++) {
		int ci = nk__cpu_idx(m, cpus[t]);

		p->cpu[t] = cpus[t];
		p->node[t] = ci >= 0 ? m->cpus[ci].node : -1;
		sorted[t] = cpus[t];
	}
	nk__ilist tmp = { sorted, (size_t)n, (size_t)n };
	nk__ilist_normalize(&tmp);
	p->oversub = tmp.n < (size_t)n;
	free(tmp.v);
	*out = p;
	return 0;
}

/* The strategy's C cpus in strategy order, repeated round robin for n threads. */
static int from_cycle(const struct nk_machine *m, const int *cyc, int c, int n, nk_placement **out, nk_error *err)
{
	int *cpus;
	int rc;

	if (n == 0)
		n = c;
	cpus = malloc((size_t)n * sizeof *cpus);
	if (!cpus)
		return nk__error(err, NK_ENOMEM, "placement: out of memory");
	for (int t = 0; t < n; t++)
		cpus[t] = cyc[t % c];
	rc = make_placement(m, cpus, n, out, err);
	free(cpus);
	return rc;
}

static int build_compact(const struct nk_machine *m, int n, nk_placement **out, nk_error *err)
{
	struct view v;
	int *cyc, rc;

	if ((rc = view_build(m, &v, err)))
		return rc;
	qsort(v.s, (size_t)v.n, sizeof *v.s, cmp_compact);
	cyc = malloc((size_t)v.n * sizeof *cyc);
	if (!cyc) {
		view_free(&v);
		return nk__error(err, NK_ENOMEM, "placement: out of memory");
	}
	for (int i = 0; i < v.n; i++)
		cyc[i] = v.s[i].cpu;
	rc = from_cycle(m, cyc, v.n, n, out, err);
	free(cyc);
	view_free(&v);
	return rc;
}

static int build_scatter(const struct nk_machine *m, int n, nk_placement **out, nk_error *err)
{
	struct view v;
	int *cyc, rc, pos = 0, k;
	int lv[4];

	if ((rc = view_build(m, &v, err)))
		return rc;
	lv[0] = 0;
	lv[1] = v.k_llc;
	lv[2] = v.k_core;
	lv[3] = v.k_cpu;
	/* more threads than cpus: the scatter of C threads, round robin (numakit.h) */
	k = n == 0 || n > v.n ? v.n : n;
	cyc = malloc((size_t)k * sizeof *cyc);
	if (!cyc) {
		view_free(&v);
		return nk__error(err, NK_ENOMEM, "placement: out of memory");
	}
	rc = spread(&v, 0, v.n, k, lv, 4, cyc, &pos);
	if (rc)
		rc = nk__error(err, rc, "placement: out of memory");
	else
		rc = from_cycle(m, cyc, k, n, out, err);
	free(cyc);
	view_free(&v);
	return rc;
}

/* ------------------------------------------------------------------- lists */

/*
 * A cpu list in thread order: items N, A-B or A-B:S separated by commas (and,
 * in a file, blanks and newlines; '#' to the end of the line is a comment).
 */
static int parse_order(const char *text, size_t len, int in_file, const char *name, nk__ilist *l, nk_error *err)
{
	size_t i = 0;
	int line = 1;

	while (i < len) {
		long v[3] = { 0, -1, 1 };
		int part = 0;

		if (text[i] == ',' || (in_file && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))) {
			if (text[i] == '\n')
				line++;
			if (text[i] == ',' && !in_file && (i == 0 || i + 1 == len || text[i + 1] == ','))
				return nk__error(err, NK_EPARSE, "%s: empty item in cpu list", name);
			i++;
			continue;
		}
		if (in_file && text[i] == '#') {
			while (i < len && text[i] != '\n')
				i++;
			continue;
		}
		for (;;) {
			long x = 0;
			size_t d = i;

			while (i < len && text[i] >= '0' && text[i] <= '9') {
				x = x * 10 + (text[i] - '0');
				if (x > MAX_CPU_ID) {
					if (in_file)
						return nk__error(err, NK_EPARSE, "%s:%d: cpu id too large (at most %d)",
								 name, line, MAX_CPU_ID);
					return nk__error(err, NK_EPARSE, "%s: cpu id too large (at most %d)", name,
							 MAX_CPU_ID);
				}
				i++;
			}
			if (i == d) {
				char what[24];
				size_t k = 0;
				for (size_t j = i; j < len && k < 16 && text[j] != '\n'; j++)
					what[k++] = (text[j] >= ' ' && text[j] < 127) ? text[j] : '?';
				what[k] = 0;
				if (in_file)
					return nk__error(err, NK_EPARSE, "%s:%d: expected a cpu number at \"%s\"", name, line,
							 what);
				return nk__error(err, NK_EPARSE, "%s: expected a cpu number at \"%s\"", name, what);
			}
			v[part] = x;
			if (part == 0 && i < len && text[i] == '-') {
				part = 1;
				i++;
				continue;
			}
			if (part == 1 && i < len && text[i] == ':') {
				part = 2;
				i++;
				continue;
			}
			break;
		}
		if (i < len && !(text[i] == ',' || (in_file && strchr(" \t\r\n#", text[i])))) {
			if (in_file)
				return nk__error(err, NK_EPARSE, "%s:%d: unexpected '%c' in cpu list", name, line,
						 text[i] >= ' ' && text[i] < 127 ? text[i] : '?');
			return nk__error(err, NK_EPARSE, "%s: unexpected '%c' in cpu list", name,
					 text[i] >= ' ' && text[i] < 127 ? text[i] : '?');
		}
		if (v[1] < 0)
			v[1] = v[0];
		if (v[1] < v[0])
			return nk__error(err, NK_EPARSE, "%s: range %ld-%ld is reversed", name, v[0], v[1]);
		if (v[2] < 1)
			return nk__error(err, NK_EPARSE, "%s: stride must be at least 1", name);
		if (l->n + (size_t)((v[1] - v[0]) / v[2] + 1) > NK__MAX_THREADS)
			return nk__error(err, NK_EPARSE, "%s: more than %d cpus in the list", name, NK__MAX_THREADS);
		for (long x = v[0]; x <= v[1]; x += v[2])
			if (nk__ilist_push(l, (int)x))
				return nk__error(err, NK_ENOMEM, "placement: out of memory");
	}
	if (!l->n)
		return nk__error(err, NK_EPARSE, "%s: empty cpu list", name);
	return 0;
}

static void ids_text(const struct nk_machine *m, int allowed_only, char *buf, size_t cap)
{
	nk__ilist l = { 0 };

	buf[0] = 0;
	if (allowed_only) {
		nk__format_list(m->allowed_cpus.v, m->allowed_cpus.n, buf, cap);
		return;
	}
	for (int i = 0; i < m->ncpus; i++)
		if (nk__ilist_push(&l, m->cpus[i].id))
			break;
	nk__format_list(l.v, l.n, buf, cap);
	nk__ilist_free(&l);
}

static int build_list(const struct nk_machine *m, const nk__ilist *l, int n, nk_placement **out, nk_error *err)
{
	char ids[160];

	for (size_t i = 0; i < l->n; i++) {
		int ci = nk__cpu_idx(m, l->v[i]);

		if (ci < 0) {
			ids_text(m, 0, ids, sizeof ids);
			return nk__error(err, NK_ENODEV, "cpu %d does not exist or is offline (cpus: %s)", l->v[i], ids);
		}
		if (!m->cpus[ci].allowed) {
			ids_text(m, 1, ids, sizeof ids);
			return nk__error(err, NK_EPERM, "cpu %d is not allowed to this process (allowed cpus: %s)",
					 l->v[i], ids);
		}
	}
	return from_cycle(m, l->v, (int)l->n, n, out, err);
}

int nk_placement_build(const nk_machine *m, const char *strategy, int nthreads, nk_placement **out, nk_error *err)
{
	nk__ilist l = { 0 };
	int rc;

	if (!m || !strategy || !out)
		return nk__error(err, NK_EINVAL, "nk_placement_build: NULL argument");
	if (nthreads < 0 || nthreads > NK__MAX_THREADS)
		return nk__error(err, NK_EINVAL, "placement: %d threads (expected 0..%d)", nthreads, NK__MAX_THREADS);
	if (!strcmp(strategy, "compact"))
		return build_compact(m, nthreads, out, err);
	if (!strcmp(strategy, "scatter"))
		return build_scatter(m, nthreads, out, err);
	if (!strncmp(strategy, "sharing:", 8)) {
		double *a = NULL;
		int n = 0;

		if (!strategy[8])
			return nk__error(err, NK_EPARSE, "placement \"sharing:\": no file named");
		if ((rc = nk_sharing_load(strategy + 8, &a, &n, err)))
			return rc;
		if (nthreads && nthreads != n)
			rc = nk__error(err, NK_EINVAL, "%s: a %d x %d sharing matrix for %d threads", strategy + 8, n, n,
				       nthreads);
		else
			rc = nk_placement_from_sharing(m, a, n, out, err);
		free(a);
		return rc;
	}
	if (!strncmp(strategy, "file:", 5)) {
		const char *path = strategy + 5;
		char *buf = NULL;
		size_t len = 0;
		int e = 0;

		if (!*path)
			return nk__error(err, NK_EPARSE, "placement \"file:\": no file named");
		rc = nk__os_read_whole(path, NK__OS_MAX_FILE, &buf, &len, &e);
		if (rc == NK_ENOENT)
			return nk__error(err, rc, "%s: no such file", path);
		if (rc == NK_ENOMEM)
			return nk__error(err, rc, "%s: out of memory", path);
		if (rc)
			return nk__error(err, rc, "%s: %s", path, e == EFBIG ? "too large for a cpu list" : strerror(e));
		rc = parse_order(buf, len, 1, path, &l, err);
		free(buf);
	} else if (strategy[0] >= '0' && strategy[0] <= '9') {
		rc = parse_order(strategy, strlen(strategy), 0, "cpu list", &l, err);
	} else {
		return nk__error(err, NK_EPARSE,
				 "unknown placement \"%.60s\" (expected compact, scatter, sharing:FILE, file:FILE or a "
				 "cpu list such as 0,2,1,3)",
				 strategy);
	}
	if (!rc)
		rc = build_list(m, &l, nthreads, out, err);
	nk__ilist_free(&l);
	return rc;
}

int nk_placement_from_sharing(const nk_machine *m, const double *matrix, int n, nk_placement **out, nk_error *err)
{
	struct view v;
	struct slot *sel = NULL;
	struct share_ctx c = { 0 };
	int *run = NULL, *cap = NULL, *share = NULL, *S = NULL, *cpus = NULL;
	int rc, r, q, rem, k = 0;

	if (!m || !matrix || !out)
		return nk__error(err, NK_EINVAL, "nk_placement_from_sharing: NULL argument");
	if (n < 1 || n > NK__MAX_THREADS)
		return nk__error(err, NK_EINVAL, "sharing matrix of size %d (expected 1..%d)", n, NK__MAX_THREADS);
	for (size_t i = 0; i < (size_t)n * (size_t)n; i++)
		if (!isfinite(matrix[i]) || matrix[i] < 0)
			return nk__error(err, NK_EINVAL, "sharing matrix [%zu][%zu]: %g is not a non-negative number",
					 i / (size_t)n, i % (size_t)n, matrix[i]);
	if ((rc = view_build(m, &v, err)))
		return rc;
	rc = NK_ENOMEM;
	run = malloc((size_t)(v.n + 1) * sizeof *run);
	cap = calloc((size_t)(v.n + 1), sizeof *cap);
	share = malloc((size_t)(v.n + 1) * sizeof *share);
	sel = malloc((size_t)n * sizeof *sel);
	S = malloc((size_t)n * sizeof *S);
	cpus = malloc((size_t)n * sizeof *cpus);
	c.aff = malloc((size_t)n * sizeof *c.aff);
	if (!run || !cap || !share || !sel || !S || !cpus || !c.aff)
		goto out;

	/* Node shares: scatter's (every node cap * floor(n / C), the rest by waterfill). */
	r = runs_of(v.s, 0, v.n, 0, run);
	for (int g = 0; g < r; g++)
		cap[g] = run[g + 1] - run[g];
	q = n / v.n;
	rem = n % v.n;
	waterfill(rem, cap, r, share);
	for (int g = 0; g < r; g++) {
		int lo = run[g], len = cap[g], want = cap[g] * q + share[g];
		struct slot *node_compact = v.s + lo;

		/* the node's first cpus in compact order (cores, then SMT siblings), cycled */
		qsort(node_compact, (size_t)len, sizeof *node_compact, cmp_compact);
		for (int j = 0; j < want; j++)
			sel[k++] = node_compact[j % len];
		qsort(node_compact, (size_t)len, sizeof *node_compact, cmp_h);
	}
	qsort(sel, (size_t)n, sizeof *sel, cmp_h);
	for (int t = 0; t < n; t++)
		S[t] = t;
	c.a = matrix;
	c.n = n;
	c.s = sel;
	c.nkeys = v.nkeys;
	c.out = cpus;
	if (assign(&c, S, n, 0, n, 0))
		goto out;
	rc = make_placement(m, cpus, n, out, err);
out:
	if (rc == NK_ENOMEM)
		nk__error(err, rc, "placement: out of memory");
	free(run);
	free(cap);
	free(share);
	free(sel);
	free(S);
	free(cpus);
	free(c.aff);
	view_free(&v);
	return rc;
}

/* -------------------------------------------------------------- accessors */

void nk_placement_free(nk_placement *p)
{
	if (!p)
		return;
	free(p->cpu);
	free(p->node);
	free(p);
}

int nk_placement_num_threads(const nk_placement *p)
{
	return p ? p->n : NK_EINVAL;
}

int nk_placement_cpu(const nk_placement *p, int thread)
{
	if (!p || thread < 0 || thread >= p->n)
		return NK_EINVAL;
	return p->cpu[thread];
}

int nk_placement_node(const nk_placement *p, int thread)
{
	if (!p || thread < 0 || thread >= p->n)
		return NK_EINVAL;
	return p->node[thread];
}

int nk_placement_cpus(const nk_placement *p, int *cpus, size_t cap)
{
	if (!p || (!cpus && cap))
		return NK_EINVAL;
	for (size_t i = 0; i < cap && i < (size_t)p->n; i++)
		cpus[i] = p->cpu[i];
	return p->n;
}

int nk_placement_oversubscribed(const nk_placement *p)
{
	return p ? p->oversub : NK_EINVAL;
}

/* "0,2,1,3" or "{0},{2},{1},{3}" with snprintf semantics. */
static int format(const nk_placement *p, char *buf, size_t cap, const char *pre, const char *post)
{
	size_t need = 0;

	if (!p || (!buf && cap))
		return NK_EINVAL;
	if (cap)
		buf[0] = 0;
	for (int t = 0; t < p->n; t++) {
		char item[32];
		int k = snprintf(item, sizeof item, "%s%s%d%s", t ? "," : "", pre, p->cpu[t], post);

		/* only whole items: a cut list must not read as a shorter valid one */
		if (need + (size_t)k < cap)
			memcpy(buf + need, item, (size_t)k + 1);
		need += (size_t)k;
	}
	return need > (size_t)INT32_MAX ? NK_ERANGE : (int)need;
}

int nk_placement_format(const nk_placement *p, char *buf, size_t cap)
{
	return format(p, buf, cap, "", "");
}

int nk_placement_omp_places(const nk_placement *p, char *buf, size_t cap)
{
	return format(p, buf, cap, "{", "}");
}
