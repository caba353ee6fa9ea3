/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for the automatic-placement loop (tests/vm/tests/plan_loop): a
 * heap array initialised in parallel with one static partition, then swept
 * several times with the reversed partition (thread t works on block
 * n-1-t), so every thread reads pages another node's thread placed: a
 * partition mismatch.  The fix: pages in blocks in the compute loop's
 * (observed) owner order.
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) * (1u << 20) / sizeof(double);
	double *a = malloc(n * sizeof *a); /* TRUTH:alloc */
	double sum = 0;

	if (!a)
		return 1;
#pragma omp parallel
	{
		size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
		size_t lo = n * t / nt, hi = n * (t + 1) / nt;
		for (size_t i = lo; i < hi; i++)
			a[i] = (double)(i & 1023); /* TRUTH:init */
	}
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel reduction(+ : sum)
		{
			size_t nt = (size_t)omp_get_num_threads(), t = nt - 1 - (size_t)omp_get_thread_num();
			size_t lo = n * t / nt, hi = n * (t + 1) / nt;
			for (size_t i = lo; i < hi; i++)
				sum += a[i] * 0.5; /* TRUTH:compute */
		}
	}
	prof_sink = sum;
	free(a);
	return 0;
}
