/* SPDX-License-Identifier: BSD-3-Clause
 * bt_sweep — the bt transformation of Majo & Gross (§4.1-§5): a 2D array
 * swept x-wise (a recurrence along each row) and then y-wise (along each
 * column), once with plain static scheduling and once with a block_exclusive
 * placement and the block-exclusive schedule.
 *
 *   - the array is placed block_exclusive over the nodes (a latin square of
 *     p x p blocks: block (r, c) on node (r + c) mod p);
 *   - threads are pinned as "scatter" places them (nk_placement_build +
 *     nk_omp_pin), so thread group g runs on node g;
 *   - the x-wise sweep runs in p phases, one per column band c: the rows of
 *     each thread come from nk_sched_block_exclusive(NK_VIEW_ROWS, c), and
 *     one barrier separates the phases (the recurrence crosses from band c
 *     into band c + 1 only there);
 *   - the y-wise sweep runs in p phases over the row bands with
 *     NK_VIEW_COLS.
 * With static scheduling every thread sweeps whole rows (x) or whole columns
 * (y): most of its blocks are on other nodes.  The program counts, from the
 * residency of exactly the bytes each thread touches (nk_where), how many
 * page touches are local and remote for both schedules, checks that both
 * give the same result, and prints the time ratio.
 *
 * Usage: bt_sweep [SIZE [THREADS [ITERATIONS]]]   (docs/schedules.md)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numakit.h"

#if !defined(_OPENMP)
int main(void)
{
	fprintf(stderr, "bt_sweep: built without OpenMP\n");
	return 77;
}
#else
#include <numakit/omp.h> /* nk_omp_pin, nk_omp_static: included explicitly, with <omp.h> */

static const char usage[] =
	"usage: bt_sweep [--help] [SIZE [THREADS [ITERATIONS]]]\n"
	"  Sweep a SIZE x SIZE array of doubles x-wise then y-wise, with static scheduling and with\n"
	"  a block_exclusive placement + block-exclusive schedule (Majo & Gross' bt transformation).\n"
	"  SIZE        rows = columns (default 2048; a multiple of 512 x nodes keeps blocks page-exact)\n"
	"  THREADS     team size, pinned by the \"scatter\" placement (default: one per cpu)\n"
	"  ITERATIONS  timed x+y sweeps per schedule (default 5)\n"
	"Prints page touches local/remote per schedule and sweep, and the time ratio.\n";

struct geom {
	long n;   /* rows = columns */
	int p;    /* nodes of the block_exclusive set */
	double **a;
};

static long band(long n, int p, int k)
{
	return k * (n / p) + (k < n % p ? k : n % p);
}

/* x-wise recurrence over rows [r0, r1), columns [c0, c1). */
static void sweep_x(double **a, long r0, long r1, long c0, long c1)
{
	for (long i = r0; i < r1; i++)
		for (long j = c0 > 0 ? c0 : 1; j < c1; j++)
			a[i][j] = 0.5 * (a[i][j] + a[i][j - 1]) + 1e-3;
}

/* y-wise recurrence over rows [r0, r1), columns [c0, c1). */
static void sweep_y(double **a, long r0, long r1, long c0, long c1)
{
	for (long i = r0 > 0 ? r0 : 1; i < r1; i++)
		for (long j = c0; j < c1; j++)
			a[i][j] = 0.5 * (a[i][j] + a[i - 1][j]) + 1e-3;
}

/* Page touches of rows [r0, r1) x columns [c0, c1) on node @p mine / elsewhere. */
static void count(const nk_machine *m, double **a, long r0, long r1, long c0, long c1, int mine, long *local,
		  long *remote, int *buf, size_t cap)
{
	for (long i = r0; i < r1 && c0 < c1; i++) {
		size_t len = (size_t)(c1 - c0) * sizeof(double);
		if (nk_where(m, &a[i][c0], len, buf, NULL))
			continue;
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		size_t np = (size_t)&a[i][c1 - 1] / ps - (size_t)&a[i][c0] / ps + 1;
		for (size_t k = 0; k < np && k < cap; k++)
			*(buf[k] == mine ? local : remote) += 1;
	}
}

enum { X = 0, Y = 1 };

/*
 * One x-wise and one y-wise sweep by the calling team member, block-exclusive
 * (be = 1) or static.  With @p m, count page touches instead of computing.
 */
static void sweeps(const struct geom *g, int be, const nk_machine *m, int mine, long cnt[2][2], int *buf,
		   size_t cap)
{
	int t = omp_get_thread_num(), T = omp_get_num_threads();
	long n = g->n;
	nk_range r[NK_SCHED_BE_MAX_RANGES];

	/* x-wise */
	if (be) {
		for (int c = 0; c < g->p; c++) {
			long c0 = band(n, g->p, c), c1 = band(n, g->p, c + 1);
			int k = nk_sched_block_exclusive(n, n, g->p, NK_VIEW_ROWS, c, 0, n, t, T, r, NK_SCHED_BE_MAX_RANGES);
			for (int i = 0; i < k; i++) {
				if (m)
					count(m, g->a, r[i].begin, r[i].end, c0, c1, mine, &cnt[X][0], &cnt[X][1], buf, cap);
				else
					sweep_x(g->a, r[i].begin, r[i].end, c0, c1);
			}
#pragma omp barrier
		}
	} else {
		nk_omp_static(0, n, &r[0]);
		if (m)
			count(m, g->a, r[0].begin, r[0].end, 0, n, mine, &cnt[X][0], &cnt[X][1], buf, cap);
		else
			sweep_x(g->a, r[0].begin, r[0].end, 0, n);
#pragma omp barrier
	}
	/* y-wise */
	if (be) {
		for (int b = 0; b < g->p; b++) {
			long r0 = band(n, g->p, b), r1 = band(n, g->p, b + 1);
			int k = nk_sched_block_exclusive(n, n, g->p, NK_VIEW_COLS, b, 0, n, t, T, r, NK_SCHED_BE_MAX_RANGES);
			for (int i = 0; i < k; i++) {
				if (m)
					count(m, g->a, r0, r1, r[i].begin, r[i].end, mine, &cnt[Y][0], &cnt[Y][1], buf, cap);
				else
					sweep_y(g->a, r0, r1, r[i].begin, r[i].end);
			}
#pragma omp barrier
		}
	} else {
		nk_omp_static(0, n, &r[0]);
		if (m)
			count(m, g->a, 0, n, r[0].begin, r[0].end, mine, &cnt[Y][0], &cnt[Y][1], buf, cap);
		else
			sweep_y(g->a, 0, n, r[0].begin, r[0].end);
#pragma omp barrier
	}
}

static int memory_nodes(const nk_machine *m)
{
	int p = 0;
	for (int i = 0; i < nk_machine_num_nodes(m); i++) {
		int f = nk_machine_node_flags(m, nk_machine_node_id(m, i));
		if (f >= 0 && (f & NK_NODE_HAS_MEMORY) && (f & NK_NODE_MEM_ALLOWED))
			p++;
	}
	return p;
}

int main(int argc, char **argv)
{
	nk_machine *m = NULL;
	nk_placement *pl = NULL;
	nk_policy *pol = NULL;
	nk_array *arr[2] = { NULL, NULL };
	nk_error e;
	long n = 2048, iters = 5;
	int T = 0, rc = 1;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
	if (argc > 4 || (argc > 1 && (n = strtol(argv[1], NULL, 10)) < 1) ||
	    (argc > 2 && (T = atoi(argv[2])) < 1) || (argc > 3 && (iters = strtol(argv[3], NULL, 10)) < 1)) {
		fputs(usage, stderr);
		return 2;
	}
	if (nk_machine_load_live(&m, &e)) {
		fprintf(stderr, "bt_sweep: %s\n", e.message);
		return 1;
	}
	int p = memory_nodes(m);
	if (n < p) {
		fprintf(stderr, "bt_sweep: SIZE must be at least the %d nodes\n", p);
		goto out;
	}
	if (nk_placement_build(m, "scatter", T, &pl, &e)) {
		fprintf(stderr, "bt_sweep: scatter placement: %s\n", e.message);
		goto out;
	}
	T = nk_placement_num_threads(pl);
	if (nk_policy_parse("block_exclusive", &pol, &e))
		goto out_err;

	/* Two identical arrays placed block_exclusive: one per schedule, results compared at the end. */
	struct geom g[2];
	size_t dims[2] = { (size_t)n, (size_t)n };
	for (int k = 0; k < 2; k++) {
		if (nk_array_alloc(m, sizeof(double), 2, dims, NK_ARRAY_NO_THP, &arr[k]) ||
		    nk_array_apply(arr[k], pol, 0, NULL, &e))
			goto out_err;
		g[k].n = n;
		g[k].p = p;
		g[k].a = nk_array_rows(arr[k]);
	}

	long cnt[2][2][2] = { { { 0 } } }; /* [schedule][sweep][local, remote] */
	double secs[2] = { 0, 0 };
	int pin_failed = 0;
#pragma omp parallel num_threads(T) reduction(+ : pin_failed)
	{
		int t = omp_get_thread_num();
		if (nk_omp_pin(pl, NULL))
			pin_failed++;
		int mine = nk_placement_node(pl, t);
		size_t cap = (size_t)n * sizeof(double) / (size_t)sysconf(_SC_PAGESIZE) + 2;
		int *buf = malloc(cap * sizeof *buf);
		long my[2][2][2] = { { { 0 } } };

		/* first touch in the block-exclusive pattern (the policy decides anyway: it was applied first) */
		for (int k = 0; k < 2; k++) {
			nk_range r[NK_SCHED_BE_MAX_RANGES];
			for (int c = 0; c < p; c++) {
				long c0 = band(n, p, c), c1 = band(n, p, c + 1);
				int nr = nk_sched_block_exclusive(n, n, p, NK_VIEW_ROWS, c, 0, n, t, T, r,
								  NK_SCHED_BE_MAX_RANGES);
				for (int i = 0; i < nr; i++)
					for (long y = r[i].begin; y < r[i].end; y++)
						for (long x = c0; x < c1; x++)
							g[k].a[y][x] = (double)((y * 31 + x * 17) % 101);
			}
		}
#pragma omp barrier
		/* residency of exactly what each thread touches, per schedule and sweep */
		for (int s = 0; s < 2 && buf; s++)
			sweeps(&g[s], s == 0, m, mine, my[s], buf, cap);
#pragma omp critical
		for (int s = 0; s < 2; s++)
			for (int w = 0; w < 2; w++)
				for (int l = 0; l < 2; l++)
					cnt[s][w][l] += my[s][w][l];
		free(buf);
		/* timed: ITERATIONS x (x-wise + y-wise), block-exclusive then static */
		for (int s = 0; s < 2; s++) {
#pragma omp barrier
			double t0 = omp_get_wtime();
			for (long it = 0; it < iters; it++)
				sweeps(&g[s], s == 0, NULL, mine, NULL, NULL, 0);
#pragma omp master
			secs[s] = omp_get_wtime() - t0;
		}
	}

	double diff = 0;
	for (long i = 0; i < n; i++)
		for (long j = 0; j < n; j++) {
			double d = g[0].a[i][j] - g[1].a[i][j];
			diff += d < 0 ? -d : d;
		}
	printf("bt_sweep: %ld x %ld doubles (%.1f MiB), %d threads (scatter%s), %d node(s), %ld iteration(s)\n", n, n,
	       (double)n * (double)n * 8 / 1048576.0, T, pin_failed ? ", PINNING FAILED" : "", p, iters);
	printf("%-16s %-7s %12s %12s %9s\n", "schedule", "sweep", "local pages", "remote pages", "remote %");
	const char *sname[2] = { "block_exclusive", "static" }, *wname[2] = { "x-wise", "y-wise" };
	for (int s = 0; s < 2; s++)
		for (int w = 0; w < 2; w++) {
			long l = cnt[s][w][0], r = cnt[s][w][1];
			printf("%-16s %-7s %12ld %12ld %8.1f%%\n", sname[s], wname[w], l, r,
			       l + r ? 100.0 * (double)r / (double)(l + r) : 0.0);
		}
	printf("time: block_exclusive %.3f s, static %.3f s, ratio block_exclusive/static %.2f\n", secs[0], secs[1],
	       secs[1] > 0 ? secs[0] / secs[1] : 0.0);
	printf("results identical: %s\n", diff == 0 ? "yes" : "NO");
	rc = diff == 0 && !pin_failed ? 0 : 1;
	goto out;
out_err:
	fprintf(stderr, "bt_sweep: %s\n", e.message);
out:
	nk_array_free(arr[0]);
	nk_array_free(arr[1]);
	nk_policy_free(pol);
	nk_placement_free(pl);
	nk_machine_free(m);
	return rc;
}
#endif
