/* SPDX-License-Identifier: BSD-3-Clause
 * A program whose tracked accesses are known by construction, for the trace
 * sampler (tests/prof/trace_check.py).  Built with `numakit cc clang -O0`:
 * at -O0 every array element access is one load or store callback and the
 * loop variables live on the stack, which is not tracked.
 *
 *   main thread:  NA stores to A (static, .bss), then NA loads of A
 *   two threads:  NB / 2 stores each to B (heap, 1 MiB: tracked)
 *
 * With the argument "fork", a child then makes NA / 2 loads of A and exits.
 * It prints "A ADDR BYTES", "B ADDR BYTES" (and "child PID") for the checker.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NA 1000
#define NB 3000
#define B_BYTES (1u << 20)

int A[NA];

struct job {
	long *b;
	int first, n;
};

static void *store_b(void *arg)
{
	struct job *j = arg;
	long *b = j->b;

	for (int i = j->first; i < j->first + j->n; i++)
		b[i] = i;
	return NULL;
}

int main(int argc, char **argv)
{
	long *b = malloc(B_BYTES);
	struct job jobs[2];
	pthread_t t[2];
	long sum = 0;

	if (!b)
		return 1;
	for (int i = 0; i < NA; i++)
		A[i] = i;
	for (int i = 0; i < NA; i++)
		sum += A[i];
	for (int k = 0; k < 2; k++) {
		jobs[k].b = b;
		jobs[k].first = k * (NB / 2) * 4; /* apart: different pages for each thread */
		jobs[k].n = NB / 2;
		if (pthread_create(&t[k], NULL, store_b, &jobs[k]))
			return 1;
	}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("A %lu %lu\nB %lu %lu\nsum %ld\n", (unsigned long)(void *)A, (unsigned long)sizeof A,
	       (unsigned long)(void *)b, (unsigned long)B_BYTES, sum);
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		fflush(stdout);
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (pid == 0) {
			long s2 = 0;
			for (int i = 0; i < NA / 2; i++)
				s2 += A[i];
			exit(s2 == (long)(NA / 2) * (NA / 2 - 1) / 2 ? 0 : 1);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
		printf("child %d\n", (int)pid);
	}
	free(b);
	return sum == (long)NA * (NA - 1) / 2 ? 0 : 1;
}
