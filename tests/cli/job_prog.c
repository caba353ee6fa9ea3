/* SPDX-License-Identifier: BSD-3-Clause
 * A tiny "rank" for the job-profile tests (job_check.py): allocates an array, sweeps it for a
 * moment, and exits with the status given as argv[1] (default 0).  Every rank of an SPMD code runs
 * the same: the report must find the array in each rank under one key (its allocation site).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (4u << 20) /* 4 MiB: tracked one by one (over --min-size) */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned char *make_grid(size_t n)
{
	unsigned char *g = malloc(n);
	if (g)
		memset(g, 1, n);
	return g;
}

int main(int argc, char **argv)
{
	unsigned char *grid = make_grid(N);
	volatile uint64_t sum = 0;
	double t0 = now();
	if (!grid)
		return 1;
	while (now() - t0 < 0.3)
		for (size_t i = 0; i < N; i += 64)
			sum += grid[i]++;
	free(grid);
	return argc > 1 ? atoi(argv[1]) : 0;
}
