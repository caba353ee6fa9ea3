/* SPDX-License-Identifier: BSD-3-Clause
 * FGDLS (nk_fgdls_*): convergence under deterministic cost models (the cost
 * of a slice is the sum of per-iteration weights, as the SpMV example's
 * cost = nnz), the boundary invariants after every update, errors, the
 * slice -> page -> node runs on synthetic machines (fake thread nodes), and
 * migration on this host (one node here; the multi-node check is the guest
 * test tests/vm/tests/threads_fgdls).  Concurrent records from many threads
 * are exercised for ThreadSanitizer (build-tsan).
 */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/plan.h"
#include "threads/fgdls.h"

/* The bound this test promises (docs/fgdls.md): imbalance < 5% after at most
 * this many updates, for T = 1..16 and every model below, with the default damping. */
#define CONVERGE_BOUND 15
#define N_ITERS 8192

enum model { M_GAUSS, M_RAMP, M_STEP, M_UNIFORM, M_COUNT };
static const char *model_name[] = { "gaussian", "ramp", "step", "uniform" };

/* Per-iteration weight: the Gaussian is the SpMV example's nnz per row. */
static double weight(int model, long i, long n)
{
	switch (model) {
	case M_GAUSS: {
		double z = ((double)i - n / 2.0) / (n / 16.0);
		return 1 + floor(64 * exp(-0.5 * z * z) + 0.5);
	}
	case M_RAMP:
		return (double)(i + 1);
	case M_STEP:
		return i < n / 2 ? 1 : 10;
	default:
		return 1;
	}
}

static double *prefix(int model, long n)
{
	double *p = malloc(((size_t)n + 1) * sizeof *p);
	assert_non_null(p);
	p[0] = 0;
	for (long i = 0; i < n; i++)
		p[i + 1] = p[i] + weight(model, i, n);
	return p;
}

static void check_invariants(const nk_fgdls *f, long begin, long end, int T)
{
	nk_range r;
	long at = begin;
	for (int t = 0; t < T; t++) {
		assert_int_equal(nk_fgdls_slice(f, t, &r), 0);
		assert_int_equal(r.begin, at);
		assert_true(r.end > r.begin); /* non-empty */
		at = r.end;
	}
	assert_int_equal(at, end);
}

/* Record every slice's model cost; returns the imbalance of that iteration. */
static double record_all(nk_fgdls *f, const double *pre, long begin, int T)
{
	nk_range r;
	double imb;
	for (int t = 0; t < T; t++) {
		assert_int_equal(nk_fgdls_slice(f, t, &r), 0);
		assert_int_equal(nk_fgdls_record(f, t, pre[r.end - begin] - pre[r.begin - begin]), 0);
	}
	assert_int_equal(nk_fgdls_imbalance(f, &imb), 0);
	return imb;
}

/* Number of updates until the recorded imbalance is < 5% (-1: not within maxit). */
static int converge(const nk_machine *m, int model, long n, int T, double d, int maxit)
{
	double *pre = prefix(model, n);
	nk_fgdls *f = NULL;
	int it, got = -1;

	assert_int_equal(nk_fgdls_create(m, 0, n, T, &f), 0);
	if (d > 0)
		assert_int_equal(nk_fgdls_set_damping(f, d), 0);
	for (it = 0; it <= maxit; it++) {
		check_invariants(f, 0, n, T);
		if (record_all(f, pre, 0, T) < 0.05) {
			got = it;
			break;
		}
		assert_int_equal(nk_fgdls_update(f), 0);
	}
	nk_fgdls_free(f);
	free(pre);
	return got;
}

static void test_convergence(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=4");
	(void)state;
	for (int model = 0; model < M_COUNT; model++) {
		int worst = 0;
		for (int T = 1; T <= 16; T++) {
			int it = converge(m, model, N_ITERS, T, 0, CONVERGE_BOUND);
			if (it < 0)
				fail_msg("%s, T=%d: imbalance still >= 5%% after %d updates", model_name[model], T,
					 CONVERGE_BOUND);
			if (it > worst)
				worst = it;
			if (T == 1 || model == M_UNIFORM)
				assert_int_equal(it, 0); /* nothing to balance */
		}
		print_message("  %-8s T=1..16: at most %d updates to < 5%%\n", model_name[model], worst);
	}
	nk_machine_free(m);
}

/* The figures behind the default damping (docs/fgdls.md): updates to < 5% per damping. */
static void test_damping_table(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=4");
	static const double ds[] = { 0.25, 0.5, 0.75, 1.0 };
	(void)state;
	for (int model = 0; model < M_COUNT - 1; model++)
		for (size_t k = 0; k < sizeof ds / sizeof *ds; k++) {
			int worst = 0, sum = 0;
			for (int T = 2; T <= 16; T++) {
				int it = converge(m, model, N_ITERS, T, ds[k], 60);
				assert_true(it >= 0);
				sum += it;
				if (it > worst)
					worst = it;
			}
			print_message("  %-8s d=%.2f: T=2..16 max %d mean %.1f updates\n", model_name[model], ds[k],
				      worst, sum / 15.0);
		}
	nk_machine_free(m);
}

/*
 * The same with timing noise: each recorded cost is the model cost times
 * (1 + a u), u uniform in [-1, 1] (deterministic PRNG), as measured times
 * jitter.  Returns the mean true (noise-free) imbalance over updates 20..59.
 */
static double noisy_steady(const nk_machine *m, int model, long n, int T, double d, double a)
{
	double *pre = prefix(model, n), sum = 0;
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(T + 1);
	nk_fgdls *f = NULL;
	nk_range r;

	assert_int_equal(nk_fgdls_create(m, 0, n, T, &f), 0);
	assert_int_equal(nk_fgdls_set_damping(f, d), 0);
	for (int it = 0; it < 60; it++) {
		double max = 0, tot = 0;
		for (int t = 0; t < T; t++) {
			double c, u;
			nk_fgdls_slice(f, t, &r);
			c = pre[r.end] - pre[r.begin];
			tot += c;
			if (c > max)
				max = c;
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			u = (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
			assert_int_equal(nk_fgdls_record(f, t, c * (1 + a * u)), 0);
		}
		if (it >= 20)
			sum += max / (tot / T) - 1;
		assert_int_equal(nk_fgdls_update(f), 0);
	}
	nk_fgdls_free(f);
	free(pre);
	return sum / 40;
}

static void test_damping_noise(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=4");
	static const double ds[] = { 0.25, 0.5, 0.75, 1.0 };
	(void)state;
	for (size_t k = 0; k < sizeof ds / sizeof *ds; k++) {
		double s4 = 0, s16 = 0;
		for (int T = 4; T <= 16; T += 12) {
			double v = noisy_steady(m, M_GAUSS, N_ITERS, T, ds[k], 0.10);
			if (T == 4)
				s4 = v;
			else
				s16 = v;
			assert_true(v < 0.5);
		}
		print_message("  gaussian, 10%% timing noise, d=%.2f: steady true imbalance T=4 %.1f%%, T=16 %.1f%%\n",
			      ds[k], 100 * s4, 100 * s16);
	}
	nk_machine_free(m);
}

/* d = 1 moves a boundary to its cut, d = 0.5 half way (to within rounding). */
static void test_damping_step(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=1");
	double *pre = prefix(M_RAMP, 1000);
	nk_fgdls *f1 = NULL, *f5 = NULL;
	nk_range r1, r5;
	(void)state;
	assert_int_equal(nk_fgdls_create(m, 0, 1000, 2, &f1), 0);
	assert_int_equal(nk_fgdls_create(m, 0, 1000, 2, &f5), 0);
	assert_int_equal(nk_fgdls_set_damping(f1, 1.0), 0);
	record_all(f1, pre, 0, 2);
	record_all(f5, pre, 0, 2);
	assert_int_equal(nk_fgdls_update(f1), 0);
	assert_int_equal(nk_fgdls_update(f5), 0);
	nk_fgdls_slice(f1, 0, &r1);
	nk_fgdls_slice(f5, 0, &r5);
	/* ramp 1..1000 on [0,500) and [500,1000): costs 125250 and 375250; the
	 * half-cost cut interpolated in slice 1 is 500 + (250250-125250)/375250*500 */
	double cut = 500 + (250250.0 - 125250.0) / 375250.0 * 500;
	assert_int_equal(r1.end, lround(cut));
	assert_true(labs(r5.end - (500 + lround((cut - 500) / 2))) <= 1);
	nk_fgdls_free(f1);
	nk_fgdls_free(f5);
	free(pre);
	nk_machine_free(m);
}

/* Ranges that are not 0-based, and the extremes of long. */
static void test_ranges(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2");
	nk_fgdls *f = NULL;
	nk_range r;
	(void)state;
	assert_int_equal(nk_fgdls_create(m, -50, 50, 3, &f), 0);
	check_invariants(f, -50, 50, 3);
	nk_fgdls_slice(f, 0, &r);
	assert_int_equal(r.end - r.begin, 34); /* static: the first n mod T one longer */
	for (int it = 0; it < 5; it++) {
		for (int t = 0; t < 3; t++)
			assert_int_equal(nk_fgdls_record(f, t, t == 1 ? 10.0 : 1.0), 0);
		assert_int_equal(nk_fgdls_update(f), 0);
		check_invariants(f, -50, 50, 3);
	}
	nk_fgdls_free(f);

	f = NULL;
	assert_int_equal(nk_fgdls_create(m, LONG_MIN, LONG_MAX, 7, &f), 0);
	check_invariants(f, LONG_MIN, LONG_MAX, 7);
	for (int t = 0; t < 7; t++)
		assert_int_equal(nk_fgdls_record(f, t, (double)(t + 1)), 0);
	assert_int_equal(nk_fgdls_update(f), 0);
	check_invariants(f, LONG_MIN, LONG_MAX, 7);
	nk_fgdls_free(f);

	/* a team as large as the range: one iteration each, forever */
	f = NULL;
	assert_int_equal(nk_fgdls_create(m, 0, 5, 5, &f), 0);
	for (int t = 0; t < 5; t++)
		assert_int_equal(nk_fgdls_record(f, t, t == 0 ? 100.0 : 0.0), 0);
	assert_int_equal(nk_fgdls_update(f), 0);
	check_invariants(f, 0, 5, 5);
	/* all costs zero: nothing moves */
	for (int t = 0; t < 5; t++)
		assert_int_equal(nk_fgdls_record(f, t, 0.0), 0);
	assert_int_equal(nk_fgdls_update(f), 0);
	check_invariants(f, 0, 5, 5);
	nk_fgdls_free(f);
	nk_machine_free(m);
}

static void test_errors(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2");
	nk_fgdls *f = NULL;
	nk_range r, r2;
	double imb;
	nk_apply_result res;
	(void)state;

	assert_int_equal(nk_fgdls_create(NULL, 0, 10, 2, &f), NK_EINVAL);
	assert_int_equal(nk_fgdls_create(m, 0, 10, 2, NULL), NK_EINVAL);
	assert_int_equal(nk_fgdls_create(m, 5, 5, 1, &f), NK_EINVAL);   /* empty range */
	assert_int_equal(nk_fgdls_create(m, 6, 5, 1, &f), NK_EINVAL);   /* reversed */
	assert_int_equal(nk_fgdls_create(m, 0, 10, 0, &f), NK_EINVAL);  /* no threads */
	assert_int_equal(nk_fgdls_create(m, 0, 10, -3, &f), NK_EINVAL);
	assert_int_equal(nk_fgdls_create(m, 0, 10, 11, &f), NK_EINVAL); /* T > iterations */
	assert_null(f);
	/* more threads than the machine's cpus is fine: FGDLS does not pin */
	assert_int_equal(nk_fgdls_create(m, 0, 100, 64, &f), 0);
	nk_fgdls_free(f);
	nk_fgdls_free(NULL);

	f = NULL;
	assert_int_equal(nk_fgdls_create(m, 0, 100, 4, &f), 0);
	assert_int_equal(nk_fgdls_slice(f, -1, &r), NK_EINVAL);
	assert_int_equal(nk_fgdls_slice(f, 4, &r), NK_EINVAL);
	assert_int_equal(nk_fgdls_slice(f, 0, NULL), NK_EINVAL);
	assert_int_equal(nk_fgdls_slice(NULL, 0, &r), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_damping(f, 0), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_damping(f, -0.5), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_damping(f, 1.5), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_damping(f, NAN), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_damping(NULL, 0.5), NK_EINVAL);
	assert_int_equal(nk_fgdls_imbalance(f, &imb), NK_ENODATA);
	assert_int_equal(nk_fgdls_imbalance(f, NULL), NK_EINVAL);

	assert_int_equal(nk_fgdls_record(f, -1, 1.0), NK_EINVAL);
	assert_int_equal(nk_fgdls_record(f, 4, 1.0), NK_EINVAL);
	assert_int_equal(nk_fgdls_record(f, 0, NAN), NK_EINVAL);
	assert_int_equal(nk_fgdls_record(f, 0, INFINITY), NK_EINVAL);
	assert_int_equal(nk_fgdls_record(f, 0, -1.0), NK_EINVAL);
	assert_int_equal(nk_fgdls_record(NULL, 0, 1.0), NK_EINVAL);
	assert_int_equal(nk_fgdls_imbalance(f, &imb), NK_ENODATA); /* the failures recorded nothing */

	/* update without records, and with one missing: EINVAL, nothing moves */
	assert_int_equal(nk_fgdls_update(f), NK_EINVAL);
	assert_int_equal(nk_fgdls_update(NULL), NK_EINVAL);
	for (int t = 0; t < 3; t++)
		assert_int_equal(nk_fgdls_record(f, t, 5.0 * (t + 1)), 0);
	nk_fgdls_slice(f, 1, &r);
	assert_int_equal(nk_fgdls_update(f), NK_EINVAL);
	nk_fgdls_slice(f, 1, &r2);
	assert_int_equal(r.begin, r2.begin);
	assert_int_equal(r.end, r2.end);
	assert_int_equal(nk_fgdls_imbalance(f, &imb), NK_ENODATA);
	assert_int_equal(nk_fgdls_record(f, 3, 0.0), 0);
	assert_int_equal(nk_fgdls_imbalance(f, &imb), 0);
	assert_float_equal(imb, 15.0 / 7.5 - 1, 1e-12);
	assert_int_equal(nk_fgdls_update(f), 0);
	/* after the update: the imbalance of the iteration it consumed */
	assert_int_equal(nk_fgdls_imbalance(f, &imb), 0);
	assert_float_equal(imb, 1.0, 1e-12);

	/* thread nodes */
	assert_int_equal(nk_fgdls_set_thread_node(f, 0, 7), NK_ENODEV);
	assert_int_equal(nk_fgdls_set_thread_node(f, 0, -1), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_thread_node(f, 4, 0), NK_EINVAL);
	assert_int_equal(nk_fgdls_set_thread_node(NULL, 0, 0), NK_EINVAL);

	/* migrate: unknown nodes, bad flags */
	nk_fgdls *g = NULL;
	assert_int_equal(nk_fgdls_create(m, 0, 100, 2, &g), 0);
	nk_error e;
	assert_int_equal(nk_fgdls_migrate(g, 0, &res, &e), NK_ENODATA);
	assert_int_equal(e.code, NK_ENODATA);
	assert_int_equal(nk_fgdls_set_thread_node(g, 0, 0), 0);
	assert_int_equal(nk_fgdls_set_thread_node(g, 1, 1), 0);
	assert_int_equal(nk_fgdls_migrate(g, 0x80, &res, NULL), NK_EINVAL);
	assert_int_equal(nk_fgdls_migrate(NULL, 0, &res, NULL), NK_EINVAL);
	memset(&res, 0, sizeof res);
	assert_int_equal(nk_fgdls_migrate(g, 0, &res, NULL), 0); /* nothing attached: nothing to do */
	assert_int_equal(res.pages, 0);
	assert_int_equal(res.fallback_node, -1);
	nk_fgdls_free(g);
	nk_fgdls_free(f);
	nk_machine_free(m);
}

static void test_attach_validation(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2");
	nk_fgdls *f = NULL;
	static char buf[4096];
	long off[5] = { 0, 2, 2, 5, 9 };
	long bad[5] = { 0, 2, 1, 5, 9 };
	long neg[5] = { -1, 2, 2, 5, 9 };
	(void)state;
	assert_int_equal(nk_fgdls_create(m, 0, 4, 2, &f), 0);
	assert_int_equal(nk_fgdls_attach(f, NULL, 8), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach(f, buf, 0), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach(NULL, buf, 8), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach(f, buf, SIZE_MAX / 2), NK_EINVAL); /* 4 iterations overflow */
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 8, NULL), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 0, off), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach_offsets(f, NULL, 8, off), NK_EINVAL);
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 8, bad), NK_EINVAL); /* decreasing */
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 8, neg), NK_EINVAL);
	assert_int_equal(nk__fgdls_num_attached(f), 0);
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 8, off), 0); /* empty rows are fine */
	for (int k = 1; k < NK__FGDLS_MAX_ATTACH; k++)
		assert_int_equal(nk_fgdls_attach(f, buf, 8), 0);
	assert_int_equal(nk_fgdls_attach(f, buf, 8), NK_ENOMEM);
	assert_int_equal(nk_fgdls_attach_offsets(f, buf, 8, off), NK_ENOMEM);
	assert_int_equal(nk__fgdls_num_attached(f), NK__FGDLS_MAX_ATTACH);
	nk_fgdls_free(f);
	nk_machine_free(m);
}

/* Expected node of every page, computed the slow way: the iteration owning
 * the page's first byte, the slice owning that iteration, its thread's node. */
static void expect_pages(const nk_fgdls *f, int T, const long *off, size_t elem, long n, uintptr_t addr,
			 size_t len, size_t ps, const int *tnodes, int *want, size_t npages)
{
	size_t delta = addr % ps;
	for (size_t p = 0; p < npages; p++) {
		size_t fb = p ? p * ps - delta : 0;
		long i = 0;
		int t = 0;
		nk_range r;
		assert_true(fb < len);
		while (!((size_t)(off[i] - off[0]) * elem <= fb && fb < (size_t)(off[i + 1] - off[0]) * elem))
			i++;
		assert_true(i < n);
		for (;; t++) {
			nk_fgdls_slice(f, t, &r);
			if (i < r.end)
				break;
		}
		assert_true(t < T);
		want[p] = tnodes[t];
	}
}

static void check_runs(nk_fgdls *f, const nk_machine *m, int T, size_t att, const long *off, size_t elem, long n,
		       const int *tnodes)
{
	size_t ps = (size_t)nk_machine_page_size(m), len, nruns, npages;
	struct nk__plan_run *runs = malloc((size_t)T * sizeof *runs);
	void *addr;
	nk_plan *pl = NULL;

	assert_int_equal(nk__fgdls_runs(f, att, ps, tnodes, &addr, &len, runs, &nruns), 0);
	npages = ((uintptr_t)addr % ps + len - 1) / ps + 1;
	int *want = malloc(npages * sizeof *want), *got = malloc(npages * sizeof *got);
	expect_pages(f, T, off, elem, n, (uintptr_t)addr, len, ps, tnodes, want, npages);
	/* the runs tile the pages, in order, merged */
	size_t at = 0;
	for (size_t k = 0; k < nruns; k++) {
		assert_int_equal(runs[k].first, at);
		assert_true(runs[k].npages > 0);
		if (k)
			assert_true(runs[k].node != runs[k - 1].node);
		for (size_t p = at; p < at + runs[k].npages; p++)
			assert_int_equal(runs[k].node, want[p]);
		at += runs[k].npages;
	}
	assert_int_equal(at, npages);
	/* and the plan made from them says the same */
	assert_int_equal(nk__plan_from_runs(m, addr, len, runs, nruns, &pl, NULL), 0);
	assert_int_equal(nk_plan_num_pages(pl), npages);
	assert_int_equal(nk_plan_nodes(pl, 0, npages, got), 0);
	assert_memory_equal(got, want, npages * sizeof *got);
	nk_plan_free(pl);
	free(want);
	free(got);
	free(runs);
}

static void test_runs_synthetic(void **state)
{
	nk_machine *m = nk_test_synth("nodes=4 cores=1");
	const long n = 3000;
	const int T = 4;
	long *off = malloc((size_t)(n + 1) * sizeof *off), ident[3001];
	double *pre = prefix(M_GAUSS, n);
	int tnodes[4] = { 2, 0, 3, 1 };
	nk_fgdls *f = NULL;
	(void)state;
	/* CSR offsets with Gaussian rows (empty rows at the edges, so some
	 * slices may start inside a page or own none) */
	off[0] = 5; /* the attachment starts at element 5 of base */
	for (long i = 0; i < n; i++)
		off[i + 1] = off[i] + (long)weight(M_GAUSS, i, n) - 1;
	for (long i = 0; i <= n; i++)
		ident[i] = i;
	assert_int_equal(nk_fgdls_create(m, 0, n, T, &f), 0);
	/* fake, page-unaligned addresses: nothing is dereferenced */
	assert_int_equal(nk_fgdls_attach_offsets(f, (void *)(uintptr_t)0x10000100, 12, off), 0);
	assert_int_equal(nk_fgdls_attach(f, (void *)(uintptr_t)0x20000ff8, 8), 0);
	for (int t = 0; t < T; t++)
		assert_int_equal(nk_fgdls_set_thread_node(f, t, tnodes[t]), 0);
	for (int it = 0; it < 6; it++) {
		check_runs(f, m, T, 0, off, 12, n, tnodes);
		check_runs(f, m, T, 1, ident, 8, n, tnodes);
		record_all(f, pre, 0, T);
		assert_int_equal(nk_fgdls_update(f), 0);
	}
	/* a boundary page: two slices share it, the first byte's slice wins */
	{
		size_t ps = 4096, len, nruns;
		struct nk__plan_run runs[4];
		void *addr;
		nk_fgdls *g = NULL;
		int nodes4[4] = { 0, 1, 2, 3 };
		assert_int_equal(nk_fgdls_create(m, 0, 1024, 4, &g), 0);
		/* 1024 iterations of 6 bytes from a page boundary: slice t = 1536 bytes */
		assert_int_equal(nk_fgdls_attach(g, (void *)(uintptr_t)0x30000000, 6), 0);
		assert_int_equal(nk__fgdls_runs(g, 0, ps, nodes4, &addr, &len, runs, &nruns), 0);
		assert_int_equal(len, 6144);
		/* page 0 [0,4096): first byte in slice 0; page 1 [4096,6144): first byte 4096 in slice 2 */
		assert_int_equal(nruns, 2);
		assert_int_equal(runs[0].node, 0);
		assert_int_equal(runs[0].npages, 1);
		assert_int_equal(runs[1].node, 2);
		assert_int_equal(runs[1].npages, 1);
		nk_fgdls_free(g);
	}
	nk_fgdls_free(f);
	free(off);
	free(pre);
	nk_machine_free(m);
}

static void test_plan_from_runs(void **state)
{
	nk_machine *m = nk_test_synth("nodes=3 memless=1 cores=1");
	nk_plan *pl = NULL;
	struct nk__plan_run ok[3] = { { 0, 2, 0 }, { 2, 3, 1 }, { 5, 1, 2 } };
	struct nk__plan_run gap[2] = { { 0, 2, 0 }, { 3, 3, 1 } };
	struct nk__plan_run bad_node[1] = { { 0, 6, 9 } };
	struct nk__plan_run zero[2] = { { 0, 0, 0 }, { 0, 6, 1 } };
	char *addr = (char *)(uintptr_t)0x40000000;
	int nodes[6];
	(void)state;
	assert_int_equal(nk__plan_from_runs(m, addr, 6 * 4096, ok, 3, &pl, NULL), 0);
	assert_int_equal(nk_plan_nodes(pl, 0, 6, nodes), 0);
	/* node 1 has no memory: its pages go to its nearest node with memory */
	int near = nodes[2];
	assert_true(near == 0 || near == 2);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[4], near);
	assert_int_equal(nodes[5], 2);
	nk_plan_free(pl);
	pl = NULL;
	assert_int_equal(nk__plan_from_runs(m, addr, 6 * 4096, gap, 2, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk__plan_from_runs(m, addr, 6 * 4096, ok, 2, &pl, NULL), NK_EINVAL);      /* short */
	assert_int_equal(nk__plan_from_runs(m, addr, 5 * 4096, ok, 3, &pl, NULL), NK_EINVAL);      /* long */
	assert_int_equal(nk__plan_from_runs(m, addr, 6 * 4096, zero, 2, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk__plan_from_runs(m, addr, 6 * 4096, bad_node, 1, &pl, NULL), NK_ENODEV);
	assert_int_equal(nk__plan_from_runs(m, addr, 0, ok, 3, &pl, NULL), NK_EINVAL);
	assert_int_equal(nk__plan_from_runs(NULL, addr, 6 * 4096, ok, 3, &pl, NULL), NK_EINVAL);
	assert_null(pl);
	nk_machine_free(m);
}

/* Migration on this host: every page lands on the (first) node with memory. */
static void test_migrate_live(void **state)
{
	nk_machine *m = NULL;
	nk_error e;
	nk_fgdls *f = NULL;
	nk_apply_result res;
	const long n = 20000;
	const int T = 3;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)n * sizeof(double);
	double *x;
	int target = -1;
	(void)state;
	if (nk_machine_load_live(&m, &e))
		fail_msg("%s", e.message);
	for (int k = 0; k < nk_machine_num_nodes(m) && target < 0; k++) {
		int id = nk_machine_node_id(m, k);
		if ((nk_machine_node_flags(m, id) & (NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED)) ==
		    (NK_NODE_HAS_MEMORY | NK_NODE_MEM_ALLOWED))
			target = id;
	}
	x = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(x != MAP_FAILED);
	madvise(x, len, MADV_NOHUGEPAGE);
	for (long i = 0; i < n / 2; i++) /* half touched, half untouched */
		x[i] = (double)i;
	assert_int_equal(nk_fgdls_create(m, 0, n, T, &f), 0);
	assert_int_equal(nk_fgdls_attach(f, x, sizeof *x), 0);
	/* record() finds this thread's node through getcpu */
	assert_int_equal(nk_fgdls_record(f, 0, 1.0), 0);
	int rn = nk__fgdls_thread_node(f, 0);
	assert_true(rn >= 0);
	assert_true(nk_machine_node_index(m, rn) >= 0);
	for (int t = 0; t < T; t++)
		assert_int_equal(nk_fgdls_set_thread_node(f, t, target), 0);
	memset(&res, 0xff, sizeof res);
	if (nk_fgdls_migrate(f, 0, &res, &e)) {
		if (e.code == NK_ENOSYS)
			skip();
		fail_msg("%s", e.message);
	}
	size_t np = (len + ps - 1) / ps;
	assert_int_equal(res.pages, np);
	assert_int_equal(res.pages_failed, 0);
	assert_int_equal(res.pages_in_place + res.pages_moved + res.pages_untouched + res.pages_fallback, np);
	int *nodes = malloc(np * sizeof *nodes);
	assert_int_equal(nk_where(m, x, len, nodes, NULL), 0);
	for (size_t p = 0; p < np; p++)
		if (nodes[p] >= 0)
			assert_int_equal(nodes[p], target);
	for (long i = 0; i < n / 2; i++)
		assert_true(x[i] == (double)i);
	/* again: nothing left to move */
	assert_int_equal(nk_fgdls_migrate(f, 0, &res, NULL), 0);
	assert_int_equal(res.pages_moved, 0);
	free(nodes);
	nk_fgdls_free(f);
	munmap(x, len);
	nk_machine_free(m);
}

/* Many threads record at once, each its own tid (ThreadSanitizer checks this in build-tsan). */
struct team {
	nk_fgdls *f;
	pthread_barrier_t start, done;
	const double *pre;
	int iters;
};
struct member {
	struct team *team;
	int tid;
};

static void *worker(void *arg)
{
	struct member *me = arg;
	struct team *tm = me->team;
	for (int it = 0; it < tm->iters; it++) {
		nk_range r;
		pthread_barrier_wait(&tm->start);
		if (nk_fgdls_slice(tm->f, me->tid, &r) ||
		    nk_fgdls_record(tm->f, me->tid, tm->pre[r.end] - tm->pre[r.begin]))
			abort();
		pthread_barrier_wait(&tm->done);
	}
	return NULL;
}

static void test_concurrent_records(void **state)
{
	enum { T = 8, ITERS = 12 };
	nk_machine *m = NULL;
	nk_error e;
	struct team tm;
	struct member mb[T];
	pthread_t th[T];
	double imb = 1;
	(void)state;
	if (nk_machine_load_live(&m, &e))
		fail_msg("%s", e.message);
	tm.pre = prefix(M_GAUSS, N_ITERS);
	tm.iters = ITERS;
	tm.f = NULL;
	assert_int_equal(nk_fgdls_create(m, 0, N_ITERS, T, &tm.f), 0);
	pthread_barrier_init(&tm.start, NULL, T + 1);
	pthread_barrier_init(&tm.done, NULL, T + 1);
	for (int t = 0; t < T; t++) {
		mb[t] = (struct member){ &tm, t };
		assert_int_equal(pthread_create(&th[t], NULL, worker, &mb[t]), 0);
	}
	for (int it = 0; it < ITERS; it++) {
		pthread_barrier_wait(&tm.start);
		pthread_barrier_wait(&tm.done);
		assert_int_equal(nk_fgdls_imbalance(tm.f, &imb), 0);
		assert_int_equal(nk_fgdls_update(tm.f), 0);
		check_invariants(tm.f, 0, N_ITERS, T);
	}
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	assert_true(imb < 0.05);
	for (int t = 0; t < T; t++)
		assert_true(nk__fgdls_thread_node(tm.f, t) >= 0); /* every record found its node */
	pthread_barrier_destroy(&tm.start);
	pthread_barrier_destroy(&tm.done);
	nk_fgdls_free(tm.f);
	free((void *)tm.pre);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_convergence),
		cmocka_unit_test(test_damping_table),
		cmocka_unit_test(test_damping_noise),
		cmocka_unit_test(test_damping_step),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_attach_validation),
		cmocka_unit_test(test_runs_synthetic),
		cmocka_unit_test(test_plan_from_runs),
		cmocka_unit_test(test_migrate_live),
		cmocka_unit_test(test_concurrent_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
