/* SPDX-License-Identifier: BSD-3-Clause
 * Loop schedules (src/threads/schedule.c, owner.c).
 *
 * The partition property is checked exhaustively over many (threads, nodes,
 * rows, phase, loop range) combinations: the union of every thread's ranges
 * is exactly the loop range, without overlap.  Block-exclusive is checked
 * against the real block_exclusive plan (nk_plan_build on synthetic
 * machines): every element a thread gets lies on the node of the group the
 * thread serves.  Exact small cases are written out by hand.  The owner
 * schedule is checked on this host's memory (one node here; multi-node in
 * the guests, tests/guest/guest_sched.c).
 */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threads/schedule_impl.h"

/* ------------------------------------------------------------- static */

static void test_static_exact(void **state)
{
	nk_range r;
	const long want[3][2] = { { 0, 4 }, { 4, 7 }, { 7, 10 } };
	for (int t = 0; t < 3; t++) {
		assert_int_equal(nk_sched_static(0, 10, t, 3, &r), 0);
		assert_int_equal(r.begin, want[t][0]);
		assert_int_equal(r.end, want[t][1]);
		assert_int_equal(nk_sched_static_inverse(0, 10, t, 3, &r), 0);
		assert_int_equal(r.begin, want[2 - t][0]);
		assert_int_equal(r.end, want[2 - t][1]);
	}
	/* more threads than iterations: the first get one each, the rest empty ranges at the end */
	assert_int_equal(nk_sched_static(5, 7, 1, 4, &r), 0);
	assert_int_equal(r.begin, 6);
	assert_int_equal(r.end, 7);
	assert_int_equal(nk_sched_static(5, 7, 3, 4, &r), 0);
	assert_int_equal(r.begin, r.end);
	/* one thread: everything */
	assert_int_equal(nk_sched_static(-3, 8, 0, 1, &r), 0);
	assert_int_equal(r.begin, -3);
	assert_int_equal(r.end, 8);
}

/* The union of all threads' ranges is [b, e) in thread order, without overlap. */
static void check_static_partition(long b, long e, int T, int inverse)
{
	long next = b < e ? b : e;
	for (int k = 0; k < T; k++) {
		int t = inverse ? T - 1 - k : k; /* the inverse hands parts out backwards */
		nk_range r = { 123, 456 };
		int rc = inverse ? nk_sched_static_inverse(b, e, t, T, &r) : nk_sched_static(b, e, t, T, &r);
		assert_int_equal(rc, 0);
		if (b >= e) {
			assert_true(r.begin == r.end);
			continue;
		}
		assert_true(r.begin == next);
		assert_true(r.end >= r.begin);
		/* balanced: sizes differ by at most one, larger ones first */
		unsigned long n = (unsigned long)e - (unsigned long)b, len = (unsigned long)r.end - (unsigned long)r.begin;
		assert_true(len == n / (unsigned long)T || len == n / (unsigned long)T + 1);
		assert_true(len == n / (unsigned long)T + ((unsigned long)k < n % (unsigned long)T));
		next = r.end;
	}
	if (b < e)
		assert_true(next == e);
}

static void test_static_partition(void **state)
{
	const long begins[] = { -7, 0, 3 };
	for (size_t bi = 0; bi < 3; bi++)
		for (long n = -2; n <= 40; n++)
			for (int T = 1; T <= 13; T++) {
				check_static_partition(begins[bi], begins[bi] + n, T, 0);
				check_static_partition(begins[bi], begins[bi] + n, T, 1);
			}
	/* the whole range of long: the width does not fit in a long */
	for (int T = 1; T <= 5; T++) {
		check_static_partition(LONG_MIN, LONG_MAX, T, 0);
		check_static_partition(LONG_MIN, LONG_MAX, T, 1);
	}
	check_static_partition(LONG_MIN, LONG_MIN + 3, 7, 0);
	check_static_partition(LONG_MAX - 3, LONG_MAX, 2, 1);
}

static void test_static_errors(void **state)
{
	nk_range r = { 11, 22 };
	assert_int_equal(nk_sched_static(0, 10, 0, 1, NULL), NK_EINVAL);
	assert_int_equal(nk_sched_static(0, 10, 0, 0, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static(0, 10, -1, 4, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static(0, 10, 4, 4, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static(0, 10, 0, -3, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static_inverse(0, 10, 0, 1, NULL), NK_EINVAL);
	assert_int_equal(nk_sched_static_inverse(0, 10, 4, 4, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static_inverse(0, 10, -1, 4, &r), NK_EINVAL);
	assert_int_equal(nk_sched_static_inverse(0, 10, 0, 0, &r), NK_EINVAL);
	/* nothing written on failure */
	assert_int_equal(r.begin, 11);
	assert_int_equal(r.end, 22);
	/* empty and reversed ranges: every thread gets an empty range */
	assert_int_equal(nk_sched_static(5, 5, 2, 3, &r), 0);
	assert_true(r.begin == r.end);
	assert_int_equal(nk_sched_static(9, 2, 0, 3, &r), 0);
	assert_true(r.begin == r.end);
	assert_int_equal(nk_sched_static_inverse(9, 2, 2, 3, &r), 0);
	assert_true(r.begin == r.end);
	/* a team far larger than any machine */
	assert_int_equal(nk_sched_static(0, 10, 65535, 65536, &r), 0);
	assert_true(r.begin == r.end);
	assert_int_equal(nk_sched_static(0, 10, 9, INT_MAX, &r), 0);
	assert_true(r.begin == 9 && r.end == 10);
}

/* ------------------------------------------------------ block_exclusive */

static void test_groups_inverse_of_scatter(void **state)
{
	for (int p = 1; p <= 9; p++)
		for (int T = 1; T <= 30; T++) {
			int *owner = calloc((size_t)p, sizeof *owner);
			for (int t = 0; t < T; t++) {
				int g0, g1;
				nk__sched_groups(t, T, p, &g0, &g1);
				assert_true(0 <= g0 && g0 < g1 && g1 <= p);
				/* the thread's own scatter node index is one of its groups */
				int node = T <= p ? (int)((long)t * p / T) : (int)nk__part_of((unsigned long)T, (unsigned long)p,
											    (unsigned long)t);
				assert_int_equal(g0, node);
				if (T >= p)
					assert_int_equal(g1, g0 + 1);
				for (int g = g0; g < g1; g++)
					owner[g]++;
			}
			/* every group is served: by exactly one thread when T <= p */
			for (int g = 0; g < p; g++) {
				assert_true(owner[g] >= 1);
				if (T <= p)
					assert_int_equal(owner[g], 1);
				else
					assert_int_equal(owner[g], (int)(nk__part_start((unsigned long)T, (unsigned long)p,
											 (unsigned long)g + 1) -
									  nk__part_start((unsigned long)T, (unsigned long)p,
											 (unsigned long)g)));
			}
			free(owner);
		}
}

/*
 * Every thread's ranges: sorted, non-empty, not touching, at most 2, inside
 * [b, e), in bands of groups the thread serves; their union over the team
 * is [b, e) exactly once.
 */
static void check_be(long rows, long cols, int p, int view, int phase, long b, long e, int T)
{
	long n = view == NK_VIEW_ROWS ? rows : cols;
	int *hits = calloc((size_t)n + 1, sizeof *hits);
	assert_non_null(hits);
	for (int t = 0; t < T; t++) {
		nk_range r[3];
		int g0, g1;
		int c = nk_sched_block_exclusive(rows, cols, p, view, phase, b, e, t, T, r, 3);
		assert_true(c >= 0 && c <= NK_SCHED_BE_MAX_RANGES);
		assert_int_equal(nk_sched_block_exclusive(rows, cols, p, view, phase, b, e, t, T, NULL, 0), c);
		nk__sched_groups(t, T, p, &g0, &g1);
		for (int i = 0; i < c; i++) {
			assert_true(r[i].begin < r[i].end);
			assert_true(r[i].begin >= b && r[i].end <= e);
			if (i)
				assert_true(r[i].begin > r[i - 1].end);
			for (long x = r[i].begin; x < r[i].end; x++) {
				int band = (int)nk__part_of((unsigned long)n, (unsigned long)p, (unsigned long)x);
				int g = (band + phase) % p;
				assert_true(g >= g0 && g < g1);
				hits[x]++;
			}
		}
	}
	for (long x = 0; x < n; x++)
		assert_int_equal(hits[x], x >= b && x < e ? 1 : 0);
	free(hits);
}

static void test_be_partition(void **state)
{
	for (int p = 1; p <= 6; p++)
		for (int T = 1; T <= 2 * p + 3; T++)
			for (long n = p; n <= p + 11; n++)
				for (int phase = 0; phase < p; phase++) {
					check_be(n, p + 2, p, NK_VIEW_ROWS, phase, 0, n, T);
					check_be(p + 1, n, p, NK_VIEW_COLS, phase, 0, n, T);
					/* loops that skip boundary rows, and sub-ranges */
					check_be(n, p, p, NK_VIEW_ROWS, phase, 1, n - 1, T);
					check_be(p, n, p, NK_VIEW_COLS, phase, n / 3, n / 2 + 1, T);
					check_be(n, p, p, NK_VIEW_ROWS, phase, n - 1, n, T);
				}
	/* a few larger teams and grids */
	check_be(1000, 1000, 8, NK_VIEW_ROWS, 5, 1, 999, 64);
	check_be(1000, 37, 7, NK_VIEW_COLS, 6, 0, 37, 3);
	check_be(97, 97, 16, NK_VIEW_ROWS, 15, 0, 97, 5);
}

static void expect(int c, const nk_range *r, int want_c, const long *want)
{
	assert_int_equal(c, want_c);
	for (int i = 0; i < want_c; i++) {
		assert_int_equal(r[i].begin, want[2 * i]);
		assert_int_equal(r[i].end, want[2 * i + 1]);
	}
}

static void test_be_exact(void **state)
{
	nk_range r[2];
	/* Majo & Gross Fig. 11 (b), (c): 8 threads, 2 nodes, 8 x 8.  Phase 0:
	 * T0-T3 the upper half (Q1), T4-T7 the lower (Q3).  Phase 1: T0-T3 the
	 * lower half (Q4), T4-T7 the upper (Q2). */
	for (int t = 0; t < 8; t++) {
		long w0[2] = { t, t + 1 }, w1[2] = { (t + 4) % 8, (t + 4) % 8 + 1 };
		expect(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, t, 8, r, 2), r, 1, w0);
		expect(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 1, 0, 8, t, 8, r, 2), r, 1, w1);
		expect(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_COLS, 1, 0, 8, t, 8, r, 2), r, 1, w1);
	}
	/* 2 threads, 4 nodes, 8 rows: thread 0 serves groups 0, 1; thread 1 groups 2, 3 */
	{
		long a[] = { 0, 4 }, b[] = { 4, 8 };
		expect(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 0, 0, 8, 0, 2, r, 2), r, 1, a);
		expect(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 0, 0, 8, 1, 2, r, 2), r, 1, b);
	}
	{ /* phase 3: group g takes band (g - 3) mod 4: thread 0 bands 1, 2; thread 1 bands 3, 0 */
		long a[] = { 2, 6 }, b[] = { 0, 2, 6, 8 };
		expect(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 3, 0, 8, 0, 2, r, 2), r, 1, a);
		expect(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 3, 0, 8, 1, 2, r, 2), r, 2, b);
		/* cap 1: the count is still 2, one range written */
		nk_range one[1] = { { -1, -1 } };
		assert_int_equal(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 3, 0, 8, 1, 2, one, 1), 2);
		assert_int_equal(one[0].begin, 0);
		assert_int_equal(one[0].end, 2);
		/* clipped to [1, 7) */
		long c[] = { 1, 2, 6, 7 };
		expect(nk_sched_block_exclusive(8, 4, 4, NK_VIEW_ROWS, 3, 1, 7, 1, 2, r, 2), r, 2, c);
	}
	{ /* 3 nodes, 2 threads: thread 0 on node index 0 serves group 0, thread 1 (node index 1) groups 1, 2.
	   * 10 columns in bands [0,4) [4,7) [7,10); phase 1: group g takes band (g - 1) mod 3 */
		long a[] = { 7, 10 }, b[] = { 0, 7 };
		expect(nk_sched_block_exclusive(3, 10, 3, NK_VIEW_COLS, 1, 0, 10, 0, 2, r, 2), r, 1, a);
		expect(nk_sched_block_exclusive(3, 10, 3, NK_VIEW_COLS, 1, 0, 10, 1, 2, r, 2), r, 1, b);
	}
	{ /* one thread: the whole loop as one range, every phase */
		long a[] = { 0, 9 };
		for (int ph = 0; ph < 4; ph++)
			expect(nk_sched_block_exclusive(9, 5, 4, NK_VIEW_ROWS, ph, 0, 9, 0, 1, r, 2), r, 1, a);
	}
	{ /* 5 threads, 2 nodes: group 0 = threads 0-2 (first part larger), group 1 = threads 3-4 */
		long a[] = { 0, 2 }, b[] = { 5, 8 }, c[] = { 8, 10 };
		expect(nk_sched_block_exclusive(10, 2, 2, NK_VIEW_ROWS, 0, 0, 10, 0, 5, r, 2), r, 1, a);
		expect(nk_sched_block_exclusive(10, 2, 2, NK_VIEW_ROWS, 0, 0, 10, 3, 5, r, 2), r, 1, b);
		expect(nk_sched_block_exclusive(10, 2, 2, NK_VIEW_ROWS, 0, 0, 10, 4, 5, r, 2), r, 1, c);
		long d[] = { 0, 3 };
		expect(nk_sched_block_exclusive(10, 2, 2, NK_VIEW_ROWS, 1, 0, 10, 3, 5, r, 2), r, 1, d);
	}
}

static void test_be_errors(void **state)
{
	nk_range r[2] = { { 7, 7 }, { 7, 7 } };
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, 0, 2, NULL, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 0, NK_VIEW_ROWS, 0, 0, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, -2, NK_VIEW_ROWS, 0, 0, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 2, 0, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, -1, 0, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, 7, 0, 0, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, 2, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, -1, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, 0, 0, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(1, 8, 2, NK_VIEW_ROWS, 0, 0, 1, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 1, 2, NK_VIEW_COLS, 0, 0, 1, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, -1, 8, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 9, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(nk_sched_block_exclusive(8, 4, 2, NK_VIEW_COLS, 0, 0, 5, 0, 2, r, 2), NK_EINVAL);
	assert_int_equal(r[0].begin, 7); /* untouched */
	/* empty loops: no range, whatever the bounds */
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 3, 3, 0, 2, r, 2), 0);
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 100, -100, 1, 2, r, 2), 0);
	/* NULL with cap 0 asks for the count */
	assert_int_equal(nk_sched_block_exclusive(8, 8, 2, NK_VIEW_ROWS, 0, 0, 8, 0, 2, NULL, 0), 1);
	/* a team far larger than the loop: the extra threads get nothing, no crash */
	assert_int_equal(nk_sched_block_exclusive(2, 2, 2, NK_VIEW_ROWS, 1, 0, 2, 65535, 65536, r, 2), 0);
}

/*
 * Against the real plan.  Geometry page-aligned: a column band is a whole
 * number of pages (cols = p * 512 doubles * k), so every element of a block
 * is on the block's node.  Each thread's (row, column band) elements in the
 * ROWS view and (row band, column) elements in the COLS view are looked up
 * in the plan; they must be on node[g] for a group g the thread serves, and
 * for T >= p on the node "scatter" puts the thread on.
 */
static void check_against_plan(int p, long rows, long k, int T)
{
	char desc[64];
	snprintf(desc, sizeof desc, "nodes=%d cores=2 pagesize=4096", p);
	nk_machine *m = nk_test_synth(desc);
	nk_policy *pol = NULL;
	nk_plan *pl = NULL;
	long cols = (long)p * 512 * k;
	nk_region reg = { .addr = NULL, .elem_size = 8, .ndims = 2 };
	reg.dims[0] = (size_t)rows;
	reg.dims[1] = (size_t)cols;
	reg.len = (size_t)rows * (size_t)cols * 8;
	assert_int_equal(nk_policy_parse("block_exclusive", &pol, NULL), 0);
	assert_int_equal(nk_plan_build(m, pol, &reg, &pl, NULL), 0);
	size_t np = nk_plan_num_pages(pl);
	int *node = malloc(np * sizeof *node);
	assert_int_equal(nk_plan_nodes(pl, 0, np, node), 0);

	for (int view = NK_VIEW_ROWS; view <= NK_VIEW_COLS; view++)
		for (int phase = 0; phase < p; phase++)
			for (int t = 0; t < T; t++) {
				nk_range r[2];
				int g0, g1;
				long n = view == NK_VIEW_ROWS ? rows : cols, other = view == NK_VIEW_ROWS ? cols : rows;
				long ob = (long)nk__part_start((unsigned long)other, (unsigned long)p, (unsigned long)phase);
				long oe = (long)nk__part_start((unsigned long)other, (unsigned long)p, (unsigned long)phase + 1);
				int c = nk_sched_block_exclusive(rows, cols, p, view, phase, 0, n, t, T, r, 2);
				assert_true(c >= 0);
				nk__sched_groups(t, T, p, &g0, &g1);
				for (int i = 0; i < c; i++)
					for (long x = r[i].begin; x < r[i].end; x++)
						for (long y = ob; y < oe; y++) {
							long row = view == NK_VIEW_ROWS ? x : y, col = view == NK_VIEW_ROWS ? y : x;
							size_t pg = (size_t)(row * cols + col) * 8 / 4096;
							int nd = node[pg], g = nk_machine_node_index(m, nd);
							assert_true(g >= g0 && g < g1);
							if (T >= p)
								assert_int_equal(g, (int)nk__part_of((unsigned long)T,
												     (unsigned long)p,
												     (unsigned long)t));
						}
			}
	free(node);
	nk_plan_free(pl);
	nk_policy_free(pol);
	nk_machine_free(m);
}

static void test_be_against_plan(void **state)
{
	for (int p = 1; p <= 4; p++)
		for (int T = 1; T <= 2 * p + 1; T++)
			check_against_plan(p, 3L * p + 1, 1, T);
	check_against_plan(3, 7, 2, 5);
	check_against_plan(4, 4, 1, 4);
}

/* ---------------------------------------------------------------- owner */

static nk_machine *live(void)
{
	nk_machine *m = NULL;
	nk_error e;
	if (nk_machine_load_live(&m, &e))
		fail_msg("%s", e.message);
	return m;
}

/* Thread t's ranges, or fail. */
static int owner_ranges(const nk_owner_sched *s, int t, nk_range *r, size_t cap)
{
	int c = nk_sched_owner(s, t, r, cap);
	assert_true(c >= 0 && (size_t)c <= cap);
	return c;
}

static void test_owner_one_node(void **state)
{
	nk_machine *m = live();
	if (nk_machine_num_nodes(m) != 1) {
		nk_machine_free(m);
		skip(); /* the multi-node cases run in the guests (tests/guest/guest_sched.c) */
	}
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	size_t dims[2] = { 64, ps / 8 };
	nk_array *a = NULL;
	assert_int_equal(nk_array_alloc(m, 8, 2, dims, NK_ARRAY_NO_THP, &a), 0);
	int n0 = nk_machine_node_id(m, 0), tn[3] = { n0, n0, n0 };
	nk_owner_sched *s = NULL;
	nk_range r[4];
	nk_error e;

	/* untouched: static over all threads */
	int rc = nk_sched_owner_build(a, tn, 3, &s, &e);
	if (rc == NK_ENOSYS) {
		nk_array_free(a);
		nk_machine_free(m);
		skip();
	}
	assert_int_equal(rc, 0);
	for (int t = 0; t < 3; t++) {
		nk_range w;
		nk_sched_static(0, 64, t, 3, &w);
		assert_int_equal(owner_ranges(s, t, r, 4), 1);
		assert_true(r[0].begin == w.begin && r[0].end == w.end);
	}
	nk_sched_owner_free(s);

	/* rows 0..31 touched (node 0): split among the node's threads; 32..63 untouched: among all */
	memset(nk_array_data(a), 1, 32 * ps);
	assert_int_equal(nk_sched_owner_build(a, tn, 3, &s, &e), 0);
	const long want[3][4] = { { 0, 11, 32, 43 }, { 11, 22, 43, 54 }, { 22, 32, 54, 64 } };
	for (int t = 0; t < 3; t++) {
		assert_int_equal(owner_ranges(s, t, r, 4), 2);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(r[i].begin, want[t][2 * i]);
			assert_int_equal(r[i].end, want[t][2 * i + 1]);
		}
	}
	/* count/capacity */
	assert_int_equal(nk_sched_owner(s, 1, NULL, 0), 2);
	assert_int_equal(nk_sched_owner(s, 1, r, 1), 2);
	assert_int_equal(r[0].begin, 11);
	assert_int_equal(nk_sched_owner(s, 3, r, 4), NK_EINVAL);
	assert_int_equal(nk_sched_owner(s, -1, r, 4), NK_EINVAL);
	assert_int_equal(nk_sched_owner(s, 0, NULL, 4), NK_EINVAL);
	assert_int_equal(nk_sched_owner(NULL, 0, r, 4), NK_EINVAL);
	nk_sched_owner_free(s);

	/* all touched, 5 threads: static split of every row */
	memset(nk_array_data(a), 2, 64 * ps);
	int tn5[5] = { n0, n0, n0, n0, n0 };
	assert_int_equal(nk_sched_owner_build(a, tn5, 5, &s, &e), 0);
	for (int t = 0; t < 5; t++) {
		nk_range w;
		nk_sched_static(0, 64, t, 5, &w);
		assert_int_equal(owner_ranges(s, t, r, 4), 1);
		assert_true(r[0].begin == w.begin && r[0].end == w.end);
	}
	nk_sched_owner_free(s);

	/* errors: nothing written, messages */
	s = (nk_owner_sched *)&e; /* sentinel: must stay */
	int bad[2] = { n0, 9999 };
	assert_int_equal(nk_sched_owner_build(a, bad, 2, &s, &e), NK_ENODEV);
	assert_non_null(strstr(e.message, "9999"));
	assert_int_equal(nk_sched_owner_build(a, tn, 0, &s, &e), NK_EINVAL);
	assert_int_equal(nk_sched_owner_build(NULL, tn, 3, &s, &e), NK_EINVAL);
	assert_int_equal(nk_sched_owner_build(a, NULL, 3, &s, NULL), NK_EINVAL);
	assert_int_equal(nk_sched_owner_build(a, tn, 3, NULL, NULL), NK_EINVAL);
	assert_ptr_equal(s, (nk_owner_sched *)&e);
	nk_sched_owner_free(NULL);

	nk_array_free(a);
	nk_machine_free(m);
}

/*
 * Rows of a node without threads go to the nearest node with threads: a
 * synthetic machine whose node 0 (where this host's memory is) has no
 * thread; node 2 is nearer to it than node 1.  1D array: a row is an element,
 * many per page.
 */
static void test_owner_redirect(void **state)
{
	nk_machine *live_m = live();
	int one = nk_machine_num_nodes(live_m) == 1 && nk_machine_node_id(live_m, 0) == 0;
	nk_machine_free(live_m);
	if (!one)
		skip();
	nk_machine *m = nk_test_synth("nodes=3 dist=10,30,20/30,10,40/20,40,10");
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 8 * ps / sizeof(int);
	nk_array *a = NULL;
	assert_int_equal(nk_array_alloc(m, sizeof(int), 1, &n, NK_ARRAY_NO_THP, &a), 0);
	memset(nk_array_data(a), 1, 4 * ps); /* elements of pages 0..3 on (real) node 0 */
	int tn[3] = { 1, 2, 2 };
	nk_owner_sched *s = NULL;
	nk_range r[4];
	int rc = nk_sched_owner_build(a, tn, 3, &s, NULL);
	if (rc == NK_ENOSYS) {
		nk_array_free(a);
		nk_machine_free(m);
		skip();
	}
	assert_int_equal(rc, 0);
	long half = (long)(4 * ps / sizeof(int)), all = (long)n;
	/* node 0's rows [0, half) -> node 2 (distance 20 < 30): threads 1 and 2; untouched [half, all) -> all three */
	nk_range w;
	assert_int_equal(owner_ranges(s, 0, r, 4), 1);
	nk_sched_static(half, all, 0, 3, &w);
	assert_true(r[0].begin == w.begin && r[0].end == w.end);
	for (int t = 1; t < 3; t++) {
		nk_range v;
		nk_sched_static(0, half, t - 1, 2, &v);
		nk_sched_static(half, all, t, 3, &w);
		assert_int_equal(owner_ranges(s, t, r, 4), 2);
		assert_true(r[0].begin == v.begin && r[0].end == v.end);
		assert_true(r[1].begin == w.begin && r[1].end == w.end);
	}
	nk_sched_owner_free(s);
	nk_array_free(a);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_exact),
		cmocka_unit_test(test_static_partition),
		cmocka_unit_test(test_static_errors),
		cmocka_unit_test(test_groups_inverse_of_scatter),
		cmocka_unit_test(test_be_partition),
		cmocka_unit_test(test_be_exact),
		cmocka_unit_test(test_be_errors),
		cmocka_unit_test(test_be_against_plan),
		cmocka_unit_test(test_owner_one_node),
		cmocka_unit_test(test_owner_redirect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
