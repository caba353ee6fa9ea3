/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for the automatic-placement loop (tests/vm/tests/plan_loop): a
 * read-mostly lookup table initialised serially by the master, then read at
 * random (irregularly) by every thread.  All pages sit on the master's node:
 * its memory serves every thread.  No placement makes random reads from all
 * nodes local (3 of 4 stay remote on 4 nodes); spreading the table
 * (cyclic) spreads the traffic over every node's memory.
 */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "prof_common.h"

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) * (1u << 20) / sizeof(double);
	double *table = malloc(n * sizeof *table); /* TRUTH:alloc */
	double sum = 0;

	if (!table)
		return 1;
#pragma omp parallel
	{
		(void)0; /* bind the team before the serial init (see prof_hotspot.c) */
	}
	for (size_t i = 0; i < n; i++)
		table[i] = 1.0 / (double)(i + 1); /* TRUTH:init */
#pragma omp parallel reduction(+ : sum)
	{
		uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(omp_get_thread_num() + 1);
		for (size_t k = 0; k < 6 * n / (size_t)omp_get_num_threads(); k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			sum += table[x % n]; /* TRUTH:lookup */
		}
	}
	prof_sink = sum;
	free(table);
	return 0;
}
