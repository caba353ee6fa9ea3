/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_sigsegv): the
 * program has its own SIGSEGV handler and recovers (siglongjmp) from
 * deliberate NULL accesses, before, between and after sweeps of a tracked
 * array that the pagefault sampler is revoking pages of at the same time.
 * The profiler must pass the program's faults on to its handler and keep its
 * own: exit status 0 only when every NULL access was recovered from and the
 * sums are right.
 */
#include <omp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_common.h"

static sigjmp_buf recover;
static volatile uintptr_t nowhere; /* 0 */
static volatile sig_atomic_t caught;

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	(void)sig;
	(void)uctx;
	if (si->si_addr != NULL)
		_exit(3); /* a fault that is not ours reached us: the profiler lost one */
	caught++;
	siglongjmp(recover, 1);
}

static int poke_null(void)
{
	if (sigsetjmp(recover, 1) == 0) {
		/* Through a volatile, so that no optimiser turns the NULL store into a trap (SIGILL). */
		volatile int *p = (volatile int *)nowhere;
		*p = 1; /* TRUTH:null */
		return 0; /* not reached */
	}
	return 1;
}

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) * (1u << 20) / sizeof(double);
	struct sigaction sa;
	double *a, sum = 0;
	int recovered = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return 1;
	recovered += poke_null();
	a = malloc(n * sizeof *a); /* TRUTH:alloc */
	if (!a)
		return 1;
	for (size_t i = 0; i < n; i++)
		a[i] = 1.0; /* TRUTH:init */
	for (int sweep = 0; sweep < 6; sweep++) {
		double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
		for (size_t i = 0; i < n; i++)
			s += a[i]; /* TRUTH:compute */
		if (s != (double)n) {
			fprintf(stderr, "prof_sigsegv: sweep %d summed %g, expected %zu\n", sweep, s, n);
			return 4;
		}
		sum += s;
		recovered += poke_null();
	}
	prof_sink = sum;
	free(a);
	if (recovered != 7 || caught != 7) {
		fprintf(stderr, "prof_sigsegv: recovered %d, handler ran %d times, expected 7\n", recovered,
			(int)caught);
		return 5;
	}
	return 0;
}
