/* SPDX-License-Identifier: BSD-3-Clause
 * A small program for the plan runtime tests (check_plan.py): a static
 * array and a heap array from a fixed allocation site, both initialised
 * serially, then read by a second thread (the first-thread trigger), a
 * phase mark, a realloc that grows the heap array, malloc_usable_size,
 * reallocarray, a range named with nk_profile_name, an mmap'ed array, and
 * free.  It prints what it computed: the same with and
 * without a plan, or the runtime changed the program's results.
 *
 *   plan_prog            the run
 *   plan_prog where      also print the node of the first page of each array (move_pages)
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "numakit.h"

#define N_STATIC (1024 * 1024)   /* 8 MiB of doubles */
#define N_HEAP (512 * 1024)      /* 4 MiB */

double grid[N_STATIC];

/* The allocation site the plan names: not inlined, so the key's first frame is here. */
__attribute__((noinline)) static double *make_heap(size_t n)
{
	double *p = malloc(n * sizeof(double));
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static char *make_other(size_t n)
{
	char *p = calloc(n, 1);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static double *make_mapped(size_t n)
{
	void *p = mmap(NULL, n * sizeof(double), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p == MAP_FAILED ? NULL : p;
}

struct job {
	const double *a;
	size_t n;
	double sum;
};

static void *reader(void *arg)
{
	struct job *j = arg;
	double s = 0;
	/* a few sweeps: enough time for the profiler's sampler to see every array */
	for (int sweep = 0; sweep < 4; sweep++) {
		s = 0;
		for (size_t i = 0; i < j->n; i++)
			s += j->a[i];
		__asm__ volatile("" ::: "memory");
	}
	j->sum = s;
	return NULL;
}

static int node_of(const void *p)
{
	void *pages[1] = { (void *)((uintptr_t)p & ~(uintptr_t)4095) };
	int status[1] = { -1 };
	if (syscall(SYS_move_pages, 0, 1UL, pages, NULL, status, 0))
		return -1;
	return status[0];
}

int main(int argc, char **argv)
{
	int where = argc > 1 && !strcmp(argv[1], "where");
	double *h = make_heap(N_HEAP);
	char *other = make_other(3 * 65536);
	int bad = 0;

	if (!h || !other) {
		fprintf(stderr, "plan_prog: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < N_STATIC; i++)
		grid[i] = (double)(i % 1000);
	for (size_t i = 0; i < N_HEAP; i++)
		h[i] = (double)(i % 777) * 0.5;
	for (size_t i = 0; i < 3 * 65536; i++)
		bad += other[i] != 0;
	nk_profile_name(other, 3 * 65536, "other"); /* a plan may name it "name:other" */
	if (malloc_usable_size(h) < N_HEAP * sizeof(double))
		bad++;
	double *mapped = make_mapped(N_HEAP / 2);
	if (!mapped) {
		fprintf(stderr, "plan_prog: mmap failed\n");
		return 1;
	}
	double msum = 0;
	for (size_t i = 0; i < N_HEAP / 2; i++)
		mapped[i] = (double)(i % 13);
	for (size_t i = 0; i < N_HEAP / 2; i++)
		msum += mapped[i];
	munmap(mapped, N_HEAP / 2 * sizeof(double));

	struct job js = { grid, N_STATIC, 0 }, jh = { h, N_HEAP, 0 };
	pthread_t t1, t2;
	if (pthread_create(&t1, NULL, reader, &js) || pthread_create(&t2, NULL, reader, &jh)) {
		fprintf(stderr, "plan_prog: cannot create threads\n");
		return 1;
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	nk_profile_phase("grow");

	/* grow the heap array: contents kept */
	double *h2 = realloc(h, 2 * N_HEAP * sizeof(double));
	if (!h2) {
		fprintf(stderr, "plan_prog: realloc failed\n");
		return 1;
	}
	h = h2;
	for (size_t i = 0; i < N_HEAP; i++)
		bad += h[i] != (double)(i % 777) * 0.5;
	for (size_t i = N_HEAP; i < 2 * N_HEAP; i++)
		h[i] = 1.0;
	if (malloc_usable_size(h) < 2 * N_HEAP * sizeof(double))
		bad++;
	/* shrink through reallocarray: contents kept */
	h2 = reallocarray(h, N_HEAP / 2, sizeof(double));
	if (!h2) {
		fprintf(stderr, "plan_prog: reallocarray failed\n");
		return 1;
	}
	h = h2;
	double tail = 0;
	for (size_t i = 0; i < N_HEAP / 2; i++)
		tail += h[i];

	printf("static sum %.1f\n", js.sum);
	printf("heap sum %.1f\n", jh.sum);
	printf("after realloc %.1f\n", tail);
	printf("mapped sum %.1f\n", msum);
	printf("errors %d\n", bad);
	if (where) /* not compared: depends on the machine */
		fprintf(stderr, "where grid %d heap %d\n", node_of(&grid[N_STATIC / 2]), node_of(h));
	free(h);
	free(other);
	return bad != 0;
}
