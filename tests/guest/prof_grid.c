/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for profiling by allocation site (issue 19; tests/vm/tests/profile_sites): a 3D grid built
 * row by row, u[k][j] = malloc(one row of NX doubles, 2 KiB), as C multigrid codes do.  The master
 * allocates and initialises every row (TRUTH:grid-alloc, TRUTH:grid-init), then every thread sweeps its
 * planes in parallel several times (TRUTH:grid-sweep).  No row reaches --min-size: only the site, all rows
 * together, does.  All pages sit on the master's node: with 4 threads on 4 nodes, 3/4 of the sweeps are
 * remote; the diagnosis is a hot-spot first touched by thread 0 at the init line.
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

#define NX 256 /* doubles per row: 2 KiB */

int main(int argc, char **argv)
{
	/* NZ planes of NY rows; the argument is the grid's MiB */
	size_t ny = 64, nz = prof_mib(argc, argv, 16) * (1u << 20) / (NX * sizeof(double)) / ny;
	double ***u = malloc(nz * sizeof *u);
	double sum = 0;

	if (!u)
		return 1;
#pragma omp parallel
	{
		(void)0;
	}
	for (size_t k = 0; k < nz; k++) {
		u[k] = malloc(ny * sizeof *u[k]);
		if (!u[k])
			return 1;
		for (size_t j = 0; j < ny; j++) {
			u[k][j] = malloc(NX * sizeof(double)); /* TRUTH:grid-alloc */
			if (!u[k][j])
				return 1;
			for (size_t i = 0; i < NX; i++)
				u[k][j][i] = (double)(i + j + k); /* TRUTH:grid-init */
		}
	}
	for (int sweep = 0; sweep < 6; sweep++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
		for (size_t k = 0; k < nz; k++)
			for (size_t j = 0; j < ny; j++)
				for (size_t i = 0; i < NX; i++)
					sum += u[k][j][i] * 0.5; /* TRUTH:grid-sweep */
	}
	prof_sink = sum;
	for (size_t k = 0; k < nz; k++) {
		for (size_t j = 0; j < ny; j++)
			free(u[k][j]);
		free(u[k]);
	}
	free(u);
	return 0;
}
