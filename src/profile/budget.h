/* SPDX-License-Identifier: BSD-3-Clause
 * How a profiler process spreads its sample budget over a run of unknown
 * length (docs/profile.md, "How the budget is spread").  Pure and
 * header-only: the runtime (preload/prof/runtime.c) compiles it in,
 * tests/unit/test_budget.c tests it.
 *
 * trace: the period (one access in P recorded) is P = max(P0, S W / R),
 * W the accesses the samples so far stand for (their summed weights), R the
 * budget left, S = NK__BUDGET_SPREAD.  Then dR/dW = -R / (S W): the budget
 * left falls as W^(-1/S), halving each time the run's accesses grow 2^S =
 * 256 times, so it is never spent, and every stretch [W, 4 W] of the run
 * gets 1 - 4^(-1/S) = 16 % of what was left at its start.  The first B / (S + 1)
 * samples are taken at P0.  (Thresholds that halve the budget left at each
 * doubling of P cover only B P0 / 2 accesses per doubling: a 4 Mi budget at
 * rate 1 reaches 46 M accesses with one sample left, and the held-out program
 * of issue 13 made 38 M; harmonic thresholds, stage k spending
 * B / ((k+1)(k+2)), gave the last quarter of a run 600 times the budget 85
 * samples of 65536, this rule 764: unit.budget.)
 *
 * Every sample carries the period it was drawn with as its weight, so
 * weighted counts stay unbiased however the period moves (Wald: each gap
 * between two samples has the mean its period was drawn with, and the
 * period depends only on what came before).
 *
 * pagefault (a rate in samples per second): the target rate halves each time
 * half of the budget left is used (R <= B 2^-k in halving k).
 */
#ifndef NK_PROFILE_BUDGET_H
#define NK_PROFILE_BUDGET_H

#include <stdint.h>

/* The budget left halves each time the accesses grow 2^NK__BUDGET_SPREAD times. */
#define NK__BUDGET_SPREAD 8u

/**
 * The trace sampler's period after @p used samples of @p budget that stand
 * for @p weighted accesses, from the first period @p p0 (>= 1):
 * max(p0, ceil(S weighted / (budget - used))), at most UINT32_MAX (weights
 * are u32); UINT32_MAX once the budget is spent.
 */
static inline uint64_t nk__budget_period(uint64_t p0, uint64_t budget, uint64_t used, uint64_t weighted)
{
	if (p0 < 1)
		p0 = 1;
	if (p0 > UINT32_MAX || used >= budget)
		return UINT32_MAX;
	unsigned __int128 num = (unsigned __int128)weighted * NK__BUDGET_SPREAD, left = budget - used;
	unsigned __int128 p = (num + left - 1) / left;
	if (p <= p0)
		return p0;
	return p > UINT32_MAX ? UINT32_MAX : (uint64_t)p;
}

/** How many times the pagefault sampler halved its rate: k with budget 2^-(k+1) < left <= budget 2^-k (63 spent). */
static inline uint32_t nk__budget_halvings(uint64_t budget, uint64_t used)
{
	if (used >= budget)
		return 63;
	uint64_t left = budget - used;
	uint32_t k = 0;
	while (k < 62 && left <= (budget >> (k + 1)))
		k++;
	return k;
}

/** floor(log2(@p period / @p p0)): the doublings of the period that END reports. */
static inline uint32_t nk__budget_doublings(uint64_t p0, uint64_t period)
{
	uint32_t k = 0;
	if (p0 < 1)
		p0 = 1;
	while (period / p0 >= (2ull << k) && k < 63)
		k++;
	return k;
}

#endif
