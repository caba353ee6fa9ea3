/* SPDX-License-Identifier: BSD-3-Clause
 * Loop schedules that follow data distributions (Majo & Gross §4.2): static,
 * static-inverse and block-exclusive.  Pure arithmetic, no allocation, no
 * state: they are called by every thread of a team, concurrently, inside a
 * parallel region.  The formulas and the group rule are in docs/schedules.md;
 * the bands are cut exactly as src/policy/plan.c cuts them (first n % t
 * parts one larger), so a schedule and a placement agree element by element.
 */
#include <limits.h>

#include "numakit.h"
#include "threads/schedule_impl.h"

/* Start of part k of n items cut into t parts, the first n % t one larger. */
unsigned long nk__part_start(unsigned long n, unsigned long t, unsigned long k)
{
	unsigned long q = n / t, r = n % t;
	return k * q + (k < r ? k : r);
}

/* The part holding item x (< n). */
unsigned long nk__part_of(unsigned long n, unsigned long t, unsigned long x)
{
	unsigned long q = n / t, r = n % t;
	if (x < r * (q + 1))
		return x / (q + 1);
	return r + (x - r * (q + 1)) / q; /* q > 0 here: x < n = r when q == 0 */
}

/*
 * [begin, end) cut into @p nparts parts, part @p k.  The width end - begin
 * may exceed LONG_MAX (begin very negative): it is computed unsigned, and
 * offsets are added in unsigned arithmetic, which wraps back into range
 * because the result lies in [begin, end].
 */
static nk_range part_range(long begin, long end, unsigned long nparts, unsigned long k)
{
	nk_range r = { end, end };
	if (begin >= end)
		return r;
	unsigned long n = (unsigned long)end - (unsigned long)begin;
	r.begin = (long)((unsigned long)begin + nk__part_start(n, nparts, k));
	r.end = (long)((unsigned long)begin + nk__part_start(n, nparts, k + 1));
	return r;
}

int nk_sched_static(long begin, long end, int tid, int nthreads, nk_range *out)
{
	if (!out || nthreads < 1 || tid < 0 || tid >= nthreads)
		return NK_EINVAL;
	*out = part_range(begin, end, (unsigned long)nthreads, (unsigned long)tid);
	return 0;
}

int nk_sched_static_inverse(long begin, long end, int tid, int nthreads, nk_range *out)
{
	if (!out || nthreads < 1 || tid < 0 || tid >= nthreads)
		return NK_EINVAL;
	*out = part_range(begin, end, (unsigned long)nthreads, (unsigned long)(nthreads - 1 - tid));
	return 0;
}

/*
 * The groups thread @p t of @p T serves, [*g0, *g1), for p groups: the exact
 * inverse of "scatter" (include/numakit.h).  T >= p: thread t is in the one
 * group part_of(T, p, t).  T < p: thread t runs on node index
 * floor(t p / T) and serves every group from there up to the next thread's
 * node, so each group has exactly one thread.
 */
void nk__sched_groups(int t, int T, int p, int *g0, int *g1)
{
	if (T >= p) {
		*g0 = (int)nk__part_of((unsigned long)T, (unsigned long)p, (unsigned long)t);
		*g1 = *g0 + 1;
	} else {
		*g0 = (int)((long long)t * p / T);
		*g1 = (int)((long long)(t + 1) * p / T);
	}
}

/* Append [b, e) to out (merging with the previous range when contiguous). */
static void add_range(nk_range *buf, int *n, long b, long e)
{
	if (b >= e)
		return;
	if (*n && buf[*n - 1].end == b) {
		buf[*n - 1].end = e;
		return;
	}
	buf[*n].begin = b;
	buf[*n].end = e;
	(*n)++;
}

int nk_sched_block_exclusive(long rows, long cols, int p, int view, int phase, long begin, long end, int tid,
			     int nthreads, nk_range *out, size_t cap)
{
	nk_range buf[2];
	long n;
	int g0, g1, count = 0;

	if ((!out && cap) || p < 1 || phase < 0 || phase >= p || nthreads < 1 || tid < 0 || tid >= nthreads)
		return NK_EINVAL;
	if (view != NK_VIEW_ROWS && view != NK_VIEW_COLS)
		return NK_EINVAL;
	if (rows < p || cols < p)
		return NK_EINVAL;
	n = view == NK_VIEW_ROWS ? rows : cols;
	if (begin < end && (begin < 0 || end > n))
		return NK_EINVAL;
	if (begin >= end)
		return 0;

	nk__sched_groups(tid, nthreads, p, &g0, &g1);
	/*
	 * Group g's block in this phase is the band b of the loop dimension
	 * with (b + phase) mod p == g.  A thread's groups are consecutive, so
	 * its bands are consecutive modulo p: one run of bands, or two when the
	 * run wraps past band p-1.  Bands that touch merge into one range, so a
	 * thread has at most NK_SCHED_BE_MAX_RANGES ranges, written in order.
	 */
	int b0 = ((g0 - phase) % p + p) % p, nb = g1 - g0;
	long iv[2][2];
	int niv = 0;
	unsigned long un = (unsigned long)n, up = (unsigned long)p;
	if (b0 + nb > p) { /* wrapped: bands 0..w-1, then b0..p-1 */
		iv[niv][0] = 0;
		iv[niv++][1] = (long)nk__part_start(un, up, (unsigned long)(b0 + nb - p));
		iv[niv][0] = (long)nk__part_start(un, up, (unsigned long)b0);
		iv[niv++][1] = n;
	} else {
		iv[niv][0] = (long)nk__part_start(un, up, (unsigned long)b0);
		iv[niv++][1] = (long)nk__part_start(un, up, (unsigned long)(b0 + nb));
	}
	for (int k = 0; k < niv; k++) {
		long bb = iv[k][0] > begin ? iv[k][0] : begin;
		long be = iv[k][1] < end ? iv[k][1] : end;
		if (bb >= be)
			continue;
		if (nthreads > p) {
			/* several threads in this one group: split its clipped band statically */
			unsigned long s = nk__part_start((unsigned long)nthreads, up, (unsigned long)g0);
			unsigned long e = nk__part_start((unsigned long)nthreads, up, (unsigned long)g0 + 1);
			nk_range r = part_range(bb, be, e - s, (unsigned long)tid - s);
			bb = r.begin;
			be = r.end;
		}
		add_range(buf, &count, bb, be);
	}
	for (int i = 0; i < count && (size_t)i < cap; i++)
		out[i] = buf[i];
	return count;
}
