/* SPDX-License-Identifier: BSD-3-Clause
 * An unmodified-style OpenMP program for `numakit run --pin` tests: every
 * thread of one parallel region reports where it runs, one line each,
 *   thread T cpu C node N
 * sorted by thread.  With an argument "pin:SPEC" it instead pins the team
 * itself (nk_placement_build on the live machine + nk_omp_pin) before
 * reporting, to test the in-program API.  Built twice: with GCC's libgomp
 * and with clang's libomp (tests/omp/CMakeLists.txt).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numakit.h"
#include "numakit/omp.h" /* nk_omp_pin */

int main(int argc, char **argv)
{
	nk_machine *m = NULL;
	nk_placement *p = NULL;
	nk_error err = { 0 };
	int n, *cpu, *node, fail = 0;

	if (nk_machine_load_live(&m, &err)) {
		fprintf(stderr, "omp_where: %s\n", err.message);
		return 1;
	}
	if (argc > 1 && !strncmp(argv[1], "pin:", 4) &&
	    nk_placement_build(m, argv[1] + 4, omp_get_max_threads(), &p, &err)) {
		fprintf(stderr, "omp_where: %s\n", err.message);
		return 1;
	}
	n = omp_get_max_threads();
	cpu = calloc((size_t)n, sizeof *cpu);
	node = calloc((size_t)n, sizeof *node);
	if (!cpu || !node)
		return 1;
#pragma omp parallel num_threads(n) reduction(+ : fail)
	{
		int t = omp_get_thread_num();
		nk_error e = { 0 };

		if (p && nk_omp_pin(p, &e)) {
			fprintf(stderr, "omp_where: thread %d: %s\n", t, e.message);
			fail++;
		}
		if (omp_get_num_threads() != n || nk_thread_where(m, &cpu[t], &node[t])) {
			fprintf(stderr, "omp_where: thread %d: team of %d, expected %d, or no getcpu\n", t,
				omp_get_num_threads(), n);
			fail++;
		}
	}
	for (int t = 0; t < n; t++)
		printf("thread %d cpu %d node %d\n", t, cpu[t], node[t]);
	free(cpu);
	free(node);
	nk_placement_free(p);
	nk_machine_free(m);
	return fail ? 1 : 0;
}
