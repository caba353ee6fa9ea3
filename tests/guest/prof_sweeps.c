/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_sweeps): a 2D
 * array of ROWS x COLS doubles, one row per 4 KiB page, initialised in
 * parallel by rows; phase "x" sweeps it by rows with the same partition
 * (each thread its own rows: local, private pages), phase "y" by columns
 * (each thread one band of columns through every row: since a page holds a
 * whole row, every page is read by every thread, uniform sharing across
 * nodes).  Phases are named with nk_profile_phase(), a no-op outside the
 * profiler.
 */
#include <omp.h>
#include <stdlib.h>

#include "numakit.h"
#include "prof_common.h"

#define COLS 512 /* 4 KiB: a row is a page, so a column band touches every page */

int main(int argc, char **argv)
{
	size_t rows = prof_mib(argc, argv, 32) * (1u << 20) / (COLS * sizeof(double));
	double *g, sum = 0;

	g = malloc(rows * COLS * sizeof *g); /* TRUTH:alloc */
	if (!g)
		return 1;
	nk_profile_phase("init");
#pragma omp parallel for schedule(static)
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < COLS; c++)
			g[r * COLS + c] = (double)(r + c); /* TRUTH:init */
	nk_profile_phase("x");
	for (int sweep = 0; sweep < 3; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t r = 0; r < rows; r++)
			for (size_t c = 0; c < COLS; c++)
				sum += g[r * COLS + c]; /* TRUTH:x-sweep */
	}
	nk_profile_phase("y");
	for (int sweep = 0; sweep < 3; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t c = 0; c < COLS; c++)
			for (size_t r = 0; r < rows; r++)
				sum += g[r * COLS + c]; /* TRUTH:y-sweep */
	}
	prof_sink = sum;
	free(g);
	return 0;
}
