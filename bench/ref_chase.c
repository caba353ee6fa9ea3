/* SPDX-License-Identifier: BSD-3-Clause
 * Reference pointer chase (lmbench lat_mem_rd style, random order), independent of libnumakit,
 * for bench/compare.sh.  Usage: ref_chase BYTES REPS STEPS
 * One pointer per 64-byte line, a random cyclic permutation built with its own generator
 * (drand48 + Sattolo), pinned to cpu 0, one untimed run first; prints the median ns per load.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t bytes, lines, steps;
	int reps;
	char *buf;
	size_t *perm;
	double times[1000];
	void **p;
	cpu_set_t set;

	if (argc != 4)
		return 2;
	bytes = strtoull(argv[1], NULL, 10);
	reps = atoi(argv[2]);
	steps = strtoull(argv[3], NULL, 10);
	if (reps < 1 || reps > 999)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof set, &set);
	lines = bytes / 64;
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	perm = malloc(lines * sizeof *perm);
	if (buf == MAP_FAILED || !perm)
		return 1;
	for (size_t i = 0; i < lines; i++)
		perm[i] = i;
	srand48(12345);
	for (size_t i = lines - 1; i > 0; i--) {
		size_t j = (size_t)(drand48() * (double)i), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(buf + i * 64) = buf + perm[i] * 64;
	free(perm);
	if (steps > lines)
		steps = lines;
	p = (void **)buf;
	for (int r = 0; r <= reps; r++) {
		double t0 = now();

		for (size_t i = 0; i < steps; i++)
			p = (void **)*p;
		if (r > 0)
			times[r - 1] = (now() - t0) * 1e9 / (double)steps;
	}
	qsort(times, (size_t)reps, sizeof times[0], cmp);
	printf("%.2f %p\n", times[reps / 2], (void *)p);
	return 0;
}
