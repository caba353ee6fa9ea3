/*
 * Known truth for `numakit profile` (tests/vm/tests/profile_sweeps): a 2D
 * array initialised in parallel by rows; phase "x" sweeps it by rows with the
 * same partition (each thread its own rows: local), phase "y" by columns
 * (each thread one band of columns through every row: every page is read by
 * every thread, uniform sharing across nodes).  Phases are named with
 * nk_profile_phase(), a no-op outside the profiler.
 */
#include <omp.h>
#include <stdlib.h>

#include "numakit.h"
#include "prof_common.h"

int main(int argc, char **argv)
{
	size_t mib = prof_mib(argc, argv, 32);
	size_t side = 1;
	double *g, sum = 0;

	while ((side * 2) * (side * 2) * sizeof(double) <= mib * (1u << 20))
		side *= 2;
	g = malloc(side * side * sizeof *g); /* TRUTH:alloc */
	if (!g)
		return 1;
	nk_profile_phase("init");
#pragma omp parallel for schedule(static)
	for (size_t r = 0; r < side; r++)
		for (size_t c = 0; c < side; c++)
			g[r * side + c] = (double)(r + c); /* TRUTH:init */
	nk_profile_phase("x");
	for (int sweep = 0; sweep < 3; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t r = 0; r < side; r++)
			for (size_t c = 0; c < side; c++)
				sum += g[r * side + c]; /* TRUTH:x-sweep */
	}
	nk_profile_phase("y");
	for (int sweep = 0; sweep < 3; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t c = 0; c < side; c++)
			for (size_t r = 0; r < side; r++)
				sum += g[r * side + c]; /* TRUTH:y-sweep */
	}
	prof_sink = sum;
	free(g);
	return 0;
}
