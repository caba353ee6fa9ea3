/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source sample: a scratch array private to each thread
 * (left alone) and a result array written once per iteration.
 * Expected advice: scratch left alone (private); res block.
 */
#include <stdio.h>

#define M 40000
#define N 100000

static double scratch[M];

int main(void)
{
	static double res[N];
	double sum = 0;

#pragma omp parallel for private(scratch) schedule(static)
	for (int i = 0; i < N; i++) {
		scratch[i % M] = i;
		scratch[(i + 1) % M] = 2.0 * i;
		res[i] = scratch[i % M] + scratch[(i + 1) % M];
	}
	for (int i = 0; i < N; i++)
		sum += res[i];
	printf("private %.1f\n", sum);
	return 0;
}
