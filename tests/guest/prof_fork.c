/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for `numakit profile` (tests/vm/tests/profile_fork): the
 * program forks before any OpenMP use; parent and child each allocate their
 * own array (TRUTH:parent-alloc, TRUTH:child-alloc) and sweep it.  The
 * profile must hold two processes.  Exit status 0 when both sums are right.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prof_common.h"

static int work(size_t n, double *a, const char *who)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		a[i] = 2.0;
	for (int sweep = 0; sweep < 4; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t i = 0; i < n; i++)
			sum += a[i]; /* TRUTH:compute */
	}
	if (sum != 8.0 * (double)n) {
		fprintf(stderr, "prof_fork: %s summed %g\n", who, sum);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = prof_mib(argc, argv, 16) * (1u << 20) / sizeof(double);
	int status = 0, rc;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid == 0) {
		double *child = malloc(n * sizeof *child); /* TRUTH:child-alloc */
		if (!child)
			_exit(1);
		rc = work(n, child, "child");
		free(child);
		exit(rc);
	}
	double *parent = malloc(n * sizeof *parent); /* TRUTH:parent-alloc */
	if (!parent)
		return 1;
	rc = work(n, parent, "parent");
	free(parent);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "prof_fork: the child failed (status %#x)\n", status);
		return 1;
	}
	return rc;
}
