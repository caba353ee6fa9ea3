/* SPDX-License-Identifier: BSD-3-Clause
 * Kernels of bench/profile_overhead.sh: what the pagefault sampler's overhead
 * is measured on.  Usage: prof_kernels triad|cg MIB ITERATIONS.
 *   triad  STREAM's a = b + s*c over three arrays of MIB MiB each (24 bytes moved per element)
 *   cg     conjugate-gradient-like: a sparse matrix-vector product (CSR, 7-point stencil of a 3D
 *          grid: irregular indirect loads) plus two dot products and three axpys per iteration
 * Arrays are initialised in parallel (first touch by the thread that computes on them), as a tuned
 * program would.  Prints one checksum line, so the work cannot be optimised away.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int triad(size_t mib, int iters)
{
	size_t n = mib * (1u << 20) / sizeof(double);
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
	double s = 3.0, sum = 0;

	if (!a || !b || !c)
		return 1;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = 0;
		b[i] = 1.0;
		c[i] = 2.0;
	}
	for (int it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
	}
#pragma omp parallel for schedule(static) reduction(+ : sum)
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	printf("triad: %zu elements, %d iterations, checksum %.6e\n", n, iters, sum);
	free(a);
	free(b);
	free(c);
	return 0;
}

static int cg(size_t mib, int iters)
{
	/* Grid side so that the matrix (7 values + 7 column indices per row) takes about MIB MiB. */
	size_t side = 8;
	while ((side + 8) * (side + 8) * (side + 8) * 7 * (sizeof(double) + sizeof(int)) < mib * (1u << 20))
		side += 8;
	size_t n = side * side * side, nnz = 7 * n;
	double *val = malloc(nnz * sizeof *val), *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
	double *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
	int *col = malloc(nnz * sizeof *col);
	double rho = 0;

	if (!val || !x || !r || !p || !q || !col)
		return 1;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		size_t z = i / (side * side), y = (i / side) % side, xx = i % side;
		long nb[7] = { (long)i, xx ? (long)i - 1 : -1, xx + 1 < side ? (long)i + 1 : -1,
			       y ? (long)(i - side) : -1, y + 1 < side ? (long)(i + side) : -1,
			       z ? (long)(i - side * side) : -1, z + 1 < side ? (long)(i + side * side) : -1 };
		for (int k = 0; k < 7; k++) {
			col[7 * i + k] = nb[k] < 0 ? (int)i : (int)nb[k];
			val[7 * i + k] = k == 0 ? 6.5 : (nb[k] < 0 ? 0.0 : -1.0);
		}
		x[i] = 0;
		r[i] = 1.0;
		p[i] = 1.0;
		q[i] = 0;
	}
#pragma omp parallel for schedule(static) reduction(+ : rho)
	for (size_t i = 0; i < n; i++)
		rho += r[i] * r[i];
	for (int it = 0; it < iters; it++) {
		double pq = 0, rho_new = 0;
#pragma omp parallel for schedule(static) reduction(+ : pq)
		for (size_t i = 0; i < n; i++) {
			double s = 0;
			for (int k = 0; k < 7; k++)
				s += val[7 * i + k] * p[col[7 * i + k]];
			q[i] = s;
			pq += p[i] * s;
		}
		double alpha = rho / pq;
#pragma omp parallel for schedule(static) reduction(+ : rho_new)
		for (size_t i = 0; i < n; i++) {
			x[i] += alpha * p[i];
			r[i] -= alpha * q[i];
			rho_new += r[i] * r[i];
		}
		double beta = rho_new / rho;
		rho = rho_new;
#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < n; i++)
			p[i] = r[i] + beta * p[i];
	}
	printf("cg: %zu rows, %zu nonzeros, %d iterations, residual %.6e\n", n, nnz, iters, rho);
	free(val);
	free(col);
	free(x);
	free(r);
	free(p);
	free(q);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || atoi(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: prof_kernels triad|cg MIB ITERATIONS\n");
		return 2;
	}
	if (!strcmp(argv[1], "triad"))
		return triad((size_t)atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(argv[1], "cg"))
		return cg((size_t)atoi(argv[2]), atoi(argv[3]));
	fprintf(stderr, "prof_kernels: unknown kernel %s\n", argv[1]);
	return 2;
}
