/* SPDX-License-Identifier: BSD-3-Clause
 * Idle latency kernel: dependent loads along one random cycle through every
 * cache line of a buffer.  A single cycle (Sattolo, not Fisher-Yates) makes
 * sure the chase cannot fall into a short loop that fits in cache, and a
 * random order defeats the hardware prefetchers, so each load waits for
 * memory.
 */
#include "bench/bench_impl.h"

static inline void **line_at(void *buf, size_t i, size_t stride)
{
	return (void **)((char *)buf + i * stride);
}

/* Uniform in [0, bound) without division (Lemire); bias < bound / 2^64. */
static inline size_t below(uint64_t *st, size_t bound)
{
	return (size_t)(((unsigned __int128)nk__bench_rand(st) * bound) >> 64);
}

void nk__bench_chase_init(void *buf, size_t nlines, size_t stride, uint64_t seed)
{
	uint64_t st = seed;

	if (!nlines)
		return;
	for (size_t i = 0; i < nlines; i++)
		*line_at(buf, i, stride) = line_at(buf, i, stride);
	/* Sattolo: swapping with j < i only turns the identity into one n-cycle. */
	for (size_t i = nlines - 1; i > 0; i--) {
		size_t j = below(&st, i);
		void **a = line_at(buf, i, stride), **b = line_at(buf, j, stride);
		void *t = *a;

		*a = *b;
		*b = t;
	}
}

void *nk__bench_chase(void *start, size_t steps)
{
	void **p = start;
	size_t i = 0;

	for (; i + 16 <= steps; i += 16) {
#define NK__HOP p = (void **)*p;
		NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP
		NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP NK__HOP
#undef NK__HOP
	}
	for (; i < steps; i++)
		p = (void **)*p;
	return p;
}
