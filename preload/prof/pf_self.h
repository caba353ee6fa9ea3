/* SPDX-License-Identifier: BSD-3-Clause
 * The profiler's own time in a thread, for the pagefault sampler's weights (issue 13): arithmetic only, shared
 * by pf_fault.c (the per-thread state, the hooks' and the fault handler's entry points) and its unit test
 * (tests/prof/pf_self_unit.c).  AS-safe: no locks, no allocation, no errno (exp is never asked to underflow).
 *
 * The thread adds up the wall time it spends inside the profiler (recording a small block's malloc or free,
 * handling a fault): one running total, written by the hooks and the handler.  At each of its samples the
 * thread reads it: the interval since its last reading brings dp ns of the profiler's time in dw ns of wall
 * time, and the two go into exponentially weighted sums (the older ones weighted e^(-dw / tau); pf_fault.c
 * takes tau half the sampler's round period, so the sums hold about the last round), f = sum dp / sum dw; for a
 * page the same thread sampled last, pf_fault.c takes the share of exactly the time since (pf_self_share).
 * Ratios of whole intervals between samples, not a window ending at the sample: samples come right after the
 * sampler's round, often right after the thread waited for its cpu, and a window decaying through that wait
 * read 0.44 where the profiler took 0.55 of the thread's time (tests/prof selftime on a loaded host).  Time
 * the thread waits for a cpu falls inside hooks and outside them alike (as often as it runs there): f is the
 * profiler's share of the thread's time either way.
 */
#ifndef NK_PRELOAD_PROF_PF_SELF_H
#define NK_PRELOAD_PROF_PF_SELF_H

#include <math.h>
#include <stdint.h>

/* A sample's weight is scaled by 1 - f with f at most this: 15/16 keeps PF_W_ONE (16) times it at least 1. */
#define PF_SELF_FMAX (15.0 / 16.0)

struct pf_self {
	uint64_t t_ns; /* the last reading (nkp_now's clock); 0: none yet */
	uint64_t seen; /* the thread's running total of the profiler's time then */
	double prof;   /* weighted sum of the profiler's time in the intervals between readings, ns */
	double wall;   /* weighted sum of their lengths, ns */
};

/* e^(-dt / tau), 0 beyond 40 tau (no underflow, so no ERANGE in errno). */
static inline double pf_self_decay(uint64_t dt, double tau)
{
	double x = tau > 0 ? (double)dt / tau : 1e9;
	if (x >= 40.0)
		return 0.0;
	return exp(-x);
}

/*
 * A reading at @p now, the thread's running total of the profiler's time being @p total: returns f, the
 * profiler's share of the thread's recent time, in [0, 1].  The first reading (or one that goes back in time)
 * starts the sums and returns 0.
 */
static inline double pf_self_read(struct pf_self *s, uint64_t now, uint64_t total, double tau)
{
	if (!s->t_ns || now < s->t_ns || total < s->seen) {
		s->t_ns = now ? now : 1;
		s->seen = total;
		s->prof = s->wall = 0;
		return 0.0;
	}
	uint64_t dw = now - s->t_ns, dp = total - s->seen;
	double k = pf_self_decay(dw, tau);
	s->prof = s->prof * k + (double)dp;
	s->wall = s->wall * k + (double)dw;
	s->t_ns = now;
	s->seen = total;
	if (!(s->wall > 0) || !(s->prof > 0))
		return 0.0;
	return s->prof >= s->wall ? 1.0 : s->prof / s->wall;
}

/* The profiler's share of a stretch of a thread's time: @p prof ns of its @p wall ns, in [0, 1]. */
static inline double pf_self_share(uint64_t prof, uint64_t wall)
{
	if (!wall || !prof)
		return 0.0;
	return prof >= wall ? 1.0 : (double)prof / (double)wall;
}

/*
 * The factor of a sample's weight: the probability that the visit would have been sampled at the program's own
 * speed.  A visit is sampled when a round revoked the page between two accesses: the first round after the
 * page's last fault (at least PF_VISIT_NS later) revoked it, @p lat_ns before this access, and the rounds after
 * that one until this access came would each have revoked it too, so 1 + floor(lat / period) round starts fell
 * in the wall time between the two.  With a share f of that time the profiler's, the program's own time there
 * is 1 - f of it: as many round starts in it as if each were kept with probability 1 - f, and the visit is
 * sampled when one is kept, 1 - f^(1 + floor(lat / period)).  A page the thread comes back to within a round
 * (lat < period: every visit a round's, as many as the phase lasts rounds) keeps 1 - f; one left alone for
 * several rounds (a sweep every 50 ms: as many visits as sweeps, however slow) keeps nearly all.  f is clamped
 * to PF_SELF_FMAX.
 */
static inline double pf_self_keep(double f, uint64_t lat_ns, double period_ns)
{
	if (!(f > 0.0))
		return 1.0;
	if (f > PF_SELF_FMAX)
		f = PF_SELF_FMAX;
	double rounds = period_ns > 0 ? (double)lat_ns / period_ns : 0.0;
	unsigned n = 1 + (rounds >= 64.0 ? 64u : (unsigned)rounds);
	double p = f;
	for (unsigned i = 1; i < n && p > 1e-12; i++)
		p *= f;
	return 1.0 - p;
}

/* xorshift64*: the per-thread generator of the stochastic rounding.  @p *x must not be 0. */
static inline uint64_t pf_self_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

/*
 * A weight @p w scaled by @p keep (clamped to [1 - PF_SELF_FMAX, 1]) and rounded at random to one of the two
 * integers around it, so that its expectation is exactly w keep: rounding to the nearest would shift every
 * weight of a phase the same way (w = 16, keep = 0.4: 6 for 6.4).  At least 1 when w >= 16.
 */
static inline uint32_t pf_self_weight(uint32_t w, double keep, uint64_t *rng)
{
	if (!(keep < 1.0))
		return w;
	if (keep < 1.0 - PF_SELF_FMAX)
		keep = 1.0 - PF_SELF_FMAX;
	double x = (double)w * keep;
	uint64_t k = (uint64_t)x;
	double rest = x - (double)k;
	if (rest > 0 && (double)(pf_self_rand(rng) >> 11) * 0x1p-53 < rest)
		k++;
	if (k < 1)
		k = 1;
	return k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
}

#endif
