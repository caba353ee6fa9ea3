/* SPDX-License-Identifier: BSD-3-Clause
 * Median and spread of repeated measurements.  Benchmarks report the median
 * (robust to the odd run disturbed by an interrupt) and min/max plus the
 * quartiles, so a reader sees how much to trust a figure.
 */
#include "bench/bench_impl.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile q of sorted s[0..n) by linear interpolation (R type 7). */
static double quantile(const double *s, int n, double q)
{
	double pos = q * (n - 1);
	int lo = (int)pos;
	double frac = pos - lo;

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + frac * (s[lo + 1] - s[lo]);
}

int nk__bench_stats(const double *v, int n, nk_bench_stat *out)
{
	double *s;

	if (!v || !out || n < 1)
		return NK_EINVAL;
	s = malloc((size_t)n * sizeof *s);
	if (!s)
		return NK_ENOMEM;
	memcpy(s, v, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	out->n = n;
	out->min = s[0];
	out->max = s[n - 1];
	out->median = quantile(s, n, 0.5);
	out->q1 = quantile(s, n, 0.25);
	out->q3 = quantile(s, n, 0.75);
	free(s);
	return 0;
}
