/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_hotspot): two
 * arrays, one static (symbol hot_static) and one on the heap (allocation site
 * at the TRUTH:heap-alloc line), both initialised serially by the master
 * thread (TRUTH:static-init, TRUTH:heap-init) and then read by every thread
 * in a parallel loop for several sweeps.  All pages sit on the master's node
 * and every other node reads them remotely: a hot-spot, whose first touch is
 * the init line.
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

#define STATIC_N (1u << 20) /* 8 MiB of doubles */

double hot_static[STATIC_N];

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) * (1u << 20) / sizeof(double);
	double *hot_heap = malloc(n * sizeof *hot_heap); /* TRUTH:heap-alloc */
	double sum = 0;

	if (!hot_heap)
		return 1;
	/* Bind the team, the master included, before the serial initialisation: otherwise the master
	 * initialises from wherever the scheduler put it, and the truth (which node the arrays land on,
	 * so whether the master's own quarter is local) changes from run to run — the trace run once
	 * measured 85% remote against the usual 64%. */
#pragma omp parallel
	{
		(void)0;
	}
	for (size_t i = 0; i < STATIC_N; i++)
		hot_static[i] = (double)i; /* TRUTH:static-init */
	for (size_t i = 0; i < n; i++)
		hot_heap[i] = 1.0 / (double)(i + 1); /* TRUTH:heap-init */
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t i = 0; i < n; i++)
			sum += hot_heap[i] * hot_static[i % STATIC_N]; /* TRUTH:compute */
	}
	prof_sink = sum;
	free(hot_heap);
	return 0;
}
