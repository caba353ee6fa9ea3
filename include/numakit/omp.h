/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/omp.h: the OpenMP conveniences nk_omp_pin, nk_omp_static, nk_omp_static_inverse.  Header-only:
 * they combine omp_get_thread_num()/omp_get_num_threads() with the functions of numakit/threads.h, so
 * they work with GCC's libgomp and LLVM's libomp alike and add no symbol to libnumakit.  Not included by
 * <numakit.h>: include it yourself, in code compiled with OpenMP (-fopenmp); it includes <omp.h> and
 * <numakit.h>.  Conventions (errors, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  These keep their signatures and behaviour as long as the soname libnumakit.so.0
 * lasts; @since on each names the release that introduced it.
 */
#ifndef NUMAKIT_OMP_H
#define NUMAKIT_OMP_H

#if !defined(_OPENMP)
#error "numakit/omp.h needs OpenMP: compile with -fopenmp (or leave it out and call nk_thread_pin/nk_sched_*)"
#endif

#include <omp.h>

#include "numakit.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Call them from inside a parallel region, by every thread of the team.  Pass a per-thread nk_error (or
 * NULL): the team runs them concurrently.
 */

/**
 * Pin the calling team member to its placement cpu: nk_thread_pin(p, omp_get_thread_num(), err).
 * @since 0.1
 */
static inline int nk_omp_pin(const nk_placement *p, nk_error *err)
{
	return nk_thread_pin(p, omp_get_thread_num(), err);
}

/**
 * The calling team member's static range: nk_sched_static() for its thread number and the team's size.
 * @since 0.1
 */
static inline int nk_omp_static(long begin, long end, nk_range *out)
{
	return nk_sched_static(begin, end, omp_get_thread_num(), omp_get_num_threads(), out);
}

/**
 * The calling team member's static-inverse range: nk_sched_static_inverse() for its thread number and the
 * team's size.
 * @since 0.1
 */
static inline int nk_omp_static_inverse(long begin, long end, nk_range *out)
{
	return nk_sched_static_inverse(begin, end, omp_get_thread_num(), omp_get_num_threads(), out);
}

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_OMP_H */
