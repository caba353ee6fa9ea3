/* SPDX-License-Identifier: BSD-3-Clause
 * Plans: the page -> node map of every policy on synthetic machines with 1 to
 * 1024 nodes (sparse ids, memoryless, CPU-less and disallowed nodes) and on
 * real-machine dumps, each compared with the formula recomputed here from
 * the thesis / paper text (docs/policies.md), not with the library's helpers.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "os/os.h"
#include "policy/plan.h"

#define MAXN 4096


static nk_machine *dump(const char *name)
{
	nk_machine *m = NULL;
	nk_error err = { 0 };
	if (nk_machine_load_fsroot(nk_test_dump(name), &m, &err))
		fail_msg("%s: %s", name, err.message);
	return m;
}

static nk_policy *parse(const char *text)
{
	nk_policy *p = NULL;
	nk_error err = { 0 };
	if (nk_policy_parse(text, &p, &err))
		fail_msg("\"%s\": %s", text, err.message);
	return p;
}

/* ------------------------------------------------------------ reference */

/* The region a plan covers, worked out from its definition. */
struct reg {
	uintptr_t addr;
	size_t len;
	uint64_t ps;
	uintptr_t base;
	size_t npages;
};

static struct reg mkreg(const nk_machine *m, uintptr_t addr, size_t len)
{
	struct reg g = { addr, len, nk_machine_page_size(m), 0, 0 };
	g.base = addr - addr % g.ps;
	g.npages = (size_t)((addr + len - 1) / g.ps - addr / g.ps + 1);
	return g;
}

/* Offset in the region of page i's first byte; page 0 starts at the region. */
static size_t first_byte(const struct reg *g, size_t i)
{
	uintptr_t start = g->base + i * g->ps;
	return start < g->addr ? 0 : (size_t)(start - g->addr);
}

/* Default node set: nodes with memory that the process may use, id order. */
static size_t default_set(const nk_machine *m, int *set)
{
	size_t n = 0;
	for (int i = 0; i < nk_machine_num_nodes(m); i++) {
		int id = nk_machine_node_id(m, i), f = nk_machine_node_flags(m, id);
		if ((f & NK_NODE_HAS_MEMORY) && (f & NK_NODE_MEM_ALLOWED))
			set[n++] = id;
	}
	return n;
}

/* Band of x when n items are cut into t bands, the first n % t one larger (linear scan). */
static size_t band(size_t n, size_t t, size_t x)
{
	size_t start = 0;
	for (size_t b = 0; b < t; b++) {
		size_t size = n / t + (b < n % t);
		if (x < start + size)
			return b;
		start += size;
	}
	fail_msg("band: %zu out of %zu", x, n);
	return 0;
}

static int is_prime(size_t x)
{
	if (x < 2)
		return 0;
	for (size_t d = 2; d * d <= x; d++)
		if (x % d == 0)
			return 0;
	return 1;
}

/* splitmix64 as a generator: the (i+1)-th output after seeding with seed. */
struct sm {
	uint64_t s;
};
static uint64_t sm_next(struct sm *g)
{
	uint64_t z = (g->s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* ---------------------------------------------------------- comparisons */

/*
 * Build @p p over the region and compare every page with want[]; also
 * nk_plan_nodes on the whole range and on windows, run lengths, run lists and
 * the kernel hint (checked against the kernel's own rule).
 */
static void check_plan(const nk_machine *m, const nk_policy *p, const nk_region *r, const int *want, const char *what)
{
	nk_plan *pl = NULL;
	nk_error err = { 0 };
	struct reg g = mkreg(m, (uintptr_t)r->addr, r->len);
	int *got, mode, rc;
	const struct nk__plan_run *runs;
	const int *hn;
	size_t n, hcount;

	if ((rc = nk_plan_build(m, p, r, &pl, &err)))
		fail_msg("%s: build: %d %s", what, rc, err.message);
	assert_int_equal(nk_plan_num_pages(pl), g.npages);
	assert_int_equal(nk_plan_page_size(pl), g.ps);
	assert_int_equal(nk__plan_base(pl), g.base);
	assert_ptr_equal(nk__plan_addr(pl), r->addr);
	got = malloc(g.npages * sizeof *got);
	assert_non_null(got);
	for (size_t i = 0; i < g.npages; i++)
		if (nk_plan_node(pl, i) != want[i])
			fail_msg("%s: page %zu of %zu: node %d, expected %d", what, i, g.npages, nk_plan_node(pl, i),
				 want[i]);
	assert_int_equal(nk_plan_node(pl, g.npages), NK_EINVAL);
	assert_int_equal(nk_plan_nodes(pl, 0, g.npages, got), 0);
	for (size_t i = 0; i < g.npages; i++)
		if (got[i] != want[i])
			fail_msg("%s: nk_plan_nodes page %zu: %d, expected %d", what, i, got[i], want[i]);
	for (size_t first = 0; first < g.npages; first += 1 + first * 3) {
		size_t cnt = (g.npages - first) / 2 + 1;
		assert_int_equal(nk_plan_nodes(pl, first, cnt, got), 0);
		for (size_t i = 0; i < cnt; i++)
			if (got[i] != want[first + i])
				fail_msg("%s: nk_plan_nodes(%zu, %zu)[%zu] = %d, expected %d", what, first, cnt, i, got[i],
					 want[first + i]);
	}
	assert_int_equal(nk_plan_nodes(pl, g.npages, 0, NULL), 0);
	assert_int_equal(nk_plan_nodes(pl, g.npages, 1, got), NK_EINVAL);
	assert_int_equal(nk_plan_nodes(pl, 1, g.npages, got), NK_EINVAL);
	assert_int_equal(nk_plan_nodes(pl, 0, 1, NULL), NK_EINVAL);
	/* run lengths: every page of a run is on the run's node */
	for (size_t i = 0; i < g.npages; i++) {
		size_t len = 0;
		assert_int_equal(nk__plan_run_at(pl, i, &len), want[i]);
		assert_true(len >= 1 && len <= g.npages - i);
		for (size_t j = i; j < i + len; j++)
			if (want[j] != want[i])
				fail_msg("%s: run at %zu of %zu pages, but page %zu is on %d", what, i, len, j, want[j]);
	}
	if (nk__plan_runs(pl, &n, &runs) == 0) {
		size_t at = 0;
		assert_true(n >= 1);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(runs[k].first, at);
			assert_true(runs[k].npages > 0);
			for (size_t j = 0; j < runs[k].npages; j++)
				assert_int_equal(want[at + j], runs[k].node);
			if (k)
				assert_int_not_equal(runs[k].node, runs[k - 1].node);
			at += runs[k].npages;
		}
		assert_int_equal(at, g.npages);
	}
	if (nk__plan_kernel_hint(pl, &mode, &hn, &hcount) == 0) {
		/* what the kernel does: interleave follows the virtual page number over increasing ids */
		uint64_t wsum = 0;
		assert_true(hcount >= 1);
		for (size_t k = 1; k < hcount; k++)
			assert_true(hn[k] > hn[k - 1]);
		if (mode == NK__MPOL_WEIGHTED_INTERLEAVE)
			for (size_t k = 0; k < hcount; k++)
				wsum += (uint64_t)nk_machine_wi_weight(m, hn[k]);
		for (size_t i = 0; i < g.npages; i++) {
			uint64_t vpn = g.base / g.ps + i;
			int node;
			if (mode == NK__MPOL_BIND) {
				assert_int_equal(hcount, 1);
				node = hn[0];
			} else if (mode == NK__MPOL_INTERLEAVE) {
				node = hn[vpn % hcount];
			} else {
				assert_int_equal(mode, NK__MPOL_WEIGHTED_INTERLEAVE);
				uint64_t t = vpn % wsum;
				size_t k = 0;
				while (t >= (uint64_t)nk_machine_wi_weight(m, hn[k]))
					t -= (uint64_t)nk_machine_wi_weight(m, hn[k++]);
				node = hn[k];
			}
			if (node != want[i])
				fail_msg("%s: kernel hint mode %d puts page %zu on %d, the plan on %d", what, mode, i, node,
					 want[i]);
		}
	}
	free(got);
	nk_plan_free(pl);
}

/* Expected maps of the formula policies over the node set set[0..M-1]. */
static void want_formula(int kind, const int *set, size_t M, size_t npages, size_t bpages, uint64_t seed, int *want)
{
	size_t P = M, overflow = 0;
	struct sm g = { seed };

	while (!is_prime(P))
		P++;
	for (size_t i = 0; i < npages; i++) {
		switch (kind) {
		case NK_POLICY_CYCLIC: /* page i -> node i mod M */
			want[i] = set[i % M];
			break;
		case NK_POLICY_CYCLIC_BLOCK: /* block b -> node b mod M */
		case NK_POLICY_BLOCK_CYCLIC:
			want[i] = set[(i / bpages) % M];
			break;
		case NK_POLICY_SKEW_MAPP: /* (i + floor(i/M) + 1) mod M */
			want[i] = set[(i + i / M + 1) % M];
			break;
		case NK_POLICY_PRIME_MAPP: /* cyclic over P virtual banks; pages of banks >= M re-placed cyclically */
			if (i % P < M)
				want[i] = set[i % P];
			else
				want[i] = set[overflow++ % M];
			break;
		case NK_POLICY_RANDOM:
			want[i] = set[(size_t)(((unsigned __int128)sm_next(&g) * M) >> 64)];
			break;
		default:
			fail_msg("want_formula: kind %d", kind);
		}
	}
}

static void want_prime(const int *set, size_t M, size_t P, size_t npages, int *want)
{
	size_t overflow = 0;
	for (size_t i = 0; i < npages; i++)
		want[i] = i % P < M ? set[i % P] : set[overflow++ % M];
}

/* Weighted: a pattern of sum(w) pages, w_k consecutive pages of node k in set order. */
static void want_weighted(const int *set, const unsigned *w, size_t M, size_t npages, int *want)
{
	size_t W = 0, at = 0;
	int *pat;
	for (size_t k = 0; k < M; k++)
		W += w[k];
	pat = malloc(W * sizeof *pat);
	assert_non_null(pat);
	for (size_t k = 0; k < M; k++)
		for (unsigned j = 0; j < w[k]; j++)
			pat[at++] = set[k];
	for (size_t i = 0; i < npages; i++)
		want[i] = pat[i % W];
	free(pat);
}

/* Bind: node[0] until its free memory (total when free is 0) is used, then node[1], ...; the rest on the last. */
static void want_bind(const nk_machine *m, const int *set, size_t M, size_t npages, int *want)
{
	size_t k = 0, used = 0;
	for (size_t i = 0; i < npages; i++) {
		for (;;) {
			uint64_t tot = 0, fr = 0;
			nk_machine_node_memory(m, set[k], &tot, &fr);
			if (k + 1 == M || used < (fr ? fr : tot) / nk_machine_page_size(m))
				break;
			k++;
			used = 0;
		}
		want[i] = set[k];
		used++;
	}
}

/* Block by pages: T contiguous blocks, the first npages % T one page longer. */
static void want_block_pages(const int *tn, size_t T, size_t npages, int *want)
{
	size_t i = 0;
	for (size_t t = 0; t < T; t++)
		for (size_t j = 0; j < npages / T + (t < npages % T); j++)
			want[i++] = tn[t];
	assert_int_equal(i, npages);
}

/* Geometry policies: owner of each page's first byte. */
static void want_geometry(int kind, int split, const struct reg *g, size_t rows, size_t cols, size_t elem,
			  const int *tn, size_t T, int *want)
{
	size_t row_bytes = g->len / rows;
	for (size_t i = 0; i < g->npages; i++) {
		size_t off = first_byte(g, i), row = off / row_bytes;
		if (kind == NK_POLICY_BLOCK && split == NK_SPLIT_ROWS) {
			want[i] = tn[band(rows, T, row)];
		} else {
			size_t col = off % row_bytes / elem, cb = band(cols, T, col);
			if (kind == NK_POLICY_BLOCK)
				want[i] = tn[cb];
			else /* latin square: block (r, c) -> node[(r + c) mod p] */
				want[i] = tn[(band(rows, T, row) + cb) % T];
		}
	}
}

/* cyclic_neighbors by the definition: home, then nodes by (SLIT distance, id) from home. */
static size_t neighbor_set(const nk_machine *m, const int *set, size_t M, int home, int count, int *out)
{
	int rest[MAXN];
	size_t nr = 0, n = 0, mind = (size_t)-1;
	for (size_t k = 0; k < M; k++)
		if (set[k] == home)
			out[n++] = home;
		else
			rest[nr++] = set[k];
	for (size_t a = 0; a < nr; a++) /* selection sort by (distance, id) */
		for (size_t b = a + 1; b < nr; b++) {
			int da = nk_machine_distance(m, home, rest[a]), db = nk_machine_distance(m, home, rest[b]);
			if (db < da || (db == da && rest[b] < rest[a])) {
				int t = rest[a];
				rest[a] = rest[b];
				rest[b] = t;
			}
		}
	if (nr)
		mind = (size_t)nk_machine_distance(m, home, rest[0]);
	for (size_t a = 0; a < nr; a++)
		if (count ? n < (size_t)count : (size_t)nk_machine_distance(m, home, rest[a]) == mind)
			out[n++] = rest[a];
	return n;
}

/* ------------------------------------------------------------ the sweep */

/* Every kind with default parameters on machine @p m, against the formulas. */
static void sweep(const nk_machine *m, const char *name)
{
	int set[MAXN], *want;
	size_t M = default_set(m, set);
	uint64_t ps = nk_machine_page_size(m);
	size_t npages = 4 * M + 211;
	/* an unaligned start and a partial last page */
	uintptr_t addr = (uintptr_t)0x7f1200000000ULL + 5 * ps + 123;
	nk_region r = { (void *)addr, (size_t)(npages * ps - 300), 0, 0, { 0 } };
	struct reg g = mkreg(m, addr, r.len);
	char what[160];

	assert_true(M >= 1);
	want = malloc((g.npages + 1) * sizeof *want);
	assert_non_null(want);

	static const int formula[] = { NK_POLICY_CYCLIC, NK_POLICY_CYCLIC_BLOCK, NK_POLICY_BLOCK_CYCLIC,
				       NK_POLICY_SKEW_MAPP, NK_POLICY_PRIME_MAPP, NK_POLICY_RANDOM };
	for (size_t f = 0; f < sizeof formula / sizeof formula[0]; f++) {
		nk_policy *p = NULL;
		size_t blk = formula[f] == NK_POLICY_CYCLIC_BLOCK ? 65536 : 2u << 20;
		assert_int_equal(nk_policy_create(formula[f], &p), 0);
		want_formula(formula[f], set, M, g.npages, (blk + ps - 1) / ps, 0, want);
		snprintf(what, sizeof what, "%s: kind %d", name, formula[f]);
		check_plan(m, p, &r, want, what);
		nk_policy_free(p);
	}

	{ /* bind */
		nk_policy *p = parse("bind");
		want_bind(m, set, M, g.npages, want);
		snprintf(what, sizeof what, "%s: bind", name);
		check_plan(m, p, &r, want, what);
		nk_policy_free(p);
	}
	{ /* block: one block per node */
		nk_policy *p = parse("block");
		want_block_pages(set, M, g.npages, want);
		snprintf(what, sizeof what, "%s: block", name);
		check_plan(m, p, &r, want, what);
		nk_policy_free(p);
	}
	{ /* weighted: machine weights, else 1 */
		nk_policy *p = parse("weighted");
		static unsigned w[MAXN];
		for (size_t k = 0; k < M; k++) {
			int mw = nk_machine_wi_weight(m, set[k]);
			w[k] = mw > 0 ? (unsigned)mw : 1;
		}
		want_weighted(set, w, M, g.npages, want);
		snprintf(what, sizeof what, "%s: weighted", name);
		check_plan(m, p, &r, want, what);
		nk_policy_free(p);
	}
	{ /* cyclic_neighbors: default home = first node of the set with allowed cpus */
		nk_policy *p = parse("cyclic_neighbors");
		int nb[MAXN], home = set[0];
		size_t n;
		for (size_t k = 0; k < M; k++) {
			int fl = nk_machine_node_flags(m, set[k]);
			if ((fl & NK_NODE_HAS_CPUS) && (fl & NK_NODE_CPUS_ALLOWED)) {
				home = set[k];
				break;
			}
		}
		n = neighbor_set(m, set, M, home, 0, nb);
		want_formula(NK_POLICY_CYCLIC, nb, n, g.npages, 1, 0, want);
		snprintf(what, sizeof what, "%s: cyclic_neighbors", name);
		check_plan(m, p, &r, want, what);
		nk_policy_free(p);
	}
	free(want);

	/* geometry: rows x cols doubles, rows not page multiples, at an unaligned address */
	{
		size_t cols = 1000, rows = 2 * M + 3, elem = 8;
		nk_region gr = { (void *)(addr + 8), rows * cols * elem, elem, 2, { rows, cols, 0 } };
		struct reg gg = mkreg(m, (uintptr_t)gr.addr, gr.len);
		static const char *const texts[] = { "block:split=rows", "block:split=cols", "block_exclusive" };
		want = malloc(gg.npages * sizeof *want);
		assert_non_null(want);
		for (int t = 0; t < 3; t++) {
			nk_policy *p = parse(texts[t]);
			want_geometry(t == 2 ? NK_POLICY_BLOCK_EXCLUSIVE : NK_POLICY_BLOCK, t == 0 ? NK_SPLIT_ROWS : NK_SPLIT_COLS,
				      &gg, rows, cols, elem, set, M, want);
			snprintf(what, sizeof what, "%s: %s", name, texts[t]);
			check_plan(m, p, &gr, want, what);
			nk_policy_free(p);
		}
		free(want);
	}
}

static void test_synthetic_sweep(void **state)
{
	static const char *const machines[] = {
		"nodes=1",
		"nodes=2 dist=10:21",
		"nodes=3",
		"nodes=4 cores=2 mem=1G dist=10:21",
		"nodes=5 dist=10,20,30,40,50/20,10,20,30,40/30,20,10,20,30/40,30,20,10,20/50,40,30,20,10",
		"nodes=7",
		"nodes=8 dist=10:16",
		"nodes=64",
		"nodes=1000",
		"nodes=1024",
		"nodes=3 ids=0,4,9 dist=10,20,30/20,10,30/30,30,10",
		"nodes=4 ids=1,3,8,100 memless=1",
		"nodes=4 memless=0 dist=10,20,20,30/20,10,30,20/20,30,10,20/30,20,20,10",
		"nodes=4 cpuless=2,3 dist=10,20,15,30/20,10,30,15/15,30,10,30/30,15,30,10",
		"nodes=4 cpuless=0",
		"nodes=4 allowed_nodes=0,2",
		"nodes=6 ids=2,3,5,7,11,13 allowed_nodes=3,7,13 memless=0",
		"nodes=4 wi=3,1,2,4",
		"nodes=3 pagesize=64K",
		"nodes=3 mem=40K",
	};
	(void)state;
	for (size_t i = 0; i < sizeof machines / sizeof machines[0]; i++) {
		nk_machine *m = nk_test_synth(machines[i]);
		sweep(m, machines[i]);
		nk_machine_free(m);
	}
}

static void test_dump_sweep(void **state)
{
	static const char *const dumps[] = {
		"16amd64-8n2c", "16amd64-8n2c-cpusets", "48amd64-4pa2n6c-sparse", "32amd64-4s2n4c-cgroup2",
		"128arm-2pa2n8cluster4co", "fakememinitiators-1np2c+1npp+gi", "2arm-2c", "offline-cpu0-node0",
	};
	(void)state;
	for (size_t i = 0; i < sizeof dumps / sizeof dumps[0]; i++) {
		nk_machine *m = dump(dumps[i]);
		sweep(m, dumps[i]);
		nk_machine_free(m);
	}
}

/* ------------------------------------------------------ explicit params */

static void region_pages(const nk_machine *m, size_t npages, uintptr_t page_no, nk_region *r)
{
	uint64_t ps = nk_machine_page_size(m);
	memset(r, 0, sizeof *r);
	r->addr = (void *)(page_no * ps);
	r->len = npages * ps;
}

static void test_explicit_params(void **state)
{
	nk_machine *m = nk_test_synth("nodes=8 ids=0,1,2,3,4,5,6,9 dist=10:21");
	nk_region r;
	int want[4096];
	nk_policy *p;
	(void)state;

	region_pages(m, 700, 1003, &r);
	{
		const int set[] = { 9, 2, 5 };
		p = parse("cyclic:nodes=9,2,5");
		want_formula(NK_POLICY_CYCLIC, set, 3, 700, 1, 0, want);
		check_plan(m, p, &r, want, "cyclic 9,2,5");
		nk_policy_free(p);
		p = parse("skew_mapp:nodes=9,2,5");
		want_formula(NK_POLICY_SKEW_MAPP, set, 3, 700, 1, 0, want);
		check_plan(m, p, &r, want, "skew 9,2,5");
		nk_policy_free(p);
		p = parse("random:nodes=9,2,5,seed=12345");
		want_formula(NK_POLICY_RANDOM, set, 3, 700, 1, 12345, want);
		check_plan(m, p, &r, want, "random seed");
		nk_policy_free(p);
		p = parse("cyclic_block:nodes=9,2,5,block=10000"); /* 3 pages */
		want_formula(NK_POLICY_CYCLIC_BLOCK, set, 3, 700, 3, 0, want);
		check_plan(m, p, &r, want, "cyclic_block 10000");
		nk_policy_free(p);
		p = parse("block_cyclic:nodes=9,2,5,block=1T"); /* one block for all */
		want_formula(NK_POLICY_BLOCK_CYCLIC, set, 3, 700, 1u << 28, 0, want);
		check_plan(m, p, &r, want, "block_cyclic 1T");
		nk_policy_free(p);
	}
	{
		const int set[] = { 0, 1, 2, 3 };
		for (int P = 5; P <= 13; P++) {
			char text[64];
			if (!is_prime((size_t)P))
				continue;
			snprintf(text, sizeof text, "prime_mapp:nodes=0-3,prime=%d", P);
			p = parse(text);
			want_prime(set, 4, (size_t)P, 700, want);
			check_plan(m, p, &r, want, text);
			nk_policy_free(p);
		}
		/* the thesis' figure: 4 nodes, 5 virtual banks */
		const int fig[] = { 0, 1, 2, 3, 0, 0, 1, 2, 3, 1, 0, 1, 2, 3, 2, 0, 1, 2, 3, 3, 0, 1, 2, 3, 0 };
		nk_plan *pl = NULL;
		p = parse("prime_mapp:nodes=0-3");
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++)
			assert_int_equal(nk_plan_node(pl, i), fig[i]);
		nk_plan_free(pl);
		nk_policy_free(p);
	}
	{ /* weights: explicit ones name the set; partial ones fill with the default 1 */
		const int set[] = { 3, 0 }, set4[] = { 0, 1, 2, 3 };
		const unsigned w[] = { 3, 1 }, w4[] = { 1, 5, 1, 2 };
		p = parse("weighted:weights=3=3/0=1");
		want_weighted(set, w, 2, 700, want);
		check_plan(m, p, &r, want, "weighted 3=3/0=1");
		nk_policy_free(p);
		p = parse("weighted:nodes=0-3,weights=1=5/3=2");
		want_weighted(set4, w4, 4, 700, want);
		check_plan(m, p, &r, want, "weighted partial");
		nk_policy_free(p);
	}
	{ /* block with threads: several threads per node, more threads than pages */
		const int tn[] = { 4, 4, 0, 9, 9, 9, 1 };
		p = parse("block:threads=4*2,0,9*3,1");
		want_block_pages(tn, 7, 700, want);
		check_plan(m, p, &r, want, "block threads");
		nk_policy_free(p);
		region_pages(m, 5, 77, &r);
		want_block_pages(tn, 7, 5, want);
		check_plan(m, p = parse("block:threads=4*2,0,9*3,1"), &r, want, "block threads > pages");
		nk_policy_free(p);
	}
	{ /* bind over an explicit order */
		const int set[] = { 5, 1 };
		region_pages(m, 300, 4, &r);
		p = parse("bind:nodes=5,1");
		want_bind(m, set, 2, 300, want);
		check_plan(m, p, &r, want, "bind 5,1");
		nk_policy_free(p);
	}
	nk_machine_free(m);
}

/* Bind fills nodes by free memory and puts the excess on the last node. */
static void test_bind_capacity(void **state)
{
	nk_machine *m = nk_test_synth("nodes=3 mem=40K"); /* 10 pages per node */
	nk_region r;
	int want[64];
	nk_plan *pl = NULL;
	const struct nk__plan_run *runs;
	size_t n;
	nk_policy *p = parse("bind:nodes=2,0,1");
	(void)state;

	region_pages(m, 37, 3, &r);
	assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
	for (int i = 0; i < 37; i++)
		want[i] = i < 10 ? 2 : i < 20 ? 0 : 1;
	for (int i = 0; i < 37; i++)
		assert_int_equal(nk_plan_node(pl, (size_t)i), want[i]);
	assert_int_equal(nk__plan_runs(pl, &n, &runs), 0);
	assert_int_equal(n, 3);
	assert_int_equal(runs[2].first, 20);
	assert_int_equal(runs[2].npages, 17);
	nk_plan_free(pl);
	/* fits in the first node: one BIND call */
	region_pages(m, 10, 3, &r);
	check_plan(m, p, &r, (int[10]){ 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 }, "bind fits");
	{
		int mode;
		const int *hn;
		size_t hc;
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		assert_int_equal(nk__plan_kernel_hint(pl, &mode, &hn, &hc), 0);
		assert_int_equal(mode, NK__MPOL_BIND);
		assert_int_equal(hc, 1);
		assert_int_equal(hn[0], 2);
		nk_plan_free(pl);
	}
	nk_policy_free(p);
	nk_machine_free(m);
}

/* Row bands: a page straddling two bands belongs to the band of its first byte. */
static void test_rows_and_cols_by_hand(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2");
	nk_policy *p = parse("block:split=rows");
	nk_plan *pl = NULL;
	/* 5 rows of 3000 bytes at a page boundary: bands rows 0-2 (9000 B), 3-4 */
	nk_region r = { (void *)(uintptr_t)0x100000, 15000, 1, 2, { 5, 3000, 0 } };
	(void)state;

	assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
	assert_int_equal(nk_plan_num_pages(pl), 4);
	/* page 2 starts at 8192 < 9000: band 0; page 3 at 12288: band 1 */
	assert_int_equal(nk_plan_node(pl, 0), 0);
	assert_int_equal(nk_plan_node(pl, 1), 0);
	assert_int_equal(nk_plan_node(pl, 2), 0);
	assert_int_equal(nk_plan_node(pl, 3), 1);
	nk_plan_free(pl);
	nk_policy_free(p);

	/* columns: 2 rows of 8192 bytes, 2 bands of 4096: pages alternate 0 1 0 1 */
	p = parse("block:split=cols");
	r.len = 16384;
	r.dims[0] = 2;
	r.dims[1] = 8192;
	assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(nk_plan_node(pl, i), (int)(i % 2));
	nk_plan_free(pl);
	nk_policy_free(p);

	/* latin square on 2 nodes, 2x2 pages: 0 1 / 1 0 */
	p = parse("block_exclusive");
	assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
	assert_int_equal(nk_plan_node(pl, 0), 0);
	assert_int_equal(nk_plan_node(pl, 1), 1);
	assert_int_equal(nk_plan_node(pl, 2), 1);
	assert_int_equal(nk_plan_node(pl, 3), 0);
	nk_plan_free(pl);
	nk_policy_free(p);
	nk_machine_free(m);

	/* 4 nodes, 4x4 blocks of one page each: Majo & Gross Fig. 11(f) */
	m = nk_test_synth("nodes=4");
	p = parse("block_exclusive");
	nk_region q = { (void *)(uintptr_t)0x100000, 16 * 4096, 4096, 2, { 4, 4, 0 } };
	assert_int_equal(nk_plan_build(m, p, &q, &pl, NULL), 0);
	for (int rr = 0; rr < 4; rr++)
		for (int c = 0; c < 4; c++)
			assert_int_equal(nk_plan_node(pl, (size_t)(rr * 4 + c)), (rr + c) % 4);
	nk_plan_free(pl);
	nk_policy_free(p);
	nk_machine_free(m);
}

/* 3D by planes and 1D by elements. */
static void test_rows_other_dims(void **state)
{
	nk_machine *m = nk_test_synth("nodes=3");
	int tn[] = { 0, 1, 2 }, want[512];
	nk_policy *p = parse("block:split=rows");
	(void)state;
	{
		nk_region r = { (void *)(uintptr_t)0x10000800, 7 * 10 * 20 * 8, 8, 3, { 7, 10, 20 } };
		struct reg g = mkreg(m, (uintptr_t)r.addr, r.len);
		want_geometry(NK_POLICY_BLOCK, NK_SPLIT_ROWS, &g, 7, 0, 8, tn, 3, want);
		check_plan(m, p, &r, want, "3D planes");
	}
	{
		nk_region r = { (void *)(uintptr_t)0x10000008, 100000, 4, 1, { 25000, 0, 0 } };
		struct reg g = mkreg(m, (uintptr_t)r.addr, r.len);
		want_geometry(NK_POLICY_BLOCK, NK_SPLIT_ROWS, &g, 25000, 0, 4, tn, 3, want);
		check_plan(m, p, &r, want, "1D elements");
	}
	nk_policy_free(p);
	nk_machine_free(m);
}

/* Threads on memoryless or memory-disallowed nodes get the nearest usable node. */
static void test_block_thread_mapping(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 memless=1 allowed_nodes=0,1,3 "
			      "dist=10,20,40,40/20,10,15,30/40,15,10,40/40,30,40,10");
	nk_policy *p = parse("block:threads=0,1,2,3");
	nk_region r;
	int want[40];
	/* 0 -> 0; 1 (memoryless) -> nearest with memory and allowed: 2 (15) is not allowed, 0 (20);
	 * 2 (not allowed) -> 0 and 3 both at 40, the smaller id; 3 -> 3 */
	(void)state;
	region_pages(m, 40, 0, &r);
	{
		const int exp_tn[] = { 0, 0, 0, 3 };
		want_block_pages(exp_tn, 4, 40, want);
		check_plan(m, p, &r, want, "thread mapping");
	}
	nk_policy_free(p);
	nk_machine_free(m);
}

/* Measured NUMA factors change cyclic_neighbors' order; home and count. */
static void test_neighbors(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 dist=10,20,30,30/20,10,30,30/30,30,10,20/30,30,20,10");
	nk_region r;
	int want[100];
	nk_policy *p;
	(void)state;
	region_pages(m, 100, 0, &r);

	p = parse("cyclic_neighbors"); /* home 0, nearest: 1 */
	want_formula(NK_POLICY_CYCLIC, (int[]){ 0, 1 }, 2, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors default");
	nk_policy_free(p);

	p = parse("cyclic_neighbors:home=2");
	want_formula(NK_POLICY_CYCLIC, (int[]){ 2, 3 }, 2, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors home=2");
	nk_policy_free(p);

	p = parse("cyclic_neighbors:home=3,count=4");
	want_formula(NK_POLICY_CYCLIC, (int[]){ 3, 2, 0, 1 }, 4, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors count=4");
	nk_policy_free(p);

	/* measured: node 0 sees node 3 closest (1.1) and node 2 next (1.2) */
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 3, 1.1), 0);
	assert_int_equal(nk_machine_set_matrix(m, NK_MATRIX_NUMA_FACTOR, 0, 2, 1.2), 0);
	p = parse("cyclic_neighbors:count=3");
	want_formula(NK_POLICY_CYCLIC, (int[]){ 0, 3, 2 }, 3, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors measured");
	nk_policy_free(p);
	p = parse("cyclic_neighbors");
	want_formula(NK_POLICY_CYCLIC, (int[]){ 0, 3 }, 2, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors measured default");
	nk_policy_free(p);
	nk_machine_free(m);

	/* a memoryless home: its nearest memory nodes, home itself excluded */
	m = nk_test_synth("nodes=3 memless=0 dist=10,20,30/20,10,30/30,30,10");
	p = parse("cyclic_neighbors:home=0");
	want_formula(NK_POLICY_CYCLIC, (int[]){ 1 }, 1, 100, 1, 0, want);
	check_plan(m, p, &r, want, "neighbors memoryless home");
	nk_policy_free(p);
	nk_machine_free(m);
}

/* When one mbind call reproduces the plan, and when it does not. */
static void test_kernel_hints(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 wi=3,1,1,1");
	nk_region r;
	nk_plan *pl = NULL;
	int mode;
	const int *hn;
	size_t n;
	struct {
		const char *policy;
		uintptr_t page_no;
		int mode; /* -1: none */
	} cases[] = {
		{ "cyclic", 1000, NK__MPOL_INTERLEAVE },	  /* 1000 = 0 mod 4 */
		{ "cyclic", 1001, -1 },				  /* the kernel would start on node 1 */
		{ "cyclic:nodes=1,2,3,0", 1001, NK__MPOL_INTERLEAVE }, /* ... which this order matches */
		{ "cyclic:nodes=3,2,1,0", 1000, -1 },
		{ "cyclic:nodes=0,2", 1000, NK__MPOL_INTERLEAVE },
		{ "cyclic:nodes=2", 7, NK__MPOL_BIND },
		{ "cyclic_block:block=4K", 1000, NK__MPOL_INTERLEAVE },
		{ "cyclic_block", 1000, -1 },
		{ "prime_mapp:nodes=0-2", 999, NK__MPOL_INTERLEAVE }, /* P = M = 3 */
		{ "prime_mapp", 1000, -1 },
		{ "skew_mapp", 1000, -1 },
		{ "random", 1000, -1 },
		{ "weighted", 1002, NK__MPOL_WEIGHTED_INTERLEAVE }, /* machine weights 3,1,1,1: W = 6 */
		{ "weighted", 1000, -1 },
		{ "weighted:weights=0=3/1=1/2=1/3=1", 1200, NK__MPOL_WEIGHTED_INTERLEAVE },
		{ "weighted:nodes=0-3,weights=0=2", 1002, -1 }, /* not the system-wide weights */
		{ "weighted:weights=0=2", 1000, NK__MPOL_BIND }, /* the weights name the set: node 0 only */
		{ "weighted:nodes=1-3", 999, NK__MPOL_INTERLEAVE }, /* weights 1,1,1 */
		{ "bind", 5, NK__MPOL_BIND },
		{ "block", 1000, -1 },
		{ "block:threads=2*3", 1000, NK__MPOL_BIND },
		{ "next_touch", 1000, -1 },
	};
	(void)state;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		nk_policy *p = parse(cases[i].policy);
		int rc;
		region_pages(m, 64, cases[i].page_no, &r);
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		rc = nk__plan_kernel_hint(pl, &mode, &hn, &n);
		if (cases[i].mode < 0) {
			if (rc != NK_ENODATA)
				fail_msg("%s at page %zu: hint %d, expected none", cases[i].policy, (size_t)cases[i].page_no,
					 mode);
		} else {
			if (rc || mode != cases[i].mode)
				fail_msg("%s at page %zu: rc %d mode %d, expected mode %d", cases[i].policy,
					 (size_t)cases[i].page_no, rc, mode, cases[i].mode);
		}
		nk_plan_free(pl);
		if (cases[i].policy[0] != 'n') { /* check_plan verifies the hint against the kernel's rule */
			int want[64];
			assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
			assert_int_equal(nk_plan_nodes(pl, 0, 64, want), 0);
			nk_plan_free(pl);
			check_plan(m, p, &r, want, cases[i].policy);
		}
		nk_policy_free(p);
	}
	/* KERNEL-NOTES: weights 3:1, 16 pages from a page number = 2 mod 4 land 0100010001000100 */
	nk_machine_free(m);
	m = nk_test_synth("nodes=2 wi=3,1");
	{
		const char *seen = "0100010001000100";
		nk_policy *p = parse("weighted");
		region_pages(m, 16, 1002, &r);
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		assert_int_equal(nk__plan_kernel_hint(pl, &mode, &hn, &n), NK_ENODATA);
		nk_plan_free(pl);
		/* the same pages, planned from the page = 0 mod 4 that starts their round */
		region_pages(m, 18, 1000, &r);
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		assert_int_equal(nk__plan_kernel_hint(pl, &mode, &hn, &n), 0);
		assert_int_equal(mode, NK__MPOL_WEIGHTED_INTERLEAVE);
		for (size_t i = 0; i < 16; i++)
			assert_int_equal(nk_plan_node(pl, i + 2), seen[i] - '0');
		nk_plan_free(pl);
		nk_policy_free(p);
	}
	nk_machine_free(m);
}

static void test_next_touch(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2");
	nk_policy *p = parse("next_touch");
	nk_region r;
	nk_plan *pl = NULL;
	int nodes[4] = { 7, 7, 7, 7 };
	size_t len = 0;
	(void)state;
	region_pages(m, 10, 3, &r);
	assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
	assert_int_equal(nk_plan_num_pages(pl), 10);
	assert_int_equal(nk_plan_node(pl, 0), NK_ENODATA);
	assert_int_equal(nk_plan_node(pl, 9), NK_ENODATA);
	assert_int_equal(nk_plan_node(pl, 10), NK_EINVAL);
	assert_int_equal(nk_plan_nodes(pl, 0, 4, nodes), NK_ENODATA);
	assert_int_equal(nodes[0], 7); /* nothing written */
	assert_int_equal(nk__plan_run_at(pl, 4, &len), NK_ENODATA);
	assert_int_equal(len, 6);
	assert_int_equal(nk__plan_kind(pl), NK_POLICY_NEXT_TOUCH);
	nk_plan_free(pl);
	nk_policy_free(p);
	nk_machine_free(m);
}

/* Build must fail with @p code, mention @p needle, and leave *out alone. */
static void expect_build_error(const nk_machine *m, const char *policy, const nk_region *r, int code,
			       const char *needle)
{
	nk_policy *p = parse(policy);
	nk_plan *sentinel = (nk_plan *)&sentinel, *pl = sentinel;
	nk_error err = { 0 };
	int rc = nk_plan_build(m, p, r, &pl, &err);
	if (rc != code || err.code != code || !strstr(err.message, needle))
		fail_msg("%s: rc %d (expected %d), message \"%s\" (expected \"%s\")", policy, rc, code, err.message,
			 needle);
	assert_ptr_equal(pl, sentinel);
	assert_int_equal(nk_plan_build(m, p, r, &pl, NULL), code);
	assert_ptr_equal(pl, sentinel);
	nk_policy_free(p);
}

static void test_build_errors(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 memless=1 allowed_nodes=0,1,2");
	nk_machine *none = nk_test_synth("nodes=2 memless=1 allowed_nodes=1");
	nk_region r = { (void *)(uintptr_t)0x100000, 1 << 20, 0, 0, { 0 } };
	nk_region geo = { (void *)(uintptr_t)0x100000, 100 * 80 * 8, 8, 2, { 100, 80, 0 } };
	nk_plan *pl = NULL;
	nk_policy *p;
	(void)state;

	expect_build_error(m, "cyclic:nodes=0,7", &r, NK_ENODEV, "node 7: no such node");
	expect_build_error(m, "cyclic:nodes=3", &r, NK_EPERM, "node 3 is not allowed");
	expect_build_error(m, "cyclic:nodes=0,1", &r, NK_EINVAL, "node 1 has no memory");
	expect_build_error(none, "cyclic", &r, NK_EINVAL, "no node with memory is allowed");
	expect_build_error(m, "bind:nodes=3", &r, NK_EPERM, "not allowed");
	expect_build_error(m, "weighted:weights=5=2", &r, NK_ENODEV, "node 5");
	expect_build_error(m, "weighted:nodes=0,2,weights=3=2", &r, NK_EINVAL, "node 3, which is not in the node set");
	expect_build_error(m, "cyclic_neighbors:count=3", &r, NK_EINVAL, "count 3 but only 2 nodes");
	{
		nk_machine *four = nk_test_synth("nodes=4");
		expect_build_error(four, "prime_mapp:prime=3", &r, NK_EINVAL, "prime 3 is smaller than the 4 nodes");
		nk_machine_free(four);
	}
	expect_build_error(m, "cyclic_neighbors:home=9", &r, NK_ENODEV, "home node 9");
	expect_build_error(m, "block:threads=0,8", &r, NK_ENODEV, "thread node 8");
	expect_build_error(none, "block:threads=0", &r, NK_EINVAL, "no node with memory");
	expect_build_error(m, "block:nodes=0,threads=0", &r, NK_EINVAL, "not both");
	expect_build_error(m, "block:split=rows", &r, NK_EINVAL, "split=rows needs the region's geometry");
	expect_build_error(m, "block:split=cols", &r, NK_EINVAL, "split=cols needs a 2D region");
	expect_build_error(m, "block_exclusive", &r, NK_EINVAL, "block_exclusive needs a 2D region");
	{
		nk_region g3 = { (void *)(uintptr_t)0x100000, 2 * 3 * 4 * 8, 8, 3, { 2, 3, 4 } };
		expect_build_error(m, "block_exclusive", &g3, NK_EINVAL, "needs a 2D region");
		expect_build_error(m, "block:split=cols", &g3, NK_EINVAL, "needs a 2D region");
	}
	/* bad regions and geometry, whatever the policy */
	{
		nk_region bad = geo;
		bad.len = 0;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "empty");
		bad = r;
		bad.addr = (void *)(UINTPTR_MAX - 100);
		bad.len = 1000;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "wraps");
		bad = geo;
		bad.dims[1] = 81;
		expect_build_error(m, "block_exclusive", &bad, NK_EINVAL, "not len 64000");
		bad = geo;
		bad.ndims = 4;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "ndims 4");
		bad = geo;
		bad.elem_size = 0;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "elem_size is 0");
		bad = geo;
		bad.dims[0] = 0;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "dims[0] is 0");
		bad = geo;
		bad.dims[0] = SIZE_MAX / 4;
		expect_build_error(m, "cyclic", &bad, NK_EINVAL, "overflow");
	}
	p = parse("cyclic");
	assert_int_equal(nk_plan_build(NULL, p, &r, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk_plan_build(m, NULL, &r, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk_plan_build(m, p, NULL, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk_plan_build(m, p, &r, NULL, NULL), NK_EINVAL);
	nk_policy_free(p);
	assert_int_equal(nk_plan_node(NULL, 0), NK_EINVAL);
	assert_int_equal(nk_plan_nodes(NULL, 0, 0, NULL), NK_EINVAL);
	assert_int_equal(nk_plan_num_pages(NULL), 0);
	assert_int_equal(nk_plan_page_size(NULL), 0);
	nk_plan_free(NULL);
	nk_machine_free(m);
	nk_machine_free(none);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A 1 TiB region costs what a page costs: build time and the last page's node. */
static void test_terabyte(void **state)
{
	nk_machine *m = nk_test_synth("nodes=1000 mem=1G");
	nk_region r = { (void *)(uintptr_t)(1ULL << 44), 1ULL << 40, 0, 0, { 0 } };
	const size_t np = (size_t)1 << 28, last = np - 1;
	static const char *const policies[] = { "cyclic", "cyclic_block", "block_cyclic", "skew_mapp", "prime_mapp",
						"random", "weighted", "bind", "block", "cyclic_neighbors" };
	int tail[256];
	(void)state;

	for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
		nk_policy *p = parse(policies[i]);
		nk_plan *pl = NULL;
		double t0 = now(), t;
		assert_int_equal(nk_plan_build(m, p, &r, &pl, NULL), 0);
		t = now() - t0;
		if (t > 0.05)
			fail_msg("%s: building a 1 TiB plan took %.3f s", policies[i], t);
		assert_int_equal(nk_plan_num_pages(pl), np);
		assert_int_equal(nk_plan_nodes(pl, np - 256, 256, tail), 0);
		assert_int_equal(tail[255], nk_plan_node(pl, last));
		switch (i) {
		case 0: assert_int_equal(nk_plan_node(pl, last), (int)(last % 1000)); break;
		case 1: assert_int_equal(nk_plan_node(pl, last), (int)((last / 16) % 1000)); break;
		case 2: assert_int_equal(nk_plan_node(pl, last), (int)((last / 512) % 1000)); break;
		case 3: assert_int_equal(nk_plan_node(pl, last), (int)((last + last / 1000 + 1) % 1000)); break;
		case 4: { /* P = 1009: 9 overflow pages per round */
			for (size_t pg = last - 2000; pg <= last; pg++) {
				size_t v = pg % 1009, k = pg / 1009;
				assert_int_equal(nk_plan_node(pl, pg), (int)(v < 1000 ? v : (k * 9 + v - 1000) % 1000));
			}
			break;
		}
		case 6: assert_int_equal(nk_plan_node(pl, last), (int)(last % 1000)); break;
		case 7: assert_int_equal(nk_plan_node(pl, last), 999); break; /* 262144 pages per node: overflow */
		case 8: assert_int_equal(nk_plan_node(pl, last), 999); break;
		case 9: assert_true(nk_plan_node(pl, last) >= 0); break;
		default: assert_true(nk_plan_node(pl, last) >= 0 && nk_plan_node(pl, last) < 1000); break;
		}
		nk_plan_free(pl);
		nk_policy_free(p);
	}
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic_sweep),	    cmocka_unit_test(test_dump_sweep),
		cmocka_unit_test(test_explicit_params),	    cmocka_unit_test(test_bind_capacity),
		cmocka_unit_test(test_rows_and_cols_by_hand), cmocka_unit_test(test_rows_other_dims),
		cmocka_unit_test(test_block_thread_mapping), cmocka_unit_test(test_neighbors),
		cmocka_unit_test(test_kernel_hints),	    cmocka_unit_test(test_next_touch),
		cmocka_unit_test(test_build_errors),	    cmocka_unit_test(test_terabyte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
