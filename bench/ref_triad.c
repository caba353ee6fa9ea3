/* SPDX-License-Identifier: BSD-3-Clause
 * Reference STREAM-style triad, independent of libnumakit, for bench/compare.sh.
 * Usage: ref_triad BYTES REPS THREADS
 * Three arrays of BYTES/3 in total (as numakit cuts its buffer), a[i] = b[i] + 3*c[i],
 * 24 bytes counted per element (STREAM), threads pinned to cpus 0..THREADS-1, one untimed
 * run first; prints the median MB/s.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double *A, *B, *C;
static size_t N;
static int T;
static pthread_barrier_t bar;
static double times[1000];
static int reps;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void triad(double *restrict a, const double *restrict b, const double *restrict c, size_t n)
{
	const double s = 3.0;

	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	cpu_set_t set;
	size_t lo = N / 8 * (size_t)t / (size_t)T * 8, hi = N / 8 * (size_t)(t + 1) / (size_t)T * 8;
	double t0 = 0;

	CPU_ZERO(&set);
	CPU_SET(t, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	for (size_t i = lo; i < hi; i++) {
		A[i] = 1;
		B[i] = 2;
		C[i] = 0.5;
	}
	for (int r = 0; r <= reps; r++) {
		pthread_barrier_wait(&bar);
		if (t == 0)
			t0 = now();
		triad(A + lo, B + lo, C + lo, hi - lo);
		pthread_barrier_wait(&bar);
		if (t == 0 && r > 0)
			times[r - 1] = now() - t0;
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t bytes;
	pthread_t th[256];
	char *buf;

	if (argc != 4)
		return 2;
	bytes = strtoull(argv[1], NULL, 10);
	reps = atoi(argv[2]);
	T = atoi(argv[3]);
	if (reps < 1 || reps > 999 || T < 1 || T > 256)
		return 2;
	N = bytes / 3 / sizeof(double) / 8 * 8;
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	A = (double *)buf;
	B = A + N;
	C = B + N;
	pthread_barrier_init(&bar, NULL, (unsigned)T);
	for (int t = 0; t < T; t++)
		pthread_create(&th[t], NULL, worker, (void *)(long)t);
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	qsort(times, (size_t)reps, sizeof times[0], cmp);
	printf("%.1f\n", 24.0 * (double)N / times[reps / 2] / 1e6);
	return 0;
}
