/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source sample: an irregular gather through an index
 * array under a dynamic schedule.
 * Expected advice: cyclic for table (irregular), idx and out (dynamic schedule).
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N 300000 /* -DN=... after -- changes it */
#endif

static int idx[N];

int main(void)
{
	double *table, *out;
	double sum = 0;

	table = calloc(N, sizeof(double));
	if (posix_memalign((void **)&out, 4096, N * sizeof(double)))
		return 1;
	if (!table)
		return 1;
	for (int i = 0; i < N; i++) {
		idx[i] = (int)(((long)i * 7919) % N);
		table[i] = i * 0.5;
	}
#pragma omp parallel for schedule(dynamic, 64)
	for (int i = 0; i < N; i++)
		out[i] = table[idx[i]] * 2.0;
	for (int i = 0; i < N; i++)
		sum += out[i];
	printf("gather %.3f\n", sum);
	free(table);
	free(out);
	return 0;
}
