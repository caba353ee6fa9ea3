/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source sample: a small coefficient table (left alone: it
 * stays in caches) beside a large array computed in parallel and never
 * initialised serially.
 * Expected advice: coef left alone (small); data block, no serial init.
 */
#include <stdio.h>

#define N (1 << 19)

double coef[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
double data[N];

int main(void)
{
	double sum = 0;

#pragma omp parallel
	{
#pragma omp for
		for (int i = 0; i < N; i++)
			data[i] = coef[i % 8] * i;
	}
	for (int i = 0; i < N; i++)
		sum += data[i];
	printf("small %.1f\n", sum);
	return 0;
}
