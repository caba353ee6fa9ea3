/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source sample: two-dimensional arrays.  m is written by
 * rows in a static loop and read by rows (block); t is written by columns
 * (the loop variable indexes the inner dimension: cyclic); total is written
 * inside single (one thread: left alone); sizeof is not an access.
 */
#include <stdio.h>

#define R 512
#define C 512

static double m[R][C];
static double t[C][R];
static long total[1 << 16];

int main(void)
{
	double s = 0;

#pragma omp parallel
	{
#pragma omp for schedule(static)
		for (int i = 0; i < R; i++)
			for (int j = 0; j < C; j++)
				m[i][j] = i * 0.5 + j;
#pragma omp for
		for (int i = 0; i < R; i++)
			for (int j = 0; j < C; j++)
				t[j][i] = 2 * m[i][j];
#pragma omp single
		total[0] = (long)(sizeof m / sizeof m[0]);
	}
	for (int k = 0; k < C; k++)
		s += t[k][3];
	printf("matrix %.1f %ld\n", s, total[0]);
	return 0;
}
