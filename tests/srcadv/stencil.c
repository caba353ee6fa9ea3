/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source sample: a 1D stencil.  grid (a static array) and
 * next (malloc'd in main) are initialised serially, then computed in
 * parallel loops with schedule(static): the first-touch hot-spot.
 * Expected advice: block for both, placed before the serial initialisation.
 */
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

static double grid[N];

int main(void)
{
	double *next = malloc(N * sizeof *next);
	double sum = 0;

	if (!next)
		return 1;
	for (int i = 0; i < N; i++) {
		grid[i] = (double)(i % 17);
		next[i] = 0;
	}
	for (int it = 0; it < 4; it++) {
#pragma omp parallel for schedule(static)
		for (int i = 1; i < N - 1; i++)
			next[i] = (grid[i - 1] + grid[i] + grid[i + 1]) / 3.0;
#pragma omp parallel for schedule(static) \
	shared(grid, next)
		for (int i = 1; i < N - 1; i++)
			grid[i] = next[i];
	}
	for (int i = 0; i < N; i++)
		sum += grid[i];
	printf("stencil %.6f\n", sum);
	free(next);
	return 0;
}
