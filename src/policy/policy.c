/* SPDX-License-Identifier: BSD-3-Clause
 * Policy values: creation, setters, the text form (parse and canonical
 * format) and equality.  Pure: no machine is needed until a plan is built,
 * so checks that depend on the machine (does node 7 exist, is P >= M when
 * the default node set is used) happen in nk_plan_build().
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_impl.h"
#include "util/list.h"
#include "util/error.h"

static const char *const kind_names[NK_POLICY_KIND_COUNT] = {
	[NK_POLICY_BIND] = "bind",
	[NK_POLICY_BLOCK] = "block",
	[NK_POLICY_CYCLIC] = "cyclic",
	[NK_POLICY_CYCLIC_BLOCK] = "cyclic_block",
	[NK_POLICY_CYCLIC_NEIGHBORS] = "cyclic_neighbors",
	[NK_POLICY_SKEW_MAPP] = "skew_mapp",
	[NK_POLICY_PRIME_MAPP] = "prime_mapp",
	[NK_POLICY_RANDOM] = "random",
	[NK_POLICY_BLOCK_CYCLIC] = "block_cyclic",
	[NK_POLICY_BLOCK_EXCLUSIVE] = "block_exclusive",
	[NK_POLICY_WEIGHTED] = "weighted",
	[NK_POLICY_NEXT_TOUCH] = "next_touch",
};

static const char *const split_names[] = {
	[NK_SPLIT_PAGES] = "pages",
	[NK_SPLIT_ROWS] = "rows",
	[NK_SPLIT_COLS] = "cols",
};

const char *nk__policy_kind_name(int kind)
{
	return kind >= 0 && kind < NK_POLICY_KIND_COUNT ? kind_names[kind] : NULL;
}

unsigned nk__policy_keys(int kind)
{
	switch (kind) {
	case NK_POLICY_BIND:
	case NK_POLICY_CYCLIC:
	case NK_POLICY_SKEW_MAPP:
	case NK_POLICY_BLOCK_EXCLUSIVE:
		return NK__KEY_NODES;
	case NK_POLICY_BLOCK:
		return NK__KEY_NODES | NK__KEY_SPLIT | NK__KEY_THREADS;
	case NK_POLICY_CYCLIC_BLOCK:
	case NK_POLICY_BLOCK_CYCLIC:
		return NK__KEY_NODES | NK__KEY_BLOCK;
	case NK_POLICY_CYCLIC_NEIGHBORS:
		return NK__KEY_NODES | NK__KEY_HOME | NK__KEY_COUNT;
	case NK_POLICY_PRIME_MAPP:
		return NK__KEY_NODES | NK__KEY_PRIME;
	case NK_POLICY_RANDOM:
		return NK__KEY_NODES | NK__KEY_SEED;
	case NK_POLICY_WEIGHTED:
		return NK__KEY_NODES | NK__KEY_WEIGHTS;
	default: /* next_touch: pages follow their next toucher */
		return 0;
	}
}

int nk__is_prime(long long x)
{
	if (x < 2)
		return 0;
	if (x % 2 == 0)
		return x == 2;
	for (long long d = 3; d <= x / d; d += 2)
		if (x % d == 0)
			return 0;
	return 1;
}

/* ------------------------------------------------------------- lifecycle */

int nk_policy_create(int kind, nk_policy **out)
{
	struct nk_policy *p;

	if (!out || kind < 0 || kind >= NK_POLICY_KIND_COUNT)
		return NK_EINVAL;
	p = calloc(1, sizeof *p);
	if (!p)
		return NK_ENOMEM;
	p->kind = kind;
	p->home = -1;
	p->split = NK_SPLIT_PAGES;
	*out = p;
	return 0;
}

void nk_policy_free(nk_policy *p)
{
	if (!p)
		return;
	free(p->nodes);
	free(p->wnodes);
	free(p->weights);
	free(p->threads);
	free(p);
}

/* malloc'ed copy of n elements of size sz; *dst = NULL for n = 0.  0 or NK_ENOMEM. */
static int dup_array(void **dst, const void *src, size_t n, size_t sz)
{
	*dst = NULL;
	if (!n)
		return 0;
	*dst = malloc(n * sz);
	if (!*dst)
		return NK_ENOMEM;
	memcpy(*dst, src, n * sz);
	return 0;
}

int nk_policy_copy(const nk_policy *p, nk_policy **out)
{
	struct nk_policy *c;

	if (!p || !out)
		return NK_EINVAL;
	c = malloc(sizeof *c);
	if (!c)
		return NK_ENOMEM;
	*c = *p;
	c->nodes = NULL;
	c->wnodes = NULL;
	c->weights = NULL;
	c->threads = NULL;
	if (dup_array((void **)&c->nodes, p->nodes, p->nnodes, sizeof *p->nodes) ||
	    dup_array((void **)&c->wnodes, p->wnodes, p->nweights, sizeof *p->wnodes) ||
	    dup_array((void **)&c->weights, p->weights, p->nweights, sizeof *p->weights) ||
	    dup_array((void **)&c->threads, p->threads, p->nthreads, sizeof *p->threads))
		goto out_free;
	*out = c;
	return 0;

out_free:
	nk_policy_free(c);
	return NK_ENOMEM;
}

int nk_policy_kind(const nk_policy *p)
{
	return p ? p->kind : NK_EINVAL;
}

static int same_ints(const int *a, const int *b, size_t n)
{
	return !n || !memcmp(a, b, n * sizeof *a);
}

int nk__policy_equal(const struct nk_policy *a, const struct nk_policy *b)
{
	return a->kind == b->kind && a->nnodes == b->nnodes && same_ints(a->nodes, b->nodes, a->nnodes) &&
	       a->block == b->block && a->nweights == b->nweights && same_ints(a->wnodes, b->wnodes, a->nweights) &&
	       (!a->nweights || !memcmp(a->weights, b->weights, a->nweights * sizeof *a->weights)) &&
	       a->seed == b->seed && a->home == b->home && a->count == b->count && a->prime == b->prime &&
	       a->split == b->split && a->nthreads == b->nthreads && same_ints(a->threads, b->threads, a->nthreads);
}

/* --------------------------------------------------------------- setters */

static int applies(const nk_policy *p, unsigned key)
{
	return p && (nk__policy_keys(p->kind) & key);
}

/* A set of ids 0..NK__MAX_ID (8 KiB), so duplicate checks stay linear. */
struct idbits {
	unsigned char b[(NK__MAX_ID + 8) / 8];
};

/* 1 when @p id was already in the set; adds it. */
static int idbits_test_set(struct idbits *s, int id)
{
	unsigned char bit = (unsigned char)(1u << (id & 7));
	int seen = !!(s->b[id >> 3] & bit);
	s->b[id >> 3] |= bit;
	return seen;
}

/* Node ids: non-negative, at most NK__MAX_ID, and (when @p unique) no duplicates. */
static int check_ids(const int *ids, size_t n, int unique)
{
	struct idbits *seen = NULL;
	int rc = 0;

	if (n && !ids)
		return NK_EINVAL;
	if (unique && n > 1 && !(seen = calloc(1, sizeof *seen)))
		return NK_ENOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		if (ids[i] < 0 || ids[i] > NK__MAX_ID || (seen && idbits_test_set(seen, ids[i])))
			rc = NK_EINVAL;
	free(seen);
	return rc;
}

/* Replace *dst (n elements) by a copy of src; nothing changes on failure. */
static int replace_ints(int **dst, size_t *dn, const int *src, size_t n)
{
	int *c = NULL;
	if (dup_array((void **)&c, src, n, sizeof *src))
		return NK_ENOMEM;
	free(*dst);
	*dst = c;
	*dn = n;
	return 0;
}

int nk_policy_set_nodes(nk_policy *p, const int *nodes, size_t n)
{
	int rc;

	if (!applies(p, NK__KEY_NODES) || n > NK__MAX_ID + 1u)
		return NK_EINVAL;
	rc = check_ids(nodes, n, 1);
	if (rc)
		return rc;
	if (p->prime && n && (size_t)p->prime < n)
		return NK_EINVAL;
	return replace_ints(&p->nodes, &p->nnodes, nodes, n);
}

int nk_policy_set_block(nk_policy *p, uint64_t bytes)
{
	if (!applies(p, NK__KEY_BLOCK) || !bytes)
		return NK_EINVAL;
	p->block = bytes;
	return 0;
}

int nk_policy_set_weights(nk_policy *p, const int *nodes, const unsigned *weights, size_t n)
{
	int *wn = NULL;
	unsigned *w = NULL;

	int rc;

	if (!applies(p, NK__KEY_WEIGHTS) || n > NK__MAX_ID + 1u || (n && !weights))
		return NK_EINVAL;
	rc = check_ids(nodes, n, 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (weights[i] < 1 || weights[i] > NK__POLICY_MAX_WEIGHT)
			return NK_EINVAL;
	if (dup_array((void **)&wn, nodes, n, sizeof *nodes) || dup_array((void **)&w, weights, n, sizeof *weights)) {
		free(wn);
		return NK_ENOMEM;
	}
	free(p->wnodes);
	free(p->weights);
	p->wnodes = wn;
	p->weights = w;
	p->nweights = n;
	return 0;
}

int nk_policy_set_seed(nk_policy *p, uint64_t seed)
{
	if (!applies(p, NK__KEY_SEED))
		return NK_EINVAL;
	p->seed = seed;
	return 0;
}

int nk_policy_set_home(nk_policy *p, int node)
{
	if (!applies(p, NK__KEY_HOME) || node < -1 || node > NK__MAX_ID)
		return NK_EINVAL;
	p->home = node;
	return 0;
}

int nk_policy_set_count(nk_policy *p, int count)
{
	if (!applies(p, NK__KEY_COUNT) || count < 0 || count > NK__MAX_ID + 1)
		return NK_EINVAL;
	p->count = count;
	return 0;
}

int nk_policy_set_prime(nk_policy *p, int prime)
{
	if (!applies(p, NK__KEY_PRIME) || (prime && !nk__is_prime(prime)))
		return NK_EINVAL;
	if (prime && p->nnodes && (size_t)prime < p->nnodes)
		return NK_EINVAL;
	p->prime = prime;
	return 0;
}

int nk_policy_set_threads(nk_policy *p, const int *thread_nodes, size_t nthreads)
{
	if (!applies(p, NK__KEY_THREADS) || nthreads > NK__POLICY_MAX_THREADS || check_ids(thread_nodes, nthreads, 0))
		return NK_EINVAL;
	return replace_ints(&p->threads, &p->nthreads, thread_nodes, nthreads);
}

int nk_policy_set_split(nk_policy *p, int split)
{
	if (!applies(p, NK__KEY_SPLIT) || split < NK_SPLIT_PAGES || split > NK_SPLIT_COLS)
		return NK_EINVAL;
	p->split = split;
	return 0;
}

/* ---------------------------------------------------------------- format */

/* snprintf-style appender: counts everything, writes what fits. */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *dst = o->len < o->cap ? o->buf + o->len : NULL;
	size_t room = o->len < o->cap ? o->cap - o->len : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* Ids in the given order; ascending runs of consecutive ids become A-B. */
static void put_ordered(struct out *o, const int *ids, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		put(o, "%s%d", i ? "," : "", ids[i]);
		if (j > i)
			put(o, "-%d", ids[j]);
		i = j + 1;
	}
}

/* Thread nodes: repeats become N*K, ascending runs of single ids A-B. */
static void put_threads(struct out *o, const int *ids, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[i])
			j++;
		if (j > i) {
			put(o, "%s%d*%zu", i ? "," : "", ids[i], j - i + 1);
			i = j + 1;
			continue;
		}
		/* a run ascending by one whose members do not repeat */
		while (j + 1 < n && ids[j + 1] == ids[j] + 1 && !(j + 2 < n && ids[j + 2] == ids[j + 1]))
			j++;
		put(o, "%s%d", i ? "," : "", ids[i]);
		if (j > i)
			put(o, "-%d", ids[j]);
		i = j + 1;
	}
}

static void put_size(struct out *o, uint64_t v)
{
	static const char suffix[] = "TGMK";
	for (int s = 0; s < 4; s++) {
		unsigned shift = 40u - 10u * (unsigned)s;
		if (v >= (1ULL << shift) && !(v & ((1ULL << shift) - 1))) {
			put(o, "%llu%c", (unsigned long long)(v >> shift), suffix[s]);
			return;
		}
	}
	put(o, "%llu", (unsigned long long)v);
}

int nk_policy_format(const nk_policy *p, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };
	char sep = ':';

	if (!p || (cap && !buf) || !nk__policy_kind_name(p->kind))
		return NK_EINVAL;
	if (cap)
		buf[0] = '\0';
	put(&o, "%s", kind_names[p->kind]);
	if (p->nnodes) {
		put(&o, "%cnodes=", sep);
		put_ordered(&o, p->nodes, p->nnodes);
		sep = ',';
	}
	if (p->nthreads) {
		put(&o, "%cthreads=", sep);
		put_threads(&o, p->threads, p->nthreads);
		sep = ',';
	}
	if (p->split != NK_SPLIT_PAGES) {
		put(&o, "%csplit=%s", sep, split_names[p->split]);
		sep = ',';
	}
	if (p->block) {
		put(&o, "%cblock=", sep);
		put_size(&o, p->block);
		sep = ',';
	}
	if (p->nweights) {
		put(&o, "%cweights=", sep);
		for (size_t i = 0; i < p->nweights; i++)
			put(&o, "%s%d=%u", i ? "/" : "", p->wnodes[i], p->weights[i]);
		sep = ',';
	}
	if (p->seed) {
		put(&o, "%cseed=%llu", sep, (unsigned long long)p->seed);
		sep = ',';
	}
	if (p->home >= 0) {
		put(&o, "%chome=%d", sep, p->home);
		sep = ',';
	}
	if (p->count) {
		put(&o, "%ccount=%d", sep, p->count);
		sep = ',';
	}
	if (p->prime)
		put(&o, "%cprime=%d", sep, p->prime);
	if (o.len > INT_MAX)
		return NK_ERANGE;
	return (int)o.len;
}

/* ----------------------------------------------------------------- parse */

/* A piece of the input: [s, s + n). */
struct tok {
	const char *s;
	size_t n;
};

static int perr(nk_error *err, struct tok t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(nk_error *err, struct tok t, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return nk__error(err, NK_EPARSE, "policy: \"%.*s\"%s: %s", (int)(t.n > 120 ? 120 : t.n), t.s,
			 t.n > 120 ? "..." : "", why);
}

/* Decimal integer in [lo, hi] spanning all of [s, s + n). */
static int parse_ll(const char *s, size_t n, long long lo, long long hi, long long *out)
{
	long long v = 0;
	if (!n || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const char *memchr_c(const char *s, size_t n, char c)
{
	return n ? memchr(s, c, n) : NULL;
}

/*
 * A list of node ids, in the order written: "N", "A-B" (A <= B) and
 * "A-B:S" items separated by ','; with @p threads also "N*K" (K copies) and
 * repeats allowed.  @p key is the whole "key=value" token for messages.
 */
static int parse_idlist(struct tok key, struct tok v, int threads, int **out, size_t *count, nk_error *err)
{
	nk__ilist l = { 0 };
	const char *s = v.s, *end = v.s + v.n;
	const long long maxn = threads ? NK__POLICY_MAX_THREADS : NK__MAX_ID + 1LL;
	struct idbits *seen = NULL;
	int rc = 0;

	if (!v.n)
		return perr(err, key, "empty list");
	if (!threads && !(seen = calloc(1, sizeof *seen)))
		return nk__error(err, NK_ENOMEM, "policy: out of memory");
	while (s <= end) {
		const char *c = memchr_c(s, (size_t)(end - s), ',');
		const char *ie = c ? c : end, *dash, *star, *colon;
		long long a, b, step = 1, reps = 1;
		size_t n = (size_t)(ie - s);

		if (!n) {
			rc = perr(err, key, "empty item in the list");
			goto out_free;
		}
		dash = memchr_c(s, n, '-');
		star = threads ? memchr_c(s, n, '*') : NULL;
		colon = memchr_c(s, n, ':');
		if (star) {
			if (parse_ll(s, (size_t)(star - s), 0, NK__MAX_ID, &a) ||
			    parse_ll(star + 1, (size_t)(ie - star - 1), 1, NK__POLICY_MAX_THREADS, &reps)) {
				rc = perr(err, key, "bad item \"%.*s\" (expected NODE*COUNT)", (int)n, s);
				goto out_free;
			}
			b = a;
		} else if (dash) {
			const char *be = colon ? colon : ie;
			if (parse_ll(s, (size_t)(dash - s), 0, NK__MAX_ID, &a) ||
			    parse_ll(dash + 1, (size_t)(be - dash - 1), 0, NK__MAX_ID, &b) ||
			    (colon && parse_ll(colon + 1, (size_t)(ie - colon - 1), 1, NK__MAX_ID, &step)) || b < a) {
				rc = perr(err, key, "bad range \"%.*s\" (expected A-B or A-B:STEP with A <= B)", (int)n, s);
				goto out_free;
			}
		} else {
			if (parse_ll(s, n, 0, NK__MAX_ID, &a)) {
				rc = perr(err, key, "bad node id \"%.*s\" (expected 0..%d)", (int)n, s, NK__MAX_ID);
				goto out_free;
			}
			b = a;
		}
		for (long long r = 0; r < reps; r++)
			for (long long x = a; x <= b; x += step) {
				if (seen && idbits_test_set(seen, (int)x)) {
					rc = perr(err, key, "node %lld listed twice", x);
					goto out_free;
				}
				if ((long long)l.n >= maxn) {
					rc = perr(err, key, "more than %lld entries", maxn);
					goto out_free;
				}
				if (nk__ilist_push(&l, (int)x)) {
					rc = nk__error(err, NK_ENOMEM, "policy: out of memory");
					goto out_free;
				}
			}
		if (!c)
			break;
		s = c + 1;
	}
	free(seen);
	*out = l.v;
	*count = l.n;
	return 0;

out_free:
	free(seen);
	nk__ilist_free(&l);
	return rc;
}

/* "N=W/N=W..." */
static int parse_weights(struct tok key, struct tok v, struct nk_policy *p, nk_error *err)
{
	nk__ilist nodes = { 0 };
	unsigned *w = NULL;
	size_t cap = 0;
	const char *s = v.s, *end = v.s + v.n;
	struct idbits *seen;
	int rc = 0;

	if (!v.n)
		return perr(err, key, "empty list");
	seen = calloc(1, sizeof *seen);
	if (!seen)
		return nk__error(err, NK_ENOMEM, "policy: out of memory");
	while (s <= end) {
		const char *sl = memchr_c(s, (size_t)(end - s), '/');
		const char *ie = sl ? sl : end, *eq = memchr_c(s, (size_t)(ie - s), '=');
		long long node, weight;

		if (!eq || parse_ll(s, (size_t)(eq - s), 0, NK__MAX_ID, &node)) {
			rc = perr(err, key, "bad item \"%.*s\" (expected NODE=WEIGHT)", (int)(ie - s), s);
			goto out_free;
		}
		if (parse_ll(eq + 1, (size_t)(ie - eq - 1), 1, NK__POLICY_MAX_WEIGHT, &weight)) {
			rc = perr(err, key, "weight \"%.*s\" of node %lld is not in 1..%d", (int)(ie - eq - 1), eq + 1,
				  node, NK__POLICY_MAX_WEIGHT);
			goto out_free;
		}
		if (idbits_test_set(seen, (int)node)) {
			rc = perr(err, key, "node %lld weighted twice", node);
			goto out_free;
		}
		if (nodes.n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			unsigned *nw = realloc(w, ncap * sizeof *nw);
			if (!nw)
				goto out_nomem;
			w = nw;
			cap = ncap;
		}
		w[nodes.n] = (unsigned)weight;
		if (nk__ilist_push(&nodes, (int)node))
			goto out_nomem;
		if (!sl)
			break;
		s = sl + 1;
	}
	free(seen);
	p->wnodes = nodes.v;
	p->weights = w;
	p->nweights = nodes.n;
	return 0;

out_nomem:
	rc = nk__error(err, NK_ENOMEM, "policy: out of memory");
out_free:
	free(seen);
	nk__ilist_free(&nodes);
	free(w);
	return rc;
}

static const struct {
	const char *name;
	unsigned bit;
} key_table[] = {
	{ "nodes", NK__KEY_NODES }, { "block", NK__KEY_BLOCK }, { "weights", NK__KEY_WEIGHTS },
	{ "seed", NK__KEY_SEED },   { "home", NK__KEY_HOME },   { "count", NK__KEY_COUNT },
	{ "prime", NK__KEY_PRIME }, { "split", NK__KEY_SPLIT }, { "threads", NK__KEY_THREADS },
};

static int parse_value(struct nk_policy *p, unsigned bit, struct tok key, struct tok v, nk_error *err)
{
	unsigned long long size;
	long long x;
	char buf[32];

	switch (bit) {
	case NK__KEY_NODES:
		return parse_idlist(key, v, 0, &p->nodes, &p->nnodes, err);
	case NK__KEY_THREADS:
		return parse_idlist(key, v, 1, &p->threads, &p->nthreads, err);
	case NK__KEY_WEIGHTS:
		return parse_weights(key, v, p, err);
	case NK__KEY_BLOCK:
		if (v.n >= sizeof buf)
			return perr(err, key, "not a size");
		memcpy(buf, v.s, v.n);
		buf[v.n] = '\0';
		if (!v.n || isspace((unsigned char)buf[0]) || isspace((unsigned char)buf[v.n - 1]) ||
		    nk__parse_size(buf, &size))
			return perr(err, key, "not a size (bytes with an optional K, M, G or T suffix)");
		if (!size)
			return perr(err, key, "the block size must be > 0");
		if (size > (unsigned long long)INT64_MAX)
			return perr(err, key, "the block size is too large");
		p->block = size;
		return 0;
	case NK__KEY_SEED: {
		unsigned long long s = 0;
		if (!v.n || v.n > 20)
			return perr(err, key, "not an unsigned 64-bit integer");
		for (size_t i = 0; i < v.n; i++) {
			unsigned d = (unsigned)(v.s[i] - '0');
			if (!isdigit((unsigned char)v.s[i]) || s > (ULLONG_MAX - d) / 10)
				return perr(err, key, "not an unsigned 64-bit integer");
			s = s * 10 + d;
		}
		p->seed = s;
		return 0;
	}
	case NK__KEY_HOME:
		if (parse_ll(v.s, v.n, 0, NK__MAX_ID, &x))
			return perr(err, key, "not a node id (0..%d)", NK__MAX_ID);
		p->home = (int)x;
		return 0;
	case NK__KEY_COUNT:
		if (parse_ll(v.s, v.n, 1, NK__MAX_ID + 1, &x))
			return perr(err, key, "not a node count (1..%d)", NK__MAX_ID + 1);
		p->count = (int)x;
		return 0;
	case NK__KEY_PRIME:
		if (parse_ll(v.s, v.n, 0, INT_MAX, &x) || !nk__is_prime(x))
			return perr(err, key, "not a prime number");
		p->prime = (int)x;
		return 0;
	case NK__KEY_SPLIT:
		for (int s = NK_SPLIT_PAGES; s <= NK_SPLIT_COLS; s++)
			if (v.n == strlen(split_names[s]) && !memcmp(v.s, split_names[s], v.n)) {
				p->split = s;
				return 0;
			}
		return perr(err, key, "expected pages, rows or cols");
	}
	return perr(err, key, "internal: unhandled key");
}

int nk_policy_parse(const char *text, nk_policy **out, nk_error *err)
{
	struct nk_policy *p = NULL;
	const char *s, *end, *colon, *pos;
	unsigned seen = 0;
	int rc, kind = -1;

	if (!text || !out)
		return nk__error(err, NK_EINVAL, "nk_policy_parse: NULL argument");
	s = text;
	end = text + strlen(text);
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	if (s == end)
		return nk__error(err, NK_EPARSE, "policy: empty text (expected KIND[:key=value,...])");
	colon = memchr(s, ':', (size_t)(end - s));
	{
		struct tok k = { s, (size_t)((colon ? colon : end) - s) };
		for (int i = 0; i < NK_POLICY_KIND_COUNT; i++)
			if (k.n == strlen(kind_names[i]) && !memcmp(k.s, kind_names[i], k.n))
				kind = i;
		if (kind < 0)
			return perr(err, k,
				    "unknown policy (expected bind, block, cyclic, cyclic_block, cyclic_neighbors, "
				    "skew_mapp, prime_mapp, random, block_cyclic, block_exclusive, weighted, next_touch)");
	}
	rc = nk_policy_create(kind, &p);
	if (rc)
		return nk__error(err, rc, "policy: out of memory");
	if (!colon)
		goto out_done;
	if (colon + 1 == end) {
		struct tok t = { s, (size_t)(end - s) };
		rc = perr(err, t, "empty parameter list after ':'");
		goto out_free;
	}
	/*
	 * key=value items separated by ','.  A piece without '=' continues the
	 * previous value, so "nodes=0,2" is one item (only list keys take it).
	 */
	pos = colon + 1;
	while (pos < end) {
		const char *ve = pos, *eq;
		unsigned bit = 0;
		struct tok key, val;

		for (;;) { /* extend over the pieces that belong to this item */
			const char *c = memchr(ve, ',', (size_t)(end - ve));
			const char *pe = c ? c : end;
			if (pe == ve) {
				struct tok t = { s, (size_t)(end - s) };
				rc = perr(err, t, "empty item in the parameter list");
				goto out_free;
			}
			if (ve != pos && memchr(ve, '=', (size_t)(pe - ve))) {
				ve--; /* the next key starts here: back to its ',' */
				break;
			}
			ve = pe;
			if (!c)
				break;
			ve = c + 1;
			if (ve == end) {
				struct tok t = { s, (size_t)(end - s) };
				rc = perr(err, t, "empty item in the parameter list");
				goto out_free;
			}
		}
		key.s = pos;
		key.n = (size_t)(ve - pos);
		eq = memchr(pos, '=', key.n);
		if (!eq) {
			rc = perr(err, key, "expected key=value");
			goto out_free;
		}
		for (size_t i = 0; i < sizeof key_table / sizeof key_table[0]; i++)
			if ((size_t)(eq - pos) == strlen(key_table[i].name) &&
			    !memcmp(pos, key_table[i].name, (size_t)(eq - pos)))
				bit = key_table[i].bit;
		if (!bit) {
			rc = perr(err, key, "unknown key \"%.*s\"", (int)(eq - pos), pos);
			goto out_free;
		}
		if (!(nk__policy_keys(kind) & bit)) {
			rc = perr(err, key, "key \"%.*s\" does not apply to %s", (int)(eq - pos), pos, kind_names[kind]);
			goto out_free;
		}
		if (seen & bit) {
			rc = perr(err, key, "key \"%.*s\" given twice", (int)(eq - pos), pos);
			goto out_free;
		}
		seen |= bit;
		val.s = eq + 1;
		val.n = (size_t)(ve - eq - 1);
		if (memchr_c(val.s, val.n, ',') && !(bit & (NK__KEY_NODES | NK__KEY_THREADS))) {
			rc = perr(err, key, "unexpected ',' in the value");
			goto out_free;
		}
		rc = parse_value(p, bit, key, val, err);
		if (rc)
			goto out_free;
		pos = ve < end ? ve + 1 : end;
	}
	if (p->prime && p->nnodes && (size_t)p->prime < p->nnodes) {
		struct tok t = { s, (size_t)(end - s) };
		rc = perr(err, t, "prime %d is smaller than the %zu nodes", p->prime, p->nnodes);
		goto out_free;
	}
out_done:
	*out = p;
	return 0;

out_free:
	nk_policy_free(p);
	return rc;
}

static int mapped(const int *from, const int *to, size_t n, int node)
{
	for (size_t i = 0; i < n; i++)
		if (from[i] == node)
			return to[i];
	return node;
}

void nk__policy_map_nodes(struct nk_policy *p, const int *from, const int *to, size_t n)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nnodes; i++)
		p->nodes[i] = mapped(from, to, n, p->nodes[i]);
	for (size_t i = 0; i < p->nweights; i++)
		p->wnodes[i] = mapped(from, to, n, p->wnodes[i]);
	for (size_t i = 0; i < p->nthreads; i++)
		p->threads[i] = mapped(from, to, n, p->threads[i]);
	if (p->home >= 0)
		p->home = mapped(from, to, n, p->home);
}
