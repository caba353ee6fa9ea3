/* SPDX-License-Identifier: BSD-3-Clause
 * Known MPI traffic for the PMPI wrappers (preload/mpi/pmpi.c) under `numakit profile`: each call below sends
 * a known number of bytes to known peers, and mpi_traffic_check.py computes the expected rank x rank
 * matrix from the same list, written independently of the wrappers.  Any number of ranks >= 2.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define RING_N 1000  /* doubles, RING_REPS times to rank + 1 */
#define RING_REPS 5

int main(int argc, char **argv)
{
	int provided, r, n;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	double *a = calloc(RING_N, sizeof *a), *b = calloc(RING_N, sizeof *b);
	int ibuf[64] = { 0 }, jbuf[64] = { 0 };
	if (!a || !b || n < 2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	int right = (r + 1) % n, left = (r + n - 1) % n;

	/* 1. p2p: RING_N doubles to the right, RING_REPS times */
	for (int k = 0; k < RING_REPS; k++)
		MPI_Sendrecv(a, RING_N, MPI_DOUBLE, right, 1, b, RING_N, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
	/* 2. p2p: 10 ints to the left, non-blocking */
	MPI_Request rq;
	MPI_Isend(ibuf, 10, MPI_INT, left, 2, MPI_COMM_WORLD, &rq);
	MPI_Recv(jbuf, 10, MPI_INT, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	/* 3. nothing: MPI_PROC_NULL is not a peer */
	MPI_Send(ibuf, 5, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD);
	/* 4. Bcast of 100 doubles from rank 0 */
	MPI_Bcast(a, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	/* 5. Allreduce of 8 doubles */
	MPI_Allreduce(a, b, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	/* 6. Reduce of 3 ints to rank 1 */
	MPI_Reduce(ibuf, jbuf, 3, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD);
	/* 7. Scatterv from the last rank: i + 1 ints to rank i */
	int *counts = malloc((size_t)n * sizeof *counts), *displs = malloc((size_t)n * sizeof *displs);
	int *big = calloc((size_t)n * (size_t)(n + 1), sizeof *big);
	if (!counts || !displs || !big)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0, d = 0; i < n; i++) {
		counts[i] = i + 1;
		displs[i] = d;
		d += i + 1;
	}
	MPI_Scatterv(big, counts, displs, MPI_INT, jbuf, r + 1, MPI_INT, n - 1, MPI_COMM_WORLD);
	/* 8. on a sub-communicator of the even (or odd) world ranks, in reverse order: Alltoall of 4 ints,
	 * and 2 ints sent to sub-rank 0 (a world rank the wrappers must translate) by every other member */
	MPI_Comm sub;
	MPI_Comm_split(MPI_COMM_WORLD, r % 2, n - r, &sub);
	int sr, sn;
	MPI_Comm_rank(sub, &sr);
	MPI_Comm_size(sub, &sn);
	int *s4 = calloc((size_t)sn * 4, sizeof *s4), *r4 = calloc((size_t)sn * 4, sizeof *r4);
	if (!s4 || !r4)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Alltoall(s4, 4, MPI_INT, r4, 4, MPI_INT, sub);
	if (sr != 0)
		MPI_Send(ibuf, 2, MPI_INT, 0, 4, sub);
	else
		for (int i = 1; i < sn; i++)
			MPI_Recv(jbuf, 2, MPI_INT, MPI_ANY_SOURCE, 4, sub, MPI_STATUS_IGNORE);
	MPI_Comm_free(&sub);
	MPI_Finalize();
	free(a);
	free(b);
	free(counts);
	free(displs);
	free(big);
	free(s4);
	free(r4);
	return 0;
}
