/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_parinit): a heap
 * array initialised in parallel with the same static partition as the
 * compute loop that follows, so every thread works on pages it placed on its
 * own node: reported "fine".
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 32) * (1u << 20) / sizeof(double);
	double *a = malloc(n * sizeof *a); /* TRUTH:alloc */
	double sum = 0;

	if (!a)
		return 1;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++)
		a[i] = (double)(i & 1023); /* TRUTH:init */
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t i = 0; i < n; i++)
			sum += a[i] * 0.5; /* TRUTH:compute */
	}
	prof_sink = sum;
	free(a);
	return 0;
}
