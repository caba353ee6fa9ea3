/* SPDX-License-Identifier: BSD-3-Clause
 * Known truth for issue 13's evidence (bench/profile_speed.sh): three heap arrays with three different
 * diagnoses in one short program, as real codes mix them.  With T threads spread one per node:
 *   - hot   (4 x MiB): initialised serially by the master (TRUTH:hot-init), then read by every thread in
 *                      a static partition (TRUTH:hot-read): a hot-spot, (T-1)/T of the reads remote;
 *   - fine  (2 x MiB): initialised and read by the same static partition (TRUTH:fine-init,
 *                      TRUTH:fine-read): every access local;
 *   - shift (1 x MiB): initialised by a static partition, read by the partition shifted by one thread
 *                      (TRUTH:shift-read: thread t reads thread t+1's block): a partition mismatch,
 *                      every read remote.
 * Usage: prof_trio [MiB (8): shift's size; fine twice that, hot four times] [sweeps (6)]
 */
#include <omp.h>
#include <stdlib.h>

#include "prof_common.h"

int main(int argc, char **argv)
{
	size_t n1 = prof_mib(argc, argv, 8) * (1u << 20) / sizeof(double);
	int sweeps = argc > 2 ? atoi(argv[2]) : 6;
	double *hot = malloc(4 * n1 * sizeof *hot);    /* TRUTH:hot-alloc */
	double *fine = malloc(2 * n1 * sizeof *fine);  /* TRUTH:fine-alloc */
	double *shift = malloc(n1 * sizeof *shift);    /* TRUTH:shift-alloc */
	double sum = 0;

	if (!hot || !fine || !shift || sweeps < 1 || sweeps > 1000)
		return 1;
#pragma omp parallel
	{
		(void)0;
	}
	for (size_t i = 0; i < 4 * n1; i++)
		hot[i] = 1.0 / (double)(i + 1); /* TRUTH:hot-init */
#pragma omp parallel
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();
		size_t lo = n1 * 2 * (size_t)t / (size_t)nt, hi = n1 * 2 * (size_t)(t + 1) / (size_t)nt;
		for (size_t i = lo; i < hi; i++)
			fine[i] = (double)i; /* TRUTH:fine-init */
		lo = n1 * (size_t)t / (size_t)nt;
		hi = n1 * (size_t)(t + 1) / (size_t)nt;
		for (size_t i = lo; i < hi; i++)
			shift[i] = (double)i; /* TRUTH:shift-init */
	}
	for (int s = 0; s < sweeps; s++) {
#pragma omp parallel reduction(+ : sum)
		{
			int t = omp_get_thread_num(), nt = omp_get_num_threads();
			size_t lo = 4 * n1 * (size_t)t / (size_t)nt, hi = 4 * n1 * (size_t)(t + 1) / (size_t)nt;
			for (size_t i = lo; i < hi; i++)
				sum += hot[i]; /* TRUTH:hot-read */
			lo = 2 * n1 * (size_t)t / (size_t)nt;
			hi = 2 * n1 * (size_t)(t + 1) / (size_t)nt;
			for (size_t i = lo; i < hi; i++)
				sum += fine[i] * 0.5; /* TRUTH:fine-read */
			int u = (t + 1) % nt;
			lo = n1 * (size_t)u / (size_t)nt;
			hi = n1 * (size_t)(u + 1) / (size_t)nt;
			for (size_t i = lo; i < hi; i++)
				sum += shift[i] * 0.25; /* TRUTH:shift-read */
		}
	}
	prof_sink = sum;
	free(shift);
	free(fine);
	free(hot);
	return 0;
}
