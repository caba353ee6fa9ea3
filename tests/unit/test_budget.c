/* SPDX-License-Identifier: BSD-3-Clause
 * The sample budget's schedule (src/profile/budget.h): the trace period from
 * the samples used and the accesses they stand for, the pagefault halvings,
 * and a simulated run of the trace sampler on a stream
 * of known length: the samples never exceed the budget, every part of the
 * stream is sampled, and the weights add up to the accesses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "profile/budget.h"

static void test_period(void **state)
{
	(void)state;
	const uint64_t b = 1000;
	/* at p0 until S weighted / left passes it */
	assert_int_equal(nk__budget_period(1, b, 0, 0), 1);
	assert_int_equal(nk__budget_period(0, b, 0, 0), 1);
	assert_int_equal(nk__budget_period(7, b, 100, 100), 7);
	assert_int_equal(nk__budget_period(1, b, 100, 100), 1);   /* 800 / 900 */
	assert_int_equal(nk__budget_period(1, b, 112, 112), 2);   /* 896 / 888: ceil */
	assert_int_equal(nk__budget_period(1, b, 500, 10000), 160);
	assert_int_equal(nk__budget_period(1, b, 999, 1u << 30), UINT32_MAX);
	assert_int_equal(nk__budget_period(1, b, b, 0), UINT32_MAX);
	assert_int_equal(nk__budget_period(1, 0, 0, 0), UINT32_MAX);
	assert_int_equal(nk__budget_period(UINT32_MAX, b, 0, 0), UINT32_MAX);
	assert_int_equal(nk__budget_period(1, UINT64_MAX, 0, UINT64_MAX), 8);
	/* the period never falls as samples and weights grow together */
	uint64_t last = 0, w = 0;
	for (uint64_t u = 0; u < b; u++) {
		uint64_t p = nk__budget_period(3, b, u, w);
		assert_true(p >= last);
		last = p;
		w += p;
	}
	assert_int_equal(nk__budget_doublings(1, 1), 0);
	assert_int_equal(nk__budget_doublings(1, 2), 1);
	assert_int_equal(nk__budget_doublings(3, 11), 1);
	assert_int_equal(nk__budget_doublings(3, 12), 2);
	assert_int_equal(nk__budget_doublings(1, UINT32_MAX), 31);
}

static void test_halvings(void **state)
{
	(void)state;
	const uint64_t b = 4u << 20;
	assert_int_equal(nk__budget_halvings(b, 0), 0);
	assert_int_equal(nk__budget_halvings(b, b / 2 - 1), 0);
	assert_int_equal(nk__budget_halvings(b, b / 2), 1);
	assert_int_equal(nk__budget_halvings(b, b * 3 / 4), 2);
	assert_int_equal(nk__budget_halvings(b, b - 1), 22);
	assert_int_equal(nk__budget_halvings(b, b), 63);
	assert_int_equal(nk__budget_halvings(0, 0), 63);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * The trace sampler's countdown on one stream of @p n accesses cut in 4 phases, with budget @p b and first
 * period @p p0: samples never over the budget, all phases sampled with at least @p min_per_phase samples, and
 * each phase's weights within 4 standard deviations of its accesses (a gap drawn uniformly from [1, 2P - 1]
 * has a variance of about P^2 / 3), plus @p tol for the phase boundaries.
 */
static void simulate(uint64_t n, uint64_t b, uint64_t p0, uint64_t min_per_phase, double tol)
{
	double sq[4] = { 0, 0, 0, 0 };
	uint64_t used = 0, wsum[4] = { 0, 0, 0, 0 }, samples[4] = { 0, 0, 0, 0 }, dropped = 0;
	uint64_t weighted = 0, period = nk__budget_period(p0, b, 0, 0), left = 1 + xorshift() % (2 * period - 1);
	for (uint64_t i = 0; i < n; i++) {
		if (--left)
			continue;
		int ph = (int)(i * 4 / n);
		if (used < b) {
			used++;
			wsum[ph] += period;
			sq[ph] += (double)period * (double)period;
			weighted += period;
			samples[ph]++;
		} else {
			dropped++;
		}
		period = nk__budget_period(p0, b, used, weighted);
		left = period <= 1 ? 1 : 1 + xorshift() % (2 * period - 1);
	}
	assert_true(used <= b);
	assert_int_equal(dropped, 0);
	for (int ph = 0; ph < 4; ph++) {
		print_message("phase %d: %llu samples\n", ph, (unsigned long long)samples[ph]);
		double truth = (double)n / 4, dev = tol + 4.0 * sqrt(sq[ph] / 3.0) / truth;
		assert_true(samples[ph] >= min_per_phase);
		if (!((double)wsum[ph] >= (1 - dev) * truth && (double)wsum[ph] <= (1 + dev) * truth))
			fail_msg("n %llu budget %llu p0 %llu: phase %d weights %llu for %.0f accesses", (unsigned long long)n,
				 (unsigned long long)b, (unsigned long long)p0, ph, (unsigned long long)wsum[ph], truth);
	}
}

static void test_stream(void **state)
{
	(void)state;
	simulate(100000, 1000000, 1, 25000, 0.0);    /* the budget suffices: every access, exact */
	simulate(4000000, 1u << 20, 1, 15000, 0.01);   /* 4 x the budget */
	simulate(40000000, 1u << 16, 1, 500, 0.01);    /* 600 x */
	simulate(200000000, 1u << 16, 1, 300, 0.01);  /* 3000 x */
	simulate(4000000, 4096, 3, 40, 0.01);          /* 1000 x, few samples per phase */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_period),
		cmocka_unit_test(test_halvings),
		cmocka_unit_test(test_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
