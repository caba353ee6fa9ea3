/* SPDX-License-Identifier: BSD-3-Clause
 * Rank mapping (src/job/rankmap.c): never worse than the mapping as profiled, the optimum on small
 * problems whose optimum a brute force finds (every permutation of 8 slots), refusals that change nothing.
 */
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job/rankmap.h"

#define N8 8

/* 8 slots: 2 hosts x 2 nodes x 2 slots; a byte costs 10 within a node, 21 across nodes, 100 across hosts. */
static void dist8(double *d)
{
	for (int s = 0; s < N8; s++)
		for (int t = 0; t < N8; t++)
			d[s * N8 + t] = s == t ? 0 : s / 4 != t / 4 ? 100 : (s / 2) != (t / 2) ? 21 : 10;
}

static int next_perm(int *a, int n)
{
	int i = n - 2;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return 0;
	int j = n - 1;
	while (a[j] <= a[i])
		j--;
	int t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (int l = i + 1, r = n - 1; l < r; l++, r--) {
		t = a[l];
		a[l] = a[r];
		a[r] = t;
	}
	return 1;
}

static double brute_optimum(const struct nk__rm_problem *p)
{
	int perm[N8];
	for (int i = 0; i < N8; i++)
		perm[i] = i;
	double best = nk__rm_cost(p, perm);
	while (next_perm(perm, N8)) {
		double c = nk__rm_cost(p, perm);
		best = c < best ? c : best;
	}
	return best;
}

/* A ring of 8 ranks (each sends its neighbours 1 MiB) laid out as badly as possible: the optimum. */
static void test_ring(void **state)
{
	(void)state;
	double d[N8 * N8];
	struct nk__rm_edge e[N8];
	int initial[N8], out[N8];
	dist8(d);
	for (int i = 0; i < N8; i++) {
		e[i] = (struct nk__rm_edge){ i, (i + 1) % N8, 1 << 20 };
		initial[i] = (i % 2) * 4 + (i / 2) % 2 * 2 + i / 4; /* neighbours on other hosts */
	}
	struct nk__rm_problem p = { N8, d, e, N8, initial, NULL };
	double before = nk__rm_cost(&p, initial), opt = brute_optimum(&p);
	assert_int_equal(nk__rm_solve(&p, out), 0);
	double after = nk__rm_cost(&p, out);
	assert_true(after <= before);
	assert_true(after == opt);
	/* every slot used once */
	int seen[N8] = { 0 };
	for (int i = 0; i < N8; i++)
		seen[out[i]]++;
	for (int i = 0; i < N8; i++)
		assert_int_equal(seen[i], 1);
}

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* Random sparse traffic: never worse than as profiled, within 10 % of the optimum (the optimum in most). */
static void test_random_small(void **state)
{
	(void)state;
	double d[N8 * N8];
	dist8(d);
	int at_opt = 0;
	for (int trial = 0; trial < 40; trial++) {
		struct nk__rm_edge e[16];
		int initial[N8], out[N8];
		for (int k = 0; k < 16; k++) {
			int a = (int)(urand() * N8), b = (int)(urand() * N8);
			e[k] = (struct nk__rm_edge){ a, b == a ? (a + 1) % N8 : b, urand() < 0.3 ? 1e6 * urand() : 1e3 * urand() };
		}
		for (int i = 0; i < N8; i++)
			initial[i] = i;
		for (int i = N8 - 1; i > 0; i--) {
			int j = (int)(urand() * (i + 1)), t = initial[i];
			initial[i] = initial[j];
			initial[j] = t;
		}
		struct nk__rm_problem p = { N8, d, e, 16, initial, NULL };
		assert_int_equal(nk__rm_solve(&p, out), 0);
		double before = nk__rm_cost(&p, initial), after = nk__rm_cost(&p, out), opt = brute_optimum(&p);
		assert_true(after <= before);
		if (after > 1.10 * opt)
			fail_msg("trial %d: cost %.0f, optimum %.0f", trial, after, opt);
		at_opt += after <= opt * (1 + 1e-9);
	}
	assert_true(at_opt >= 30);
}

/* An optimal mapping as profiled stays as it is; a job without traffic keeps its mapping. */
static void test_keeps(void **state)
{
	(void)state;
	double d[N8 * N8];
	struct nk__rm_edge e[4] = { { 0, 1, 100 }, { 2, 3, 100 }, { 4, 5, 100 }, { 6, 7, 100 } };
	int initial[N8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, out[N8];
	dist8(d);
	struct nk__rm_problem p = { N8, d, e, 4, initial, NULL };
	assert_int_equal(nk__rm_solve(&p, out), 0);
	assert_true(nk__rm_cost(&p, out) == nk__rm_cost(&p, initial));
	struct nk__rm_problem q = { N8, d, NULL, 0, initial, NULL };
	assert_int_equal(nk__rm_solve(&q, out), 0);
	assert_memory_equal(out, initial, sizeof initial);
}

static void test_refusals(void **state)
{
	(void)state;
	double d[N8 * N8];
	struct nk__rm_edge e[1] = { { 0, 1, 1 } };
	int dup[N8] = { 0, 1, 2, 3, 4, 5, 6, 6 }, ok[N8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, out[N8];
	dist8(d);
	memset(out, 0x5a, sizeof out);
	int before[N8];
	memcpy(before, out, sizeof out);
	struct nk__rm_problem p = { N8, d, e, 1, dup, NULL };
	assert_int_equal(nk__rm_solve(&p, out), NK_EINVAL); /* not a permutation */
	p.initial = ok;
	struct nk__rm_edge bad[1] = { { 0, 8, 1 } };
	p.edges = bad;
	assert_int_equal(nk__rm_solve(&p, out), NK_EINVAL); /* rank out of range */
	struct nk__rm_edge neg[1] = { { 0, 1, -1 } };
	p.edges = neg;
	assert_int_equal(nk__rm_solve(&p, out), NK_EINVAL);
	p.edges = e;
	p.n = 0;
	assert_int_equal(nk__rm_solve(&p, out), NK_EINVAL);
	assert_int_equal(nk__rm_solve(NULL, out), NK_EINVAL);
	assert_memory_equal(out, before, sizeof out);
}

/* 1024 ranks of a 2-D halo (32 x 32, periodic) on 16 hosts x 4 nodes x 16 slots, ranks dealt round robin
 * over the hosts: the search must come within 25 % of a hand-made layout (an 8 x 8 block of the grid per
 * host, 4 x 4 per node; rows per host, what a greedy order by rank id gives, is 52 % above it). */
static void test_large(void **state)
{
	(void)state;
	enum { N = 1024, SIDE = 32 };
	double *d = malloc((size_t)N * N * sizeof *d);
	struct nk__rm_edge *e = malloc(2 * N * sizeof *e);
	int *initial = malloc(N * sizeof *initial), *out = malloc(N * sizeof *out);
	assert_true(d && e && initial && out);
	for (int s = 0; s < N; s++)
		for (int t = 0; t < N; t++)
			d[(size_t)s * N + t] = s == t ? 0 : s / 64 != t / 64 ? 100 : s / 16 != t / 16 ? 21 : 10;
	size_t m = 0;
	for (int i = 0; i < N; i++) {
		int x = i % SIDE, y = i / SIDE;
		e[m++] = (struct nk__rm_edge){ i, y * SIDE + (x + 1) % SIDE, 1 << 20 };
		e[m++] = (struct nk__rm_edge){ i, ((y + 1) % SIDE) * SIDE + x, 1 << 20 };
		initial[i] = (i % 16) * 64 + i / 16;
	}
	int *group = malloc(N * sizeof *group);
	assert_non_null(group);
	for (int s = 0; s < N; s++)
		group[s] = s / 16;
	struct nk__rm_problem p = { N, d, e, m, initial, group };
	assert_int_equal(nk__rm_solve(&p, out), 0);
	double before = nk__rm_cost(&p, initial), after = nk__rm_cost(&p, out);
	int *blocks = malloc(N * sizeof *blocks);
	assert_non_null(blocks);
	for (int i = 0; i < N; i++) {
		int x = i % SIDE, y = i / SIDE, host = (y / 8) * 4 + x / 8, node = ((y % 8) / 4) * 2 + (x % 8) / 4;
		blocks[i] = host * 64 + node * 16 + (y % 4) * 4 + x % 4;
	}
	double good = nk__rm_cost(&p, blocks);
	if (!(after <= before && after <= 1.25 * good))
		fail_msg("cost %.3g -> %.3g, the hand-made layout %.3g", before, after, good);
	free(blocks);
	free(d);
	free(e);
	free(initial);
	free(out);
	free(group);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_random_small),
		cmocka_unit_test(test_keeps),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
