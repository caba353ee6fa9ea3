/* SPDX-License-Identifier: BSD-3-Clause
 * Issue 19: the profiler's cost on a malloc-heavy program.  Allocates N blocks of SIZE bytes one by one
 * (writing each once, as a row-by-row grid does), then frees them; prints ns per malloc+free pair.
 * bench/malloc_small.sh runs it plain and under `numakit profile` (small blocks recorded) and prints
 * the ratio; bench/malloc_small_ab.sh compares two builds' runtimes by the thread's CPU time, printed last
 * (the host's load moves the wall time far more).  Usage: malloc_small [N] [SIZE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000, size = argc > 2 ? strtoul(argv[2], NULL, 10) : 2048;
	char **p = malloc(n * sizeof *p);
	struct timespec a, b, ca, cb;
	if (!p)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
	for (size_t i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (!p[i])
			return 1;
		p[i][0] = (char)i;
	}
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	double cpu = (double)(cb.tv_sec - ca.tv_sec) * 1e9 + (double)(cb.tv_nsec - ca.tv_nsec);
	printf("%.1f ns per malloc+free (%zu blocks of %zu bytes), cpu %.1f\n", ns / (double)n, n, size, cpu / (double)n);
	free(p);
	return 0;
}
