/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for the pagefault sampler's correction of the profiler's own time (issue 13; check_runtime.py
 * scenario selftime): one thread alternates two phases of the same work on the same 64-page array (a tracked
 * block), sweeping it again and again, one word a page per step, with the same computation between two steps.
 * Phase "m" also mallocs and frees a small block every step (a recorded malloc and free under --small-blocks,
 * microseconds each; tens of nanoseconds plain), phase "p" does not.  A sweep takes far less than a sampler
 * round, so every member page is visited once a round whatever the phase: the samples of a phase (told by their
 * time) are its share of the rounds, i.e. of the time it ran.  Printed: the array ("a ADDR BYTES"), then per
 * chunk its phase, its CLOCK_MONOTONIC start and end and the thread's CPU time in it ("chunk m T0 T1 CPU").
 *
 * Usage: selftime_prog [STEPS [CHUNKS [MALLOCS [SPIN]]]]: STEPS steps per chunk (default 60000), CHUNKS chunks of
 * each phase, alternating p m p m ... (default 6), MALLOCS malloc/free pairs per step of phase m (default 2),
 * SPIN iterations of the computation per step (default 1000).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAGES 64
#define PAGE 4096

static volatile uint64_t sink;
static void *volatile keep;

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t spin(uint64_t x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void chunk(char *arr, int small, long steps, long mallocs, long nspin)
{
	uint64_t x = sink;
	for (long i = 0; i < steps; i++) {
		size_t pg = (size_t)i % PAGES, off = ((size_t)i / PAGES * 64) % PAGE;
		arr[pg * PAGE + off] += 1;
		x = spin(x, nspin);
		for (long k = 0; small && k < mallocs; k++) {
			char *q = malloc(64);
			if (!q)
				exit(1);
			q[0] = (char)x;
			keep = q; /* not elided */
			free(keep);
		}
	}
	sink = x;
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 60000, chunks = argc > 2 ? atol(argv[2]) : 6;
	long mallocs = argc > 3 ? atol(argv[3]) : 2, nspin = argc > 4 ? atol(argv[4]) : 1000;
	char *a = aligned_alloc(PAGE, PAGES * PAGE);

	if (!a)
		return 1;
	for (size_t i = 0; i < PAGES * PAGE; i += PAGE)
		a[i] = 1;
	printf("a %#lx %d\n", (unsigned long)(uintptr_t)a, PAGES * PAGE);
	for (long c = 0; c < 2 * chunks; c++) {
		int m = c % 2;
		uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		chunk(a, m, steps, mallocs, nspin);
		uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), t1 = now_ns(CLOCK_MONOTONIC);
		printf("chunk %c %llu %llu %llu\n", m ? 'm' : 'p', (unsigned long long)t0, (unsigned long long)t1,
		       (unsigned long long)(c1 - c0));
	}
	free(a);
	return 0;
}
